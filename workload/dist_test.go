package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func draw(d Distribution, n int, seed uint64) []int {
	src := rand.NewPCG(seed, seed^0x5555)
	out := make([]int, n)
	for i := range out {
		out[i] = d.Rand(src)
	}
	return out
}

func mustEmpirical(t *testing.T, tokens, cum []float64) *Empirical {
	t.Helper()
	e, err := NewEmpirical(tokens, cum)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDistributionsAgreeWithCDF draws from each family and compares with its CDF, checks
// the range, and that the same source gives the same draws.
func TestDistributionsAgreeWithCDF(t *testing.T) {
	emp := mustEmpirical(t, []float64{10, 100, 1000, 5000}, []float64{0.1, 0.6, 0.95, 1})
	for _, tc := range []struct {
		d  Distribution
		xs []float64
	}{
		{LogNormal{MedianTokens: 400, Sigma: 1.2, LowTokens: 16, HighTokens: 262144}, []float64{16, 50, 400, 3000, 50000}},
		// Entirely above the median: the mirrored-tail path.
		{LogNormal{MedianTokens: 100, Sigma: 0.5, LowTokens: 1000, HighTokens: 5000}, []float64{1000, 1100, 1500, 3000}},
		// Non-integer bounds.
		{LogNormal{MedianTokens: 20, Sigma: 0.3, LowTokens: 9.5, HighTokens: 40.7}, []float64{10, 15, 20, 30, 39}},
		{TruncatedPareto{LowTokens: 2048, HighTokens: 262144, Alpha: 0.8}, []float64{2048, 3000, 10000, 100000}},
		{TruncatedPareto{LowTokens: 1, HighTokens: 10, Alpha: 3}, []float64{1, 2, 3, 5, 9}},
		{Mixture{Weights: []float64{3, 1}, Components: []Distribution{
			TruncatedPareto{LowTokens: 1, HighTokens: 10, Alpha: 1}, emp}}, []float64{1, 5, 10, 50, 500, 4999}},
		{emp, []float64{10, 11, 50, 99, 100, 101, 999, 4000}},
	} {
		t.Run(tc.d.String(), func(t *testing.T) {
			if err := tc.d.Validate(); err != nil {
				t.Fatal(err)
			}
			ls := draw(tc.d, 200_000, 11)
			for _, l := range ls {
				if l < 1 || l > tc.d.MaxTokens() {
					t.Fatalf("draw %d outside [1, MaxTokens = %d]", l, tc.d.MaxTokens())
				}
			}
			checkAgainstCDF(t, tc.d, ls, tc.xs)
			if again := draw(tc.d, 1000, 11); !slices.Equal(again, ls[:1000]) {
				t.Error("same source, different draws")
			}
			if c := tc.d.CDF(float64(tc.d.MaxTokens())); c != 1 {
				t.Errorf("CDF(MaxTokens) = %v, want 1", c)
			}
			if c := tc.d.CDF(0); c != 0 {
				t.Errorf("CDF(0) = %v, want 0", c)
			}
			prev := 0.0
			for x := 0.0; x <= float64(tc.d.MaxTokens())+1; x = math.Max(x+1, x*1.01) {
				c := tc.d.CDF(x)
				if c < prev || c > 1 {
					t.Fatalf("CDF(%g) = %v after %v: not a CDF", x, c, prev)
				}
				prev = c
			}
		})
	}
}

// TestRoundingLaw checks the documented integer law: CDF(n) = F(n + ½) for n inside the
// range, CDF(t) = CDF(⌊t⌋), and the atom of an Empirical table.
func TestRoundingLaw(t *testing.T) {
	p := TruncatedPareto{LowTokens: 10, HighTokens: 20, Alpha: 1}
	// F(x) = (1 − 10/x) / (1 − 10/20) = 2 − 20/x.
	for n := 10; n < 20; n++ {
		want := 2 - 20/(float64(n)+0.5)
		if got := p.CDF(float64(n)); math.Abs(got-want) > 1e-15 {
			t.Errorf("pareto CDF(%d) = %v, want F(%d.5) = %v", n, got, n, want)
		}
		if p.CDF(float64(n)+0.7) != p.CDF(float64(n)) {
			t.Errorf("pareto CDF(%d.7) != CDF(%d)", n, n)
		}
	}
	if p.CDF(9.99) != 0 || p.CDF(20) != 1 {
		t.Errorf("pareto CDF(9.99) = %v, CDF(20) = %v; want 0, 1", p.CDF(9.99), p.CDF(20))
	}
	// Atom 0.5 at 10, then uniform on (10, 20]: P(L = 10) = P(X < 10.5) = 0.525.
	e := mustEmpirical(t, []float64{10, 20}, []float64{0.5, 1})
	if got := e.CDF(10); math.Abs(got-0.525) > 1e-15 {
		t.Errorf("empirical CDF(10) = %v, want 0.525", got)
	}
	// A single point is a point mass.
	one := mustEmpirical(t, []float64{7}, []float64{1})
	for _, l := range draw(one, 100, 1) {
		if l != 7 {
			t.Fatalf("point mass at 7 drew %d", l)
		}
	}
	// A cumulative probability within 1e-9 of 1 is accepted as 1.
	mustEmpirical(t, []float64{1, 2}, []float64{0.5, 1 - 1e-12})
}

func TestValidateErrors(t *testing.T) {
	ok := LogNormal{MedianTokens: 400, Sigma: 1.2, LowTokens: 16, HighTokens: 262144}
	par := TruncatedPareto{LowTokens: 2048, HighTokens: 262144, Alpha: 0.8}
	for _, tc := range []struct {
		d    Distribution
		want string // substrings of the error, "|"-separated
	}{
		{LogNormal{MedianTokens: 0, Sigma: 1, LowTokens: 1, HighTokens: 2}, "lognormal: MedianTokens = 0|> 0"},
		{LogNormal{MedianTokens: 1, Sigma: math.NaN(), LowTokens: 1, HighTokens: 2}, "Sigma = NaN|> 0"},
		{LogNormal{MedianTokens: 1, Sigma: 1, LowTokens: 0.5, HighTokens: 2}, "LowTokens = 0.5|[1, 1000000000]"},
		{LogNormal{MedianTokens: 1, Sigma: 1, LowTokens: 1, HighTokens: 2e9}, "HighTokens = 2e+09|[1, 1000000000]"},
		{LogNormal{MedianTokens: 1, Sigma: 1, LowTokens: 5, HighTokens: 5}, "HighTokens = 5|(LowTokens = 5, 1000000000]"},
		{LogNormal{MedianTokens: 1, Sigma: 1, LowTokens: 5.2, HighTokens: 5.8}, "holds no integer"},
		{LogNormal{MedianTokens: 1, Sigma: 0.01, LowTokens: 1e6, HighTokens: 2e6}, "no probability mass"},
		{TruncatedPareto{LowTokens: 1, HighTokens: 10, Alpha: 0}, "pareto: Alpha = 0|> 0"},
		{TruncatedPareto{LowTokens: 10, HighTokens: 1, Alpha: 1}, "pareto: HighTokens = 1"},
		{Mixture{}, "mixture: Components is empty"},
		{Mixture{Weights: []float64{1}, Components: []Distribution{ok, par}}, "len(Weights) = 1, len(Components) = 2"},
		{Mixture{Weights: []float64{1, -1}, Components: []Distribution{ok, par}}, "Weights[1] = -1|> 0"},
		{Mixture{Weights: []float64{1, 1}, Components: []Distribution{ok, nil}}, "Components[1] is nil"},
		{Mixture{Weights: []float64{1, 1}, Components: []Distribution{ok, TruncatedPareto{LowTokens: 1, HighTokens: 2}}}, "mixture: Components[1]: pareto: Alpha = 0"},
		{&Empirical{}, "empirical: tokens is empty"},
	} {
		err := tc.d.Validate()
		if err == nil {
			t.Errorf("%v: Validate() = nil, want an error", tc.d)
			continue
		}
		for _, w := range strings.Split(tc.want, "|") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: Validate() = %q, want it to contain %q", tc.d, err, w)
			}
		}
	}
	for _, tc := range []struct {
		tokens, cum []float64
		want        string
	}{
		{nil, nil, "tokens is empty"},
		{[]float64{1, 2}, []float64{1}, "len(cumProb) = 1, len(tokens) = 2"},
		{[]float64{0, 2}, []float64{0.5, 1}, "tokens[0] = 0 out of range"},
		{[]float64{5, 5}, []float64{0.5, 1}, "tokens[1] = 5 not above tokens[0] = 5"},
		{[]float64{1, 2}, []float64{0.5, 0.9}, "cumProb[1] = 0.9 (allowed: 1"},
		{[]float64{1, 2, 3}, []float64{0.6, 0.5, 1}, "cumProb[1] = 0.5 below cumProb[0] = 0.6"},
		{[]float64{1, 2}, []float64{-0.1, 1}, "cumProb[0] = -0.1 out of range (allowed: [0, 1])"},
		{[]float64{1.2, 1.7}, []float64{0, 1}, "holds no integer"},
	} {
		_, err := NewEmpirical(tc.tokens, tc.cum)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewEmpirical(%v, %v) error = %v, want %q", tc.tokens, tc.cum, err, tc.want)
		}
	}
}

func TestEmpiricalCopiesInput(t *testing.T) {
	tokens, cum := []float64{1, 100}, []float64{0, 1}
	e := mustEmpirical(t, tokens, cum)
	tokens[1], cum[0] = 2, 0.9
	if e.MaxTokens() != 100 || e.CDF(1) != 0.5/99 {
		t.Fatalf("NewEmpirical kept the caller's slices: MaxTokens %d, CDF(1) %v", e.MaxTokens(), e.CDF(1))
	}
	if got := e.String(); got != "empirical(2 points,[1,100])" {
		t.Errorf("String() = %q", got)
	}
}
