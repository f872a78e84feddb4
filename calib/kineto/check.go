package kineto

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/calib"
)

// Thresholds of Check.
const (
	// CheckMaxPeakFraction is the most of the profile's BF16 peak a bf16/fp16
	// GEMM or causal attention kernel of an exact shape may imply (FLOPs /
	// measured seconds).
	CheckMaxPeakFraction = 1.5
	// CheckRatio is the factor by which more than half the priced GEMM and
	// attention kernels must be faster or slower than the model for Check
	// to refuse the trace's units.
	CheckRatio = 20
)

// Check looks for durations in the wrong unit, against profile p: it fails
// when any bf16/fp16 GEMM or causal attention kernel of an exact shape implies more than CheckMaxPeakFraction × p's BF16 peak (an fp8 GEMM: its FP8 peak), or when more
// than half of the kernels NewComputePredictor(p) prices among those take
// under 1/CheckRatio or over CheckRatio times their predicted time. The
// error names a kernel, its duration and the TFLOP/s it implies, and asks
// whether durations are in microseconds (Kineto's unit). A trace with no
// such kernels passes.
func (t *Trace) Check(p *calib.Profile) error {
	if p == nil {
		return errors.New(t.Name + ": check: no calibration profile")
	}
	peak := p.PeakBF16FLOPs.Value
	pred := NewComputePredictor(p)
	type priced struct {
		k     *Kernel
		ratio float64
	}
	var ks []priced
	for i := range t.Kernels {
		k := &t.Kernels[i]
		if !k.exact() || !(k.Seconds > 0) {
			continue // a zero duration (whole-microsecond traces) implies nothing
		}
		f, kpeak := k.FLOPs(), peak
		if k.Class == ClassGEMMFP8 {
			if !p.HasFP8() {
				continue
			}
			kpeak = p.PeakFP8FLOPs.Value
		}
		if f/k.Seconds > CheckMaxPeakFraction*kpeak {
			return fmt.Errorf("%s: %s kernel %q (%s) took %s, implying %s against %s's peak of %.0f TFLOP/s: are the durations in microseconds? (or the profile is not this GPU's)",
				t.Name, k.Class, short(k.Name, 80), k.Shape, micros(k.Seconds), tflops(f, k.Seconds), p.Name, kpeak/1e12)
		}
		if s, why := pred.Predict(k); why == "" && s > 0 {
			ks = append(ks, priced{k, k.Seconds / s})
		}
	}
	if len(ks) == 0 {
		return nil
	}
	fast, slow := 0, 0
	for _, x := range ks {
		switch {
		case x.ratio < 1.0/CheckRatio:
			fast++
		case x.ratio > CheckRatio:
			slow++
		}
	}
	if 2*fast <= len(ks) && 2*slow <= len(ks) {
		return nil
	}
	slices.SortStableFunc(ks, func(a, b priced) int {
		switch {
		case a.ratio < b.ratio:
			return -1
		case a.ratio > b.ratio:
			return 1
		}
		return 0
	})
	m := ks[len(ks)/2]
	n, dir, hint := fast, "under 1/%g of", "seconds or milliseconds written as microseconds look this fast"
	if slow > fast {
		n, dir, hint = slow, "over %g times", "nanoseconds written as microseconds look 1000 times too slow"
	}
	return fmt.Errorf("%s: %d of %d priced GEMM/attention kernels take "+dir+" the time %s's model gives them (the median, %q (%s), took %s, implying %s against a peak of %.0f TFLOP/s): are the durations in microseconds? (%s; or the profile is not this GPU's)",
		t.Name, n, len(ks), float64(CheckRatio), p.Name, short(m.k.Name, 80), m.k.Shape, micros(m.k.Seconds), tflops(m.k.FLOPs(), m.k.Seconds), peak/1e12, hint)
}

func micros(s float64) string { return fmt.Sprintf("%.4g µs", s*1e6) }

func tflops(f, s float64) string {
	if s <= 0 {
		return "infinite TFLOP/s"
	}
	v := f / s / 1e12
	if math.IsInf(v, 0) {
		return "infinite TFLOP/s"
	}
	return fmt.Sprintf("%.4g TFLOP/s", v)
}
