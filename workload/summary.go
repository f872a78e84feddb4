package workload

import (
	"fmt"
	"math"
	"math/bits"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Summary describes a set of sequence lengths, as `dcpsim workload stats` prints it.
type Summary struct {
	Sequences   int          `json:"sequences"`   // number of sequences
	Tokens      int64        `json:"tokens"`      // Σ s
	MinTokens   int          `json:"min_tokens"`  // shortest sequence (0 when empty)
	MaxTokens   int          `json:"max_tokens"`  // longest sequence (0 when empty)
	MeanTokens  float64      `json:"mean_tokens"` // Tokens / Sequences (0 when empty)
	SumSquares  float64      `json:"sum_squares"` // Σ s², proportional to causal attention work; summed exactly, then rounded
	Percentiles []Percentile `json:"percentiles"` // at P = 0.5, 0.9, 0.95, 0.99, 0.999 (nil when empty)
	Above       []Threshold  `json:"above"`       // one per threshold, in the order given
}

// Percentile is one quantile of the lengths.
type Percentile struct {
	P      float64 `json:"p"`      // probability in [0, 1], e.g. 0.5 for the median
	Tokens float64 `json:"tokens"` // the smallest length s with at least a fraction P of lengths <= s
}

// Threshold describes the sequences longer than Tokens.
type Threshold struct {
	Tokens           int     `json:"tokens"`            // the threshold, in tokens
	SequenceFraction float64 `json:"sequence_fraction"` // fraction of sequences with s > Tokens
	TokenShare       float64 `json:"token_share"`       // their share of Σ s
	SquareShare      float64 `json:"square_share"`      // their share of Σ s² (attention work)
}

// summaryPercentiles are the probabilities Summarize reports percentiles at.
var summaryPercentiles = [...]float64{0.5, 0.9, 0.95, 0.99, 0.999}

// DefaultThresholds returns the thresholds `workload stats` reports by default:
// 2K, 8K, 32K and 128K tokens (a fresh slice).
func DefaultThresholds() []int { return []int{2048, 8192, 32768, 131072} }

// uint128 is an exact accumulator for Σ s².
type uint128 struct{ hi, lo uint64 }

func (u *uint128) addSquare(s int) {
	h, l := bits.Mul64(uint64(s), uint64(s))
	var c uint64
	u.lo, c = bits.Add64(u.lo, l, 0)
	u.hi += h + c
}

func (u uint128) float() float64 { return math.Ldexp(float64(u.hi), 64) + float64(u.lo) }

// Summarize describes lengths (each >= 1; a smaller one panics). Percentiles use
// gonum's stat.Quantile with stat.Empirical (the inverse of the empirical CDF: the smallest
// length with at least a fraction P of lengths at or below it, no interpolation). Σ s² is
// exact for lengths below 2³². Sums do not depend on the order of lengths.
func Summarize(lengths []int, thresholds []int) Summary {
	sum := Summary{Sequences: len(lengths), Above: make([]Threshold, len(thresholds))}
	for i, t := range thresholds {
		sum.Above[i].Tokens = t
	}
	if len(lengths) == 0 {
		return sum
	}
	sorted := make([]float64, len(lengths))
	var sq uint128
	sum.MinTokens, sum.MaxTokens = lengths[0], lengths[0]
	for i, s := range lengths {
		if s < 1 {
			panic(fmt.Sprintf("workload: Summarize: lengths[%d] = %d (want >= 1)", i, s))
		}
		sum.Tokens += int64(s)
		sq.addSquare(s)
		sum.MinTokens = min(sum.MinTokens, s)
		sum.MaxTokens = max(sum.MaxTokens, s)
		sorted[i] = float64(s)
	}
	sum.SumSquares = sq.float()
	sum.MeanTokens = float64(sum.Tokens) / float64(len(lengths))
	sort.Float64s(sorted)
	for _, p := range summaryPercentiles {
		sum.Percentiles = append(sum.Percentiles, Percentile{P: p, Tokens: stat.Quantile(p, stat.Empirical, sorted, nil)})
	}
	for i, t := range thresholds {
		var n int
		var tokens int64
		var squares uint128
		for _, s := range lengths {
			if s > t {
				n++
				tokens += int64(s)
				squares.addSquare(s)
			}
		}
		a := &sum.Above[i]
		a.SequenceFraction = float64(n) / float64(len(lengths))
		a.TokenShare = float64(tokens) / float64(sum.Tokens)
		a.SquareShare = squares.float() / sum.SumSquares
	}
	return sum
}

// BatchStats describes one batch, as `dcpsim workload stats` lists it per
// iteration (the JSON names are those of its --json output).
type BatchStats struct {
	// Iteration is the batch's training iteration.
	Iteration int `json:"iteration"`
	// Sequences is the number of sequences (a piece of a split sequence counts
	// as one).
	Sequences int `json:"sequences"`
	// Tokens is Σ s.
	Tokens int64 `json:"tokens"`
	// SumSquares is Σ s², summed exactly as Summarize sums it, then rounded.
	SumSquares float64 `json:"sum_squares"`
	// MaxTokens is the longest sequence.
	MaxTokens int `json:"max_tokens"`
	// AttentionWeightedMeanTokens is Σ s² / Σ s = E[s²]/E[s]: the mean length
	// of the sequence a token belongs to, which sets the token's attention cost.
	AttentionWeightedMeanTokens float64 `json:"attention_weighted_mean_tokens"`
}

// Stats describes the batch: Summarize's counts and sums for its lengths (each
// >= 1; a smaller one panics), without percentiles or thresholds. An empty
// batch has all-zero statistics but its iteration.
func (b Batch) Stats() BatchStats {
	st := BatchStats{Iteration: b.Iteration}
	if len(b.Lengths) == 0 {
		return st
	}
	s := Summarize(b.Lengths, nil)
	st.Sequences, st.Tokens, st.SumSquares, st.MaxTokens = s.Sequences, s.Tokens, s.SumSquares, s.MaxTokens
	st.AttentionWeightedMeanTokens = s.SumSquares / float64(s.Tokens)
	return st
}

// PaperShape compares a set of lengths with the dataset shape the HyDra paper
// (§2.2) states for its long-context corpus: more than 85% of sequences at
// most 2K tokens, fewer than 0.6% above 32K, and lengths spanning four orders
// of magnitude.
type PaperShape struct {
	// AtMost2K is the fraction of sequences of at most 2048 tokens;
	// AtMost2KOK says whether it is above 0.85.
	AtMost2K   float64
	AtMost2KOK bool
	// Above32K is the fraction of sequences longer than 32768 tokens;
	// Above32KOK says whether it is below 0.006.
	Above32K   float64
	Above32KOK bool
	// Span is MaxTokens / MinTokens; SpanOK says whether it is at least 10⁴.
	Span   float64
	SpanOK bool
}

// PaperShape checks the summary against the paper's dataset shape. ok is false
// when the summary has no sequences or its thresholds lack 2048 or 32768
// (DefaultThresholds has both).
func (s Summary) PaperShape() (shape PaperShape, ok bool) {
	if s.Sequences == 0 {
		return PaperShape{}, false
	}
	var has2K, has32K bool
	for _, a := range s.Above {
		switch a.Tokens {
		case 2048:
			shape.AtMost2K, has2K = 1-a.SequenceFraction, true
		case 32768:
			shape.Above32K, has32K = a.SequenceFraction, true
		}
	}
	if !has2K || !has32K {
		return PaperShape{}, false
	}
	shape.Span = float64(s.MaxTokens) / float64(max(s.MinTokens, 1))
	shape.AtMost2KOK, shape.Above32KOK, shape.SpanOK = shape.AtMost2K > 0.85, shape.Above32K < 0.006, shape.Span >= 1e4
	return shape, true
}
