package calib

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
)

// Limits on the data FitCurve accepts.
const (
	// MinFitSizes is the fewest distinct sizes a fit needs.
	MinFitSizes = 3
	// MinFitSpan is the least ratio of the largest to the smallest size: below it
	// the 1/x regressor barely varies and Half is not identified.
	MinFitSpan = 4.0
	// MaxFitEfficiency is the largest unconstrained asymptotic efficiency a fit
	// accepts before the bound: above it the data say the profile's peak is wrong
	// (not boost clocks or NVLS beating p2p NVLink), and the fit is refused. A fit
	// between MaxEfficiency and it is held at MaxEfficiency (FitBounds).
	MaxFitEfficiency = 1.2
	// MaxEfficiency is the largest Max a profile curve may have: no kernel or
	// link runs above its peak, so every curve's η(x) is at most 1.
	MaxEfficiency = 1.0
)

// ErrIllConditioned is wrapped by FitCurve's refusals of data that cannot
// determine a curve: too few or too close sizes, or a fit outside the legal range.
var ErrIllConditioned = errors.New("calib: ill-conditioned fit")

// FitReport says how well a curve fits its measurements.
type FitReport struct {
	// Curve is the profile key of the fitted curve, e.g. "attention_fwd".
	Curve string `json:"curve"`
	// Operations lists the measurement operations that went into the fit, sorted.
	Operations []string `json:"operations,omitempty"`
	// Points is the number of measurements; Sizes the number of distinct sizes.
	Points int `json:"points"`
	Sizes  int `json:"sizes"`
	// Max and Half are the fitted curve parameters.
	Max  float64 `json:"max"`
	Half float64 `json:"half"`
	// RSquared is the coefficient of determination of the fitted efficiencies
	// against the measured ones (1 when the data are exactly on the curve; 1 also
	// when the data have no spread and the fit reproduces them).
	RSquared float64 `json:"r_squared"`
	// MaxRelErr is the largest |predicted − measured| / measured over the
	// measurements' seconds.
	MaxRelErr float64 `json:"max_rel_err"`
	// MaxBounded says the unconstrained Max exceeded the fit's limit and Max was
	// held at the limit (FitBounds.MaxLimit) with Half refitted.
	MaxBounded bool `json:"max_bounded,omitempty"`
}

// String formats the report on one line.
func (r FitReport) String() string {
	return fmt.Sprintf("%s: max %.4g half %.4g (R² %.4f, max rel err %.1f%%, %d points at %d sizes)",
		r.Curve, r.Max, r.Half, r.RSquared, 100*r.MaxRelErr, r.Points, r.Sizes)
}

// FitBounds constrain FitCurveBounded.
type FitBounds struct {
	// MaxLimit is the largest Max the fit may return (0 means 1: no kernel or
	// link beats its peak). When the unconstrained least-squares Max lies in
	// (MaxLimit, MaxFitEfficiency], Max is held at MaxLimit and Half is fitted
	// with it: the constrained least-squares solution, since the objective is a
	// convex quadratic in (1/Max, Half/Max) and the bound is then active. A
	// sourced ceiling below 1 (a part's best measured GEMM rate, say) may be given.
	MaxLimit float64
	// FixedSeconds is subtracted from every measured time before the fit: a
	// per-call fixed cost that the simulator prices apart (the kernel launch
	// gap, Profile.KernelLaunchSeconds). A measurement not above it is refused.
	FixedSeconds float64
}

// FitCurve is FitCurveBounded with the default bounds: Max at most 1, no fixed
// time subtracted.
func FitCurve(sizes, seconds, work []float64, peak float64) (Curve, FitReport, error) {
	return FitCurveBounded(sizes, seconds, work, peak, FitBounds{})
}

// FitCurveBounded fits η(x) = Max·x/(x + Half) to measurements of one
// operation: sizes x (tokens or bytes), measured seconds, and the work of each
// (FLOPs or bus bytes) that would take work/peak seconds at 100% efficiency.
// The efficiency of a measurement is η = work/((seconds − b.FixedSeconds)·peak),
// and 1/η = 1/Max + (Half/Max)·(1/x) is linear in 1/x; FitCurveBounded solves
// that by weighted linear least squares (gonum/stat.LinearRegression) with
// weights 1/(1/η)², i.e. it minimises the relative residuals, which are the
// relative errors of the predicted times. When the fitted Max exceeds
// b.MaxLimit (default 1), Max is held at the limit and Half refitted
// (FitBounds); the report says so (MaxBounded).
//
// It refuses (wrapping ErrIllConditioned) fewer than MinFitSizes distinct sizes,
// sizes spanning less than MinFitSpan×, an unconstrained Max outside
// (0, MaxFitEfficiency] (the peak is wrong; this check is the default bounds'
// only: a caller that gives MaxLimit vouches for the peak, and with a fixed
// time subtracted the unconstrained Max of a curve that plateaus early is no
// guide) and Half < 0; and it returns a plain
// error for slices of different lengths, a peak that is not positive, a limit
// outside (0, 1], a negative fixed time, or any size, seconds or work that is not
// a positive finite number (seconds must also exceed b.FixedSeconds). The
// returned Curve has empty sources: the caller states where the data came from.
func FitCurveBounded(sizes, seconds, work []float64, peak float64, b FitBounds) (Curve, FitReport, error) {
	n := len(sizes)
	if len(seconds) != n || len(work) != n {
		return Curve{}, FitReport{}, fmt.Errorf("calib: fit: %d sizes, %d seconds, %d works: lengths differ", n, len(seconds), len(work))
	}
	if !(peak > 0) || math.IsInf(peak, 0) {
		return Curve{}, FitReport{}, fmt.Errorf("calib: fit: peak = %v: must be a positive finite number", peak)
	}
	limit := b.MaxLimit
	if limit == 0 {
		limit = MaxEfficiency
	}
	if !(limit > 0 && limit <= MaxEfficiency) {
		return Curve{}, FitReport{}, fmt.Errorf("calib: fit: Max limit = %v: must be in (0, %g]", b.MaxLimit, MaxEfficiency)
	}
	if !(b.FixedSeconds >= 0) || math.IsInf(b.FixedSeconds, 0) {
		return Curve{}, FitReport{}, fmt.Errorf("calib: fit: fixed seconds = %v: must be a finite number >= 0", b.FixedSeconds)
	}
	for i := range n {
		for _, v := range []struct {
			name string
			x    float64
		}{{"size", sizes[i]}, {"seconds", seconds[i]}, {"work", work[i]}} {
			if !(v.x > 0) || math.IsInf(v.x, 0) {
				return Curve{}, FitReport{}, fmt.Errorf("calib: fit: point %d: %s = %v: must be a positive finite number", i, v.name, v.x)
			}
		}
		if !(seconds[i] > b.FixedSeconds) {
			return Curve{}, FitReport{}, fmt.Errorf("calib: fit: point %d: seconds = %v: must exceed the fixed time %v priced apart", i, seconds[i], b.FixedSeconds)
		}
	}
	distinct := slices.Clone(sizes)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	if len(distinct) < MinFitSizes {
		return Curve{}, FitReport{}, fmt.Errorf("%w: %d distinct sizes, need at least %d", ErrIllConditioned, len(distinct), MinFitSizes)
	}
	if span := distinct[len(distinct)-1] / distinct[0]; span < MinFitSpan {
		return Curve{}, FitReport{}, fmt.Errorf("%w: sizes span %.3g× (%g to %g), need at least %g×",
			ErrIllConditioned, span, distinct[0], distinct[len(distinct)-1], MinFitSpan)
	}

	u := make([]float64, n)   // 1/x
	inv := make([]float64, n) // 1/η
	w := make([]float64, n)
	for i := range n {
		u[i] = 1 / sizes[i]
		inv[i] = (seconds[i] - b.FixedSeconds) * peak / work[i]
		w[i] = 1 / (inv[i] * inv[i])
	}
	alpha, beta := stat.LinearRegression(u, inv, w, false)
	if b.MaxLimit == 0 && (!(alpha > 0) || 1/alpha > MaxFitEfficiency) {
		return Curve{}, FitReport{}, fmt.Errorf("%w: fitted Max = %.4g is outside (0, %g]: the data do not saturate (measure larger sizes) or the peak is wrong",
			ErrIllConditioned, 1/alpha, MaxFitEfficiency)
	}
	bounded := false
	if !(alpha >= 1/limit) { // also a non-positive alpha under an explicit limit
		// The bound is active: hold 1/Max at 1/limit and fit the slope alone,
		// β = Σ w·u·(1/η − α) / Σ w·u².
		alpha, bounded = 1/limit, true
		var num, den float64
		for i := range n {
			num += w[i] * u[i] * (inv[i] - alpha)
			den += w[i] * u[i] * u[i]
		}
		beta = num / den
	}
	maxEff, half := 1/alpha, beta/alpha
	if bounded {
		maxEff = limit // exactly, not 1/(1/limit)
	}
	if half < 0 {
		return Curve{}, FitReport{}, fmt.Errorf("%w: fitted Half = %.4g < 0: efficiency falls with size (measure smaller sizes, or the data are noise)",
			ErrIllConditioned, half)
	}

	c := Curve{Max: Const{Value: maxEff}, Half: Const{Value: half}}
	eta := make([]float64, n)
	etaHat := make([]float64, n)
	rep := FitReport{Points: n, Sizes: len(distinct), Max: maxEff, Half: half, MaxBounded: bounded}
	for i := range n {
		eta[i] = 1 / inv[i]
		etaHat[i] = c.At(sizes[i])
		predicted := work[i]/(peak*etaHat[i]) + b.FixedSeconds
		rep.MaxRelErr = max(rep.MaxRelErr, math.Abs(predicted-seconds[i])/seconds[i])
	}
	rep.RSquared = rSquared(etaHat, eta)
	return c, rep, nil
}

// rSquared is 1 − SS_res/SS_tot of estimates against values; with no spread in
// the values it is 1 if the estimates reproduce them (to 1e-12 relative) and 0
// otherwise.
func rSquared(estimates, values []float64) float64 {
	mean := stat.Mean(values, nil)
	var res, tot float64
	for i, v := range values {
		res += (v - estimates[i]) * (v - estimates[i])
		tot += (v - mean) * (v - mean)
	}
	if tot <= 1e-24*mean*mean {
		if res <= 1e-24*mean*mean*float64(len(values)) {
			return 1
		}
		return 0
	}
	return 1 - res/tot
}

// Fit fits every curve the measurements cover onto a copy of base and returns
// the copy, one report per fitted curve (in profile order) and an error if any
// measurement is unusable or any fit is refused. Operations map to curves as
// the package documentation says ("Measurements"): gemm → gemm, attention_fwd →
// attention_fwd (or attention_fwd_d256 at head dim 256), attention_bwd →
// attention_bwd (attention_bwd_d256), <collective>_intra → collective_intra,
// send_recv_inter → send_recv_inter, all_to_all_inter → all_to_all_inter, the
// other <collective>_inter → collective_inter. The work of each row
// is taken against base's PeakBF16FLOPs (compute) or NVLinkBytesPerSecond /
// NICBytesPerSecond (collectives), so those constants must be right before
// fitting. The fits use DefaultFitBounds(base): Max at most 1, and for compute
// curves base's KernelLaunchSeconds subtracted from every row (the simulator
// charges it per kernel as the launch gap, so a curve that kept it would count
// it twice). Each fitted Max and Half gets Source = source (e.g.
// "fit:meas.csv"); every other constant stays as in base. The result is
// validated.
func Fit(ms []Measurement, base *Profile, source string) (*Profile, []FitReport, error) {
	return FitWithBounds(ms, base, source, nil)
}

// DefaultFitBounds are the bounds Fit fits each curve of base with: Max at
// most 1 for every curve, and KernelLaunchSeconds subtracted from the rows of
// the compute curves (gemm, attention), whose every call is one kernel launch;
// collective curves subtract nothing, their latency α being priced explicitly.
func DefaultFitBounds(base *Profile) map[string]FitBounds {
	b := map[string]FitBounds{}
	for _, key := range curveKeys {
		if isComputeCurve(key) {
			b[key] = FitBounds{FixedSeconds: base.KernelLaunchSeconds.Value}
		}
	}
	return b
}

// isComputeCurve reports whether the curve with the given key is a kernel's
// efficiency against PeakBF16FLOPs (not a link's).
func isComputeCurve(key string) bool {
	switch key {
	case CurveGEMM, CurveGEMMFP8, CurveAttentionFwd, CurveAttentionBwd, CurveAttentionFwdD256, CurveAttentionBwdD256,
		CurveAttentionFwdD192, CurveAttentionBwdD192:
		return true
	}
	return false
}

// FitWithBounds is Fit with per-curve bounds: bounds[key] constrains the fit
// of the curve with that key (FitCurveBounded) in place of its
// DefaultFitBounds entry.
func FitWithBounds(ms []Measurement, base *Profile, source string, bounds map[string]FitBounds) (*Profile, []FitReport, error) {
	if base == nil {
		return nil, nil, errors.New("calib: fit: nil base profile")
	}
	if strings.TrimSpace(source) == "" {
		return nil, nil, errors.New("calib: fit: empty source: say where the measurements came from")
	}
	type group struct {
		sizes, seconds, work []float64
		ops                  []string
	}
	groups := map[string]*group{}
	for i, m := range ms {
		if !(m.Seconds > 0) || math.IsInf(m.Seconds, 0) {
			return nil, nil, fmt.Errorf("calib: fit: measurement %d (%s): seconds = %v: must be a positive finite number", i+1, m.Operation, m.Seconds)
		}
		p, err := toPoint(m)
		if err != nil {
			return nil, nil, fmt.Errorf("calib: fit: measurement %d: %w", i+1, err)
		}
		g := groups[p.curve]
		if g == nil {
			g = &group{}
			groups[p.curve] = g
		}
		g.sizes = append(g.sizes, p.size)
		g.seconds = append(g.seconds, p.seconds)
		g.work = append(g.work, p.work)
		if !slices.Contains(g.ops, m.Operation) {
			g.ops = append(g.ops, m.Operation)
		}
	}
	out := *base
	def := DefaultFitBounds(base)
	for k, b := range bounds {
		def[k] = b
	}
	bounds = def
	var reports []FitReport
	for _, key := range curveKeys {
		g := groups[key]
		if g == nil {
			continue
		}
		target, peak := out.curve(key)
		if key == CurveGEMMFP8 && peak.absent() {
			return nil, nil, fmt.Errorf("calib: fit %s (%s): the base profile %s has no peak_fp8_flops (no FP8 tensor cores): an FP8 efficiency has no peak to be relative to", key, strings.Join(g.ops, ", "), base.Name)
		}
		c, rep, err := FitCurveBounded(g.sizes, g.seconds, g.work, peak.Value, bounds[key])
		if err != nil {
			return nil, nil, fmt.Errorf("calib: fit %s (%s): %w", key, strings.Join(g.ops, ", "), err)
		}
		c.Max.Source, c.Half.Source = source, source
		*target = c
		rep.Curve = key
		slices.Sort(g.ops)
		rep.Operations = g.ops
		reports = append(reports, rep)
	}
	if err := out.Validate(); err != nil {
		return nil, nil, fmt.Errorf("calib: fit: the fitted profile is invalid: %w", err)
	}
	return &out, reports, nil
}

// curve returns a pointer to the curve with the given key and the peak its
// efficiency is measured against (FLOP/s or bytes/s).
func (p *Profile) curve(key string) (*Curve, Const) {
	switch key {
	case CurveGEMM:
		return &p.GEMM, p.PeakBF16FLOPs
	case CurveAttentionFwd:
		return &p.AttentionFwd, p.PeakBF16FLOPs
	case CurveAttentionBwd:
		return &p.AttentionBwd, p.PeakBF16FLOPs
	case CurveGEMMFP8:
		return &p.GEMMFP8, p.PeakFP8FLOPs
	case CurveAttentionFwdD192:
		return &p.AttentionFwdD192, p.PeakBF16FLOPs
	case CurveAttentionBwdD192:
		return &p.AttentionBwdD192, p.PeakBF16FLOPs
	case CurveAttentionFwdD256:
		return &p.AttentionFwdD256, p.PeakBF16FLOPs
	case CurveAttentionBwdD256:
		return &p.AttentionBwdD256, p.PeakBF16FLOPs
	case CurveCollectiveIntra:
		return &p.CollectiveIntra, p.NVLinkBytesPerSecond
	case CurveCollectiveInter:
		return &p.CollectiveInter, p.NICBytesPerSecond
	case CurveSendRecvInter:
		return &p.SendRecvInter, p.NICBytesPerSecond
	case CurveAllToAllInter:
		return &p.AllToAllInter, p.NICBytesPerSecond
	}
	panic(fmt.Sprintf("calib: unknown curve %q", key))
}
