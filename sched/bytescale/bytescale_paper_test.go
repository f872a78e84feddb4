package bytescale

// One test per behaviour the ByteScale paper states (SIGCOMM 2025, arXiv
// 2502.21231), in the paper's order, then the choices the package doc makes
// where the paper is silent.

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// groupOf returns the group running sequence id, and its microbatch.
func groupOf(t *testing.T, p *sched.Plan, id int) (sched.Group, int) {
	t.Helper()
	for m, mb := range p.Microbatches {
		for _, g := range mb.Groups {
			if slices.Contains(g.Seqs, id) {
				return g, m
			}
		}
	}
	t.Fatalf("sequence %d not placed", id)
	return sched.Group{}, 0
}

// mustPlan plans with the default options and validates the plan.
func mustPlan(t *testing.T, lengths []int, in sched.Inputs) (*sched.Plan, *planner) {
	t.Helper()
	pol, _ := New(DefaultOptions(), sched.Env{})
	plan, pl, err := pol.plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Validate(plan, lengths, in, pol.Promises()); err != nil {
		t.Fatal(err)
	}
	return plan, pl
}

// randomInputs draws a batch and inputs with pp = vpp = 1 or not, EP blocks
// or not.
func randomInputs(rng *rand.Rand) ([]int, sched.Inputs) {
	ep := 1 << rng.IntN(3)
	g := ep * (1 + rng.IntN(24))
	b := 16 << rng.IntN(8)
	in := sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1 + rng.IntN(3), VPP: 1, EP: ep,
		OverheadRatio: float64(rng.IntN(3)) * float64(b) * float64(b)}
	lengths := make([]int, 1+rng.IntN(150))
	for i := range lengths {
		lengths[i] = 1 + int(float64(g*b)*rng.Float64()/float64(uint(1)<<rng.IntN(10)))
	}
	return lengths, in
}

// §5.1: "HDP can use any amount of ranks in [1, d_hdp] to handle a sequence
// without considering the divisibility constraints (e.g. with d_hdp = 128, HDP
// can use 96 ranks to handle a 768K sequence while use rest 32 ranks to handle
// 32 × 8K sequences individually)", and §8.3: "a 312K sequence is sharded by
// only 39 HDP ranks". D(s) = ⌈s/C⌉, not a power of two, not aligned.
func TestPaperMinimumRanksAnyInteger(t *testing.T) {
	const c = 8192
	for _, tc := range []struct{ s, want int }{
		{c - 1, 1}, {c, 1}, {c + 1, 2}, {3 * c, 3}, {312 * 1024, 39}, {768 * 1024, 96}, {2 << 20, 256},
	} {
		if got := minRanks(int64(tc.s), c); got != tc.want {
			t.Errorf("D(%d) at C = %d: %d, want %d", tc.s, c, got, tc.want)
		}
	}

	// 768K on 96 ranks beside 32 × 8K, one per rank, in the same time step.
	lengths := []int{768 * 1024}
	for range 32 {
		lengths = append(lengths, c)
	}
	in := sched.Inputs{PoolRanks: 128, BudgetTokens: c, PP: 1, VPP: 1}
	plan, _ := mustPlan(t, lengths, in)
	if len(plan.Microbatches) != 1 {
		t.Fatalf("%d microbatches, want 1: %+v", len(plan.Microbatches), plan.Microbatches)
	}
	groups := plan.Microbatches[0].Groups
	if len(groups) != 33 || !reflect.DeepEqual(groups[0], sched.Group{FirstRank: 0, Size: 96, Seqs: []int{0}}) {
		t.Fatalf("groups %+v, want the 768K sequence on ranks 0..95 and 32 singles", groups[:min(3, len(groups))])
	}
	for i, g := range groups[1:] {
		if g.Size != 1 || g.FirstRank != 96+i || len(g.Seqs) != 1 {
			t.Errorf("group %d = %+v, want one 8K sequence on rank %d", i+1, g, 96+i)
		}
	}

	// A 312K sequence among short ones on 64 ranks: a group of exactly 39.
	lengths = []int{312 * 1024}
	for i := range 300 {
		lengths = append(lengths, 500+37*i%7000)
	}
	for _, pp := range []int{1, 4} {
		in = sched.Inputs{PoolRanks: 64, BudgetTokens: c, PP: pp, VPP: 1}
		plan, _ = mustPlan(t, lengths, in)
		if g, _ := groupOf(t, plan, 0); g.Size != 39 || len(g.Seqs) != 1 {
			t.Errorf("pp %d: the 312K sequence runs on %+v, want alone on 39 ranks", pp, g)
		}
	}

	// On lanes of one rank (pp = vpp = 1, no EP) every long sequence runs alone
	// on exactly D(s) ranks, at any rank.
	rng := rand.New(rand.NewPCG(11, 12))
	for range 500 {
		lengths, in := randomInputs(rng)
		in.PP, in.EP = 1, 0
		plan, _ := mustPlan(t, lengths, in)
		for id, s := range lengths {
			if s < in.BudgetTokens {
				continue
			}
			if g, _ := groupOf(t, plan, id); g.Size != minRanks(int64(s), in.BudgetTokens) || len(g.Seqs) != 1 {
				t.Fatalf("G %d C %d: sequence %d of %d tokens on %+v, want alone on D = %d", in.PoolRanks, in.BudgetTokens,
					id, s, g, minRanks(int64(s), in.BudgetTokens))
			}
		}
	}
}

// bestFitReference is best-fit decreasing written plainly: sequences longest
// first (ties: lower id), each into the bin with the least room that holds it
// (ties: the earliest), else a new bin.
func bestFitReference(lengths []int, c int) [][]int {
	var ids []int
	for id, s := range lengths {
		if s < c {
			ids = append(ids, id)
		}
	}
	slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(lengths[b], lengths[a]) })
	var bins [][]int
	var room []int
	for _, id := range ids {
		best := -1
		for b := range bins {
			if room[b] >= lengths[id] && (best < 0 || room[b] < room[best]) {
				best = b
			}
		}
		if best < 0 {
			bins, room = append(bins, nil), append(room, c)
			best = len(bins) - 1
		}
		bins[best] = append(bins[best], id)
		room[best] -= lengths[id]
	}
	return bins
}

// Alg. 1 lines 7-9: "Pack subset by best-fit strategy to fill capacity C";
// each bin is one rank (D = 1). Best fit, not first fit: with C = 10 and
// lengths 7, 5, 4, 1, the 1 goes to the bin with room 1 ({5, 4}), not the
// first bin with room ({7}). On random batches the bins equal a plain
// reference, and, as for any best-fit packing, at most one bin is half full or
// less.
func TestPaperBestFitPacking(t *testing.T) {
	units, long, _, _ := buildUnits([]int{7, 5, 4, 1}, 10, plainRanks(10))
	if long != 0 || len(units) != 2 || !slices.Equal(units[0].seqs, []int{0}) || !slices.Equal(units[1].seqs, []int{1, 2, 3}) {
		t.Fatalf("units %+v, want bins {7} and {5, 4, 1}", units)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for range 2000 {
		c := 1 + rng.IntN(5000)
		lengths := make([]int, 1+rng.IntN(200))
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(max(1, c*(1+rng.IntN(3))/2))
		}
		units, long, _, _ := buildUnits(lengths, c, plainRanks(c))
		var bins [][]int
		halfFull := 0
		for _, u := range units[long:] {
			bins = append(bins, u.seqs)
			if u.ranks != 1 || u.tokens > int64(c) {
				t.Fatalf("C %d: bin %+v", c, u)
			}
			if 2*u.tokens <= int64(c) {
				halfFull++
			}
		}
		if want := bestFitReference(lengths, c); !reflect.DeepEqual(bins, want) {
			t.Fatalf("C %d lengths %v: bins %v, want %v", c, lengths, bins, want)
		}
		if halfFull > 1 {
			t.Fatalf("C %d: %d bins at most half full", c, halfFull)
		}
	}
}

// §5.1: HDP "is defined to evenly distribute tokens across devices" with a
// rank capacity of C tokens: in every microbatch every rank holds at most C
// tokens (Σ s/k), the WithinBudget promise, on random batches with pipelines
// and EP blocks; and a bin holds at least half of C but for one.
func TestPaperTokenLevelBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	pol, _ := New(DefaultOptions(), sched.Env{})
	if !pol.Promises().WithinBudget || pol.Promises().Aligned || pol.Promises().CoversPool {
		t.Fatalf("promises %+v, want WithinBudget only", pol.Promises())
	}
	for range 2000 {
		lengths, in := randomInputs(rng)
		plan, err := pol.Plan(lengths, in)
		if errors.Is(err, sched.ErrCannotPlan) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for m, mb := range plan.Microbatches {
			for _, g := range mb.Groups {
				tokens := 0
				for _, id := range g.Seqs {
					tokens += lengths[id]
				}
				if tokens > g.Size*in.BudgetTokens {
					t.Fatalf("microbatch %d group %+v: %d tokens on %d ranks exceed C = %d per rank", m, g, tokens, g.Size, in.BudgetTokens)
				}
			}
		}
	}
}

// §6.1: "we redefine a more flexible strategy, which enables different HDP
// ranks to process different numbers of micro-batches (same size but differ in
// workloads)", "it makes all the ranks finish computation at the same time";
// §6.2 (Fig. 12): the pipeline with the longer micro-batches gets 8, the other
// 18. A 4K sequence on 4 of 8 ranks (C = 1K) and 64 sequences of 1K: the 4
// ranks of the long one run fewer microbatches than the others, and all ranks
// finish within one bin's time, with pp = 1 (lanes) and pp = 2 (two pipeline
// groups).
func TestPaperLessWorkMoreMicrobatches(t *testing.T) {
	lengths := []int{4096}
	for range 64 {
		lengths = append(lengths, 1024)
	}
	for _, pp := range []int{1, 2} {
		in := sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: pp, VPP: 1}
		plan, pl := mustPlan(t, lengths, in)
		count := func(r int) int { return len(plan.RankMicrobatches(r)) }
		for r := range 8 {
			long := r < 4
			if long && count(r) >= count(4) || !long && count(r) != count(4) {
				t.Errorf("pp %d: rank %d runs %d microbatches, rank 4 runs %d: want fewer on ranks 0-3 (the 4K sequence)", pp, r, count(r), count(4))
			}
		}
		load := make([]float64, 8)
		for _, mb := range plan.Microbatches {
			for _, g := range mb.Groups {
				for _, id := range g.Seqs {
					for r := g.FirstRank; r <= g.LastRank(); r++ {
						load[r] += float64(lengths[id]) * float64(lengths[id]) / float64(g.Size)
					}
				}
			}
		}
		if spread := slices.Max(load) - slices.Min(load); spread > 1024*1024 {
			t.Errorf("pp %d: per-rank loads %v spread by %g, more than one bin (%d)", pp, load, spread, 1024*1024)
		}
		d := plan.Diagnostics.(*Diagnostics)
		if d.EstimatedMaxTime-d.EstimatedMinTime > 1024*1024 || d.RankMicrobatchesMin >= d.RankMicrobatchesMax {
			t.Errorf("pp %d: diagnostics %+v", pp, d)
		}
		if pp == 2 && (d.PipelineGroups != 2 || len(pl.slotFirst) != 2) {
			t.Errorf("pp 2: %d pipeline groups, want 2 of 4 ranks", d.PipelineGroups)
		}
	}
}

// §6, Alg. 2 lines 12-15 and §6.2-6.3: DP-Balance (no pipeline) selects
// sequences "from the first bucket" only, so at each time step every rank runs
// the same length level; PP-Balance selects them "sequentially from all
// buckets", so consecutive selections, which go to different pipelines, draw
// different length levels. The first unit of each frame, in assignment order:
// DP-Balance's buckets never go back; PP-Balance's cycle 0, 1, 2, ... while
// every bucket still holds units. And DP-Balance's first time step holds the
// longest units side by side.
func TestPaperDPBalanceVersusPPBalance(t *testing.T) {
	var lengths []int
	for i := range 64 {
		lengths = append(lengths, 1024*(1+i%9)+i) // 1K..9K: D = 1..9 at C = 1K
	}
	for i := range 400 {
		lengths = append(lengths, 50+i%500)
	}
	dp, dpl := mustPlan(t, lengths, sched.Inputs{PoolRanks: 32, BudgetTokens: 1024, PP: 1, VPP: 1})
	if d := dp.Diagnostics.(*Diagnostics); d.Strategy != DPBalance || d.Buckets < 3 {
		t.Fatalf("pp 1: %+v, want DP-Balance with >= 3 buckets", d)
	}
	for i := 1; i < len(dpl.frames); i++ {
		if dpl.frames[i].bucket < dpl.frames[i-1].bucket {
			t.Fatalf("DP-Balance: frame %d takes from bucket %d after bucket %d", i, dpl.frames[i].bucket, dpl.frames[i-1].bucket)
		}
	}
	if c, want := dp.Microbatches[0].Closed, fmt.Sprintf("%d frames, first units from buckets 0", len(dp.Microbatches[0].Groups)); c != want {
		t.Errorf("DP-Balance time step 0: %q, want %q (one frame per group, all from the first bucket)", c, want)
	}
	// The fresh first round: the longest units, in order, from rank 0.
	first := slices.Clone(lengths)
	slices.SortFunc(first, func(a, b int) int { return cmp.Compare(b, a) })
	rank := 0
	for i, g := range dp.Microbatches[0].Groups[:3] {
		if g.FirstRank != rank || len(g.Seqs) != 1 || lengths[g.Seqs[0]] != first[i] {
			t.Errorf("DP-Balance time step 0, group %d: %+v (length %d), want the %d-th longest (%d) at rank %d", i, g, lengths[g.Seqs[0]], i, first[i], rank)
		}
		rank += g.Size
	}

	_, ppl := mustPlan(t, lengths, sched.Inputs{PoolRanks: 32, BudgetTokens: 1024, PP: 2, VPP: 1})
	k := len(ppl.bucketLo) - 1
	if k < 3 {
		t.Fatalf("pp 2: %d buckets, want >= 3", k)
	}
	for i := range k {
		if ppl.frames[i].bucket != i {
			buckets := make([]int, k)
			for j := range k {
				buckets[j] = ppl.frames[j].bucket
			}
			t.Fatalf("PP-Balance: the first %d frames take from buckets %v, want 0..%d in turn", k, buckets, k-1)
		}
	}
}

// §6, Alg. 2 lines 7-11: the targets are the ranks more than δ behind the
// slowest, and "ranks with shorter execution times are assigned with more
// sequences" while any is left. Serving the least-loaded target each time, on
// batches of short sequences with ample work (bins, one lane each), every lane
// ends within one frame of the slowest with δ = 0, and within δ of it plus one
// frame with δ = 0.3; the fresh first round gives every lane one frame.
func TestPaperTargetsWithinDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for range 300 {
		c := 16 << rng.IntN(8)
		in := sched.Inputs{PoolRanks: 1 + rng.IntN(32), BudgetTokens: c, PP: 1, VPP: 1,
			OverheadRatio: float64(rng.IntN(3)) * float64(c) * float64(c)}
		var lengths []int
		for tokens := 0; tokens < 8*in.PoolRanks*c; tokens += lengths[len(lengths)-1] {
			lengths = append(lengths, 1+rng.IntN(c-1))
		}
		for _, delta := range []float64{0, 0.3} {
			pol, _ := New(Options{Delta: delta, Balance: true}, sched.Env{})
			plan, pl, err := pol.plan(lengths, in)
			if err != nil {
				t.Fatal(err)
			}
			var largest float64
			for _, f := range pl.frames {
				largest = max(largest, pl.phaseTime(f.phases[0]))
			}
			maxT := slices.Max(pl.time)
			if minT := slices.Min(pl.time); minT < maxT*(1-delta)-largest*(1+1e-9) {
				t.Fatalf("G %d C %d δ %g: lanes end between %g and %g, more than δ and one frame (%g) apart",
					in.PoolRanks, c, delta, minT, maxT, largest)
			}
			for r := range in.PoolRanks {
				if !slices.Contains(plan.RankMicrobatches(r), 0) {
					t.Fatalf("G %d δ %g: rank %d has no frame in the first (fresh) round", in.PoolRanks, delta, r)
				}
			}
		}
	}
}

// Determinism (package sched: policies are pure): the same batch and inputs
// give the same plan, on reruns and after planning other batches.
func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	pol, _ := New(DefaultOptions(), sched.Env{})
	type tc struct {
		lengths []int
		in      sched.Inputs
	}
	var cases []tc
	for range 200 {
		l, in := randomInputs(rng)
		in.VPP = 1 + rng.IntN(2)
		cases = append(cases, tc{l, in})
	}
	first := make([]*sched.Plan, len(cases))
	for i, c := range cases {
		first[i], _ = pol.Plan(c.lengths, c.in)
	}
	for i := len(cases) - 1; i >= 0; i-- {
		again, _ := pol.Plan(cases[i].lengths, cases[i].in)
		if !reflect.DeepEqual(again, first[i]) {
			t.Fatalf("case %d: the rerun differs", i)
		}
	}
}

// §6.2 Insight 1: "only transitions add bubbles", so a pipeline group runs
// its microbatches in increasing order of estimated time, similar lengths
// back to back, whatever order Alg. 2 assigned them in.
func TestPaperPipelineSimilarOrder(t *testing.T) {
	lengths := make([]int, 0, 400)
	for i := range 400 {
		lengths = append(lengths, 64+(i*7919)%4000)
	}
	lengths = append(lengths, 6000, 5000, 3500, 9000)
	in := sched.Inputs{PoolRanks: 32, BudgetTokens: 1024, PP: 2, VPP: 1}
	plan, pl := mustPlan(t, lengths, in)
	if !pl.lockstep || len(pl.slotFirst) < 2 {
		t.Fatalf("want lock-step pipeline groups, got %d", len(pl.slotFirst))
	}
	reordered := false
	for s, first := range pl.slotFirst {
		lo, hi := first*pl.ep, (first+pl.slotLanes[s])*pl.ep
		var times []float64
		for _, mb := range plan.Microbatches {
			t := -1.0
			for _, g := range mb.Groups {
				if g.FirstRank >= lo && g.FirstRank < hi {
					var sq, tok int64
					for _, id := range g.Seqs {
						sq += int64(lengths[id]) * int64(lengths[id])
						tok += int64(lengths[id])
					}
					t = max(t, pl.model.perRank(sq, tok, g.Size))
				}
			}
			if t >= 0 {
				times = append(times, t)
			}
		}
		if !slices.IsSorted(times) {
			t.Errorf("group %d runs MB times %v, want increasing", s, times)
		}
		var assigned []float64
		for _, f := range pl.frames {
			if f.slot == s {
				var ft float64
				for _, ph := range f.phases {
					ft += pl.phaseTime(ph)
				}
				assigned = append(assigned, ft)
			}
		}
		reordered = reordered || !slices.IsSorted(assigned)
	}
	if !reordered {
		t.Error("every group was assigned in increasing order already: the test shows nothing")
	}
}

// plainRanks is D(s) = ⌈s/C⌉ at ratio 0, Alg. 1 without offload.
func plainRanks(c int) func(int) (float64, int) {
	return func(s int) (float64, int) { return 0, minRanks(int64(s), c) }
}
