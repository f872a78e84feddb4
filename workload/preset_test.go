package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// presetSamples draws one fixed set of 10⁶ lengths per preset, shared by the tests.
var presetSamples = struct {
	sync.Mutex
	m map[string][]int
}{m: map[string][]int{}}

const presetSampleCount = 1_000_000

func samplePreset(t testing.TB, name string) []int {
	t.Helper()
	presetSamples.Lock()
	defer presetSamples.Unlock()
	if s, ok := presetSamples.m[name]; ok {
		return s
	}
	d, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	src := rand.NewPCG(20250101, 7)
	s := make([]int, presetSampleCount)
	for i := range s {
		s[i] = d.Rand(src)
	}
	presetSamples.m[name] = s
	return s
}

// fraction returns the fraction of lengths for which keep is true.
func fraction(lengths []int, keep func(int) bool) float64 {
	n := 0
	for _, l := range lengths {
		if keep(l) {
			n++
		}
	}
	return float64(n) / float64(len(lengths))
}

// checkAgainstCDF asserts that the fraction of lengths <= x is within 3 standard errors of
// d.CDF(x) at each x.
func checkAgainstCDF(t *testing.T, d Distribution, lengths []int, xs []float64) {
	t.Helper()
	n := float64(len(lengths))
	for _, x := range xs {
		p := d.CDF(x)
		got := fraction(lengths, func(l int) bool { return float64(l) <= x })
		se := math.Sqrt(p * (1 - p) / n)
		if math.Abs(got-p) > 3*se+1e-12 {
			t.Errorf("%v: P(L <= %g): sampled %.6f, CDF %.6f, |diff| %.2g > 3 SE = %.2g", d, x, got, p, math.Abs(got-p), 3*se)
		}
	}
}

func approx(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.6g, want %.6g ± %.3g", what, got, want, tol)
	} else {
		t.Logf("%s = %.6g (costmodel.md §6.2: %.6g)", what, got, want)
	}
}

func TestPresetNames(t *testing.T) {
	want := []string{"byted-2m", "byted-like", "long-256k", "long-32k"}
	if got := PresetNames(); !slices.Equal(got, want) {
		t.Fatalf("PresetNames() = %v, want %v", got, want)
	}
	for _, name := range want {
		d, err := Preset(name)
		if err != nil {
			t.Fatalf("Preset(%q): %v", name, err)
		}
		if err := d.Validate(); err != nil {
			t.Errorf("Preset(%q).Validate(): %v", name, err)
		}
	}
	_, err := Preset("long-1m")
	if err == nil || !strings.Contains(err.Error(), `"long-1m"`) || !strings.Contains(err.Error(), "byted-2m, byted-like, long-256k, long-32k") {
		t.Fatalf("Preset(unknown) error = %v, want one naming it and listing the presets", err)
	}
}

func TestPresetFresh(t *testing.T) {
	a, _ := Preset("long-256k")
	a.(Mixture).Weights[0] = 99
	b, _ := Preset("long-256k")
	if b.(Mixture).Weights[0] != 0.95 {
		t.Fatal("Preset returned shared slices: a caller's change leaked into the next call")
	}
}

func TestPresetStrings(t *testing.T) {
	for name, want := range map[string]string{
		"long-256k":  "mixture(0.95 lognormal(median=400,sigma=1.2,[16,262144]), 0.05 pareto(xmin=2048,alpha=0.8,xmax=262144))",
		"long-32k":   "mixture(0.95 lognormal(median=400,sigma=1.2,[16,32768]), 0.05 pareto(xmin=2048,alpha=0.8,xmax=32768))",
		"byted-like": "mixture(0.82 lognormal(median=600,sigma=1,[16,262144]), 0.18 pareto(xmin=4096,alpha=0.6,xmax=262144))",
		"byted-2m": "mixture(0.8225 lognormal(median=600,sigma=1,[16,2.097152e+06]), 0.171 pareto(xmin=10000,alpha=1.31,xmax=262144), " +
			"0.006 pareto(xmin=262144,alpha=3.6,xmax=2.097152e+06), 0.0005 pareto(xmin=2.0971515e+06,alpha=1,xmax=2.097152e+06))",
	} {
		d, _ := Preset(name)
		if got := d.String(); got != want {
			t.Errorf("Preset(%q).String() =\n%s\nwant\n%s", name, got, want)
		}
	}
}

// TestLong256KMatchesPaper checks 10⁶ draws of long-256k against the corpus the HyDra
// paper describes in §2.2 and against the worked statistics of costmodel.md §6.2.
func TestLong256KMatchesPaper(t *testing.T) {
	d, _ := Preset("long-256k")
	ls := samplePreset(t, "long-256k")

	// HyDra §2.2: more than 85% below 2K, fewer than 0.6% above 32K, up to 256K.
	below2K := fraction(ls, func(l int) bool { return l < 2048 })
	above32K := fraction(ls, func(l int) bool { return l > 32768 })
	if below2K <= 0.85 {
		t.Errorf("P(L < 2048) = %.4f, paper: > 0.85", below2K)
	}
	if above32K >= 0.006 {
		t.Errorf("P(L > 32768) = %.5f, paper: < 0.006", above32K)
	}
	lo, hi := slices.Min(ls), slices.Max(ls)
	if lo < 16 || hi > 262144 || d.MaxTokens() != 262144 {
		t.Errorf("range [%d, %d], MaxTokens %d; want within [16, 262144]", lo, hi, d.MaxTokens())
	}
	t.Logf("P(L<2048) = %.5f, P(L>32768) = %.5f, range [%d, %d]", below2K, above32K, lo, hi)

	checkAgainstCDF(t, d, ls, []float64{16, 100, 400, 1000, 2047, 2048, 4096, 8192, 32768, 131072, 262143})

	// costmodel.md §6.2 worked statistics, sampled and analytic.
	s := Summarize(ls, DefaultThresholds())
	approx(t, "sampled P(L <= 2K)", fraction(ls, func(l int) bool { return l <= 2048 }), 0.867, 0.002)
	approx(t, "sampled P(L > 32K)", above32K, 0.0046, 0.0003)
	approx(t, "sampled mean", s.MeanTokens, 1469, 30)
	approx(t, "CDF(2048)", d.CDF(2048), 0.867, 0.001)
	approx(t, "CDF(4096)", d.CDF(4096), 0.947, 0.001)
	approx(t, "CDF(8192)", d.CDF(8192), 0.979, 0.001)
	approx(t, "1-CDF(32768)", 1-d.CDF(32768), 0.0046, 0.0001)
	approx(t, "1-CDF(131072)", 1-d.CDF(131072), 0.00078, 0.00002)
	for _, p := range []struct{ p, want float64 }{{0.5, 435}, {0.9, 2555}, {0.95, 4296}, {0.99, 15724}} {
		got := s.Percentiles[slices.IndexFunc(s.Percentiles, func(q Percentile) bool { return q.P == p.p })].Tokens
		approx(t, fmt.Sprintf("sampled p%g", 100*p.p), got, p.want, 0.02*p.want)
	}
	approx(t, "token share > 32K", s.Above[2].TokenShare, 0.259, 0.015)
	approx(t, "Σs² share > 32K", s.Above[2].SquareShare, 0.876, 0.02)
}

// TestBytedLikeMatchesCostModel checks 10⁶ draws of byted-like against costmodel.md §6.2.
func TestBytedLikeMatchesCostModel(t *testing.T) {
	d, _ := Preset("byted-like")
	ls := samplePreset(t, "byted-like")
	if lo, hi := slices.Min(ls), slices.Max(ls); lo < 16 || hi > 262144 {
		t.Errorf("range [%d, %d], want within [16, 262144]", lo, hi)
	}
	checkAgainstCDF(t, d, ls, []float64{16, 600, 2048, 4096, 8192, 32768, 131071, 131072, 262143})
	atMost4K := fraction(ls, func(l int) bool { return l <= 4096 })
	atLeast128K := fraction(ls, func(l int) bool { return l >= 131072 })
	approx(t, "sampled P(L <= 4K)", atMost4K, 0.798, 0.002)
	approx(t, "sampled P(L >= 128K)", atLeast128K, 0.0083, 0.0004)
	approx(t, "sampled P(L > 32K)", fraction(ls, func(l int) bool { return l > 32768 }), 0.040, 0.001)
	approx(t, "sampled mean", Summarize(ls, nil).MeanTokens, 5968, 100)
	approx(t, "CDF(4096)", d.CDF(4096), 0.798, 0.001)
	approx(t, "1-CDF(131071)", 1-d.CDF(131071), 0.0083, 0.0001)
}

// TestLong32K checks the 32K variant keeps the paper's short-sequence shape within its cap.
func TestLong32K(t *testing.T) {
	d, _ := Preset("long-32k")
	src := rand.NewPCG(3, 4)
	ls := make([]int, 200_000)
	for i := range ls {
		ls[i] = d.Rand(src)
	}
	if hi := slices.Max(ls); hi > 32768 || d.MaxTokens() != 32768 {
		t.Errorf("max %d, MaxTokens %d; want <= 32768", hi, d.MaxTokens())
	}
	if f := fraction(ls, func(l int) bool { return l < 2048 }); f <= 0.85 {
		t.Errorf("P(L < 2048) = %.4f, want > 0.85", f)
	}
	checkAgainstCDF(t, d, ls, []float64{16, 400, 2048, 8192, 16384, 32767})
	if d.CDF(32768) != 1 {
		t.Errorf("CDF(32768) = %v, want 1", d.CDF(32768))
	}
}

// TestByted2MMatchesPaper checks byted-2m against each statistic ByteScale states for
// its Byted corpus at 2M (arXiv 2502.21231 §3.1, Fig. 4, and §8.2), on 10⁶ draws and
// on the CDF. Tolerances: the paper's figures are rounded ("nearly 80%", "0.05%",
// "1%", "12.1%", "44.3%", "37%"), and a sampled token share moves with the few
// samples at 2M (500 of 10⁶, so about ±4.5% of that share at one standard error);
// each row states its tolerance.
func TestByted2MMatchesPaper(t *testing.T) {
	const twoM = 2097152
	d, _ := Preset("byted-2m")
	ls := samplePreset(t, "byted-2m")
	if lo, hi := slices.Min(ls), slices.Max(ls); lo < 16 || hi > twoM || d.MaxTokens() != twoM {
		t.Errorf("range [%d, %d], MaxTokens %d; want within [16, %d]", lo, hi, d.MaxTokens(), twoM)
	}
	checkAgainstCDF(t, d, ls, []float64{16, 600, 4096, 10000, 32768, 131071, 262144, 1 << 20, twoM - 1})
	var total, atLeast128K, above256K, at2M float64
	for _, l := range ls {
		total += float64(l)
		if l >= 131072 {
			atLeast128K += float64(l)
		}
		if l > 262144 {
			above256K += float64(l)
		}
		if l >= twoM {
			at2M += float64(l)
		}
	}
	for _, row := range []struct {
		what      string
		got, want float64
		tol       float64
	}{
		// §3.1: "nearly 80% of the samples are 4K tokens or shorter".
		{"P(L <= 4K)", fraction(ls, func(l int) bool { return l <= 4096 }), 0.80, 0.005},
		{"CDF(4096)", d.CDF(4096), 0.80, 0.001},
		// §3.1: "only 0.05% of the samples can reach 2M tokens".
		{"P(L >= 2M)", fraction(ls, func(l int) bool { return l >= twoM }), 0.0005, 0.0001},
		{"1-CDF(2M-1)", 1 - d.CDF(twoM-1), 0.0005, 0.00001},
		// §3.1: "1% of the samples (>=128K)".
		{"P(L >= 128K)", fraction(ls, func(l int) bool { return l >= 131072 }), 0.01, 0.0005},
		{"1-CDF(131071)", 1 - d.CDF(131071), 0.01, 0.0002},
		// §3.1: the >=2M samples "contribute 12.1% of the tokens in the global batch".
		{"token share L >= 2M", at2M / total, 0.121, 0.015},
		// §3.1: the >=128K samples "contribute 44.3%".
		{"token share L >= 128K", atLeast128K / total, 0.443, 0.02},
		// §8.2: "37% of the tokens in a global batch are longer than 256K".
		{"token share L > 256K", above256K / total, 0.37, 0.02},
	} {
		if math.Abs(row.got-row.want) > row.tol {
			t.Errorf("%s = %.5g, ByteScale: %.4g ± %.2g", row.what, row.got, row.want, row.tol)
		} else {
			t.Logf("%s = %.5g (ByteScale: %.4g)", row.what, row.got, row.want)
		}
	}
	approx(t, "sampled mean", Summarize(ls, nil).MeanTokens, 8697, 300)
}
