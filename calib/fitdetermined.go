package calib

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoCurveFitted is wrapped by FitDetermined's error when the measurements
// determine none of the curves they cover.
var ErrNoCurveFitted = errors.New("calib: no curve could be fitted")

// ProfileFit is the outcome of FitDetermined.
type ProfileFit struct {
	// Profile is base with every fitted curve replaced (validated); nil when
	// FitDetermined fails.
	Profile *Profile
	// Reports holds one report per fitted curve, in profile order.
	Reports []FitReport
	// Refused maps each curve the measurements cover but could not determine
	// (its key, e.g. "collective_intra") to Fit's reason; Profile keeps base's
	// values for it. It is empty, not nil, when every curve fitted, and it is
	// filled in when FitDetermined fails with ErrNoCurveFitted.
	Refused map[string]error
}

// FitDetermined is Fit for data that need not determine every curve it covers,
// such as a short calibration run whose collectives span too few sizes. It fits
// all the measurements with Fit; when Fit refuses an ill-conditioned curve
// (ErrIllConditioned), it fits each curve's measurements alone, records the
// curves that fail (for any reason) in Refused, and fits the others together,
// so their values and reports are those Fit gives for them. Fitted constants
// get Source = source; every other constant stays as in base.
//
// A curve fitted with R² below MinFitRSquared is refused too (Refused says
// why) and the others are fitted without its measurements.
//
// It fails with Fit's error when a measurement is unusable (an unknown
// operation or shape key, seconds that are not a positive finite number) or
// Fit fails for a reason other than ErrIllConditioned, and with an error
// wrapping ErrNoCurveFitted, returning the Refused map, when no curve fits.
func FitDetermined(ms []Measurement, base *Profile, source string) (ProfileFit, error) {
	fit, err := fitDetermined(ms, base, source)
	if err != nil {
		return fit, err
	}
	// A curve whose fit explains too little of its measurements is refused,
	// and the others fitted again without its measurements.
	poor := map[string]error{}
	for _, r := range fit.Reports {
		if r.RSquared < MinFitRSquared {
			poor[r.Curve] = fmt.Errorf("fit with R² = %.3f, below %.2f: the curve η = Max·x/(x + Half) does not describe these measurements (max relative error %.0f%%)",
				r.RSquared, MinFitRSquared, 100*r.MaxRelErr)
		}
	}
	if len(poor) == 0 {
		return fit, nil
	}
	var keep []Measurement
	for _, m := range ms {
		if p, err := toPoint(m); err == nil && poor[p.curve] == nil {
			keep = append(keep, m)
		}
	}
	refused := fit.Refused
	for c, e := range poor {
		refused[c] = e
	}
	if len(keep) == 0 {
		return ProfileFit{Refused: refused}, fmt.Errorf("%w: every curve's R² is below %.2f", ErrNoCurveFitted, MinFitRSquared)
	}
	fit, err = fitDetermined(keep, base, source)
	if err != nil {
		return fit, err
	}
	for c, e := range refused {
		fit.Refused[c] = e
	}
	return fit, nil
}

// MinFitRSquared is the least R² of a curve's fit FitDetermined accepts:
// below it the curve explains less than half the variance of its
// measurements' times and the base's values are kept. PoorFitRSquared is
// the R² below which an accepted fit is reported as poor (WriteFitTable).
const (
	MinFitRSquared  = 0.5
	PoorFitRSquared = 0.9
)

// fitDetermined is FitDetermined without the R² check.
func fitDetermined(ms []Measurement, base *Profile, source string) (ProfileFit, error) {
	prof, reports, err := Fit(ms, base, source)
	if err == nil {
		return ProfileFit{Profile: prof, Reports: reports, Refused: map[string]error{}}, nil
	}
	if !errors.Is(err, ErrIllConditioned) {
		return ProfileFit{}, err
	}
	// Fit read every measurement before fitting any curve, so each maps to a
	// curve here.
	byCurve := map[string][]Measurement{}
	for i, m := range ms {
		p, err := toPoint(m)
		if err != nil {
			return ProfileFit{}, fmt.Errorf("calib: fit: measurement %d: %w", i+1, err)
		}
		byCurve[p.curve] = append(byCurve[p.curve], m)
	}
	refused := map[string]error{}
	var keep []Measurement
	for _, key := range curveKeys {
		group, ok := byCurve[key]
		if !ok {
			continue
		}
		if _, _, err := Fit(group, base, source); err != nil {
			refused[key] = err
			continue
		}
		keep = append(keep, group...)
	}
	if len(keep) == 0 {
		curves := make([]string, 0, len(refused))
		for c := range refused {
			curves = append(curves, c)
		}
		slices.Sort(curves)
		return ProfileFit{Refused: refused}, fmt.Errorf("%w: %s refused", ErrNoCurveFitted, strings.Join(curves, ", "))
	}
	prof, reports, err = Fit(keep, base, source)
	if err != nil {
		return ProfileFit{}, err
	}
	return ProfileFit{Profile: prof, Reports: reports, Refused: refused}, nil
}

// CurvePeak returns the peak the efficiency of the curve with the given key is
// relative to, and its unit: PeakBF16FLOPs in "FLOP/s" for gemm and attention
// (PeakFP8FLOPs for gemm_fp8),
// NVLinkBytesPerSecond or NICBytesPerSecond in "B/s" for collective_intra and
// collective_inter. An unknown key gives 0 and "".
func (p *Profile) CurvePeak(key string) (peak float64, unit string) {
	switch key {
	case CurveGEMM, CurveAttentionFwd, CurveAttentionBwd, CurveAttentionFwdD256, CurveAttentionBwdD256,
		CurveAttentionFwdD192, CurveAttentionBwdD192:
		return p.PeakBF16FLOPs.Value, "FLOP/s"
	case CurveGEMMFP8:
		return p.PeakFP8FLOPs.Value, "FLOP/s"
	case CurveCollectiveIntra:
		return p.NVLinkBytesPerSecond.Value, "B/s"
	case CurveCollectiveInter, CurveSendRecvInter, CurveAllToAllInter:
		return p.NICBytesPerSecond.Value, "B/s"
	}
	return 0, ""
}
