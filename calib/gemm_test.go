package calib

import (
	"math"
	"slices"
	"testing"
)

// shapeErrors returns the relative errors of the times a GEMM curve predicts,
// 2·m·n·k/(peak·η(size(m, n, k))) + the per-kernel launch time, against the
// measured ones of rows.
func shapeErrors(rows []Measurement, c Curve, peak, launch float64, size func(m, n, k float64) float64) []float64 {
	var errs []float64
	for _, r := range rows {
		m, n, k := float64(r.Shape["m"]), float64(r.Shape["n"]), float64(r.Shape["k"])
		pred := 2*m*n*k/(peak*c.At(size(m, n, k))) + launch
		errs = append(errs, math.Abs(pred-r.Seconds)/r.Seconds)
	}
	slices.Sort(errs)
	return errs
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// TestGEMMShapeModel checks the GEMM shape model (GEMMEffectiveSize, the
// harmonic mean of m, n, k) against the published H100 shape sweep
// (xlaH100GEMM, all 125 shapes of 256…4096): with the H100 profile's curve and
// per-kernel launch time the predicted times are within 10% on average, and
// the harmonic mean predicts them better than rows only (the model before it)
// and the geometric mean, and as well as the smallest size (the data do not
// tell those two apart: 9.1% and 9.0% mean error), each fitted the same way
// to the same rows.
func TestGEMMShapeModel(t *testing.T) {
	p, err := LookupProfile("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	peak, launch := p.PeakBF16FLOPs.Value, p.KernelLaunchSeconds.Value
	all, fitRows := xlaGEMMRows(0), xlaGEMMRows(512)
	if len(all) != 125 || len(fitRows) != 64 {
		t.Fatalf("%d and %d rows, want 125 and 64", len(all), len(fitRows))
	}
	errs := shapeErrors(all, p.GEMM, peak, launch, GEMMEffectiveSize)
	mean, p90, worst := meanOf(errs), errs[len(errs)*9/10], errs[len(errs)-1]
	t.Logf("harmonic mean (profile Max %.4f Half %.1f): mean %.1f%%, p90 %.1f%%, max %.1f%%", p.GEMM.Max.Value, p.GEMM.Half.Value, 100*mean, 100*p90, 100*worst)
	if mean > 0.10 || p90 > 0.25 || worst > 0.45 {
		t.Errorf("harmonic-mean model: mean %.3f, p90 %.3f, max %.3f relative error; want <= 0.10, 0.25, 0.45", mean, p90, worst)
	}
	bounds := FitBounds{MaxLimit: p.GEMM.Max.Value, FixedSeconds: launch}
	for _, alt := range []struct {
		name string
		size func(m, n, k float64) float64
	}{
		{"rows m", func(m, _, _ float64) float64 { return m }},
		{"min(m, n, k)", func(m, n, k float64) float64 { return min(m, n, k) }},
		{"geometric mean", func(m, n, k float64) float64 { return math.Cbrt(m * n * k) }},
	} {
		var x, s, w []float64
		for _, r := range fitRows {
			m, n, k := float64(r.Shape["m"]), float64(r.Shape["n"]), float64(r.Shape["k"])
			x, s, w = append(x, alt.size(m, n, k)), append(s, r.Seconds), append(w, 2*m*n*k)
		}
		c, _, err := FitCurveBounded(x, s, w, peak, bounds)
		if err != nil {
			t.Fatalf("%s: %v", alt.name, err)
		}
		ae := shapeErrors(all, c, peak, launch, alt.size)
		t.Logf("%s (Half %.1f): mean %.1f%%, p90 %.1f%%, max %.1f%%", alt.name, c.Half.Value, 100*meanOf(ae), 100*ae[len(ae)*9/10], 100*ae[len(ae)-1])
		if meanOf(ae) < mean-0.005 || (alt.name != "min(m, n, k)" && meanOf(ae) <= mean) {
			t.Errorf("%s predicts the sweep better (mean error %.3f) than the harmonic mean (%.3f)", alt.name, meanOf(ae), mean)
		}
	}
}

// TestGEMMEffectiveSize pins the size: N for a square product, symmetric in
// its arguments, dominated by the smallest size, 0 for an empty product.
func TestGEMMEffectiveSize(t *testing.T) {
	if got := GEMMEffectiveSize(4096, 4096, 4096); got != 4096 {
		t.Errorf("square 4096: %v", got)
	}
	a, b, c := GEMMEffectiveSize(8192, 512, 2048), GEMMEffectiveSize(512, 2048, 8192), GEMMEffectiveSize(2048, 8192, 512)
	if math.Abs(a-b) > 1e-9 || math.Abs(a-c) > 1e-9 {
		t.Errorf("not symmetric: %v %v %v", a, b, c)
	}
	if want := 3 / (1/8192.0 + 1/512.0 + 1/2048.0); math.Abs(a-want) > 1e-9 || a >= 3*512 {
		t.Errorf("(8192, 512, 2048) = %v, want %v (< 3·512)", a, want)
	}
	if GEMMEffectiveSize(0, 1, 1) != 0 || GEMMEffectiveSize(1, -1, 1) != 0 {
		t.Error("an empty product has a size")
	}
}
