package calib

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestOptionalConstants: the optional constants (peak_fp8_flops with
// gemm_fp8, the d192 attention curves) may be left out together, are
// written only when present, and half of a pair is an error naming it.
func TestOptionalConstants(t *testing.T) {
	a100, err := LookupProfile("A100-80G")
	if err != nil {
		t.Fatal(err)
	}
	if a100.HasFP8() || a100.HasCurve(CurveAttentionFwdD192) {
		t.Fatalf("A100: HasFP8 %v, d192 %v: want neither", a100.HasFP8(), a100.HasCurve(CurveAttentionFwdD192))
	}
	var b bytes.Buffer
	if err := a100.WriteTOML(&b); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"peak_fp8_flops", "gemm_fp8", "attention_fwd_d192"} {
		if strings.Contains(b.String(), "["+key) {
			t.Errorf("A100 TOML has [%s], an absent optional constant", key)
		}
	}

	with := *a100
	with.AttentionFwdD192 = Curve{Max: Const{0.5, "fit:x.csv"}, Half: Const{900, "fit:x.csv"}}
	with.AttentionBwdD192 = Curve{Max: Const{0.4, "fit:x.csv"}, Half: Const{1100, "fit:x.csv"}}
	data, err := with.MarshalTOML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseProfile(data, "with.toml")
	if err != nil {
		t.Fatal(err)
	}
	if *back != with {
		t.Errorf("round trip with d192 curves: %+v, want %+v", back.AttentionFwdD192, with.AttentionFwdD192)
	}

	for _, tc := range []struct {
		name string
		edit func(p *Profile)
		want string
	}{
		{"max without half", func(p *Profile) { p.AttentionFwdD192.Max = Const{0.5, "fit:x.csv"} }, "attention_fwd_d192: give both"},
		{"fp8 peak without curve", func(p *Profile) { p.PeakFP8FLOPs = Const{6.24e14, "[R1] x"} }, "peak_fp8_flops and gemm_fp8"},
		{"fp8 curve without peak", func(p *Profile) {
			p.GEMMFP8 = Curve{Max: Const{0.7, "fit:x.csv"}, Half: Const{400, "fit:x.csv"}}
		}, "peak_fp8_flops and gemm_fp8"},
		{"sourceless value", func(p *Profile) {
			p.AttentionBwdD192 = Curve{Max: Const{0.5, ""}, Half: Const{900, "fit:x.csv"}}
		}, "attention_bwd_d192.max.source: empty"},
	} {
		p := *a100
		tc.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestFitD192AndFP8: measurements at d_qk 192 fill the optional d192 curves
// and gemm_fp8 rows fill gemm_fp8 against the FP8 peak, recovering the
// constants that generated them; gemm_fp8 on a base without an FP8 peak is
// refused naming it.
func TestFitD192AndFP8(t *testing.T) {
	base, err := LookupProfile("H800")
	if err != nil {
		t.Fatal(err)
	}
	launch := base.KernelLaunchSeconds.Value
	fwd, bwd, fp8 := curve(0.52, 1500), curve(0.41, 2500), curve(0.66, 700)
	var ms []Measurement
	for _, s := range []int64{512, 1024, 2048, 4096, 8192, 16384} {
		shape := map[string]int64{"seq": s, "heads": 16, "head_dim_qk": 192, "head_dim_v": 128}
		work := AttentionFwdFLOPs(1, float64(s), 16, 192, 128, true)
		ms = append(ms,
			Measurement{Operation: OpAttentionFwd, Shape: shape, Seconds: work/(base.PeakBF16FLOPs.Value*fwd.At(float64(s))) + launch, Repeats: 5},
			Measurement{Operation: OpAttentionBwd, Shape: shape, Seconds: work*(3*192+2*128)/(192+128)/(base.PeakBF16FLOPs.Value*bwd.At(float64(s))) + launch, Repeats: 5})
	}
	for _, m := range []int64{128, 512, 2048, 8192} {
		flops := 2 * float64(m) * 7168 * 2048
		ms = append(ms, Measurement{Operation: OpGEMMFP8, Shape: map[string]int64{"m": m, "n": 7168, "k": 2048},
			Seconds: flops/(base.PeakFP8FLOPs.Value*fp8.At(GEMMEffectiveSize(float64(m), 7168, 2048))) + launch, Repeats: 5})
	}
	fit, err := FitDetermined(ms, base, "fit:test.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key       string
		got, want Curve
	}{{CurveAttentionFwdD192, fit.Profile.AttentionFwdD192, fwd}, {CurveAttentionBwdD192, fit.Profile.AttentionBwdD192, bwd}, {CurveGEMMFP8, fit.Profile.GEMMFP8, fp8}} {
		if math.Abs(c.got.Max.Value/c.want.Max.Value-1) > 1e-6 || math.Abs(c.got.Half.Value/c.want.Half.Value-1) > 1e-6 {
			t.Errorf("%s: fitted %v/%v, want %v/%v", c.key, c.got.Max.Value, c.got.Half.Value, c.want.Max.Value, c.want.Half.Value)
		}
	}
	if fit.Profile.AttentionFwd != base.AttentionFwd || fit.Profile.AttentionFwdD256 != base.AttentionFwdD256 {
		t.Error("d192 rows changed the d128 or d256 curves")
	}

	a100, err := LookupProfile("A100-80G")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Fit(ms[len(ms)-4:], a100, "fit:test.csv")
	if err == nil || !strings.Contains(err.Error(), "no peak_fp8_flops") {
		t.Errorf("gemm_fp8 on A100: %v, want no peak_fp8_flops", err)
	}
}
