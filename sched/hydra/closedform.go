package hydra

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
)

// MaxSequenceTokens is the longest sequence the planner accepts: s² then fits an
// int64 with room for one more s², which keeps every load test exact.
const MaxSequenceTokens = math.MaxInt32

// Regimes of the MB count M* (spec §3).
const (
	// LoadBound: the quadratic-load term ⌈S2·C*/(G·s_max²)⌉ sets M* (ties included).
	LoadBound = "load-bound"
	// TokenBound: the token term ⌈S1/(G·B)⌉ is strictly larger and sets M*.
	TokenBound = "token-bound"
)

// Sums are the batch statistics the closed form needs (spec §2-3).
type Sums struct {
	// Sequences is N.
	Sequences int
	// Tokens is S1 = Σ s_i.
	Tokens int64
	// SquaredTokens is S2 = Σ s_i², exact, in tokens². It is a big.Int because it
	// can pass 2^63 (N·s_max² with N up to 10^7 and s_max up to 2^31).
	SquaredTokens *big.Int
	// MaxTokens is s_max.
	MaxTokens int
}

// BatchSums returns the Sums of a batch of positive lengths. S2 is accumulated in
// 128 bits, exactly, and converted to a big.Int once.
func BatchSums(lengths []int) Sums {
	sums := Sums{Sequences: len(lengths)}
	var hi, lo uint64
	for _, s := range lengths {
		sums.Tokens += int64(s)
		sums.MaxTokens = max(sums.MaxTokens, s)
		sqHi, sqLo := bits.Mul64(uint64(s), uint64(s))
		var carry uint64
		lo, carry = bits.Add64(lo, sqLo, 0)
		hi += sqHi + carry
	}
	s2 := new(big.Int).SetUint64(hi)
	s2.Lsh(s2, 64)
	sums.SquaredTokens = s2.Or(s2, new(big.Int).SetUint64(lo))
	return sums
}

// SquaredTokensFloat returns S2 as a float64 (nearest).
func (s Sums) SquaredTokensFloat() float64 {
	f, _ := new(big.Float).SetInt(s.SquaredTokens).Float64()
	return f
}

// Bubble returns b = (pp−1)/vpp, the interleaved-1F1B pipeline bubble in MB-times.
func Bubble(pp, vpp int) float64 { return float64(pp-1) / float64(vpp) }

// MemoryCap returns C_mem = pow2ceil(⌈s_max/B⌉), the least legal cap (Megatron's
// memory degree of the longest sequence).
func MemoryCap(maxTokens, budgetTokens int) int { return sched.MemoryDegree(maxTokens, budgetTokens) }

// LoadTarget returns Λ(C) = s_max²/C in tokens² (spec §1): the per-rank load the
// longest sequence leaves on each rank at degree C.
func LoadTarget(maxTokens, capDegree int) float64 {
	s := float64(maxTokens)
	return s * s / float64(capDegree)
}

// MicrobatchTarget returns M(C) = max(⌈S2·C/(G·s_max²)⌉, ⌈S1/(G·B)⌉) (spec §2),
// computed exactly, and whether the token term is strictly the larger one.
func MicrobatchTarget(sums Sums, poolRanks, budgetTokens, capDegree int) (microbatches int, tokenBound bool) {
	num := new(big.Int).Mul(sums.SquaredTokens, big.NewInt(int64(capDegree)))
	sq := new(big.Int).SetInt64(int64(sums.MaxTokens))
	den := sq.Mul(sq, sq)
	den.Mul(den, big.NewInt(int64(poolRanks)))
	q, r := num.QuoRem(num, den, new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	loadTerm := int(q.Int64()) // q <= N·C/G + 1: fits.
	// ⌈⌈S1/G⌉/B⌉ = ⌈S1/(G·B)⌉ without forming G·B (which may overflow for huge B).
	tokenTerm := int(ceilDiv(ceilDiv(sums.Tokens, int64(poolRanks)), int64(budgetTokens)))
	return max(loadTerm, tokenTerm), tokenTerm > loadTerm
}

// IterationTime returns T(C)/c = (M(C) + b)·(Λ(C) + θ/c) in tokens², the balanced
// iteration time in units of c (spec §3); overheadRatio is θ/c in tokens².
func IterationTime(sums Sums, poolRanks, budgetTokens, capDegree int, bubble, overheadRatio float64) float64 {
	m, _ := MicrobatchTarget(sums, poolRanks, budgetTokens, capDegree)
	return (float64(m) + bubble) * (LoadTarget(sums.MaxTokens, capDegree) + overheadRatio)
}

// ContinuousCap returns the unrounded optimum C* = s_max²·√(b·G/(S2·θ/c)) of
// T(C) = const + γ·C + β/C (spec §3). With b = 0 (pp = 1) the bubble term vanishes
// and it returns 0 (so the cap clamps to C_mem), whatever θ/c; with θ/c = 0 and
// b > 0 the overhead term vanishes and it returns +Inf (the cap clamps to the
// largest allowed degree).
func ContinuousCap(sums Sums, poolRanks int, bubble, overheadRatio float64) float64 {
	if bubble == 0 {
		return 0
	}
	if overheadRatio == 0 {
		return math.Inf(1)
	}
	s := float64(sums.MaxTokens)
	return s * s * math.Sqrt(bubble*float64(poolRanks)/(sums.SquaredTokensFloat()*overheadRatio))
}

// Real is a float64 that encodes ±Inf and NaN in JSON as the strings "+Inf",
// "-Inf" and "NaN" (encoding/json rejects them as numbers).
type Real float64

// MarshalJSON encodes finite values as JSON numbers and the rest as strings.
func (r Real) MarshalJSON() ([]byte, error) {
	f := float64(r)
	switch {
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// Targets are the closed-form quantities of spec §1-4 for one batch.
type Targets struct {
	// OverheadRatio is θ/c in tokens², from sched.Inputs.OverheadRatio.
	OverheadRatio float64 `json:"overhead_ratio_tokens2"`
	// Bubble is b = (pp−1)/vpp in MB-times.
	Bubble float64 `json:"bubble_mb_times"`
	// MaxTokens is s_max and BudgetTokens is B.
	MaxTokens    int `json:"max_tokens"`
	BudgetTokens int `json:"budget_tokens"`
	// MemoryCap is C_mem = pow2ceil(s_max/B).
	MemoryCap int `json:"memory_cap"`
	// EngineLimit is the largest power of two <= min(G, MaxDegree): the most ranks a
	// group may have (the CP engine limit, or the pool).
	EngineLimit int `json:"engine_limit"`
	// ContinuousCap is the unrounded C* (0 when b = 0, +Inf when θ/c = 0).
	ContinuousCap Real `json:"continuous_cap"`
	// LowerCap and UpperCap are the powers of two around ContinuousCap, clamped to
	// [MemoryCap, EngineLimit]: the two candidates T(C) is evaluated at.
	LowerCap int `json:"lower_cap"`
	UpperCap int `json:"upper_cap"`
	// ForcedCap reports that Cap was forced by Options.Cap instead of chosen.
	ForcedCap bool `json:"forced_cap,omitempty"`
	// ClosedFormCap is the cap the closed form chooses: Cap unless forced.
	ClosedFormCap int `json:"closed_form_cap"`
	// Cap is C*, the largest CP degree of the plan (a power of two).
	Cap int `json:"cap"`
	// LoadTarget is Λ* = s_max²/C* in tokens².
	LoadTarget float64 `json:"load_target_tokens2"`
	// Microbatches is M* = M(C*), the closed-form MB count.
	Microbatches int `json:"target_microbatches"`
	// Regime is LoadBound or TokenBound: which term of M* wins.
	Regime string `json:"regime"`
}

// ceilDiv returns ⌈a/b⌉ for a >= 1, b >= 1, without overflow.
func ceilDiv(a, b int64) int64 { return 1 + (a-1)/b }

// pow2Floor returns the largest power of two <= n (n >= 1).
func pow2Floor(n int) int { return 1 << (bits.Len(uint(n)) - 1) }

// ErrEngineLimit reports that the longest sequence needs more ranks than any
// group may have: no plan exists. Errors wrapping it also wrap
// sched.ErrInvalidInput (the batch and the inputs are to blame, not the policy).
var ErrEngineLimit = errors.New("hydra: no plan: C_mem exceeds the engine limit")

// Solve computes the closed form of spec §1-4 for a batch: C_mem, the continuous
// C*, its rounding to a power of two (the better of the two powers of two around
// it by T, ties to the smaller, both clamped to [C_mem, EngineLimit]), Λ* and M*.
// forcedCap > 0 replaces the chosen cap (it must be a power of two in
// [C_mem, EngineLimit]). It fails, wrapping ErrEngineLimit, when C_mem exceeds the
// engine limit; every error wraps sched.ErrInvalidInput.
func Solve(sums Sums, in sched.Inputs, forcedCap int) (Targets, error) {
	if sums.MaxTokens < 1 || sums.MaxTokens > MaxSequenceTokens {
		return Targets{}, fmt.Errorf("hydra: s_max = %d tokens: must be in [1, %d] (%w)", sums.MaxTokens, MaxSequenceTokens, sched.ErrInvalidInput)
	}
	t := Targets{
		OverheadRatio: in.OverheadRatio,
		Bubble:        Bubble(in.PP, in.VPP),
		MaxTokens:     sums.MaxTokens,
		BudgetTokens:  in.BudgetTokens,
		MemoryCap:     MemoryCap(sums.MaxTokens, in.BudgetTokens),
		EngineLimit:   pow2Floor(in.DegreeLimit()),
	}
	if t.MemoryCap > t.EngineLimit {
		return Targets{}, fmt.Errorf("%w (%w): s_max = %d tokens at B = %d needs C_mem = %d ranks, but groups may have at most %d (largest power of two <= min(G = %d, max_degree = %d))",
			ErrEngineLimit, sched.ErrInvalidInput, sums.MaxTokens, in.BudgetTokens, t.MemoryCap, t.EngineLimit, in.PoolRanks, in.MaxDegree)
	}
	g := in.PoolRanks
	c := ContinuousCap(sums, g, t.Bubble, t.OverheadRatio)
	t.ContinuousCap = Real(c)
	clamp := func(x int) int { return min(max(x, t.MemoryCap), t.EngineLimit) }
	switch {
	case !(c >= 1): // 0 (b = 0) or below one rank
		t.LowerCap, t.UpperCap = t.MemoryCap, t.MemoryCap
	case c >= float64(t.EngineLimit): // includes +Inf
		t.LowerCap, t.UpperCap = t.EngineLimit, t.EngineLimit
	default:
		frac, exp := math.Frexp(c) // c = frac·2^exp, frac in [0.5, 1)
		lower := 1 << (exp - 1)
		upper := lower
		if frac != 0.5 {
			upper = lower * 2
		}
		t.LowerCap, t.UpperCap = clamp(lower), clamp(upper)
	}
	t.Cap = t.LowerCap
	if t.UpperCap != t.LowerCap &&
		IterationTime(sums, g, in.BudgetTokens, t.UpperCap, t.Bubble, t.OverheadRatio) <
			IterationTime(sums, g, in.BudgetTokens, t.LowerCap, t.Bubble, t.OverheadRatio) {
		t.Cap = t.UpperCap
	}
	t.ClosedFormCap = t.Cap
	if forcedCap != 0 {
		if !sched.IsPow2(forcedCap) || forcedCap < t.MemoryCap || forcedCap > t.EngineLimit {
			return Targets{}, fmt.Errorf("hydra: cap = %d: must be a power of two in [C_mem = %d, engine limit = %d] (%w)", forcedCap, t.MemoryCap, t.EngineLimit, sched.ErrInvalidInput)
		}
		t.Cap, t.ForcedCap = forcedCap, true
	}
	t.LoadTarget = LoadTarget(sums.MaxTokens, t.Cap)
	m, tokenBound := MicrobatchTarget(sums, g, in.BudgetTokens, t.Cap)
	t.Microbatches, t.Regime = m, LoadBound
	if tokenBound {
		t.Regime = TokenBound
	}
	return t, nil
}

// capSquares returns floor(s_max²·k/C*) for a power of two k <= C*: the most
// Σ s² a group of k ranks may hold, since per-rank load Σ s²/k <= Λ* = s_max²/C*
// is, in integers, Σ s² <= floor(s_max² / (C*/k)).
func (t Targets) capSquares(k int) int64 {
	sq := int64(t.MaxTokens) * int64(t.MaxTokens)
	return sq >> (bits.TrailingZeros(uint(t.Cap)) - bits.TrailingZeros(uint(k)))
}

// Degree returns cp(s) = min(C*, pow2ceil(max(1, s²/Λ*, s/B))) for a sequence of
// seqTokens <= s_max tokens (spec §4): the smallest power of two k that keeps both
// its per-rank load s²/k within Λ* (exactly: s² <= floor(s_max²·k/C*)) and its
// per-rank tokens s/k within B, capped at C*.
func (t Targets) Degree(seqTokens int) int {
	k := sched.MemoryDegree(seqTokens, t.BudgetTokens)
	sq := int64(seqTokens) * int64(seqTokens)
	for k < t.Cap && sq > t.capSquares(k) {
		k *= 2
	}
	return min(k, t.Cap)
}
