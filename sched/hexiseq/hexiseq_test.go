package hexiseq

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/cphp"
	"github.com/dcpsim/dcpsim/sched/usp"
)

// randomBatch draws n lengths log-uniform in [1, maxTokens].
func randomBatch(rng *rand.Rand, n, maxTokens int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = max(1, int(float64(maxTokens)*rngPow(rng)))
	}
	return out
}

func rngPow(rng *rand.Rand) float64 {
	x := rng.Float64()
	return x * x * x * x
}

// TestOneKindIsUSP: on a pool of one kind, with or without a planning
// cluster, hexiseq makes usp's plans exactly: every replica is of one kind
// and gets the equal layout, which the descent cannot improve.
func TestOneKindIsUSP(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hx, _ := New(DefaultOptions())
	us, _ := usp.New(usp.DefaultOptions())
	for i := range 60 {
		g := 8 << rng.IntN(4)
		b := 1024 << rng.IntN(4)
		var in sched.Inputs
		if i%2 == 0 {
			in = oneKindInputs(g, b)
		} else {
			in = sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1 + rng.IntN(2), VPP: 1, OverheadRatio: 1e7}
		}
		lengths := randomBatch(rng, 1+rng.IntN(200), g*b)
		want, werr := us.Plan(lengths, in)
		got, gerr := hx.Plan(lengths, in)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("G=%d B=%d: usp error %v, hexiseq error %v", g, b, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if !reflect.DeepEqual(got.Microbatches, want.Microbatches) {
			t.Fatalf("G=%d B=%d N=%d (cluster %v): hexiseq's plan differs from usp's", g, b, len(lengths), in.Cluster != nil)
		}
	}
}

// TestLayoutsSumAndFitMemory: on mixed pools every group's shard lengths sum
// to its sequences' tokens, every HP group's head counts to the heads, and
// no rank holds more than its own kind's budget (sched.Validate with the
// policy's promises checks all three).
func TestLayoutsSumAndFitMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	hx, _ := New(DefaultOptions())
	asym := 0
	for range 80 {
		g := 16 << rng.IntN(3)
		b := 2048 << rng.IntN(3)
		in := mixedInputs(g, b)
		if rng.IntN(2) == 0 { // a bigger-memory slow kind
			in.Cluster.Kinds[1].BudgetTokens = b + b/2
		}
		lengths := randomBatch(rng, 1+rng.IntN(100), g*b)
		p, err := hx.Plan(lengths, in)
		if err != nil {
			if !errors.Is(err, sched.ErrInvalidInput) {
				t.Fatalf("G=%d B=%d: %v", g, b, err)
			}
			continue
		}
		if err := sched.Validate(p, lengths, in, hx.Promises()); err != nil {
			t.Fatalf("G=%d B=%d: %v", g, b, err)
		}
		for _, mb := range p.Microbatches {
			for _, gr := range mb.Groups {
				var tokens int
				for _, id := range gr.Seqs {
					tokens += lengths[id]
				}
				l := gr.Layout
				sum := 0
				for _, s := range l.ShardTokens {
					sum += s
				}
				if sum != tokens {
					t.Fatalf("shards sum to %d, the group holds %d", sum, tokens)
				}
				at := 0
				for _, u := range l.HPGroups {
					heads := 0
					for _, n := range l.Heads[at : at+u] {
						heads += n
					}
					if heads != in.QueryHeads {
						t.Fatalf("HP group of %d ranks runs %d heads, want %d", u, heads, in.QueryHeads)
					}
					at += u
				}
			}
		}
		asym += p.Diagnostics.(*Diagnostics).AsymmetricGroups
	}
	if asym == 0 {
		t.Error("no plan had a group mixing kinds: the test checks nothing asymmetric")
	}
}

// TestFastRanksGetMore: one 256K-token sequence (attention-bound) on 8 fast
// and 8 three-times slower ranks (HP groups forced to one node, P = 16)
// with memory to spare: every fast rank holds more tokens than every slow
// rank, and the fast HP group a longer chunk; the modelled time beats the
// equal split's by at least 20%.
func TestFastRanksGetMore(t *testing.T) {
	in := mixedInputs(16, 32768)
	hx, _ := New(Options{Degree: 16, Ulysses: 8, Rounds: 256})
	lengths := []int{262144}
	p, err := hx.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	l := p.Microbatches[0].Groups[0].Layout
	for i := range 8 {
		for j := 8; j < 16; j++ {
			if l.ShardTokens[i] <= l.ShardTokens[j] {
				t.Fatalf("fast rank %d holds %d tokens, slow rank %d %d: %v", i, l.ShardTokens[i], j, l.ShardTokens[j], l.ShardTokens)
			}
		}
	}
	if ch := l.Chunks(); ch[0] <= ch[1] {
		t.Errorf("chunks %v: the fast HP group's is not the longer", ch)
	}
	m := cphp.NewModel(in)
	s1, s2 := 262144.0, 262144.0*262144.0
	eq := cphp.EqualLayout(16, 8, 262144, 32)
	if got, even := m.ExactSeconds(m.Parts(viewOf(l), s1, s2)), m.ExactSeconds(m.Parts(viewOf(eq), s1, s2)); !(got < 0.8*even) {
		t.Errorf("asymmetric layout %g s, equal %g s: want at least 20%% faster", got, even)
	}
}

// viewOf is a layout's view for the planning model.
func viewOf(l *sched.Layout) cphp.View {
	v := cphp.View{HPGroups: l.HPGroups}
	for i := range l.ShardTokens {
		v.Tokens = append(v.Tokens, float64(l.ShardTokens[i]))
		v.Heads = append(v.Heads, float64(l.Heads[i]))
	}
	return v
}

// TestDescentNeverWorsens: stage 3 only applies moves that lower the
// modelled time, so the final layout is never slower than stage 2's nor the
// equal split's, and on a mixed group it finds moves.
func TestDescentNeverWorsens(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	moves := int64(0)
	for range 40 {
		in := mixedInputs(16, 4096<<rng.IntN(2))
		s := 1024 + rng.IntN(in.BudgetTokens*16-1024)
		tokens, squares := int64(s), float64(s)*float64(s)
		with := &planner{m: cphp.NewModel(in), in: in, rounds: 256}
		without := &planner{m: cphp.NewModel(in), in: in, rounds: 0}
		u := []int{2, 4, 8}[rng.IntN(3)]
		l1, n, _, err := with.layout(0, 16, u, tokens, squares)
		if err != nil {
			t.Fatal(err)
		}
		l0, _, _, _ := without.layout(0, 16, u, tokens, squares)
		m := with.m
		a, b := m.ExactSeconds(m.Parts(viewOf(l1), float64(s), squares)), m.ExactSeconds(m.Parts(viewOf(l0), float64(s), squares))
		if a > b*(1+1e-12) {
			t.Fatalf("s = %d u = %d: descent %g s, stage 2 %g s", s, u, a, b)
		}
		moves += n
	}
	if moves == 0 {
		t.Error("the descent never moved: the test checks nothing")
	}
}

// TestMemoryFullLeavesNoFreedom: a group holding Σ budgets tokens must put
// every rank at its budget, whatever its speed.
func TestMemoryFullLeavesNoFreedom(t *testing.T) {
	in := mixedInputs(16, 4096)
	pl := &planner{m: cphp.NewModel(in), in: in, rounds: 256}
	l, _, _, err := pl.layout(0, 16, 8, 16*4096, 16*4096.0*16*4096)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range l.ShardTokens {
		if s != 4096 {
			t.Fatalf("rank %d holds %d tokens at full memory: %v", i, s, l.ShardTokens)
		}
	}
	if _, _, _, err := pl.layout(0, 16, 8, 16*4096+1, 1); err == nil || !errors.Is(err, sched.ErrCannotPlan) {
		t.Errorf("one token past memory: %v, want ErrCannotPlan", err)
	}
}

// TestOptions: bad options name the key and the range.
func TestOptions(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{{Options{Degree: -1}, "degree = -1"}, {Options{Ulysses: 3}, "ulysses = 3"}, {Options{Rounds: -2}, "rounds = -2"}, {Options{Rounds: MaxRounds + 1}, "rounds = 4097"}} {
		if _, err := New(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
