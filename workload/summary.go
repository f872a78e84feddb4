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

// addSquares adds n·s².
func (u *uint128) addSquares(s int, n uint64) {
	h, l := bits.Mul64(uint64(s)*uint64(s), n) // s < 2^32: s² fits 64 bits
	var c uint64
	u.lo, c = bits.Add64(u.lo, l, 0)
	u.hi += h + c
}

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
	// Summarize's sums without its sort (percentiles are not reported).
	var sq uint128
	for i, s := range b.Lengths {
		if s < 1 {
			panic(fmt.Sprintf("workload: Summarize: lengths[%d] = %d (want >= 1)", i, s))
		}
		st.Tokens += int64(s)
		sq.addSquare(s)
		st.MaxTokens = max(st.MaxTokens, s)
	}
	st.Sequences, st.SumSquares = len(b.Lengths), sq.float()
	st.AttentionWeightedMeanTokens = st.SumSquares / float64(st.Tokens)
	return st
}

// denseLengths is the length below which an Accumulator counts lengths in a
// slice (512 KiB of counts); longer ones are counted in a map.
const denseLengths = 1 << 16

// Accumulator summarizes lengths added in pieces, batch by batch, in memory
// that does not grow with the number of lengths added: it keeps one count per
// distinct length. Its Summary equals Summarize over all the lengths added
// (pooled in any order), bit for bit. The zero Accumulator is empty and ready
// to use; it is not safe for concurrent use.
type Accumulator struct {
	dense  []uint64       // dense[s]: how many lengths s < denseLengths were added
	sparse map[int]uint64 // the same for longer lengths
	n      uint64
}

// Add counts lengths (each >= 1; a smaller one panics).
func (a *Accumulator) Add(lengths []int) {
	for i, s := range lengths {
		switch {
		case s < 1:
			panic(fmt.Sprintf("workload: Accumulator.Add: lengths[%d] = %d (want >= 1)", i, s))
		case s < denseLengths:
			if s >= len(a.dense) {
				a.dense = append(a.dense, make([]uint64, min(max(2*s, 1024), denseLengths)-len(a.dense))...)
			}
			a.dense[s]++
		default:
			if a.sparse == nil {
				a.sparse = map[int]uint64{}
			}
			a.sparse[s]++
		}
	}
	a.n += uint64(len(lengths))
}

// Len returns the number of lengths added.
func (a *Accumulator) Len() int { return int(a.n) }

// each calls f for every distinct length added, in increasing order, with its count.
func (a *Accumulator) each(f func(s int, n uint64)) {
	for s, n := range a.dense {
		if n > 0 {
			f(s, n)
		}
	}
	long := make([]int, 0, len(a.sparse))
	for s := range a.sparse {
		long = append(long, s)
	}
	sort.Ints(long)
	for _, s := range long {
		f(s, a.sparse[s])
	}
}

// Lengths returns every length added, sorted (n·8 bytes: for a figure of a
// bounded number of lengths).
func (a *Accumulator) Lengths() []int {
	out := make([]int, 0, a.n)
	a.each(func(s int, n uint64) {
		for range n {
			out = append(out, s)
		}
	})
	return out
}

// Summary describes the lengths added as Summarize does. Percentiles use
// gonum's stat.Quantile with stat.Empirical over the distinct lengths weighted
// by their counts, which picks the same length as over the lengths themselves.
func (a *Accumulator) Summary(thresholds []int) Summary {
	sum := Summary{Sequences: int(a.n), Above: make([]Threshold, len(thresholds))}
	for i, t := range thresholds {
		sum.Above[i].Tokens = t
	}
	if a.n == 0 {
		return sum
	}
	var values, weights []float64
	var sq uint128
	sum.MinTokens = -1
	a.each(func(s int, n uint64) {
		if sum.MinTokens < 0 {
			sum.MinTokens = s
		}
		sum.MaxTokens = s
		sum.Tokens += int64(s) * int64(n)
		sq.addSquares(s, n)
		values, weights = append(values, float64(s)), append(weights, float64(n))
	})
	sum.SumSquares = sq.float()
	sum.MeanTokens = float64(sum.Tokens) / float64(a.n)
	for _, p := range summaryPercentiles {
		sum.Percentiles = append(sum.Percentiles, Percentile{P: p, Tokens: stat.Quantile(p, stat.Empirical, values, weights)})
	}
	for i, t := range thresholds {
		var n uint64
		var tokens int64
		var squares uint128
		a.each(func(s int, c uint64) {
			if s > t {
				n += c
				tokens += int64(s) * int64(c)
				squares.addSquares(s, c)
			}
		})
		th := &sum.Above[i]
		th.SequenceFraction = float64(n) / float64(a.n)
		th.TokenShare = float64(tokens) / float64(sum.Tokens)
		th.SquareShare = squares.float() / sum.SumSquares
	}
	return sum
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
