package cphp

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestApportion: the parts sum to the total, follow the weights within one
// unit, and equal weights give the first total mod n one more.
func TestApportion(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 500 {
		n := 1 + rng.IntN(12)
		total := rng.Int64N(1 << 40)
		w := make([]float64, n)
		var sum float64
		for i := range w {
			w[i] = rng.Float64() * 10
			sum += w[i]
		}
		got := Apportion(total, w)
		var s int64
		for i, x := range got {
			s += x
			if d := float64(x) - float64(total)*w[i]/sum; d < -1.0001 || d > 1.0001 {
				t.Fatalf("part %d = %d, exact %g", i, x, float64(total)*w[i]/sum)
			}
		}
		if s != total {
			t.Fatalf("parts sum to %d, want %d", s, total)
		}
	}
	if got := Apportion(10, []float64{1, 1, 1, 1}); !slices.Equal(got, []int64{3, 3, 2, 2}) {
		t.Errorf("equal weights: %v", got)
	}
}

// TestEqualLayout: chunks differ by at most one token, no rank holds more
// than ⌈S/P⌉, every rank H/u heads; it passes Layout.Check.
func TestEqualLayout(t *testing.T) {
	for _, c := range []struct{ size, u int }{{16, 4}, {8, 8}, {8, 1}, {32, 8}} {
		for _, tokens := range []int64{0, 1, 7, 1000, 1 << 20, 999_999} {
			l := EqualLayout(c.size, c.u, tokens, 32)
			if err := l.Check(sched.Group{Size: c.size}, tokens, 32); err != nil {
				t.Fatalf("%+v %d: %v", c, tokens, err)
			}
			ch := l.Chunks()
			if slices.Max(ch)-slices.Min(ch) > 1 || int64(slices.Max(l.ShardTokens)) > (tokens+int64(c.size)-1)/int64(c.size) {
				t.Errorf("%+v %d: chunks %v, shards %v", c, tokens, ch, l.ShardTokens)
			}
		}
	}
}

// TestPackPlacesEverySequenceOnce: every sequence lands in exactly one bin,
// no bin holds more than its replica's capacity, and a sequence too long
// for every replica is ErrTooLong.
func TestPackPlacesEverySequenceOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 1000, PP: 2, VPP: 1, QueryHeads: 8, OverheadRatio: 1e6}
	m := NewModel(in)
	v := EqualView(0, 4, 2, 8)
	tm := &Template{View: v, Parts: m.Parts(v, 1, 1), Capacity: 4000}
	reps := []Replica{{0, 4, tm}, {4, 4, tm}, {8, 4, tm}, {12, 4, tm}}
	for range 100 {
		lengths := make([]int, 1+rng.IntN(60))
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(4000)
		}
		p, err := Pack(m, lengths, reps, in)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]int, len(lengths))
		for k := range p.Bins {
			for j, ids := range p.Bins[k] {
				var tok int
				for _, id := range ids {
					seen[id]++
					tok += lengths[id]
				}
				if tok > 4000 {
					t.Fatalf("bin %d/%d holds %d tokens", k, j, tok)
				}
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("sequence %d placed %d times", id, n)
			}
		}
	}
	if _, err := Pack(m, []int{4001}, reps, in); err == nil {
		t.Error("a sequence over every capacity: no error")
	}
}
