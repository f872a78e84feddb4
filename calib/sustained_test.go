package calib

import (
	"math"
	"testing"
)

// TestSustainedFolded: folding sustained_efficiency into the compute curves
// leaves every compute curve's rate (peak × Max) as it was, clears the
// constant, and leaves a profile without one unchanged.
func TestSustainedFolded(t *testing.T) {
	for _, name := range []string{"H100-SXM", "B200", "A100-80G"} {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		f := p.SustainedFolded()
		if !f.SustainedEfficiency.absent() {
			t.Errorf("%s: sustained_efficiency kept", name)
		}
		if err := f.Validate(); err != nil {
			t.Errorf("%s: folded profile invalid: %v", name, err)
		}
		for _, key := range curveKeys {
			if !isComputeCurve(key) || !p.HasCurve(key) {
				continue
			}
			fp8 := key == CurveGEMMFP8
			c, _ := p.curve(key)
			fc, _ := f.curve(key)
			was, now := p.TensorPeak(fp8)*c.Max.Value, f.TensorPeak(fp8)*fc.Max.Value
			if math.Abs(was-now) > 1e-9*was || c.Half != fc.Half {
				t.Errorf("%s %s: rate %g, folded %g (half %v, %v)", name, key, was, now, c.Half, fc.Half)
			}
		}
	}
}
