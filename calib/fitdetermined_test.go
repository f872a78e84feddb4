package calib

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// determinedRows returns GEMM rows exactly on gemm (max 0.8, half 500) and
// attention_fwd rows exactly on (0.6, 2000) against base's peak, each plus
// base's per-kernel launch time (which Fit subtracts), and
// all_to_all_intra rows at the given number of sizes.
func determinedRows(base *Profile, collectiveSizes int) []Measurement {
	peak, launch := base.PeakBF16FLOPs.Value, base.KernelLaunchSeconds.Value
	var ms []Measurement
	for _, m := range []int64{256, 1024, 4096, 16384} {
		work := 2 * float64(m) * 4096 * 4096
		ms = append(ms, Measurement{Operation: OpGEMM, Shape: map[string]int64{"m": m, "n": 4096, "k": 4096},
			Seconds: work/(peak*curve(0.8, 500).At(GEMMEffectiveSize(float64(m), 4096, 4096))) + launch, Repeats: 5})
	}
	for _, s := range []int64{1024, 4096, 16384} {
		work := AttentionFwdFLOPs(1, float64(s), 32, 128, 128, true)
		ms = append(ms, Measurement{Operation: OpAttentionFwd, Shape: map[string]int64{"seq": s, "heads": 32, "head_dim": 128},
			Seconds: work/(peak*curve(0.6, 2000).At(float64(s))) + launch, Repeats: 5})
	}
	for i := range collectiveSizes {
		ms = append(ms, Measurement{Operation: "all_to_all_intra", Shape: map[string]int64{"bytes": 1 << (20 + 2*i), "ranks": 8},
			Seconds: 1e-4 * float64(i+1), Repeats: 5})
	}
	return ms
}

// TestFitDeterminedAll: data that determine every curve they cover give Fit's
// result and no refusals.
func TestFitDeterminedAll(t *testing.T) {
	base, err := LookupProfile("H20")
	if err != nil {
		t.Fatal(err)
	}
	ms := determinedRows(base, 0)
	fit, err := FitDetermined(ms, base, "fit:all.csv")
	if err != nil {
		t.Fatal(err)
	}
	prof, reports, err := Fit(ms, base, "fit:all.csv")
	if err != nil {
		t.Fatal(err)
	}
	if *fit.Profile != *prof || !reflect.DeepEqual(fit.Reports, reports) {
		t.Errorf("FitDetermined differs from Fit on data Fit accepts:\n%+v\n%+v", fit, reports)
	}
	if fit.Refused == nil || len(fit.Refused) != 0 {
		t.Errorf("Refused = %v, want an empty map", fit.Refused)
	}
}

// TestFitDeterminedPartial: a curve the data cannot determine is refused with
// Fit's reason and keeps the base's values; the others fit as Fit fits them
// alone.
func TestFitDeterminedPartial(t *testing.T) {
	base, err := LookupProfile("H20")
	if err != nil {
		t.Fatal(err)
	}
	ms := determinedRows(base, 2) // two collective sizes: collective_intra is ill-conditioned
	if _, _, err := Fit(ms, base, "fit:p.csv"); !errors.Is(err, ErrIllConditioned) {
		t.Fatalf("Fit on the whole set: %v, want ErrIllConditioned", err)
	}
	fit, err := FitDetermined(ms, base, "fit:p.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(fit.Refused) != 1 || !errors.Is(fit.Refused[CurveCollectiveIntra], ErrIllConditioned) {
		t.Fatalf("Refused = %v, want collective_intra ill-conditioned", fit.Refused)
	}
	if !strings.Contains(fit.Refused[CurveCollectiveIntra].Error(), "2 distinct sizes") {
		t.Errorf("the refusal does not say why: %v", fit.Refused[CurveCollectiveIntra])
	}
	p := fit.Profile
	if math.Abs(p.GEMM.Max.Value-0.8) > 1e-9 || math.Abs(p.GEMM.Half.Value-500) > 1e-6 || p.GEMM.Half.Source != "fit:p.csv" {
		t.Errorf("gemm %+v, want max 0.8 half 500 from fit:p.csv", p.GEMM)
	}
	if math.Abs(p.AttentionFwd.Max.Value-0.6) > 1e-9 || math.Abs(p.AttentionFwd.Half.Value-2000) > 1e-5 {
		t.Errorf("attention_fwd %+v, want max 0.6 half 2000", p.AttentionFwd)
	}
	check := *p
	check.GEMM, check.AttentionFwd = base.GEMM, base.AttentionFwd
	if check != *base {
		t.Error("constants that were not fitted differ from the base")
	}
	if len(fit.Reports) != 2 || fit.Reports[0].Curve != CurveGEMM || fit.Reports[1].Curve != CurveAttentionFwd {
		t.Errorf("reports %v, want gemm then attention_fwd", fit.Reports)
	}
	alone, reports, err := Fit(ms[:7], base, "fit:p.csv")
	if err != nil {
		t.Fatal(err)
	}
	if *alone != *p || !reflect.DeepEqual(reports, fit.Reports) {
		t.Error("the fitted curves differ from Fit on their measurements alone")
	}
}

// TestFitDeterminedFails: nothing determined is ErrNoCurveFitted with the
// refusals; an unusable measurement is Fit's error, not a refusal.
func TestFitDeterminedFails(t *testing.T) {
	base, err := LookupProfile("H20")
	if err != nil {
		t.Fatal(err)
	}
	only := []Measurement{{Operation: "send_recv_intra", Shape: map[string]int64{"ranks": 2, "bytes": 1024}, Seconds: 1e-5, Repeats: 3}}
	fit, err := FitDetermined(only, base, "fit:c.csv")
	if !errors.Is(err, ErrNoCurveFitted) || !strings.Contains(err.Error(), CurveCollectiveIntra) {
		t.Errorf("nothing fittable: error %v, want ErrNoCurveFitted naming collective_intra", err)
	}
	if fit.Profile != nil || len(fit.Refused) != 1 || fit.Refused[CurveCollectiveIntra] == nil {
		t.Errorf("nothing fittable: %+v, want no profile and collective_intra refused", fit)
	}

	for _, tc := range []struct {
		name    string
		ms      []Measurement
		mention string
	}{
		{"unknown operation", append(determinedRows(base, 2), Measurement{Operation: "fft", Seconds: 1, Repeats: 1}), `unknown operation "fft"`},
		{"bad seconds", append(determinedRows(base, 2), Measurement{Operation: OpGEMM, Shape: map[string]int64{"m": 1, "n": 1, "k": 1}, Seconds: -1, Repeats: 1}), "seconds = -1"},
	} {
		fit, err := FitDetermined(tc.ms, base, "fit:x.csv")
		if err == nil || errors.Is(err, ErrNoCurveFitted) || !strings.Contains(err.Error(), tc.mention) || fit.Profile != nil {
			t.Errorf("%s: %+v, %v; want a failure mentioning %q", tc.name, fit, err, tc.mention)
		}
	}
	if _, err := FitDetermined(determinedRows(base, 0), nil, "fit:x.csv"); err == nil {
		t.Error("a nil base fitted")
	}
}

func TestCurvePeak(t *testing.T) {
	p, err := LookupProfile("H800")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		peak float64
		unit string
	}{
		{CurveGEMM, p.PeakBF16FLOPs.Value, "FLOP/s"},
		{CurveAttentionFwd, p.PeakBF16FLOPs.Value, "FLOP/s"},
		{CurveAttentionBwd, p.PeakBF16FLOPs.Value, "FLOP/s"},
		{CurveCollectiveIntra, p.NVLinkBytesPerSecond.Value, "B/s"},
		{CurveCollectiveInter, p.NICBytesPerSecond.Value, "B/s"},
		{"fft", 0, ""},
	} {
		if peak, unit := p.CurvePeak(tc.key); peak != tc.peak || unit != tc.unit {
			t.Errorf("CurvePeak(%q) = %g %s, want %g %s", tc.key, peak, unit, tc.peak, tc.unit)
		}
	}
	// The peak Fit measures each curve against.
	for _, key := range curveKeys {
		_, c := p.curve(key)
		if peak, _ := p.CurvePeak(key); peak != c.Value {
			t.Errorf("CurvePeak(%q) = %g, Fit uses %g", key, peak, c.Value)
		}
	}
}

func TestValidateProfileName(t *testing.T) {
	for _, ok := range []string{"H20", "H20-lab", "cpu", "a.b_c-1", strings.Repeat("x", 64)} {
		if err := ValidateProfileName(ok); err != nil {
			t.Errorf("ValidateProfileName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "no spaces", "-lead", strings.Repeat("x", 65), "é"} {
		err := ValidateProfileName(bad)
		if err == nil || !strings.HasPrefix(err.Error(), "name = ") {
			t.Errorf("ValidateProfileName(%q) = %v, want an error naming the key", bad, err)
		}
		if verr := (&Profile{Name: bad}).Validate(); verr == nil || !strings.Contains(verr.Error(), err.Error()) {
			t.Errorf("Validate on name %q does not report %v", bad, err)
		}
	}
}
