package costmodel

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
)

// mixedModel is Llama-3-8B on 16 H100-SXM and 16 A100-80G GPUs (pools in
// that order), 8 per node, tp1 pp1, B = 8192.
func mixedModel(t *testing.T) *Model {
	t.Helper()
	m, err := job.LookupModel(job.ModelLlama3With8B)
	if err != nil {
		t.Fatal(err)
	}
	j := job.Job{Model: m, Cluster: job.Cluster{GPUs: 32, GPUsPerNode: 8,
		Pools: []job.Pool{{GPU: "H100-SXM", GPUs: 16}, {GPU: "A100-80G", GPUs: 16}}},
		Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 1, BudgetTokens: 8192}, ContextTokens: 65536}
	var profs []*calib.Profile
	for _, name := range []string{"H100-SXM", "A100-80G"} {
		p, err := calib.LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		profs = append(profs, p)
	}
	mod, err := NewMixed(j, profs, Options{UlyssesAcrossNodes: true})
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// chunkForward prices plan and returns its slowest domain's forward chunk
// seconds (one stage, one chunk).
func chunkForward(t *testing.T, mod *Model, plan *sched.Plan, lengths []int, exec sched.CPExec) float64 {
	t.Helper()
	l, err := step.NewLayout(plan, 1)
	if err != nil {
		t.Fatal(err)
	}
	it, err := mod.Price(l, lengths, Exec{CP: exec}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out float64
	for i := range l.Domains {
		f, _ := it.ChunkSeconds(0, 0, &l.Domains[i])
		out = max(out, f)
	}
	return out
}

// TestMixedRanksRunOnTheirKind: ranks 0..15 are H100s and 16..31 A100s; the
// same 8-rank group with the same sequences runs about 2-4× slower on the
// A100s (compute and NVLink), and a group spanning both kinds runs at the
// A100s' pace.
func TestMixedRanksRunOnTheirKind(t *testing.T) {
	mod := mixedModel(t)
	if mod.DeviceOf(15).Name != "H100-SXM" || mod.DeviceOf(16).Name != "A100-80G" || len(mod.Devices()) != 2 {
		t.Fatalf("devices: rank 15 %s, rank 16 %s, %d kinds", mod.DeviceOf(15).Name, mod.DeviceOf(16).Name, len(mod.Devices()))
	}
	if b := mod.KindBudgetTokens(); b[0] != 8192 || b[1] != 8192 {
		t.Errorf("budgets %v: equal HBM, want 8192 each", b)
	}
	lengths := []int{32768, 16384}
	on := func(first, size int) float64 {
		plan := &sched.Plan{PoolRanks: 32, Microbatches: []sched.Microbatch{{Groups: []sched.Group{{FirstRank: first, Size: size, Seqs: []int{0, 1}}}}}}
		return chunkForward(t, mod, plan, lengths, sched.UlyssesRing)
	}
	h, a, both := on(0, 8), on(16, 8), on(8, 16)
	if r := a / h; r < 2 || r > 4 {
		t.Errorf("A100 group %g s, H100 group %g s: ratio %g, want 2-4", a, h, r)
	}
	if both < on(16, 16)*(1-1e-9) {
		t.Errorf("a group spanning both kinds %g s runs faster than the A100s alone %g s", both, on(16, 16))
	}
}

// TestLayoutEqualIsEvenSplit: a group carrying the equal layout of the inner
// Ulysses degree the cost model picks prices what the same group without a
// layout prices, on one kind and on a mixed pool, within 0.1%: the layout's
// all-to-alls carry each rank's whole shard (⌈S/P⌉ tokens on the fullest),
// the even split's the mean S/P.
func TestLayoutEqualIsEvenSplit(t *testing.T) {
	mod := mixedModel(t)
	lengths := []int{40000, 9000, 700}
	for _, c := range []struct{ first, size int }{{0, 8}, {0, 16}, {16, 16}, {8, 16}, {0, 32}} {
		u := network.UlyssesDegreeWithin(mod.Topology(), mod.Job().Model, c.size, true)
		g := sched.Group{FirstRank: c.first, Size: c.size, Seqs: []int{0, 1, 2}}
		even := &sched.Plan{PoolRanks: 32, Microbatches: []sched.Microbatch{{Groups: []sched.Group{g}}}}
		g.Layout = equalLayout(c.size, u, 49700, mod.Job().Model.QueryHeads)
		laid := &sched.Plan{PoolRanks: 32, Microbatches: []sched.Microbatch{{Groups: []sched.Group{g}}}}
		a := chunkForward(t, mod, even, lengths, sched.UlyssesRing)
		b := chunkForward(t, mod, laid, lengths, sched.UlyssesRing)
		if math.Abs(a-b) > 1e-3*a {
			t.Errorf("ranks [%d, %d) u = %d: even %g s, equal layout %g s", c.first, c.first+c.size, u, a, b)
		}
	}
}

// equalLayout is the equal CP × HP layout (as sched/cphp's, which costmodel
// may not import).
func equalLayout(size, u, tokens, heads int) *sched.Layout {
	l := &sched.Layout{}
	r := size / u
	for h := range r {
		l.HPGroups = append(l.HPGroups, u)
		chunk := tokens / r
		if h < tokens%r {
			chunk++
		}
		for i := range u {
			s := chunk / u
			if i < chunk%u {
				s++
			}
			l.ShardTokens = append(l.ShardTokens, s)
			l.Heads = append(l.Heads, heads/u)
		}
	}
	return l
}

// TestLayoutShiftsWork: moving tokens and heads from the A100 ranks to the
// H100 ranks of a mixed group shortens its layer, and a layout that breaks
// its group (shards not summing to its tokens) is refused.
func TestLayoutShiftsWork(t *testing.T) {
	mod := mixedModel(t)
	lengths := []int{65536}
	g := sched.Group{FirstRank: 8, Size: 16, Seqs: []int{0}}
	g.Layout = equalLayout(16, 8, 65536, 32)
	even := chunkForward(t, mod, &sched.Plan{PoolRanks: 32, Microbatches: []sched.Microbatch{{Groups: []sched.Group{g}}}}, lengths, sched.UlyssesRing)
	asym := &sched.Layout{HPGroups: []int{8, 8}, ShardTokens: make([]int, 16), Heads: make([]int, 16)}
	for i := range 16 {
		asym.ShardTokens[i], asym.Heads[i] = 6144, 4 // H100s: 49,152 tokens of the chunk
		if i >= 8 {
			asym.ShardTokens[i] = 2048 // A100s: 16,384
		}
	}
	g.Layout = asym
	shifted := chunkForward(t, mod, &sched.Plan{PoolRanks: 32, Microbatches: []sched.Microbatch{{Groups: []sched.Group{g}}}}, lengths, sched.UlyssesRing)
	if !(shifted < 0.8*even) {
		t.Errorf("work shifted to the H100s: %g s, even %g s; want at least 20%% faster", shifted, even)
	}
	asym.ShardTokens[0]--
	l, err := step.NewLayout(&sched.Plan{PoolRanks: 32, Microbatches: []sched.Microbatch{{Groups: []sched.Group{g}}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Price(l, lengths, Exec{CP: sched.UlyssesRing}, 0); err == nil {
		t.Error("shards one token short: no error")
	}
}

// TestPlanningCluster: the planning description lists the kinds in rank
// order with their ranks and budgets, the A100's attention and linear time
// above the H100's, and rates and latencies positive.
func TestPlanningCluster(t *testing.T) {
	c := mixedModel(t).PlanningCluster()
	if len(c.Kinds) != 2 || c.Kinds[0].Name != "H100-SXM" || c.Kinds[1].Ranks != 16 || c.Kinds[1].BudgetTokens != 8192 || c.RanksPerNode != 8 || c.KVHeads != 8 {
		t.Fatalf("cluster %+v", c)
	}
	h, a := c.Kinds[0], c.Kinds[1]
	if r := a.AttentionSecondsPerToken2 / h.AttentionSecondsPerToken2; r < 1.5 || r > 5 {
		t.Errorf("attention A100/H100 = %g", r)
	}
	if r := a.LinearSecondsPerToken / h.LinearSecondsPerToken; r < 1.5 || r > 5 {
		t.Errorf("linear A100/H100 = %g", r)
	}
	if !(a.NICBytesPerSecond < h.NICBytesPerSecond) || !(c.OverheadSeconds > 0) || !(c.QBytesPerToken > 0) {
		t.Errorf("NIC %g vs %g, θ %g, Q %g", a.NICBytesPerSecond, h.NICBytesPerSecond, c.OverheadSeconds, c.QBytesPerToken)
	}
}
