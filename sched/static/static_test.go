package static

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

func newPolicy(t *testing.T, o Options) sched.Policy {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPaperDegrees: "cp=8 at 32K and cp=32 at 256K" (hydra-paper.txt §6.1).
func TestPaperDegrees(t *testing.T) {
	for _, c := range []struct{ context, budget, want int }{
		{32768, 4096, 8},
		{262144, 8192, 32},
		{4096, 4096, 1},
		{4097, 4096, 2},
		{131072, 8192, 16},
	} {
		if got := Degree([]int{1}, sched.Inputs{BudgetTokens: c.budget, ContextTokens: c.context}, 0); got != c.want {
			t.Errorf("context %d, B %d: degree %d, want %d", c.context, c.budget, got, c.want)
		}
	}
	if got := Degree([]int{100, 9000}, sched.Inputs{BudgetTokens: 4096}, 0); got != 4 {
		t.Errorf("no context: degree from the longest sequence = %d, want 4", got)
	}
}

// TestPlanByHand: G = 4, B = 4, context 8 -> cp 2, dp 2, bins of 8 tokens.
func TestPlanByHand(t *testing.T) {
	lengths := []int{5, 3, 4, 4, 2, 7, 1}
	// Next-fit into bins of cp·B = 8 tokens: [5 3] [4 4] [2] [7 1] (2+7 > 8 closes
	// the third bin), i.e. {0,1} {2,3} {4} {5,6}: 4 bins, a multiple of dp = 2.
	p := newPolicy(t, Options{})
	plan, err := p.Plan(lengths, sched.Inputs{PoolRanks: 4, BudgetTokens: 4, PP: 1, VPP: 1, ContextTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := [][][]int{
		{{0, 1}, {0, 1}, {2, 3}, {2, 3}},
		{{4}, {4}, {5, 6}, {5, 6}},
	}
	if got := plan.PerRank(); !reflect.DeepEqual(got, want) {
		t.Errorf("plan %v, want %v", got, want)
	}
}

// TestPadding: 3 bins with dp = 2 need one more: the last multi-sequence bin
// gives up its last sequence; with vpp the multiple is dp·N.
func TestPadding(t *testing.T) {
	lengths := []int{8, 8, 4, 4}
	in := sched.Inputs{PoolRanks: 4, BudgetTokens: 4, PP: 2, VPP: 1, ContextTokens: 8}
	plan, err := newPolicy(t, Options{}).Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	want := [][][]int{{{0}, {0}, {1}, {1}}, {{2}, {2}, {3}, {3}}}
	if got := plan.PerRank(); !reflect.DeepEqual(got, want) {
		t.Errorf("plan %v, want %v", got, want)
	}
	// With vpp 2 and N = pp = 2 the multiple is dp·N = 4: the bins {0} {1} {2,3}
	// become {0} {1} {2} {3}, two microbatches of dp 2 (a multiple of N).
	in.VPP = 2
	plan, err = newPolicy(t, Options{}).Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Microbatches)%in.GroupSizeN() != 0 {
		t.Errorf("%d microbatches, want a multiple of N = %d", len(plan.Microbatches), in.GroupSizeN())
	}
	// Too few sequences to pad to dp·N = 8 bins: Megatron asserts, we return an error.
	in.PoolRanks, in.PP = 8, 4
	_, err = newPolicy(t, Options{}).Plan([]int{8, 8}, in)
	if !errors.Is(err, ErrNotEnoughToPad) {
		t.Errorf("error %v, want ErrNotEnoughToPad", err)
	}
}

func TestMaxSeqs(t *testing.T) {
	plan, err := newPolicy(t, Options{MaxSeqs: 2}).Plan([]int{1, 1, 1, 1}, sched.Inputs{PoolRanks: 2, BudgetTokens: 8, PP: 1, VPP: 1, ContextTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.PerRank(); !reflect.DeepEqual(got, [][][]int{{{0, 1}, {2, 3}}}) {
		t.Errorf("plan %v", got)
	}
}

func TestErrors(t *testing.T) {
	if _, err := New(Options{Degree: 3}); err == nil {
		t.Error("degree 3 accepted")
	}
	// The degree must divide the pool.
	_, err := newPolicy(t, Options{}).Plan([]int{100}, sched.Inputs{PoolRanks: 6, BudgetTokens: 8, PP: 1, VPP: 1, ContextTokens: 64})
	if err == nil {
		t.Error("degree 8 on a pool of 6 accepted")
	}
	var tooLong *sched.ErrSequenceTooLong
	_, err = newPolicy(t, Options{}).Plan([]int{100}, sched.Inputs{PoolRanks: 8, BudgetTokens: 8, PP: 1, VPP: 1})
	if !errors.As(err, &tooLong) || tooLong.Seq != 0 {
		t.Errorf("error %v, want ErrSequenceTooLong for sequence 0", err)
	}
}

// TestValidateProperty plans random long-tailed batches and checks every plan.
func TestValidateProperty(t *testing.T) {
	p := newPolicy(t, Options{})
	for i := range 300 {
		g := 8 << (i % 6)
		b := 1024 << (i % 3)
		ctx := b * min(g, 32)
		in := sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1 + i%4, VPP: 1 + i%2, ContextTokens: ctx}
		s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{TargetTokens: int64(g * b * 2), ContextTokens: ctx, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		lengths := s.Batch(0).Lengths
		plan, err := p.Plan(lengths, in)
		if errors.Is(err, ErrNotEnoughToPad) {
			continue
		}
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if err := sched.Validate(plan, lengths, in, p.(sched.Promiser).Promises()); err != nil {
			t.Fatalf("batch %d (G=%d B=%d): %v", i, g, b, err)
		}
		if n := len(plan.Microbatches) * (g / Degree(lengths, in, 0)); in.VPP > 1 && n%(g/Degree(lengths, in, 0)*in.GroupSizeN()) != 0 {
			t.Errorf("batch %d: bins %d not a multiple of dp·N", i, n)
		}
	}
}

// TestRingOption: ring changes the execution the plans assume, not the plans.
func TestRingOption(t *testing.T) {
	u, _ := New(Options{})
	r, _ := New(Options{Ring: true})
	if e, o := u.CPExec(); e != sched.Ulysses || o {
		t.Errorf("default exec %v %v", e, o)
	}
	if e, o := r.CPExec(); e != sched.Ring || o {
		t.Errorf("ring exec %v %v", e, o)
	}
	lengths := []int{4000, 100, 2000, 50, 700}
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1}
	a, err := u.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Plan(lengths, in)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("ring changed the plan")
	}
}

// TestPackFirstFit: first-fit decreasing into the bins asked for, more only
// when a sequence fits none; a count padded to the multiple.
func TestPackFirstFit(t *testing.T) {
	lengths := []int{5, 9, 2, 7, 3, 1, 4} // 31 tokens
	pk := PackFirstFit(lengths, 10, 4, 1)
	// Decreasing: 9 7 5 4 3 2 1 → [9 1] [7 3] [5 4] [2]: four bins.
	want := [][]int{{1, 5}, {3, 4}, {0, 6}, {2}}
	if !reflect.DeepEqual(pk.Bins, want) || pk.Packed != 4 || !pk.Padded || pk.TooLong != -1 {
		t.Errorf("bins %v (packed %d, padded %v), want %v", pk.Bins, pk.Packed, pk.Padded, want)
	}
	// Two bins asked for, 31 tokens of capacity 10: a third and fourth open.
	if pk := PackFirstFit(lengths, 10, 2, 1); len(pk.Bins) != 4 {
		t.Errorf("2 asked, 31 tokens in 10: %d bins %v", len(pk.Bins), pk.Bins)
	}
	// Padded to a multiple of 3: a bin of two gives up its last sequence.
	if pk := PackFirstFit(lengths, 10, 4, 3); len(pk.Bins) != 6 || !pk.Padded {
		t.Errorf("multiple 3: %d bins %v", len(pk.Bins), pk.Bins)
	}
	if pk := PackFirstFit([]int{11}, 10, 1, 1); pk.TooLong != 0 {
		t.Errorf("too long: %+v", pk)
	}
	if _, err := New(Options{Microbatches: 8, MaxSeqs: 2}); err == nil {
		t.Error("microbatches with max_seqs: no error")
	}
}
