package sched

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/job"
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
		// Upper bounds: a hostile --batches line must not reach a policy or the engine.
		{"pp huge", Inputs{PoolRanks: 2, BudgetTokens: 2000, PP: 1_000_000_000, VPP: 1}, []int{1}, "pp = 1000000000: must be in [1, 1024]"},
		{"pp negative", Inputs{PoolRanks: 2, BudgetTokens: 2000, PP: -3, VPP: 1}, []int{1}, "pp = -3: must be in [1, 1024]"},
		{"vpp huge", Inputs{PoolRanks: 2, BudgetTokens: 2000, PP: 2, VPP: 1_000_000_000}, []int{1}, "vpp = 1000000000: must be in [1, 128]"},
		{"budget huge", Inputs{PoolRanks: 4, BudgetTokens: math.MaxInt64 / 2, PP: 1, VPP: 1}, []int{1}, "budget_tokens = 4611686018427387903: must be in [1, 16777216]"},
		{"context huge", Inputs{PoolRanks: 4, BudgetTokens: 100, PP: 1, VPP: 1, ContextTokens: 1 << 40}, []int{1}, "context_tokens = 1099511627776: must be in [0, 33554432]"},
		{"length huge", Inputs{PoolRanks: 1 << 20, BudgetTokens: 1 << 24, PP: 1, VPP: 1}, []int{1, math.MaxInt64 - 1},
			"sequence 1 has 9223372036854775806 tokens: must be in [1, 33554432]"},
		{"length above 2^25", Inputs{PoolRanks: 1 << 20, BudgetTokens: 1 << 24, PP: 1, VPP: 1}, []int{1<<25 + 1}, "must be in [1, 33554432]"},
		{"batch tokens", Inputs{PoolRanks: 1 << 20, BudgetTokens: 1 << 24, PP: 1, VPP: 1}, slices.Repeat([]int{1 << 25}, 300),
			"the batch holds 10066329600 tokens: must be <= 10000000000"},
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
	// Every bound is inclusive, and G·B at its largest names a positive limit.
	top := Inputs{PoolRanks: MaxPoolRanks, BudgetTokens: MaxBudgetTokens, PP: MaxPP, VPP: MaxVPP, ContextTokens: MaxSequenceTokens}
	if err := top.Check([]int{MaxSequenceTokens, 1}); err != nil {
		t.Errorf("inputs at every upper bound: %v", err)
	}
	small := Inputs{PoolRanks: 1, BudgetTokens: MaxBudgetTokens, PP: 1, VPP: 1}
	if err := small.Check([]int{MaxSequenceTokens}); err == nil || !strings.Contains(err.Error(), "holds at most 16777216") {
		t.Errorf("G·B = 1·2^24: %v", err)
	}
}

// TestLimitsAdmitScenarios: sched's limits are at least the scenario limits
// of package job, so every valid scenario's batches pass Inputs.Check.
func TestLimitsAdmitScenarios(t *testing.T) {
	for _, c := range []struct {
		name        string
		sched, scen int
	}{
		{"pp", MaxPP, job.MaxPP}, {"vpp", MaxVPP, job.MaxVPP}, {"budget_tokens", MaxBudgetTokens, job.MaxBudgetTokens},
		{"sequence tokens", MaxSequenceTokens, job.MaxContextTokens}, {"ranks", MaxPoolRanks, job.MaxGPUs},
	} {
		if c.sched < c.scen {
			t.Errorf("%s: sched allows %d, scenarios %d", c.name, c.sched, c.scen)
		}
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
		// Issue 41 class 1: a plan's own numbers (an external policy's) are
		// input, checked before they index, size or price anything.
		{"own length negative", func(p *Plan) { p.Lengths = []int{8, 4, -1_000_000, 2} }, Promises{}, "lengths[2] = -1000000 tokens: must be in [1, 33554432]"},
		{"own length zero", func(p *Plan) { p.Lengths = []int{8, 0, 2, 2} }, Promises{}, "lengths[1] = 0 tokens: must be in [1, 33554432]"},
		{"own length huge", func(p *Plan) { p.Lengths = []int{8, 4, 2, 1 << 40} }, Promises{}, "lengths[3] = 1099511627776 tokens"},
		{"first rank near 2^63", func(p *Plan) { p.Microbatches[0].Groups[2].FirstRank = math.MaxInt64 - 500 }, Promises{},
			"group 2 (first_rank 9223372036854775307, size 1): outside the pool [0, 4)"},
		{"size near 2^63", func(p *Plan) { p.Microbatches[0].Groups[2].Size = math.MaxInt64 }, Promises{}, "outside the pool [0, 4)"},
		{"stall work past the bound", func(p *Plan) { p.StallWork.PoolVisits = 9e18 }, Promises{}, "stall_work.pool_visits = 9000000000000000000: must be in [0, 10000000000]"},
		{"stall work negative", func(p *Plan) { p.StallWork.PoolVisits = -1e15 }, Promises{}, "stall_work.pool_visits = -1000000000000000"},
		{"reported seconds NaN", func(p *Plan) { p.StallWork.ReportedSeconds = math.NaN() }, Promises{}, "stall_work.reported_seconds = NaN"},
		{"work units negative", func(p *Plan) { p.WorkUnits = -5 }, Promises{}, "work_units = -5: must be >= 0"},
		{"layout shards that wrap", func(p *Plan) {
			h := in.HeadsPerRank()
			p.Microbatches[0].Groups = []Group{{FirstRank: 0, Size: 4, Seqs: []int{0, 1, 2, 3},
				Layout: &Layout{HPGroups: []int{4}, ShardTokens: []int{1 << 62, 1 << 62, 1 << 62, 1<<62 + 16}, Heads: []int{h, 0, 0, 0}}}}
		}, Promises{}, "rank 0 holds 4611686018427387904 tokens: must be in [0, 16]"},
		{"layout heads that wrap", func(p *Plan) {
			h := in.HeadsPerRank()
			p.Microbatches[0].Groups = []Group{{FirstRank: 0, Size: 4, Seqs: []int{0, 1, 2, 3},
				Layout: &Layout{HPGroups: []int{4}, ShardTokens: []int{16, 0, 0, 0}, Heads: []int{1 << 62, 1 << 62, 1 << 62, 1<<62 + h}}}}
		}, Promises{}, "rank 0 runs 4611686018427387904 heads"},
	} {
		p, lengths := handPlan()
		c.mutate(p)
		err := Validate(p, lengths, in, c.pr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestStallWorkCheckCoversEveryField: Check names every count of StallWork
// by its JSON key, so a field added later cannot escape the bound.
func TestStallWorkCheckCoversEveryField(t *testing.T) {
	typ := reflect.TypeFor[StallWork]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var w StallWork
		v := reflect.ValueOf(&w).Elem().Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch v.Kind() {
		case reflect.Int64:
			v.SetInt(MaxStallCount + 1)
		case reflect.Float64:
			v.SetFloat(-1)
		default:
			t.Fatalf("StallWork.%s: kind %v", f.Name, v.Kind())
		}
		if err := w.Check(); err == nil || !strings.Contains(err.Error(), "stall_work."+key+" = ") {
			t.Errorf("StallWork.%s out of range: Check = %v, want it named %q", f.Name, err, key)
		}
	}
	if err := (StallWork{PoolVisits: MaxStallCount, ReportedSeconds: MaxReportedStallSeconds}).Check(); err != nil {
		t.Errorf("at the bounds: %v", err)
	}
}

func TestStatsAndViews(t *testing.T) {
	p, lengths := handPlan()
	st := ComputeStats(p, lengths, 1)
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

// partialPlan is a plan of partial microbatches on 8 ranks with ep = 2: DP
// replica A (ranks 0-3) runs three MBs, replica B (ranks 4-7) one.
func partialPlan() (*Plan, []int) {
	lengths := []int{8, 8, 4, 4, 2, 16}
	p := &Plan{PoolRanks: 8, PartialMicrobatches: true, Microbatches: []Microbatch{
		{Groups: []Group{{FirstRank: 0, Size: 2, Seqs: []int{0}}, {FirstRank: 2, Size: 2, Seqs: []int{1}}}},
		{Groups: []Group{{FirstRank: 4, Size: 4, Seqs: []int{5}}}},
		{Groups: []Group{{FirstRank: 0, Size: 4, Seqs: []int{2, 3}}}},
		{Groups: []Group{{FirstRank: 0, Size: 2, Seqs: []int{4}}}}, // ranks 2-3 idle, not in a group
	}}
	return p, lengths
}

func TestPartialMicrobatches(t *testing.T) {
	p, lengths := partialPlan()
	in := Inputs{PoolRanks: 8, BudgetTokens: 16, PP: 1, VPP: 1, EP: 2}
	if got := p.Participants(3, 2); !reflect.DeepEqual(got, [][2]int{{0, 2}}) {
		t.Errorf("Participants(3, ep 2) = %v", got)
	}
	if got := p.Participants(3, 4); !reflect.DeepEqual(got, [][2]int{{0, 4}}) {
		t.Errorf("Participants(3, ep 4) = %v", got)
	}
	if got := p.Participants(0, 1); !reflect.DeepEqual(got, [][2]int{{0, 4}}) {
		t.Errorf("Participants(0, ep 1) = %v (adjacent groups merge)", got)
	}
	if err := Validate(p, lengths, in, Promises{}); err != nil {
		t.Fatalf("uneven replicas with whole EP blocks: %v", err)
	}
	// Ranks 0-3 take part in MBs 0, 2, 3 (3 each), ranks 4-7 in MB 1: 16 slots.
	st := ComputeStats(p, lengths, 2)
	if st.Slots != 3*4+4-2 || st.RankMicrobatchesMin != 1 || st.RankMicrobatchesMax != 3 {
		// MB 3 at ep 2: only ranks 0-1 take part.
		t.Errorf("slots %d, per-rank MBs %d..%d", st.Slots, st.RankMicrobatchesMin, st.RankMicrobatchesMax)
	}
	if got := st.RankMicrobatchesMean; got != float64(st.Slots)/8 {
		t.Errorf("mean per-rank MBs %v", got)
	}
	if st.IdleShare() != 0 {
		t.Errorf("idle share %v: every taking-part rank is in a group", st.IdleShare())
	}
	// An EP block split between two MB counts is refused.
	p.Microbatches[3].Groups[0] = Group{FirstRank: 0, Size: 1, Seqs: []int{4}}
	err := Validate(p, lengths, in, Promises{})
	if err == nil || !strings.Contains(err.Error(), "EP block of ranks 0..1") {
		t.Errorf("split EP block: %v", err)
	}
	// The same plan with global microbatches needs no such check.
	p.PartialMicrobatches = false
	if err := Validate(p, lengths, in, Promises{}); err != nil {
		t.Errorf("global MBs: %v", err)
	}
	if st := ComputeStats(p, lengths, 2); st.Slots != 32 || st.RankMicrobatchesMin != 4 {
		t.Errorf("global MBs: slots %d, min per-rank %d", st.Slots, st.RankMicrobatchesMin)
	}
}

func TestInputsEP(t *testing.T) {
	in := Inputs{PoolRanks: 8, BudgetTokens: 16, PP: 1, VPP: 1, EP: 3}
	if err := in.Check([]int{1}); err == nil || !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "ep = 3") {
		t.Errorf("ep 3 on 8 ranks: %v", err)
	}
	in.EP = 4
	if err := in.Check([]int{1}); err != nil {
		t.Errorf("ep 4: %v", err)
	}
}

// TestTokenCostsCheck names each field out of range and looks degrees up.
func TestTokenCostsCheck(t *testing.T) {
	good := TokenCosts{AttentionSecondsPerToken2: 1e-9, LinearSecondsPerToken: 1e-5, FixedSeconds: 0.01,
		AllToAll: []DegreeSeconds{{Degree: 2, SecondsPerToken: 1e-6}, {Degree: 4, SecondsPerToken: 2e-6}}}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	if u, ok := good.AllToAllSecondsPerToken(4); !ok || u != 2e-6 {
		t.Errorf("u_4 = %v, %v", u, ok)
	}
	if _, ok := good.AllToAllSecondsPerToken(8); ok || good.MaxDegree() != 4 {
		t.Errorf("u_8 found or MaxDegree %d", good.MaxDegree())
	}
	for _, c := range []struct {
		edit func(*TokenCosts)
		want string
	}{
		{func(c *TokenCosts) { c.AttentionSecondsPerToken2 = math.NaN() }, "attention_seconds_per_token2 = NaN"},
		{func(c *TokenCosts) { c.LinearSecondsPerToken = -1 }, "linear_seconds_per_token = -1"},
		{func(c *TokenCosts) { c.FixedSeconds = math.Inf(1) }, "fixed_seconds = +Inf"},
		{func(c *TokenCosts) { c.AttentionSecondsPerToken2, c.LinearSecondsPerToken = 0, 0 }, "both 0"},
		{func(c *TokenCosts) { c.AllToAll[1].Degree = 8 }, "all_to_all[1].degree = 8: must be 4"},
		{func(c *TokenCosts) { c.AllToAll[0].SecondsPerToken = -2 }, "all_to_all[0].seconds_per_token = -2"},
	} {
		bad := good
		bad.AllToAll = slices.Clone(good.AllToAll)
		c.edit(&bad)
		if err := bad.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check = %v, want %q", err, c.want)
		}
	}
}
