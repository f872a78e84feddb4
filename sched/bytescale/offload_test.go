package bytescale

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// hiddenCosts are offload costs whose copies hide at ratio r for every
// sequence length (HiddenRatio = r).
func hiddenCosts(r float64) *sched.OffloadCosts {
	return &sched.OffloadCosts{Source: "test", HostBytesPerSecond: 1, OffloadBytesPerToken: 1, ForwardLinearSecondsPerToken: r}
}

// TestOffloadSparesRanks: with offload under RuleEq3, the paper's 2M
// sequence at C = 8K runs on Eq. 3's D(s) ranks, not ⌈s/C⌉ = 256 (§5.2: "compresses the number
// of ranks required for long sequences from s/C to D(s)"), each rank holding
// more than C tokens but at most C tokens' worth on the GPU.
func TestOffloadSparesRanks(t *testing.T) {
	const c = 8192
	share := 30.0 / 32 // LLaMA-7B's 32 layers on one rank, the last two kept
	in := sched.Inputs{PoolRanks: 512, BudgetTokens: c, PP: 1, VPP: 1, OffloadShare: share}
	lengths := []int{2 << 20, 312 * 1024}
	for range 600 {
		lengths = append(lengths, 4096)
	}
	for _, tc := range []struct {
		r         float64
		long, mid int // D of the 2M and the 312K sequence
	}{
		{1, 16, 3},     // ⌈256·(1 − 30/32)⌉ = 16, ⌈39/16⌉ = 3
		{0.5, 136, 21}, // ⌈256·(1 − 15/32)⌉ = 136, ⌈39·0.53125⌉ = 21
	} {
		eq3 := DefaultOptions()
		eq3.OffloadRule = RuleEq3
		pol, err := New(eq3, sched.Env{Offload: hiddenCosts(tc.r)})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pol.Plan(lengths, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.Validate(plan, lengths, in, pol.Promises()); err != nil {
			t.Fatalf("r = %v: %v", tc.r, err)
		}
		for id, want := range map[int]int{0: tc.long, 1: tc.mid} {
			g, _ := groupOf(t, plan, id)
			if g.Size != want || g.Offload <= 0 || g.Offload > tc.r+1e-12 {
				t.Errorf("r = %v: sequence %d (%d tokens) on %d ranks (ratio %v); Eq. 3 gives D = %d", tc.r, id, lengths[id], g.Size, g.Offload, want)
			}
		}
		d := plan.Diagnostics.(*Diagnostics)
		if d.Offload == nil || d.Offload.Sequences != 2 || d.Offload.RanksSpared <= 0 {
			t.Errorf("r = %v: offload diagnostics %+v", tc.r, d.Offload)
		}
	}
	// Offload off, or no offloadable share: ⌈s/C⌉ and no ratio.
	off := DefaultOptions()
	off.Offload = false
	for name, env := range map[string]struct {
		o  Options
		in sched.Inputs
	}{"offload = false": {off, in}, "share 0": {DefaultOptions(), sched.Inputs{PoolRanks: 512, BudgetTokens: c, PP: 1, VPP: 1}}} {
		pol, _ := New(env.o, sched.Env{Offload: hiddenCosts(1)})
		plan, err := pol.Plan(lengths, env.in)
		if err != nil {
			t.Fatal(err)
		}
		if g, _ := groupOf(t, plan, 0); g.Size != 256 || g.Offload != 0 {
			t.Errorf("%s: the 2M sequence on %d ranks at ratio %v, want 256 at 0", name, g.Size, g.Offload)
		}
	}
}

// TestOffloadPlansValid: random batches, with offload at random hidden
// ratios and shares, plan into valid plans (every sequence placed once,
// every rank within C tokens' worth on the GPU, EP blocks alike), with and
// without the balance scheduler.
func TestOffloadPlansValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	planned := 0
	for i := range 600 {
		lengths, in := randomInputs(rng)
		in.OffloadShare = rng.Float64() * 0.95
		o := DefaultOptions()
		o.Balance = i%2 == 0
		pol, err := New(o, sched.Env{Offload: hiddenCosts(rng.Float64())})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pol.Plan(lengths, in)
		if errors.Is(err, sched.ErrCannotPlan) {
			continue
		}
		if err != nil {
			t.Fatalf("%d sequences on %d ranks: %v", len(lengths), in.PoolRanks, err)
		}
		if err := sched.Validate(plan, lengths, in, pol.Promises()); err != nil {
			t.Fatalf("balance %v, share %v, G %d, B %d: %v", o.Balance, in.OffloadShare, in.PoolRanks, in.BudgetTokens, err)
		}
		planned++
	}
	if planned < 500 {
		t.Errorf("only %d of 600 batches planned", planned)
	}
}

// TestNaiveEqualCounts: HDP naive (balance = false, §8.1 ②) deals the units
// in batch order so every rank runs about the same number of microbatches
// (within one, for units of one rank), whatever their lengths: the paper's
// naive case, "the third rank completes its 8 micro-batches in 1m41s, it has
// to wait for the first rank to finish at 4m32s" (§8.3).
func TestNaiveEqualCounts(t *testing.T) {
	const c = 1024
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: c, PP: 1, VPP: 1}
	var lengths []int
	for i := range 64 { // one unit each: bins of one sequence, lengths from 100 to 1000
		lengths = append(lengths, 100+(i*37)%900+1)
	}
	o := DefaultOptions()
	o.Balance = false
	pol, _ := New(o, sched.Env{})
	plan, err := pol.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Validate(plan, lengths, in, pol.Promises()); err != nil {
		t.Fatal(err)
	}
	lo, hi := 1<<30, 0
	for r := range in.PoolRanks {
		n := len(plan.RankMicrobatches(r))
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo > 1 {
		t.Errorf("naive: ranks run %d..%d microbatches, want equal counts within one", lo, hi)
	}
	if d := plan.Diagnostics.(*Diagnostics); d.Strategy != Naive {
		t.Errorf("strategy %q, want %q", d.Strategy, Naive)
	}
	// The balance scheduler evens the time instead: its counts spread more.
	bal, _ := New(DefaultOptions(), sched.Env{})
	bp, err := bal.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	if est := plan.Diagnostics.(*Diagnostics); est.EstimatedMaxTime <= bp.Diagnostics.(*Diagnostics).EstimatedMaxTime {
		t.Errorf("naive's estimated finish %v not above balance's %v", est.EstimatedMaxTime, bp.Diagnostics.(*Diagnostics).EstimatedMaxTime)
	}
}

// TestForcedOffloadRatio: offload_ratio keeps ⌈s/C⌉ ranks and sets the
// ratio on every long sequence's group (Fig. 21's experiment), none on the
// bins; without an offloadable share it cannot plan.
func TestForcedOffloadRatio(t *testing.T) {
	const c = 1024
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: c, PP: 1, VPP: 1, OffloadShare: 0.8}
	lengths := []int{4 * c, 3 * c, c, 100, 200}
	o := DefaultOptions()
	o.OffloadRatio = 0.6
	pol, err := New(o, sched.Env{Offload: hiddenCosts(1)})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pol.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Validate(plan, lengths, in, pol.Promises()); err != nil {
		t.Fatal(err)
	}
	for id, s := range lengths {
		g, _ := groupOf(t, plan, id)
		long := s >= c
		if want := map[bool]float64{true: 0.6, false: 0}[long]; g.Offload != want || long && g.Size < (s+c-1)/c {
			t.Errorf("sequence %d (%d tokens): %d ranks at ratio %v, want at least ⌈s/C⌉ at %v", id, s, g.Size, g.Offload, want)
		}
	}
	in.OffloadShare = 0
	if _, err := pol.Plan(lengths, in); !errors.Is(err, sched.ErrCannotPlan) {
		t.Errorf("no share: %v, want ErrCannotPlan", err)
	}
	o.OffloadRatio = 1.5
	if _, err := New(o, sched.Env{}); err == nil {
		t.Error("offload_ratio = 1.5 accepted")
	}
}

// TestOffloadBounded: under RuleBounded (the default) offload compresses a
// long sequence's ranks no further than keeps T(s)/D within the balanced
// per-rank load W/G: the 2M sequence of a batch whose work is mostly its own
// keeps ⌈G·T(s)/W⌉ ranks (more than Eq. 3's 16), at the least ratio that
// fits it, and one that a balanced rank can carry is compressed as Eq. 3
// says.
func TestOffloadBounded(t *testing.T) {
	const c = 8192
	share := 30.0 / 32
	in := sched.Inputs{PoolRanks: 512, BudgetTokens: c, PP: 1, VPP: 1, OffloadShare: share}
	costs := &sched.TokenCosts{Source: "test", AttentionSecondsPerToken2: 1e-12, LinearSecondsPerToken: 0}
	for _, tc := range []struct {
		name    string
		lengths []int
		want    int
	}{
		// W ≈ T(2M) (the short ones add 600·4096² ≪ 2M²): W/G = T/512, so
		// D >= 512·T/W ≈ 509; capped at ⌈s/C⌉ = 256: no offload at all.
		{"one dominant sequence", append([]int{2 << 20}, repeat(600, 4096)...), 256},
		// 4096 short sequences of 64K: W/G is large, the 2M sequence needs
		// ⌈G·T/W⌉ = ⌈512·4/(4 + 4096/256)⌉ = ⌈512·4/20⌉ = 103 ranks.
		{"a balanced batch", append([]int{2 << 20}, repeat(4096, 65536)...), 103},
	} {
		pol, err := New(DefaultOptions(), sched.Env{Offload: hiddenCosts(1), TokenCosts: costs})
		if err != nil {
			t.Fatal(err)
		}
		// The plan with offload (Plan may keep the one without: see
		// TestOffloadNeverWorse).
		plan, _, err := pol.planOnce(tc.lengths, in, pol.offload)
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.Validate(plan, tc.lengths, in, pol.Promises()); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		g, _ := groupOf(t, plan, 0)
		if g.Size < tc.want || g.Size > tc.want+2 {
			t.Errorf("%s: the 2M sequence on %d ranks (ratio %v), want %d", tc.name, g.Size, g.Offload, tc.want)
		}
		if g.Size < 256 && (g.Offload <= 0 || float64(2<<20)/float64(g.Size)*(1-g.Offload*share) > c*(1+1e-9)) {
			t.Errorf("%s: ratio %v does not fit %d ranks in C", tc.name, g.Offload, g.Size)
		}
	}
}

func repeat(n, s int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestOffloadNeverWorse: under RuleBounded the plan kept is never estimated
// slower than the same options' plan without offload, on random batches,
// balanced or naive.
func TestOffloadNeverWorse(t *testing.T) {
	const c = 8192
	in := sched.Inputs{PoolRanks: 256, BudgetTokens: c, PP: 1, VPP: 1, OffloadShare: 30.0 / 32}
	costs := &sched.TokenCosts{Source: "test", AttentionSecondsPerToken2: 1e-12, LinearSecondsPerToken: 2e-6, FixedSeconds: 1e-3}
	rng := rand.New(rand.NewPCG(3, 9))
	for trial := range 40 {
		var lengths []int
		for total := 0; total < 256*c; {
			s := min(1+int(rng.ExpFloat64()*20000), 256*c/2)
			if rng.IntN(40) == 0 {
				s = c + rng.IntN(64*c)
			}
			lengths = append(lengths, s)
			total += s
		}
		for _, balance := range []bool{false, true} {
			o := DefaultOptions()
			o.Balance = balance
			pol, err := New(o, sched.Env{Offload: hiddenCosts(1), TokenCosts: costs})
			if err != nil {
				t.Fatal(err)
			}
			kept, err := pol.Plan(lengths, in)
			if err != nil {
				t.Fatal(err)
			}
			o.Offload = false
			off, _ := New(o, sched.Env{TokenCosts: costs})
			plain, err := off.Plan(lengths, in)
			if err != nil {
				t.Fatal(err)
			}
			k, p := kept.Diagnostics.(*Diagnostics), plain.Diagnostics.(*Diagnostics)
			if k.EstimatedMaxTime > p.EstimatedMaxTime*(1+1e-12) {
				t.Errorf("trial %d balance %v: offload's plan estimated %g s, without %g s", trial, balance, k.EstimatedMaxTime, p.EstimatedMaxTime)
			}
		}
	}
}
