package bytescale

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestOptions: δ must lie in [0, 1); the error names the key.
func TestOptions(t *testing.T) {
	for _, d := range []float64{-0.1, 1, math.NaN(), math.Inf(1)} {
		if _, err := New(Options{Delta: d, Balance: true}, sched.Env{}); err == nil || !strings.Contains(err.Error(), "delta = ") {
			t.Errorf("delta %v: %v", d, err)
		}
	}
	for _, d := range []float64{0, DefaultDelta, 0.99} {
		if _, err := New(Options{Delta: d, Balance: true}, sched.Env{}); err != nil {
			t.Errorf("delta %v: %v", d, err)
		}
	}
	if p, _ := New(DefaultOptions(), sched.Env{}); p.Name() != Name || p.opts.Delta != DefaultDelta {
		t.Errorf("defaults: %+v", p)
	}
}

// TestBadInput: the inputs are checked first; errors wrap ErrInvalidInput and
// a sequence longer than the largest group is an ErrSequenceTooLong.
func TestBadInput(t *testing.T) {
	pol, _ := New(DefaultOptions(), sched.Env{})
	in := sched.Inputs{PoolRanks: 4, BudgetTokens: 10, PP: 1, VPP: 1}
	if _, err := pol.Plan(nil, in); !errors.Is(err, sched.ErrInvalidInput) {
		t.Errorf("empty batch: %v", err)
	}
	var tooLong *sched.ErrSequenceTooLong
	if _, err := pol.Plan([]int{41}, in); !errors.As(err, &tooLong) || !errors.Is(err, sched.ErrInvalidInput) {
		t.Errorf("41 tokens on 4 ranks of 10: %v", err)
	}
	in.MaxDegree = 2
	if _, err := pol.Plan([]int{21}, in); !errors.As(err, &tooLong) {
		t.Errorf("21 tokens, degree limit 2 of 10: %v", err)
	}
}

// TestEPBlocksFilled: a frame covers whole EP blocks. A 5-rank sequence with
// EP 4 takes two blocks (ranks 0-7) and the three ranks it leaves take other
// units in the same microbatch; a lone short sequence is widened over its
// block; every rank of a block runs the same microbatches.
func TestEPBlocksFilled(t *testing.T) {
	lengths := []int{5 * 1024}
	for range 40 {
		lengths = append(lengths, 1000)
	}
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 1024, PP: 1, VPP: 1, EP: 4}
	plan, _ := mustPlan(t, lengths, in)
	g, m := groupOf(t, plan, 0)
	if g.FirstRank != 0 || g.Size != 5 {
		t.Fatalf("the 5K sequence on %+v, want ranks 0..4", g)
	}
	held := 0
	for _, other := range plan.Microbatches[m].Groups {
		if other.FirstRank >= 5 && other.LastRank() <= 7 {
			held += other.Size
		}
	}
	if held != 3 {
		t.Errorf("ranks 5-7 of the 5K sequence's second block hold %d ranks of groups in its microbatch, want 3: %+v", held, plan.Microbatches[m].Groups)
	}
	for b := 0; b < 16; b += 4 {
		want := plan.RankMicrobatches(b)
		for r := b + 1; r < b+4; r++ {
			if got := plan.RankMicrobatches(r); !reflect.DeepEqual(got, want) {
				t.Errorf("rank %d runs microbatches %v, rank %d of its block %v", r, got, b, want)
			}
		}
	}

	// One short sequence on a block of 4: widened to the block.
	plan, _ = mustPlan(t, []int{100}, sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1, EP: 4})
	if d := plan.Diagnostics.(*Diagnostics); len(plan.Microbatches) != 1 || plan.Microbatches[0].Groups[0].Size != 4 || d.WidenedRanks != 3 ||
		plan.Microbatches[0].Closed != "1 frame, first unit from bucket 0; 3 ranks widened" {
		t.Errorf("one short sequence, EP 4: %+v, diagnostics %+v", plan.Microbatches, d)
	}
}

// TestWidenAtTheDegreeLimit: widening stops at Inputs.MaxDegree; a group with
// two sequences then splits, and a single sequence that cannot cover its block
// is ErrCannotPlan.
func TestWidenAtTheDegreeLimit(t *testing.T) {
	in := sched.Inputs{PoolRanks: 4, BudgetTokens: 1024, PP: 1, VPP: 1, EP: 4, MaxDegree: 2}
	plan, _ := mustPlan(t, []int{300, 200}, in)
	groups := plan.Microbatches[0].Groups
	if len(groups) != 2 || groups[0].Size != 2 || groups[1].Size != 2 {
		t.Errorf("two sequences in one bin, limit 2, block 4: %+v, want two groups of 2", groups)
	}
	pol, _ := New(DefaultOptions(), sched.Env{})
	if _, err := pol.Plan([]int{300}, in); !errors.Is(err, sched.ErrCannotPlan) || !strings.Contains(err.Error(), "degree limit 2") {
		t.Errorf("one sequence, limit 2, block 4: %v", err)
	}
}

// TestVPPCountsLegal: with vpp > 1 every rank's count is one Megatron's
// interleaved schedule runs; no legal count (N < pp), or too few sequences to
// split, is ErrCannotPlan.
func TestVPPCountsLegal(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	pol, _ := New(DefaultOptions(), sched.Env{})
	planned, split := 0, 0
	for range 1000 {
		lengths, in := randomInputs(rng)
		in.VPP = 2 + rng.IntN(2)
		if rng.IntN(3) == 0 {
			in.MicrobatchGroupSize = in.PP + rng.IntN(3)
		}
		plan, err := pol.Plan(lengths, in)
		if errors.Is(err, sched.ErrCannotPlan) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.Validate(plan, lengths, in, pol.Promises()); err != nil {
			t.Fatal(err)
		}
		for r := range in.PoolRanks {
			if m := len(plan.RankMicrobatches(r)); m > 0 {
				if err := sched.CheckMicrobatchCount(in.PP, in.VPP, m, in.GroupSizeN()); err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
		}
		planned++
		split += plan.Diagnostics.(*Diagnostics).VPPSplits
	}
	if planned < 800 || split == 0 {
		t.Errorf("planned %d of 1000 with %d splits", planned, split)
	}
	in := sched.Inputs{PoolRanks: 4, BudgetTokens: 1024, PP: 2, VPP: 2, MicrobatchGroupSize: 1}
	if _, err := pol.Plan([]int{10, 20, 30}, in); !errors.Is(err, sched.ErrCannotPlan) || !strings.Contains(err.Error(), "N >= pp") {
		t.Errorf("N = 1 < pp = 2: %v", err)
	}
	in.MicrobatchGroupSize = 0
	if _, err := pol.Plan([]int{4000}, in); !errors.Is(err, sched.ErrCannotPlan) || !strings.Contains(err.Error(), "no microbatch holds two sequences") {
		t.Errorf("one sequence, pp 2 vpp 2: %v", err)
	}
}

// TestWorkCounted: the plan's StallWork counts every kind of work and
// WorkUnits is its sum; every sequence is visited at least once.
func TestWorkCounted(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for range 200 {
		lengths, in := randomInputs(rng)
		plan, _ := mustPlan(t, lengths, in)
		w := plan.StallWork
		if w.HeapOps <= 0 || w.SequenceVisits < int64(len(lengths)) || w.PoolVisits <= 0 ||
			plan.WorkUnits != w.HeapOps+w.SequenceVisits+w.PoolVisits {
			t.Fatalf("%d sequences: work %+v, units %d", len(lengths), w, plan.WorkUnits)
		}
		d := plan.Diagnostics.(*Diagnostics)
		if d.HeapOps != w.HeapOps || d.SequenceVisits != w.SequenceVisits || d.PoolVisits != w.PoolVisits {
			t.Fatalf("diagnostics %+v, stall work %+v", d, w)
		}
	}
}

// TestDiagnosticsSummary: the summary's names, in order, for both strategies.
func TestDiagnosticsSummary(t *testing.T) {
	lengths := []int{3000, 500, 400, 300, 200}
	for _, tc := range []struct {
		pp   int
		want []string
	}{
		{1, []string{"strategy", "δ (of the round's max)", "lanes (EP blocks)", "long sequences (D = ⌈s/C⌉)",
			"short sequences / bins", "buckets", "rounds / frames", "widened ranks", "MBs per rank", "est. finish (tokens²)",
			"heap ops", "sequence visits", "pool visits"}},
		{2, []string{"strategy", "δ (of the round's max)", "lanes (EP blocks)", "pipeline groups", "long sequences (D = ⌈s/C⌉)",
			"short sequences / bins", "buckets", "rounds / frames", "widened ranks", "MBs per rank", "est. finish (tokens²)",
			"heap ops", "sequence visits", "pool visits"}},
	} {
		plan, _ := mustPlan(t, lengths, sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: tc.pp, VPP: 1})
		var names []string
		for _, kv := range plan.Diagnostics.Summary() {
			names = append(names, kv.Name)
		}
		if !reflect.DeepEqual(names, tc.want) {
			t.Errorf("pp %d: %v", tc.pp, names)
		}
		if s := plan.Diagnostics.Summary()[0].Value; s != map[int]string{1: DPBalance, 2: PPBalance}[tc.pp] {
			t.Errorf("pp %d: strategy %s", tc.pp, s)
		}
	}
}
