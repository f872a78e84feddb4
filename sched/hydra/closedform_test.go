package hydra

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestBatchSumsExact: S2 of ten sequences of 2^31−1 tokens passes 2^63 and is
// kept exactly.
func TestBatchSumsExact(t *testing.T) {
	lengths := make([]int, 10)
	for i := range lengths {
		lengths[i] = MaxSequenceTokens
	}
	lengths[3] = 5
	sums := BatchSums(lengths)
	s := big.NewInt(MaxSequenceTokens)
	want := new(big.Int).Mul(s, s)
	want.Mul(want, big.NewInt(9))
	want.Add(want, big.NewInt(25))
	if sums.SquaredTokens.Cmp(want) != 0 || sums.Tokens != 9*MaxSequenceTokens+5 || sums.MaxTokens != MaxSequenceTokens || sums.Sequences != 10 {
		t.Fatalf("sums %+v, S2 %v, want %v", sums, sums.SquaredTokens, want)
	}
	if !(sums.SquaredTokensFloat() > math.MaxInt64) {
		t.Fatalf("S2 as float %g", sums.SquaredTokensFloat())
	}
}

// TestContinuousCap: the formula, and its two degenerate cases.
func TestContinuousCap(t *testing.T) {
	// One sequence of 4 tokens, G = 16, b = 1, θ/c = 1: 16·√(16/16) = 16.
	sums := BatchSums([]int{4})
	if got := ContinuousCap(sums, 16, 1, 1); got != 16 {
		t.Errorf("C* = %g, want 16", got)
	}
	for _, ratio := range []float64{0, 1e9} {
		if got := ContinuousCap(sums, 16, 0, ratio); got != 0 {
			t.Errorf("b = 0, θ/c = %g: C* = %g, want 0", ratio, got)
		}
	}
	if got := ContinuousCap(sums, 16, 0.5, 0); !math.IsInf(got, 1) {
		t.Errorf("θ/c = 0: C* = %g, want +Inf", got)
	}
	if b := Bubble(4, 2); b != 1.5 {
		t.Errorf("b(pp 4, vpp 2) = %g", b)
	}
}

// TestSolveOverheadZero: θ/c = 0 (γ = 0) favours the largest cap: C* is the engine
// limit, min(G, max_degree) rounded down to a power of two.
func TestSolveOverheadZero(t *testing.T) {
	sums := BatchSums([]int{262144, 1000, 10})
	for _, tc := range []struct{ maxDegree, want int }{{0, 512}, {64, 64}, {100, 64}} {
		tg, err := Solve(sums, sched.Inputs{PoolRanks: 512, BudgetTokens: 8192, PP: 4, VPP: 1, MaxDegree: tc.maxDegree}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Cap != tc.want || tg.EngineLimit != tc.want || !math.IsInf(float64(tg.ContinuousCap), 1) {
			t.Errorf("max_degree %d: C* %d, limit %d, continuous %g; want %d", tc.maxDegree, tg.Cap, tg.EngineLimit, float64(tg.ContinuousCap), tc.want)
		}
	}
}

// TestSolveEngineLimit: an engine limit below C_mem is an error naming both.
func TestSolveEngineLimit(t *testing.T) {
	_, err := Solve(BatchSums([]int{262144}), sched.Inputs{PoolRanks: 512, BudgetTokens: 8192, PP: 4, VPP: 1, MaxDegree: 16, OverheadRatio: 1}, 0)
	if !errors.Is(err, ErrEngineLimit) || !errors.Is(err, sched.ErrInvalidInput) ||
		!strings.Contains(err.Error(), "C_mem = 32") || !strings.Contains(err.Error(), "at most 16") {
		t.Fatalf("error %v", err)
	}
}

// TestSolveTieKeepsSmallerCap: S2 = G·s_max² (load-bound, no ceilings), b = 1,
// θ/c = b·s_max²/(2·4²) makes T(4) = (4+1)(1024²/4 + 32768) = 1474560 =
// (8+1)(1024²/8 + 32768) = T(8); the continuous C* is 4√2, and the tie keeps 4.
func TestSolveTieKeepsSmallerCap(t *testing.T) {
	const g, s = 64, 1024
	sums := Sums{Sequences: 1, Tokens: s, MaxTokens: s, SquaredTokens: big.NewInt(g * s * s)}
	in := sched.Inputs{PoolRanks: g, BudgetTokens: 1024, PP: 2, VPP: 1, OverheadRatio: 32768}
	if t4, t8 := IterationTime(sums, g, in.BudgetTokens, 4, 1, in.OverheadRatio), IterationTime(sums, g, in.BudgetTokens, 8, 1, in.OverheadRatio); t4 != 1474560 || t8 != 1474560 {
		t.Fatalf("T(4) = %g, T(8) = %g", t4, t8)
	}
	tg, err := Solve(sums, in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tg.LowerCap != 4 || tg.UpperCap != 8 || tg.Cap != 4 || math.Abs(float64(tg.ContinuousCap)-4*math.Sqrt2) > 1e-9 {
		t.Fatalf("targets %+v", tg)
	}
}

// TestForcedCap: Options.Cap replaces C* (Λ* and M* follow); the continuous value
// is still reported.
func TestForcedCap(t *testing.T) {
	sums := BatchSums([]int{262144, 5000})
	in := sched.Inputs{PoolRanks: 512, BudgetTokens: 8192, PP: 4, VPP: 1, OverheadRatio: 1e9}
	tg, err := Solve(sums, in, 64)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := MicrobatchTarget(sums, 512, 8192, 64)
	if tg.Cap != 64 || !tg.ForcedCap || tg.LoadTarget != LoadTarget(262144, 64) || tg.Microbatches != m || tg.ContinuousCap == 0 {
		t.Fatalf("targets %+v", tg)
	}
	for _, bad := range []int{16, 1024, 48} {
		if _, err := Solve(sums, in, bad); !errors.Is(err, sched.ErrInvalidInput) {
			t.Errorf("cap %d: %v", bad, err)
		}
	}
}

// TestSingleSequence: one 100K sequence on G = 512, B = 8K, pp = 4, θ/c = 1e9.
// Continuous C* = s·√(b·G/θ) = 1e5·√(1536/1e9) ≈ 123.9, so 64 or 128; M = 1 for
// both, T(64) = 4·(1e10/64 + 1e9) > T(128) = 4·(1e10/128 + 1e9): C* = 128. The
// plan is one MB with the sequence alone on ranks [0,128): no buddy doubling past
// C*, 384 ranks idle.
func TestSingleSequence(t *testing.T) {
	in := sched.Inputs{PoolRanks: 512, BudgetTokens: 8192, PP: 4, VPP: 1, OverheadRatio: 1e9}
	p := planOf(t, []int{100000}, in)
	d := p.Diagnostics.(*Diagnostics)
	if d.LowerCap != 64 || d.UpperCap != 128 || d.Cap != 128 || d.Microbatches != 1 || d.MemoryCap != 16 {
		t.Fatalf("targets %+v", d.Targets)
	}
	want := []sched.Microbatch{{Groups: []sched.Group{{FirstRank: 0, Size: 128, Seqs: []int{0}}},
		Closed: "last: every sequence placed; backfill: 0 doublings, 384 idle ranks"}}
	if !reflect.DeepEqual(p.Microbatches, want) {
		t.Fatalf("plan %+v", p.Microbatches)
	}
}

// TestAllEqualLengths: 40 sequences of 64K on G = 64 all have degree C* and fill
// their groups' load, so each MB holds G/C* of them and the realized MB count is
// M* = ⌈40·C*/G⌉ (load-bound).
func TestAllEqualLengths(t *testing.T) {
	lengths := make([]int, 40)
	for i := range lengths {
		lengths[i] = 65536
	}
	in := sched.Inputs{PoolRanks: 64, BudgetTokens: 8192, PP: 4, VPP: 1, OverheadRatio: 1e8}
	p := planOf(t, lengths, in)
	d := p.Diagnostics.(*Diagnostics)
	perMB := 64 / d.Cap
	if d.Regime != LoadBound || d.Microbatches != (40+perMB-1)/perMB || d.RealizedMicrobatches != d.Microbatches {
		t.Fatalf("targets %+v, realized %d", d.Targets, d.RealizedMicrobatches)
	}
	for m, mb := range p.Microbatches[:len(p.Microbatches)-1] {
		if len(mb.Groups) != perMB {
			t.Fatalf("MB %d has %d groups, want %d", m, len(mb.Groups), perMB)
		}
	}
}

// TestRealJSON: infinities and NaN encode as strings, finite values as numbers.
func TestRealJSON(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{math.Inf(1), `"+Inf"`}, {math.Inf(-1), `"-Inf"`}, {math.NaN(), `"NaN"`}, {70.5, `70.5`}, {0, `0`}} {
		b, err := json.Marshal(Real(tc.v))
		if err != nil || string(b) != tc.want {
			t.Errorf("%v: %s, %v; want %s", tc.v, b, err, tc.want)
		}
	}
}
