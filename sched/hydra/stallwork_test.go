package hydra_test

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
)

// buildFields are the plan-building counts of w, in StallWork's order.
func buildFields(w sched.StallWork) [7]int64 {
	return [7]int64{w.PreparedSequences, w.SortSteps, w.BatchSlots, w.SequencePieces, w.GroupSequences, w.Groups, w.GroupRanks}
}

// TestPlanBuildWork counts hand-built plans whose work is known: slots G·M,
// pieces Σ |Seqs|·Size, and so on (see PlanBuildWork).
func TestPlanBuildWork(t *testing.T) {
	g := func(first, size int, seqs ...int) sched.Group {
		return sched.Group{FirstRank: first, Size: size, Seqs: seqs}
	}
	mb := func(gs ...sched.Group) sched.Microbatch { return sched.Microbatch{Groups: gs} }
	for _, c := range []struct {
		name     string
		n, ranks int
		mbs      []sched.Microbatch
		want     [7]int64 // prepared, sort, slots, pieces, group seqs, groups, group ranks
	}{
		{name: "no MB", n: 0, ranks: 8, want: [7]int64{}},
		{name: "one group of 4, two sequences", n: 2, ranks: 4,
			mbs:  []sched.Microbatch{mb(g(0, 4, 0, 1))},
			want: [7]int64{2, 2, 4, 8, 2, 1, 4}},
		{name: "idle rank, two MBs", n: 5, ranks: 4,
			// MB 0: ranks 0-1 run 0, 1, 2; rank 2 runs 3; rank 3 idle. MB 1: all 4 run 4.
			mbs:  []sched.Microbatch{mb(g(0, 2, 0, 1, 2), g(2, 1, 3)), mb(g(0, 4, 4))},
			want: [7]int64{5, 5 * 3, 8, 3*2 + 1 + 4, 5, 3, 2 + 1 + 4}},
		{name: "degree 8 and 8 singles", n: 9, ranks: 16,
			mbs:  []sched.Microbatch{mb(g(0, 8, 0), g(8, 1, 1), g(9, 1, 2), g(10, 1, 3), g(11, 1, 4), g(12, 1, 5), g(13, 1, 6), g(14, 1, 7), g(15, 1, 8))},
			want: [7]int64{9, 9 * 4, 16, 8 + 8, 9, 9, 16}},
	} {
		var w sched.StallWork
		w.HeapOps = 7 // untouched
		hydra.PlanBuildWork(&w, c.n, c.ranks, c.mbs)
		if got := buildFields(w); got != c.want || w.HeapOps != 7 {
			t.Errorf("%s: got %v (heap ops %d), want %v", c.name, got, w.HeapOps, c.want)
		}
	}
}

// TestSortSteps: n·⌈log₂ n⌉.
func TestSortSteps(t *testing.T) {
	for _, c := range []struct {
		n    int
		want int64
	}{{0, 0}, {1, 0}, {2, 2}, {3, 6}, {4, 8}, {5, 15}, {1024, 10240}, {1025, 1025 * 11}} {
		if got := hydra.SortSteps(c.n); got != c.want {
			t.Errorf("SortSteps(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestPlanStallWorkKnown plans batches whose plans are known and checks the
// plan-building counts of both policies (TestRandomPlanBuildWork checks random
// cases against PlanBuildWork of their own microbatches).
func TestPlanStallWorkKnown(t *testing.T) {
	for _, c := range []struct {
		name    string
		lengths []int
		in      sched.Inputs
		want    [7]int64
	}{
		// B = 2, s = 8: C_mem = C* = 4 (pp = 1); a group of 4 holds Σ s² <= 64,
		// one sequence: two MBs of one group of 4 ranks and one sequence.
		{name: "two sequences of degree 4", lengths: []int{8, 8},
			in:   sched.Inputs{PoolRanks: 4, BudgetTokens: 2, PP: 1, VPP: 1},
			want: [7]int64{2, 2, 8, 8, 2, 2, 8}},
		// B = 8: four sequences of 8 tokens at degree 1 on 4 ranks, one MB.
		{name: "four singles", lengths: []int{8, 8, 8, 8},
			in:   sched.Inputs{PoolRanks: 4, BudgetTokens: 8, PP: 1, VPP: 1},
			want: [7]int64{4, 8, 4, 4, 4, 4, 4}},
	} {
		for _, mk := range []func(hydra.Options) (*hydra.Policy, error){hydra.New, hydra.NewScan} {
			p, _ := mk(hydra.DefaultOptions())
			plan, err := p.Plan(c.lengths, c.in)
			if err != nil {
				t.Fatalf("%s, %s: %v", c.name, p.Name(), err)
			}
			if got := buildFields(plan.StallWork); got != c.want {
				t.Errorf("%s, %s: got %v, want %v (plan %+v)", c.name, p.Name(), got, c.want, plan.Microbatches)
			}
		}
	}
}

// TestPlanBuildPrices: PlannerStallSeconds prices each plan-building count at
// its calib.CPython constant (a group at its batch-building step plus its
// metadata record).
func TestPlanBuildPrices(t *testing.T) {
	c := calib.CPython
	for _, k := range []struct {
		w    sched.StallWork
		want float64
	}{
		{sched.StallWork{PreparedSequences: 1000}, 1000 * c.PreparedSequenceSeconds.Value},
		{sched.StallWork{SortSteps: 1000}, 1000 * c.SortStepSeconds.Value},
		{sched.StallWork{BatchSlots: 1000}, 1000 * c.BatchSlotSeconds.Value},
		{sched.StallWork{SequencePieces: 1000}, 1000 * c.SequencePieceSeconds.Value},
		{sched.StallWork{GroupSequences: 1000}, 1000 * c.GroupSequenceSeconds.Value},
		{sched.StallWork{Groups: 1000}, 1000 * (c.GroupBatchSeconds.Value + c.GroupMetaSeconds.Value)},
		{sched.StallWork{GroupRanks: 1000}, 1000 * c.GroupRankSeconds.Value},
	} {
		if got := costmodel.PlannerStallSeconds(k.w); math.Abs(got-k.want) > 1e-15 || got <= 0 {
			t.Errorf("%+v: %g s, want %g", k.w, got, k.want)
		}
	}
}
