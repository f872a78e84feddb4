package sched

import (
	"math"
	"strings"
	"testing"
)

// TestOffloadRanks checks Eq. 3 on cases worked by hand: l = 32 layers per
// rank (share = 30/32), C = 8K.
func TestOffloadRanks(t *testing.T) {
	const c = 8192
	share := 30.0 / 32
	hidden := func(r float64) OffloadCosts { // a cost whose hidden ratio is r at every s
		return OffloadCosts{HostBytesPerSecond: 1, OffloadBytesPerToken: 1, ForwardLinearSecondsPerToken: r}
	}
	for _, tc := range []struct {
		name      string
		c         OffloadCosts
		s         int
		share     float64
		wantRanks int
		wantR     float64
	}{
		// r = 1: each rank keeps 2/32 of its tokens: D = ⌈2M·(2/32)/8K⌉ = 16
		// (not 256), at the least ratio reaching 16: (1 − 16·8K/2M)/share = 1.
		{"2M fully hidden", hidden(1), 2 << 20, share, 16, 1},
		// 312K at r = 1: ⌈319488·(1/16)/8192⌉ = ⌈2.4375⌉ = 3 ranks; the least
		// ratio for 3: (1 − 3·8192/319488)/share = (1 − 0.076923)·32/30.
		{"312K", hidden(1), 319488, share, 3, (1 - 3*8192.0/319488) / share},
		// r = 0.5 hidden: D = ⌈s(1 − 0.5·share)/C⌉ = ⌈64·(1 − 15/32)⌉ = 34.
		{"half hidden", hidden(0.5), 64 * c, share, 34, (1 - 34.0/64) / share},
		// A hidden ratio below the paper's lower bound C/(share·s) spares no
		// rank: no offload.
		{"too little hidden", hidden(0.01), 16 * c, share, 16, 0},
		// Sequences shorter than C, or no offloadable layers: no offload.
		{"short", hidden(1), c - 1, share, 1, 0},
		{"no share", hidden(1), 64 * c, 0, 64, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, d := tc.c.OffloadRanks(tc.s, c, tc.share)
			if d != tc.wantRanks || math.Abs(r-tc.wantR) > 1e-12 {
				t.Fatalf("OffloadRanks(%d) = r %v, D %d; want r %v, D %d", tc.s, r, d, tc.wantR, tc.wantRanks)
			}
			// Each rank keeps at most C tokens' worth, and the ratio hides.
			if per := float64(tc.s) / float64(d); ResidentTokens(per, r, tc.share) > c*(1+1e-12) {
				t.Errorf("a rank keeps %v tokens' worth, more than C = %d", ResidentTokens(per, r, tc.share), c)
			}
			if r > tc.c.HiddenRatio(tc.s)+1e-12 {
				t.Errorf("ratio %v above the hidden %v", r, tc.c.HiddenRatio(tc.s))
			}
		})
	}
}

// TestHiddenRatio checks Eq. 3's overlap constraint: B·(α·s + β)/a, at most 1.
func TestHiddenRatio(t *testing.T) {
	c := OffloadCosts{HostBytesPerSecond: 50e9, OffloadBytesPerToken: 1e6,
		ForwardAttentionSecondsPerToken2: 1e-12, ForwardLinearSecondsPerToken: 1e-6}
	// s = 8192: 50e9·(8.192e-9 + 1e-6)/1e6 = 0.0504096.
	if got, want := c.HiddenRatio(8192), 50e9*(1e-12*8192+1e-6)/1e6; math.Abs(got-want) > 1e-15 {
		t.Errorf("HiddenRatio(8192) = %v, want %v", got, want)
	}
	if got := c.HiddenRatio(1 << 30); got != 1 {
		t.Errorf("HiddenRatio of a huge sequence = %v, want 1", got)
	}
}

func TestFittingRatio(t *testing.T) {
	for _, tc := range []struct{ tokens, budget, share, want float64 }{
		{100, 100, 0.5, 0},
		{200, 100, 0.5, 1},    // 200·(1 − 0.5) = 100
		{160, 100, 0.75, 0.5}, // (1 − 100/160)/0.75
		{300, 100, 0.5, 4.0 / 3},
	} {
		if got := FittingRatio(tc.tokens, tc.budget, tc.share); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("FittingRatio(%v, %v, %v) = %v, want %v", tc.tokens, tc.budget, tc.share, got, tc.want)
		}
	}
	if !math.IsInf(FittingRatio(200, 100, 0), 1) {
		t.Error("no share: want +Inf")
	}
}

// TestValidateOffload checks the budget of an offloading group and the
// ratio's range.
func TestValidateOffload(t *testing.T) {
	in := Inputs{PoolRanks: 4, BudgetTokens: 100, PP: 1, VPP: 1, OffloadShare: 0.5}
	lengths := []int{400}
	plan := func(size int, r float64) *Plan {
		return &Plan{PoolRanks: 4, Microbatches: []Microbatch{{Groups: []Group{{FirstRank: 0, Size: size, Seqs: []int{0}, Offload: r}}}}}
	}
	pr := Promises{WithinBudget: true}
	if err := Validate(plan(2, 1), lengths, in, pr); err != nil { // 200 per rank, 100 on the GPU
		t.Errorf("200 tokens per rank at r = 1, share 0.5: %v", err)
	}
	for _, tc := range []struct {
		name string
		p    *Plan
		in   Inputs
		want string
	}{
		{"ratio too small", plan(2, 0.9), in, "tokens' worth on the GPU"},
		{"ratio above 1", plan(4, 1.5), in, "outside [0, 1]"},
		{"no share", plan(4, 0.5), Inputs{PoolRanks: 4, BudgetTokens: 100, PP: 1, VPP: 1}, "cannot offload"},
	} {
		err := Validate(tc.p, lengths, tc.in, pr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	bad := in
	bad.OffloadShare = 1
	if err := bad.Check(lengths); err == nil || !strings.Contains(err.Error(), "offload_share") {
		t.Errorf("offload_share = 1: %v", err)
	}
}
