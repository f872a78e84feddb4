package usp

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// mixed is a pool of g ranks, half of them 3× slower, 8 per node.
func mixed(g, b int) sched.Inputs {
	k := func(name string, ranks int, slow float64) sched.DeviceKind {
		return sched.DeviceKind{Name: name, Ranks: ranks, BudgetTokens: b, AttentionSecondsPerToken2: 4.8e-11 * slow,
			LinearSecondsPerToken: 1.9e-6 * slow, NVLinkBytesPerSecond: 3e11, NICBytesPerSecond: 4e10 / slow, RingNICBytesPerSecond: 4.4e10 / slow,
			IntraLatencySeconds: 1e-5, InterLatencySeconds: 5e-5}
	}
	return sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1, VPP: 1, QueryHeads: 32, OverheadRatio: 1e7,
		Cluster: &sched.Cluster{Layers: 32, OverheadSeconds: 0.01, QBytesPerToken: 8192, KVBytesPerToken: 4096, OBytesPerToken: 8192,
			KVHeads: 8, RanksPerNode: 8, Kinds: []sched.DeviceKind{k("fast", g/2, 1), k("slow", g-g/2, 3)}}}
}

func batch(rng *rand.Rand, n, maxTokens int) []int {
	out := make([]int, n)
	for i := range out {
		x := rng.Float64()
		out[i] = max(1, int(float64(maxTokens)*x*x*x))
	}
	return out
}

// TestEqualShares: every group's ranks hold within one token of each other
// and run H/u heads in HP groups of u, whatever the kinds; plans validate.
func TestEqualShares(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	p, _ := New(DefaultOptions())
	for range 50 {
		in := mixed(32, 4096)
		lengths := batch(rng, 1+rng.IntN(80), 32*4096)
		plan, err := p.Plan(lengths, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.Validate(plan, lengths, in, p.Promises()); err != nil {
			t.Fatal(err)
		}
		d := plan.Diagnostics.(*Diagnostics)
		for _, mb := range plan.Microbatches {
			for _, g := range mb.Groups {
				l := g.Layout
				lo, hi := l.ShardTokens[0], l.ShardTokens[0]
				for _, s := range l.ShardTokens {
					lo, hi = min(lo, s), max(hi, s)
				}
				if hi-lo > 1 || g.Size != d.Degree || len(l.HPGroups) != d.Ring {
					t.Fatalf("group %+v: shards %d..%d, P %d, r %d", g, lo, hi, d.Degree, d.Ring)
				}
				for _, n := range l.Heads {
					if n != 32/d.Ulysses {
						t.Fatalf("heads %v with u = %d", l.Heads, d.Ulysses)
					}
				}
			}
		}
	}
}

// TestCorners: ulysses = 1 is plain ring attention (HP groups of one rank,
// every rank all heads), ulysses = P plain Ulysses (one HP group).
func TestCorners(t *testing.T) {
	in := mixed(16, 8192)
	lengths := []int{100000, 5000, 3000}
	for _, c := range []struct{ u, groups, heads int }{{1, 16, 32}, {16, 1, 2}} {
		p, _ := New(Options{Degree: 16, Ulysses: c.u})
		plan, err := p.Plan(lengths, in)
		if err != nil {
			t.Fatal(err)
		}
		l := plan.Microbatches[0].Groups[0].Layout
		if len(l.HPGroups) != c.groups || l.Heads[0] != c.heads {
			t.Errorf("ulysses %d: %d HP groups, %d heads a rank; want %d, %d", c.u, len(l.HPGroups), l.Heads[0], c.groups, c.heads)
		}
	}
}

// TestTreatsDevicesAlike: USP plans a mixed pool exactly as the pool of its
// slowest kind (Equal): the kinds change nothing but the model it picks its
// factorization with.
func TestTreatsDevicesAlike(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	p, _ := New(DefaultOptions())
	for range 20 {
		in := mixed(32, 4096)
		lengths := batch(rng, 1+rng.IntN(80), 32*4096)
		a, err := p.Plan(lengths, in)
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Plan(lengths, Equal(in))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a.Microbatches, b.Microbatches) {
			t.Fatal("plan on the mixed pool differs from the plan on its equal view")
		}
	}
	eq := Equal(mixed(32, 4096)).Cluster
	if len(eq.Kinds) != 1 || eq.Kinds[0].Name != "slow" || eq.Kinds[0].Ranks != 32 {
		t.Errorf("Equal: %+v", eq.Kinds)
	}
}

// TestOptions: bad options name the key and the range.
func TestOptions(t *testing.T) {
	if _, err := New(Options{Ulysses: 6}); err == nil || !strings.Contains(err.Error(), "ulysses = 6") {
		t.Errorf("ulysses 6: %v", err)
	}
	if _, err := New(Options{Degree: -4}); err == nil || !strings.Contains(err.Error(), "degree = -4") {
		t.Errorf("degree -4: %v", err)
	}
	p, _ := New(Options{Degree: 3})
	if _, err := p.Plan([]int{10}, sched.Inputs{PoolRanks: 16, BudgetTokens: 100, PP: 1, VPP: 1}); err == nil {
		t.Error("degree 3 on 16 ranks: no error")
	}
}
