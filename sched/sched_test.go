package sched

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestPow2(t *testing.T) {
	for _, c := range []struct{ n, ceil int }{{-3, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {1023, 1024}, {1025, 2048}} {
		if got := Pow2Ceil(c.n); got != c.ceil {
			t.Errorf("Pow2Ceil(%d) = %d, want %d", c.n, got, c.ceil)
		}
	}
	for n, want := range map[int]bool{0: false, 1: true, 2: true, 3: false, 64: true, 96: false, -4: false} {
		if IsPow2(n) != want {
			t.Errorf("IsPow2(%d) = %v", n, !want)
		}
	}
	// Megatron's gpus_needed with C = 4096 (baselines.md §1.4).
	for s, want := range map[int]int{4096: 1, 4097: 2, 8192: 2, 16384: 4, 30000: 8, 1: 1} {
		if got := MemoryDegree(s, 4096); got != want {
			t.Errorf("MemoryDegree(%d, 4096) = %d, want %d", s, got, want)
		}
	}
}

func TestInputsCheck(t *testing.T) {
	ok := Inputs{PoolRanks: 8, BudgetTokens: 100, PP: 1, VPP: 1}
	for _, c := range []struct {
		name    string
		in      Inputs
		lengths []int
		want    string
	}{
		{"ranks", Inputs{PoolRanks: 0, BudgetTokens: 1, PP: 1, VPP: 1}, []int{1}, "ranks = 0"},
		{"budget", Inputs{PoolRanks: 1, BudgetTokens: 0, PP: 1, VPP: 1}, []int{1}, "budget_tokens = 0"},
		{"pp", Inputs{PoolRanks: 1, BudgetTokens: 1, PP: 0, VPP: 1}, []int{1}, "pp = 0"},
		{"ratio", Inputs{PoolRanks: 1, BudgetTokens: 1, PP: 1, VPP: 1, OverheadRatio: math.NaN()}, []int{1}, "overhead_ratio"},
		{"empty", ok, nil, "empty batch"},
		{"zero length", ok, []int{5, 0}, "sequence 1 has 0 tokens"},
		{"too long", ok, []int{5, 801}, "sequence 1 has 801 tokens; the pool (G·B = 8·100) holds at most 800"},
		{"engine limit", Inputs{PoolRanks: 8, BudgetTokens: 100, PP: 1, VPP: 1, MaxDegree: 4}, []int{401}, "largest CP group the engine runs (4 ranks"},
	} {
		err := c.in.Check(c.lengths)
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: error %v does not wrap ErrInvalidInput", c.name, err)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if err := ok.Check([]int{800, 1}); err != nil {
		t.Errorf("valid inputs: %v", err)
	}
	var tl *ErrSequenceTooLong
	if err := ok.Check([]int{801}); !errors.As(err, &tl) || tl.MaxTokens != 800 {
		t.Errorf("want *ErrSequenceTooLong with MaxTokens 800, got %v", err)
	}
}

// handPlan: G = 4, lengths 8, 4, 2, 2; MB 0 = [8] on ranks 0-1, [4] on 2, [2 2] on 3.
func handPlan() (*Plan, []int) {
	return &Plan{PoolRanks: 4, Microbatches: []Microbatch{{Groups: []Group{
		{FirstRank: 0, Size: 2, Seqs: []int{0}},
		{FirstRank: 2, Size: 1, Seqs: []int{1}},
		{FirstRank: 3, Size: 1, Seqs: []int{2, 3}},
	}}}}, []int{8, 4, 2, 2}
}

func TestValidate(t *testing.T) {
	all := Promises{Aligned: true, WithinBudget: true, CoversPool: true}
	in := Inputs{PoolRanks: 4, BudgetTokens: 4, PP: 1, VPP: 1}
	p, lengths := handPlan()
	if err := Validate(p, lengths, in, all); err != nil {
		t.Fatalf("hand plan: %v", err)
	}
	for _, c := range []struct {
		name   string
		mutate func(p *Plan)
		pr     Promises
		want   string
	}{
		{"unplaced", func(p *Plan) { p.Microbatches[0].Groups[2].Seqs = []int{2} }, Promises{}, "sequence 3 (2 tokens) is not placed"},
		{"twice", func(p *Plan) { p.Microbatches[0].Groups[1].Seqs = []int{1, 0} }, Promises{}, "sequence 0 already placed"},
		{"overlap", func(p *Plan) { p.Microbatches[0].Groups[1].FirstRank = 1 }, Promises{}, "rank 1 is already in group 0"},
		{"outside", func(p *Plan) { p.Microbatches[0].Groups[2].FirstRank = 4 }, Promises{}, "outside the pool"},
		{"bad id", func(p *Plan) { p.Microbatches[0].Groups[2].Seqs = []int{2, 3, 9} }, Promises{}, "sequence id 9 outside the batch"},
		{"empty group", func(p *Plan) {
			p.Microbatches[0].Groups = append(p.Microbatches[0].Groups[:2], Group{FirstRank: 3, Size: 1})
			p.Microbatches = append(p.Microbatches, Microbatch{Groups: []Group{{FirstRank: 0, Size: 1, Seqs: []int{2, 3}}}})
		}, Promises{}, "no sequences"},
		{"misaligned", func(p *Plan) {
			p.Microbatches[0].Groups = []Group{{FirstRank: 1, Size: 2, Seqs: []int{0}}, {FirstRank: 3, Size: 1, Seqs: []int{1, 2, 3}}}
		}, Promises{Aligned: true}, "not a power-of-two aligned block"},
		{"budget", func(p *Plan) {
			p.Microbatches[0].Groups = []Group{p.Microbatches[0].Groups[0], {FirstRank: 3, Size: 1, Seqs: []int{1, 2, 3}}}
		}, Promises{WithinBudget: true}, "8.0 tokens per rank exceed the budget B = 4"},
		{"coverage", func(p *Plan) {
			p.Microbatches[0].Groups = p.Microbatches[0].Groups[:2]
			p.Microbatches[0].Groups[1].Seqs = []int{1, 2, 3}
		}, Promises{CoversPool: true}, "rank 3 is in no group"},
	} {
		p, lengths := handPlan()
		c.mutate(p)
		err := Validate(p, lengths, in, c.pr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestStatsAndViews(t *testing.T) {
	p, lengths := handPlan()
	st := ComputeStats(p, lengths)
	mb := st.Microbatches[0]
	// Loads: ranks 0,1: 64/2 = 32; rank 2: 16; rank 3: 4+4 = 8.
	if mb.MaxLoad != 32 || mb.MinLoad != 8 || mb.MeanLoad != (32+32+16+8)/4.0 {
		t.Errorf("loads %+v", mb)
	}
	// Tokens: ranks 0,1: 4; rank 2: 4; rank 3: 4.
	if mb.MaxTokens != 4 || mb.MinTokens != 4 || mb.Intensity != (64+16+4+4)/4.0 {
		t.Errorf("tokens/intensity %+v", mb)
	}
	want := []DegreeShare{{1, 0.5}, {2, 0.5}}
	if !reflect.DeepEqual(st.Degrees, want) {
		t.Errorf("degrees %v, want %v", st.Degrees, want)
	}
	if got := FormatDegrees(st.Degrees); got != "1:50.0% 2:50.0%" {
		t.Errorf("FormatDegrees = %q", got)
	}
	if got := p.PerRank(); !reflect.DeepEqual(got, [][][]int{{{0}, {0}, {1}, {2, 3}}}) {
		t.Errorf("PerRank = %v", got)
	}
	if got := p.RankMicrobatches(3); !reflect.DeepEqual(got, []int{0}) {
		t.Errorf("RankMicrobatches(3) = %v", got)
	}
}

type fakePolicy struct{ opt int }

func (fakePolicy) Name() string                                 { return "fake" }
func (fakePolicy) Plan(lengths []int, in Inputs) (*Plan, error) { return nil, nil }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	r.Register("fake", "a fake", func(decode func(any) error) (Policy, error) {
		var o struct{ N int }
		if err := decode(&o); err != nil {
			return nil, err
		}
		return fakePolicy{o.N}, nil
	})
	if _, err := r.New("fake", nil); err != nil {
		t.Errorf("New(fake): %v", err)
	}
	if _, err := r.New("nope", nil); err == nil || !strings.Contains(err.Error(), "known: fake") {
		t.Errorf("unknown policy error %v", err)
	}
	if _, err := r.New("fake", func(any) error { return errors.New("bad option") }); err == nil || !strings.Contains(err.Error(), "policy fake: bad option") {
		t.Errorf("option error %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering twice did not panic")
		}
	}()
	r.Register("fake", "", nil)
}
