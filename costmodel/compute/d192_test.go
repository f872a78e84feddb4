package compute

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
)

// TestAttentionEfficiencyD192: with d192 curves the efficiency runs
// piecewise-linearly through the knots 128, 192 and 256 (exactly the d192
// curve at 192, halfway between neighbours in between); without them 192 is
// halfway between the 128 and 256 curves.
func TestAttentionEfficiencyD192(t *testing.T) {
	base, err := calib.LookupProfile("H800")
	if err != nil {
		t.Fatal(err)
	}
	d192 := *base
	d192.AttentionFwdD192 = calib.Curve{Max: calib.Const{Value: 0.5, Source: "fit:x.csv"}, Half: calib.Const{Value: 700, Source: "fit:x.csv"}}
	d192.AttentionBwdD192 = calib.Curve{Max: calib.Const{Value: 0.45, Source: "fit:x.csv"}, Half: calib.Const{Value: 800, Source: "fit:x.csv"}}
	eff := func(p *calib.Profile, d int, bwd bool, x float64) float64 {
		c := &Compute{Profile: p, Job: job.Job{Model: job.Model{HeadDimQK: d}}}
		return c.AttentionEfficiency(bwd, x)
	}
	const x = 4096
	for _, bwd := range []bool{false, true} {
		lo, mid, hi := base.AttentionFwd, d192.AttentionFwdD192, base.AttentionFwdD256
		if bwd {
			lo, mid, hi = base.AttentionBwd, d192.AttentionBwdD192, base.AttentionBwdD256
		}
		for _, tc := range []struct {
			p    *calib.Profile
			d    int
			want float64
		}{
			{base, 192, (lo.At(x) + hi.At(x)) / 2},
			{base, 64, lo.At(x)},
			{base, 512, hi.At(x)},
			{&d192, 192, mid.At(x)},
			{&d192, 160, (lo.At(x) + mid.At(x)) / 2},
			{&d192, 224, (mid.At(x) + hi.At(x)) / 2},
			{&d192, 128, lo.At(x)},
			{&d192, 256, hi.At(x)},
		} {
			if got := eff(tc.p, tc.d, bwd, x); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("bwd %v, d192 curves %v, d_qk %d: η = %v, want %v", bwd, tc.p.HasCurve(calib.CurveAttentionFwdD192), tc.d, got, tc.want)
			}
		}
	}
}
