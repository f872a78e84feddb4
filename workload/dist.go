package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// MaxSequenceTokens is the longest sequence, in tokens, that a distribution bound or a
// loaded length may have.
const MaxSequenceTokens = 1_000_000_000

// Distribution draws sequence lengths in tokens.
//
// Implementations are values without mutable state, safe for concurrent use; all
// randomness comes from the source passed to Rand. Rand and CDF assume Validate returned
// nil.
type Distribution interface {
	// Rand returns one length >= 1, drawn using only src.
	Rand(src rand.Source) int
	// CDF returns P(L <= tokens) for the integer lengths Rand returns.
	CDF(tokens float64) float64
	// MaxTokens returns the largest length Rand can return.
	MaxTokens() int
	// String describes the distribution and its parameters, e.g.
	// "lognormal(median=400,sigma=1.2,[16,262144])".
	String() string
	// Validate returns an error naming the first bad field and its allowed range.
	Validate() error
}

var (
	_ Distribution = LogNormal{}
	_ Distribution = TruncatedPareto{}
	_ Distribution = Mixture{}
	_ Distribution = (*Empirical)(nil)
)

// uniform draws u uniform on [lo, hi) from src.
func uniform(src rand.Source, lo, hi float64) float64 {
	return distuv.Uniform{Min: lo, Max: hi, Src: src}.Rand()
}

// intRange is the integer range a continuous variable on [minTokens, maxTokens] rounds into.
func intRange(minTokens, maxTokens float64) (lo, hi int) {
	lo = int(math.Max(1, math.Ceil(minTokens)))
	hi = int(math.Floor(maxTokens))
	return lo, hi
}

// roundClamp rounds x half up and clamps it to [lo, hi].
func roundClamp(x float64, lo, hi int) int {
	n := math.Floor(x + 0.5)
	if !(n >= float64(lo)) { // also catches NaN
		return lo
	}
	if n > float64(hi) {
		return hi
	}
	return int(n)
}

// discreteCDF is P(round(X) <= t) when X has the continuous CDF cont and round is
// roundClamp onto [lo, hi]: for lo <= n < hi, round(X) <= n exactly when X < n + ½.
func discreteCDF(t float64, lo, hi int, cont func(float64) float64) float64 {
	if math.IsNaN(t) {
		return math.NaN()
	}
	n := math.Floor(t)
	switch {
	case n < float64(lo):
		return 0
	case n >= float64(hi):
		return 1
	}
	return cont(n + 0.5)
}

// fmtNum formats a parameter exactly and briefly (shortest representation).
func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// checkBound validates a truncation bound in [1, MaxSequenceTokens].
func checkBound(family, field string, v float64) error {
	if !(v >= 1 && v <= MaxSequenceTokens) {
		return fmt.Errorf("%s: %s = %s out of range (allowed: [1, %d])", family, field, fmtNum(v), MaxSequenceTokens)
	}
	return nil
}

// checkBounds validates a [LowTokens, HighTokens] pair and that it holds an integer.
func checkBounds(family string, minTokens, maxTokens float64) error {
	if err := checkBound(family, "LowTokens", minTokens); err != nil {
		return err
	}
	if err := checkBound(family, "HighTokens", maxTokens); err != nil {
		return err
	}
	if !(maxTokens > minTokens) {
		return fmt.Errorf("%s: HighTokens = %s out of range (allowed: (LowTokens = %s, %d])",
			family, fmtNum(maxTokens), fmtNum(minTokens), MaxSequenceTokens)
	}
	if lo, hi := intRange(minTokens, maxTokens); lo > hi {
		return fmt.Errorf("%s: [LowTokens, HighTokens] = [%s, %s] holds no integer length (allowed: an interval containing an integer)",
			family, fmtNum(minTokens), fmtNum(maxTokens))
	}
	return nil
}

// LogNormal is a log-normal length distribution truncated to [LowTokens, HighTokens]:
// ln L is normal with mean ln(MedianTokens) and standard deviation Sigma, conditioned on
// LowTokens <= L <= HighTokens. Draws use inverse-CDF sampling, so the truncation costs
// nothing: u is uniform on [F(LowTokens), F(HighTokens)] and L = F⁻¹(u) (computed on the
// mirrored tail when the interval lies above the median, for precision). Draws round to
// the nearest integer (halves up) within [⌈LowTokens⌉, ⌊HighTokens⌋].
//
// (The bounds are not called MinTokens/MaxTokens because MaxTokens is the Distribution
// method.)
type LogNormal struct {
	MedianTokens float64 // median of the untruncated log-normal, exp(μ); > 0
	Sigma        float64 // standard deviation of ln L; > 0
	LowTokens    float64 // lower truncation bound, in [1, MaxSequenceTokens]
	HighTokens   float64 // upper truncation bound, in (LowTokens, MaxSequenceTokens]
}

// zRange returns the truncation interval in standard-normal units, mirrored to z <= 0
// (flip) when it lies entirely above the median, where Φ keeps full relative precision.
func (d LogNormal) zRange() (zlo, zhi float64, flip bool) {
	mu := math.Log(d.MedianTokens)
	zlo = (math.Log(d.LowTokens) - mu) / d.Sigma
	zhi = (math.Log(d.HighTokens) - mu) / d.Sigma
	if zlo > 0 {
		return -zhi, -zlo, true
	}
	return zlo, zhi, false
}

// contCDF is the CDF of the continuous truncated variable.
func (d LogNormal) contCDF(x float64) float64 {
	if x <= d.LowTokens {
		return 0
	}
	if x >= d.HighTokens {
		return 1
	}
	zlo, zhi, flip := d.zRange()
	plo, phi := distuv.UnitNormal.CDF(zlo), distuv.UnitNormal.CDF(zhi)
	z := (math.Log(x) - math.Log(d.MedianTokens)) / d.Sigma
	var f float64
	if flip {
		f = (phi - distuv.UnitNormal.CDF(-z)) / (phi - plo)
	} else {
		f = (distuv.UnitNormal.CDF(z) - plo) / (phi - plo)
	}
	return math.Min(1, math.Max(0, f))
}

// Rand draws one length from src.
func (d LogNormal) Rand(src rand.Source) int {
	zlo, zhi, flip := d.zRange()
	u := uniform(src, distuv.UnitNormal.CDF(zlo), distuv.UnitNormal.CDF(zhi))
	var x float64
	if flip {
		x = d.MedianTokens * math.Exp(-d.Sigma*distuv.UnitNormal.Quantile(u))
	} else {
		x = distuv.LogNormal{Mu: math.Log(d.MedianTokens), Sigma: d.Sigma, Src: src}.Quantile(u)
	}
	x = math.Min(d.HighTokens, math.Max(d.LowTokens, x))
	lo, hi := intRange(d.LowTokens, d.HighTokens)
	return roundClamp(x, lo, hi)
}

// CDF returns P(L <= tokens).
func (d LogNormal) CDF(tokens float64) float64 {
	lo, hi := intRange(d.LowTokens, d.HighTokens)
	return discreteCDF(tokens, lo, hi, d.contCDF)
}

// MaxTokens returns ⌊HighTokens⌋.
func (d LogNormal) MaxTokens() int {
	_, hi := intRange(d.LowTokens, d.HighTokens)
	return hi
}

// String returns "lognormal(median=M,sigma=S,[MIN,MAX])".
func (d LogNormal) String() string {
	return fmt.Sprintf("lognormal(median=%s,sigma=%s,[%s,%s])",
		fmtNum(d.MedianTokens), fmtNum(d.Sigma), fmtNum(d.LowTokens), fmtNum(d.HighTokens))
}

// Validate checks every field and that the truncation interval carries probability mass.
func (d LogNormal) Validate() error {
	if !(d.MedianTokens > 0 && d.MedianTokens <= math.MaxFloat64) {
		return fmt.Errorf("lognormal: MedianTokens = %s out of range (allowed: finite, > 0)", fmtNum(d.MedianTokens))
	}
	if !(d.Sigma > 0 && d.Sigma <= math.MaxFloat64) {
		return fmt.Errorf("lognormal: Sigma = %s out of range (allowed: finite, > 0)", fmtNum(d.Sigma))
	}
	if err := checkBounds("lognormal", d.LowTokens, d.HighTokens); err != nil {
		return err
	}
	zlo, zhi, _ := d.zRange()
	if !(distuv.UnitNormal.CDF(zhi)-distuv.UnitNormal.CDF(zlo) > 0) {
		return fmt.Errorf("lognormal: [LowTokens, HighTokens] = [%s, %s] has no probability mass in float64 under median %s, sigma %s (allowed: an interval within about 37 sigma of the median)",
			fmtNum(d.LowTokens), fmtNum(d.HighTokens), fmtNum(d.MedianTokens), fmtNum(d.Sigma))
	}
	return nil
}

// TruncatedPareto is a bounded power law on [LowTokens, HighTokens] = [x_min, x_max]:
// P(L > x) ∝ (x_min/x)^α − (x_min/x_max)^α. Draws use the inverse CDF
// L = x_min / (1 − u·(1 − (x_min/x_max)^α))^(1/α), u uniform on [0, 1), rounded to the
// nearest integer (halves up) within [⌈x_min⌉, ⌊x_max⌋].
type TruncatedPareto struct {
	LowTokens  float64 // x_min, the scale and lower bound, in [1, MaxSequenceTokens]
	HighTokens float64 // x_max, the upper bound, in (LowTokens, MaxSequenceTokens]
	Alpha      float64 // tail index α; > 0 (smaller is heavier)
}

// mass is 1 − (x_min/x_max)^α, computed without cancellation.
func (d TruncatedPareto) mass() float64 {
	return -math.Expm1(d.Alpha * math.Log(d.LowTokens/d.HighTokens))
}

func (d TruncatedPareto) contCDF(x float64) float64 {
	if x <= d.LowTokens {
		return 0
	}
	if x >= d.HighTokens {
		return 1
	}
	return math.Min(1, -math.Expm1(d.Alpha*math.Log(d.LowTokens/x))/d.mass())
}

// Rand draws one length from src.
func (d TruncatedPareto) Rand(src rand.Source) int {
	u := uniform(src, 0, 1)
	// x_min / (1 − u·c)^(1/α), as x_min·exp(−log1p(−u·c)/α).
	x := d.LowTokens * math.Exp(-math.Log1p(-u*d.mass())/d.Alpha)
	x = math.Min(d.HighTokens, math.Max(d.LowTokens, x))
	lo, hi := intRange(d.LowTokens, d.HighTokens)
	return roundClamp(x, lo, hi)
}

// CDF returns P(L <= tokens).
func (d TruncatedPareto) CDF(tokens float64) float64 {
	lo, hi := intRange(d.LowTokens, d.HighTokens)
	return discreteCDF(tokens, lo, hi, d.contCDF)
}

// MaxTokens returns ⌊HighTokens⌋.
func (d TruncatedPareto) MaxTokens() int {
	_, hi := intRange(d.LowTokens, d.HighTokens)
	return hi
}

// String returns "pareto(xmin=A,alpha=B,xmax=C)".
func (d TruncatedPareto) String() string {
	return fmt.Sprintf("pareto(xmin=%s,alpha=%s,xmax=%s)", fmtNum(d.LowTokens), fmtNum(d.Alpha), fmtNum(d.HighTokens))
}

// Validate checks every field.
func (d TruncatedPareto) Validate() error {
	if !(d.Alpha > 0 && d.Alpha <= math.MaxFloat64) {
		return fmt.Errorf("pareto: Alpha = %s out of range (allowed: finite, > 0)", fmtNum(d.Alpha))
	}
	if err := checkBounds("pareto", d.LowTokens, d.HighTokens); err != nil {
		return err
	}
	if !(d.mass() > 0) {
		return fmt.Errorf("pareto: Alpha = %s too small for [%s, %s] in float64 (allowed: (x_min/x_max)^Alpha < 1)",
			fmtNum(d.Alpha), fmtNum(d.LowTokens), fmtNum(d.HighTokens))
	}
	return nil
}

// Mixture draws from Components[i] with probability Weights[i] / ΣWeights. The component
// is chosen with one uniform draw from the same source (the inverse CDF of the categorical
// distribution, equivalent to distuv.Categorical without its per-draw allocation).
type Mixture struct {
	Weights    []float64      // positive, finite; normalised by their sum
	Components []Distribution // one per weight
}

func (m Mixture) total() float64 {
	var sum float64
	for _, w := range m.Weights {
		sum += w
	}
	return sum
}

// Rand draws a component, then one length from it, both from src.
func (m Mixture) Rand(src rand.Source) int {
	u := uniform(src, 0, m.total())
	var cum float64
	for i, w := range m.Weights {
		cum += w
		if u < cum {
			return m.Components[i].Rand(src)
		}
	}
	return m.Components[len(m.Components)-1].Rand(src) // u rounded up to the total
}

// CDF returns Σ wᵢ·CDFᵢ(tokens) / Σ wᵢ.
func (m Mixture) CDF(tokens float64) float64 {
	var f float64
	for i, w := range m.Weights {
		f += w * m.Components[i].CDF(tokens)
	}
	return math.Min(1, f/m.total())
}

// MaxTokens returns the largest MaxTokens of the components.
func (m Mixture) MaxTokens() int {
	hi := 0
	for _, c := range m.Components {
		hi = max(hi, c.MaxTokens())
	}
	return hi
}

// String returns "mixture(W1 C1, W2 C2, ...)" with normalised weights.
func (m Mixture) String() string {
	total := m.total()
	var b strings.Builder
	b.WriteString("mixture(")
	for i, c := range m.Components {
		if i > 0 {
			b.WriteString(", ")
		}
		w := math.NaN()
		if i < len(m.Weights) {
			w = m.Weights[i] / total
		}
		fmt.Fprintf(&b, "%s %v", strconv.FormatFloat(w, 'g', 6, 64), c)
	}
	b.WriteString(")")
	return b.String()
}

// Validate checks the weights and validates every component.
func (m Mixture) Validate() error {
	if len(m.Components) == 0 {
		return errors.New("mixture: Components is empty (allowed: at least one component)")
	}
	if len(m.Weights) != len(m.Components) {
		return fmt.Errorf("mixture: len(Weights) = %d, len(Components) = %d (allowed: equal lengths)", len(m.Weights), len(m.Components))
	}
	for i, w := range m.Weights {
		if !(w > 0 && w <= math.MaxFloat64) {
			return fmt.Errorf("mixture: Weights[%d] = %s out of range (allowed: finite, > 0)", i, fmtNum(w))
		}
	}
	if t := m.total(); !(t <= math.MaxFloat64) {
		return fmt.Errorf("mixture: Weights sum to %s (allowed: a finite sum)", fmtNum(t))
	}
	for i, c := range m.Components {
		if c == nil {
			return fmt.Errorf("mixture: Components[%d] is nil (allowed: a Distribution)", i)
		}
		if err := c.Validate(); err != nil {
			return fmt.Errorf("mixture: Components[%d]: %w", i, err)
		}
	}
	return nil
}

// Empirical is a length distribution given by a CDF table: P(L <= tokens[i]) = cumProb[i],
// linear in between, with an atom of mass cumProb[0] at tokens[0]. Draws use the
// piecewise-linear inverse CDF and round to the nearest integer (halves up) within
// [⌈tokens[0]⌉, ⌊tokens[n−1]⌋]. Build one with NewEmpirical.
type Empirical struct {
	tokens  []float64
	cumProb []float64
}

// cumProbTolerance is how far the last cumulative probability may be from 1; it is then
// set to exactly 1.
const cumProbTolerance = 1e-9

// NewEmpirical builds an Empirical distribution from a CDF table: tokens strictly
// increasing in [1, MaxSequenceTokens] with at least one integer between the first and the
// last, cumProb non-decreasing in [0, 1] and ending at 1 (within 1e-9). The slices are
// copied.
func NewEmpirical(tokens, cumProb []float64) (*Empirical, error) {
	e := &Empirical{tokens: append([]float64(nil), tokens...), cumProb: append([]float64(nil), cumProb...)}
	if n := len(e.cumProb); n > 0 && math.Abs(e.cumProb[n-1]-1) <= cumProbTolerance {
		e.cumProb[n-1] = 1
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Empirical) bounds() (lo, hi int) {
	return intRange(e.tokens[0], e.tokens[len(e.tokens)-1])
}

func (e *Empirical) contCDF(x float64) float64 {
	n := len(e.tokens)
	if x < e.tokens[0] {
		return 0
	}
	if x >= e.tokens[n-1] {
		return 1
	}
	j := sort.Search(n, func(j int) bool { return e.tokens[j] > x }) // 1 <= j < n
	t0, t1 := e.tokens[j-1], e.tokens[j]
	p0, p1 := e.cumProb[j-1], e.cumProb[j]
	return p0 + (x-t0)/(t1-t0)*(p1-p0)
}

// Rand draws one length from src.
func (e *Empirical) Rand(src rand.Source) int {
	u := uniform(src, 0, 1)
	j := sort.SearchFloat64s(e.cumProb, u) // first j with cumProb[j] >= u
	var x float64
	switch {
	case j == 0:
		x = e.tokens[0]
	case j >= len(e.tokens):
		x = e.tokens[len(e.tokens)-1]
	default: // cumProb[j-1] < u <= cumProb[j]
		t0, t1 := e.tokens[j-1], e.tokens[j]
		p0, p1 := e.cumProb[j-1], e.cumProb[j]
		x = t0 + (u-p0)/(p1-p0)*(t1-t0)
	}
	lo, hi := e.bounds()
	return roundClamp(x, lo, hi)
}

// CDF returns P(L <= tokens).
func (e *Empirical) CDF(tokens float64) float64 {
	lo, hi := e.bounds()
	return discreteCDF(tokens, lo, hi, e.contCDF)
}

// MaxTokens returns ⌊tokens[n−1]⌋.
func (e *Empirical) MaxTokens() int {
	_, hi := e.bounds()
	return hi
}

// String returns "empirical(N points,[MIN,MAX])".
func (e *Empirical) String() string {
	if e == nil || len(e.tokens) == 0 {
		return "empirical(0 points)"
	}
	return fmt.Sprintf("empirical(%d points,[%s,%s])", len(e.tokens), fmtNum(e.tokens[0]), fmtNum(e.tokens[len(e.tokens)-1]))
}

// Validate checks the table; an Empirical not built by NewEmpirical has an empty one.
func (e *Empirical) Validate() error {
	if e == nil || len(e.tokens) == 0 {
		return errors.New("empirical: tokens is empty (allowed: at least one point; use NewEmpirical)")
	}
	if len(e.cumProb) != len(e.tokens) {
		return fmt.Errorf("empirical: len(cumProb) = %d, len(tokens) = %d (allowed: equal lengths)", len(e.cumProb), len(e.tokens))
	}
	for i, t := range e.tokens {
		if err := checkBound("empirical", fmt.Sprintf("tokens[%d]", i), t); err != nil {
			return err
		}
		if i > 0 && !(t > e.tokens[i-1]) {
			return fmt.Errorf("empirical: tokens[%d] = %s not above tokens[%d] = %s (allowed: strictly increasing)",
				i, fmtNum(t), i-1, fmtNum(e.tokens[i-1]))
		}
	}
	for i, p := range e.cumProb {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("empirical: cumProb[%d] = %s out of range (allowed: [0, 1])", i, fmtNum(p))
		}
		if i > 0 && p < e.cumProb[i-1] {
			return fmt.Errorf("empirical: cumProb[%d] = %s below cumProb[%d] = %s (allowed: non-decreasing)",
				i, fmtNum(p), i-1, fmtNum(e.cumProb[i-1]))
		}
	}
	if last := e.cumProb[len(e.cumProb)-1]; last != 1 {
		return fmt.Errorf("empirical: cumProb[%d] = %s (allowed: 1, the last probability)", len(e.cumProb)-1, fmtNum(last))
	}
	if lo, hi := e.bounds(); lo > hi {
		return fmt.Errorf("empirical: tokens span [%s, %s], which holds no integer length (allowed: a span containing an integer)",
			fmtNum(e.tokens[0]), fmtNum(e.tokens[len(e.tokens)-1]))
	}
	return nil
}
