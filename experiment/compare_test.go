package experiment

import (
	"context"
	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dcpsim/dcpsim/badinput"
)

// compareTiny is a 48-GPU scenario of three policies (well under a second
// for its 16 iterations); SEED, POLICIES and OPTIONS are replaced. At 15
// measured iterations, seeds 1 and 2 differ by less than their noise for
// every policy, and HyDra's cap forced to C_mem = 4 (a 32K context at
// B = 8192) is 40-60% slower than its closed form (which picks 16), far
// outside the noise.
const compareTiny = `name = "tiny"
` + tinyJob + `
[run]
iterations = 16
warmup_iterations = 1
seed = SEED
policies = POLICIES
OPTIONS
`

// compareScenario is compareTiny with its placeholders replaced (policies
// "": hydra, mcore and static).
func compareScenario(seed, policies, options string) string {
	if policies == "" {
		policies = `["hydra", "mcore", "static"]`
	}
	return strings.NewReplacer("SEED", seed, "POLICIES", policies, "OPTIONS", options).Replace(compareTiny)
}

// compareRun runs the scenario src and writes its results folder (no
// figures) as t.TempDir()/name.
func compareRun(t *testing.T, root, name, src string) string {
	t.Helper()
	sc := parse(t, src)
	out, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, name)
	if _, err := WriteRun(context.Background(), dir, sc, out, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyDir copies the regular files of src into the new folder dst (one level).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rowOf is the row of policy (at the point with axes) in c.
func rowOf(t *testing.T, c *results.Comparison, axes, policy string) results.ComparisonRow {
	t.Helper()
	for _, r := range c.Rows {
		if r.Axes == axes && r.Policy == policy {
			return r
		}
	}
	t.Fatalf("no row for %q %s in %+v", axes, policy, c.Rows)
	return results.ComparisonRow{}
}

// diffKeys are the keys of c's differences, in order.
func diffKeys(c *results.Comparison) []string {
	var keys []string
	for _, d := range c.Differences {
		keys = append(keys, d.Key)
	}
	return keys
}

// TestWelch: the interval against the formula and the t distribution's
// CDF, and its edge cases (table-driven).
func TestWelch(t *testing.T) {
	for _, c := range []struct {
		name           string
		a, b           []float64
		diff, lo, hi   float64 // NaN: check against the formula below
		defined, signf bool
	}{
		{"constant and equal: exactly [0, 0]", []float64{2, 2, 2}, []float64{2, 2}, 0, 0, 0, true, false},
		{"constant, different: [d, d]", []float64{2, 2, 2}, []float64{3, 3}, 1, 1, 1, true, true},
		{"one value on a side: no interval", []float64{1}, []float64{1, 2, 3}, 1, 0, 0, false, false},
		{"identical samples", []float64{1, 2, 3}, []float64{1, 2, 3}, 0, math.NaN(), math.NaN(), true, false},
		{"unequal variances, shifted within the noise", []float64{1, 2, 3, 4, 5}, []float64{2, 4, 6, 8, 10}, 3, math.NaN(), math.NaN(), true, false},
		{"B faster", []float64{10, 11, 12, 10.5, 11.5}, []float64{5, 5.5, 6, 5.2, 5.8}, -5.5, math.NaN(), math.NaN(), true, true},
	} {
		w := welch(c.a, c.b, 0.95)
		if math.Abs(w.diff-c.diff) > 1e-12 || w.defined != c.defined || w.significant != c.signf {
			t.Errorf("%s: %+v, want diff %g, defined %v, significant %v", c.name, w, c.diff, c.defined, c.signf)
			continue
		}
		if !math.IsNaN(c.lo) {
			if w.lo != c.lo || w.hi != c.hi {
				t.Errorf("%s: interval [%g, %g], want exactly [%g, %g]", c.name, w.lo, w.hi, c.lo, c.hi)
			}
			continue
		}
		// se² = s²a/na + s²b/nb; the half-width over se is the t quantile
		// at the Welch-Satterthwaite df, so its CDF there is 0.975.
		va, vb := variance(c.a)/float64(len(c.a)), variance(c.b)/float64(len(c.b))
		df := (va + vb) * (va + vb) / (va*va/float64(len(c.a)-1) + vb*vb/float64(len(c.b)-1))
		half := (w.hi - w.lo) / 2
		tq := half / math.Sqrt(va+vb)
		if math.Abs(w.df-df) > 1e-9*df || math.Abs((w.lo+w.hi)/2-w.diff) > 1e-12 ||
			math.Abs(distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(tq)-0.975) > 1e-9 {
			t.Errorf("%s: %+v: df %g (want %g), t %g", c.name, w, w.df, df, tq)
		}
	}
	// The textbook case: var 2.5 and 10 over 5 values each, df = 6.25/1.0625;
	// t(0.975) lies between the tables' 2.447 (df 6) and 2.571 (df 5).
	w := welch([]float64{1, 2, 3, 4, 5}, []float64{2, 4, 6, 8, 10}, 0.95)
	if tq := (w.hi - w.diff) / math.Sqrt(2.5); math.Abs(w.df-6.25/1.0625) > 1e-12 || tq < 2.447 || tq > 2.571 {
		t.Errorf("df %g, t %g", w.df, tq)
	}
}

// variance is the sample variance, written out (the check must not be the
// code under test).
func variance(xs []float64) float64 {
	var m, s float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// TestCompareSeeds: two runs of one scenario under different seeds (other
// batches, the same distribution) show no significant change for any
// policy, and the seed and the scenario hash are reported as differences.
func TestCompareSeeds(t *testing.T) {
	root := t.TempDir()
	a := compareRun(t, root, "a", compareScenario("1", "", ""))
	b := compareRun(t, root, "b", compareScenario("2", "", ""))
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != "run" || c.A.Seed != 1 || c.B.Seed != 2 || c.A.Scenario != "tiny" || c.A.Path != a {
		t.Errorf("folders %+v %+v", c.A, c.B)
	}
	if keys := diffKeys(c); !slices.Equal(keys, []string{"scenario_sha256", "seed", "batches_sha256"}) {
		t.Errorf("differences %+v, want the hash, the seed and the batches", c.Differences)
	}
	if len(c.Rows) != 3 {
		t.Fatalf("rows %+v", c.Rows)
	}
	for _, r := range c.Rows {
		t.Logf("%s: %+.2f%% [%+.2f, %+.2f], df %.1f", r.Policy, r.ChangePct, r.CILowPct, r.CIHighPct, r.DF)
		if r.Status != results.CompareCompared || r.IterationsA != 15 || r.IterationsB != 15 || !r.CIDefined || r.Test != results.CompareTestWelch {
			t.Errorf("%s: %+v", r.Policy, r)
		}
		if r.Significant || !(r.CILowPct < 0 && r.CIHighPct > 0) {
			t.Errorf("%s: a change of %+.2f%% [%+.2f, %+.2f] between two seeds is significant", r.Policy, r.ChangePct, r.CILowPct, r.CIHighPct)
		}
		if want := 100 * (r.StepSecondsMeanB - r.StepSecondsMeanA) / r.StepSecondsMeanA; math.Abs(r.ChangePct-want) > 1e-9 || r.ChangePct == 0 {
			t.Errorf("%s: change %g%%, want %g%% (and the seeds' batches differ)", r.Policy, r.ChangePct, want)
		}
		if r.TokensPerDayA <= 0 || r.TokensPerDayB <= 0 || r.PeakMemoryMaxBytesA <= 0 || r.PPBubbleShareB <= 0 {
			t.Errorf("%s: figures from the summaries missing: %+v", r.Policy, r)
		}
	}
}

// TestCompareHydraCap: on one seed, HyDra with its cap forced to 4 is
// significantly slower than with its closed-form cap (and faster the other
// way round); the other policies, which ran the same batches with the same
// options, change by exactly 0; the only difference the folders record is
// the scenario hash (the summaries do not hold forced options).
func TestCompareHydraCap(t *testing.T) {
	root := t.TempDir()
	free := compareRun(t, root, "free", compareScenario("1", "", ""))
	capped := compareRun(t, root, "capped", compareScenario("1", "", "[run.options.hydra]\ncap = 4\n"))
	for _, c := range []struct {
		a, b   string
		slower bool
	}{{free, capped, true}, {capped, free, false}} {
		cmp, err := Compare(c.a, c.b, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if keys := diffKeys(cmp); !slices.Equal(keys, []string{"scenario_sha256"}) {
			t.Errorf("differences %+v, want only the hash", cmp.Differences)
		}
		h := rowOf(t, cmp, "", "hydra")
		t.Logf("hydra %s → %s: %+.2f%% [%+.2f, %+.2f]", filepath.Base(c.a), filepath.Base(c.b), h.ChangePct, h.CILowPct, h.CIHighPct)
		if !h.Significant || (h.ChangePct > 0) != c.slower || (h.CILowPct > 0) != c.slower || (h.CIHighPct < 0) == c.slower {
			t.Errorf("hydra %s → %s: %+v, want a significant change, slower %v", c.a, c.b, h, c.slower)
		}
		if got := cmp.Regressions(10); c.slower != (len(got) == 1 && got[0].Policy == "hydra") {
			t.Errorf("regressions beyond 10%%: %+v", got)
		}
		for _, p := range []string{"mcore", "static"} {
			if r := rowOf(t, cmp, "", p); r.ChangePct != 0 || r.DiffSeconds != 0 || r.Significant || r.CILowPct != -r.CIHighPct {
				t.Errorf("%s: %+v, want exactly no change", p, r)
			}
		}
	}
}

// TestCompareIdentical: a folder against itself and against a copy: every
// change exactly 0, nothing significant, no difference.
func TestCompareIdentical(t *testing.T) {
	root := t.TempDir()
	a := compareRun(t, root, "a", compareScenario("3", "", ""))
	b := filepath.Join(root, "copy")
	copyDir(t, a, b)
	for _, other := range []string{a, b} {
		c, err := Compare(a, other, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Differences) != 0 || len(c.Rows) != 3 || len(c.Regressions(0)) != 0 {
			t.Errorf("differences %+v, rows %d", c.Differences, len(c.Rows))
		}
		for _, r := range c.Rows {
			if r.Status != results.CompareCompared || r.ChangePct != 0 || r.DiffSeconds != 0 || r.Significant ||
				r.StepSecondsMeanA != r.StepSecondsMeanB || r.TokensPerDayA != r.TokensPerDayB {
				t.Errorf("%s: %+v", r.Policy, r)
			}
		}
	}
}

// TestCompareOneSided: a policy in one folder only is a row saying so; a
// policy that failed on a side is "failed in" that side, with its error;
// neither is an error.
func TestCompareOneSided(t *testing.T) {
	root := t.TempDir()
	a := compareRun(t, root, "a", compareScenario("1", `["hydra", "mcore"]`, ""))
	b := compareRun(t, root, "b", compareScenario("1", `["static", "hydra"]`, "[run.options.hydra]\ncap = 2\n"))
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Rows {
		got = append(got, r.Policy+": "+r.Status)
	}
	if want := []string{"hydra: failed in B", "mcore: only in A", "static: only in B"}; !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if h := rowOf(t, c, "", "hydra"); !strings.Contains(h.Note, "cap = 2") || h.IterationsA != 15 || h.IterationsB != 0 {
		t.Errorf("hydra: %+v", h)
	}
	if keys := diffKeys(c); !slices.Contains(keys, "policies") {
		t.Errorf("differences %v lack the policies", keys)
	}
}

// TestCompareBadInput: folders that are missing, not folders, incomplete,
// foreign, tampered with or of another scenario are bad input naming the
// path (table-driven); --force compares two scenarios.
func TestCompareBadInput(t *testing.T) {
	root := t.TempDir()
	good := compareRun(t, root, "good", compareScenario("1", `["hydra", "static"]`, ""))
	other := compareRun(t, root, "other", strings.Replace(compareScenario("1", `["hydra", "static"]`, ""), `name = "tiny"`, `name = "other"`, 1))
	csvText, err := os.ReadFile(filepath.Join(good, "iterations.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(csvText), "\n")
	n := 0
	mutate := func(edit func(dir string)) string {
		n++
		dir := filepath.Join(root, "bad", strings.Repeat("x", n))
		copyDir(t, good, dir)
		edit(dir)
		return dir
	}
	write := func(name, text string) func(string) {
		return func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	replace := func(name, old, new string) func(string) {
		return func(dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			if !strings.Contains(string(b), old) {
				t.Fatalf("%s holds no %q", name, old)
			}
			write(name, strings.Replace(string(b), old, new, 1))(dir)
		}
	}
	file := filepath.Join(root, "a-file")
	os.WriteFile(file, []byte("hi"), 0o644)
	for _, c := range []struct {
		name string
		dir  string
		want string // in the error, after the path
	}{
		{"missing folder", filepath.Join(root, "nope"), "no such folder"},
		{"not a folder", file, "not a folder"},
		{"no summary.json", mutate(func(d string) { os.Remove(filepath.Join(d, "summary.json")) }), "summary.json: missing"},
		{"no manifest.json", mutate(func(d string) { os.Remove(filepath.Join(d, "manifest.json")) }), "manifest.json: missing"},
		{"no iterations.csv", mutate(func(d string) { os.Remove(filepath.Join(d, "iterations.csv")) }), "iterations.csv: missing"},
		{"iterations.csv cut mid-row", mutate(write("iterations.csv", string(csvText[:len(csvText)/2]))), "iterations.csv: truncated"},
		{"iterations.csv cut mid-number, no newline", mutate(write("iterations.csv", strings.TrimSuffix(string(csvText), "\n")[:len(csvText)-4])), "iterations.csv: truncated"},
		{"iterations.csv cut at a row", mutate(write("iterations.csv", strings.Join(lines[:len(lines)-3], ""))), "measured iterations of static"},
		{"iterations.csv empty", mutate(write("iterations.csv", "")), "iterations.csv: truncated"},
		{"iterations.csv header", mutate(write("iterations.csv", "a,b\n1,2\n")), "iterations.csv: invalid"},
		{"a step changed", mutate(replace("iterations.csv", ",false,", ",false,9")), "measured step mean"},
		{"a step NaN", mutate(func(d string) {
			rec := strings.Split(lines[3], ",")
			rec[3] = "NaN"
			replace("iterations.csv", lines[3], strings.Join(rec, ","))(d)
		}), "step_seconds = \"NaN\""},
		{"a warm-up flag", mutate(replace("iterations.csv", ",false,", ",no,")), "warmup = \"no\""},
		{"a foreign policy", mutate(replace("iterations.csv", "\nstatic,", "\nnot-static,")), `policy "not-static"`},
		{"summary.json not ours", mutate(write("summary.json", `{"scenario": "tiny", "runs": []}`)), `summary.json: invalid: json: unknown field "runs"`},
		{"summary.json not JSON", mutate(write("summary.json", "scenario = 'tiny'")), "summary.json: invalid: not a JSON object"},
		{"summary.json trailing data", mutate(func(d string) {
			b, _ := os.ReadFile(filepath.Join(d, "summary.json"))
			write("summary.json", string(b)+"{}")(d)
		}), "summary.json: invalid: data after the JSON object"},
		{"duplicate policy", mutate(replace("summary.json", `"policy": "static"`, `"policy": "hydra"`)), "must be a name no other policy has"},
		{"manifest of another run", mutate(replace("manifest.json", `"seed": 1`, `"seed": 9`)), "manifest.json: seed = 9"},
		{"summary.json a link to /dev/zero", mutate(func(d string) {
			os.Remove(filepath.Join(d, "summary.json"))
			if err := os.Symlink("/dev/zero", filepath.Join(d, "summary.json")); err != nil {
				t.Skip(err)
			}
		}), "summary.json: invalid: not a regular file"},
		{"another scenario", other, `of scenario "tiny" and B ` + other + ` of scenario "other"`},
	} {
		for _, order := range [][2]string{{good, c.dir}, {c.dir, good}} {
			_, err := Compare(order[0], order[1], CompareOptions{})
			if !badinput.Is(err) || !strings.Contains(err.Error(), c.dir) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want bad input naming %s with %q", c.name, err, c.dir, c.want)
			}
			if c.name == "another scenario" {
				break
			}
		}
	}
	c, err := Compare(good, other, CompareOptions{Force: true})
	if err != nil || c.B.Scenario != "other" || !slices.Contains(diffKeys(c), "scenario") || rowOf(t, c, "", "hydra").Status != results.CompareCompared {
		t.Errorf("--force: %+v, %v", c, err)
	}
}

// compareSweep runs the tiny scenario with HyDra and static over the
// HyDra caps given, as a sweep into root/name, 4 iterations a point.
func compareSweep(t *testing.T, root, name, seed, caps string) string {
	t.Helper()
	src := strings.Replace(compareScenario(seed, `["hydra", "static"]`, ""), "iterations = 16", "iterations = 4", 1)
	sc := parse(t, src+"\n[sweep]\ngpus = [48]\n\n[sweep.options.hydra]\ncap = "+caps+"\n")
	dir := filepath.Join(root, name)
	if _, err := Sweep(context.Background(), sc, SweepOptions{Dir: dir, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompareSweeps: two sweeps are compared point by point, points paired
// by their axes wherever their indices are (cap = 8 is point 1 of A and
// point 0 of B); a point in one sweep only is listed so; a point folder
// cut short is bad input; a run is not compared with a sweep.
func TestCompareSweeps(t *testing.T) {
	root := t.TempDir()
	a := compareSweep(t, root, "a", "1", "[4, 8]")
	b := compareSweep(t, root, "b", "1", "[8, 16]")
	c, err := Compare(a, b, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != "sweep" || c.A.Points != 2 || c.B.Points != 2 || c.A.Scenario != "tiny" {
		t.Errorf("folders %+v %+v", c.A, c.B)
	}
	var got []string
	for _, r := range c.Rows {
		got = append(got, r.Axes+" "+r.Policy+": "+r.Status)
	}
	want := []string{"gpus=48 hydra.cap=4 hydra: only in A", "gpus=48 hydra.cap=4 static: only in A",
		"gpus=48 hydra.cap=8 hydra: compared", "gpus=48 hydra.cap=8 static: compared",
		"gpus=48 hydra.cap=16 hydra: only in B", "gpus=48 hydra.cap=16 static: only in B"}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%q\nwant\n%q", got, want)
	}
	for _, p := range []string{"hydra", "static"} {
		r := rowOf(t, c, "gpus=48 hydra.cap=8", p)
		if r.ChangePct != 0 || r.Significant || r.IterationsA != 3 || r.Point != "p0001-gpus-48-hydra.cap-8" {
			t.Errorf("cap 8, %s: %+v, want the same run on both sides", p, r)
		}
	}
	if keys := diffKeys(c); !slices.Equal(keys, []string{"scenario_sha256"}) {
		t.Errorf("differences %+v", c.Differences)
	}

	// Another seed: every point compared.
	b2 := compareSweep(t, root, "b2", "2", "[4, 8]")
	c, err = Compare(a, b2, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 4 || !slices.Contains(diffKeys(c), "seed") {
		t.Errorf("rows %+v, differences %+v", c.Rows, c.Differences)
	}
	for _, r := range c.Rows {
		if r.Status != results.CompareCompared || r.ChangePct == 0 {
			t.Errorf("%s: %+v", r.Label(), r)
		}
	}

	// A point's iterations.csv cut at a row boundary (merge's checks let it
	// through: every row is whole).
	pt := pointDirs(t, b2)[1]
	ipath := filepath.Join(pt, "iterations.csv")
	text, _ := os.ReadFile(ipath)
	rows := strings.SplitAfter(string(text), "\n")
	os.WriteFile(ipath, []byte(strings.Join(rows[:len(rows)-2], "")), 0o644)
	if _, err := Compare(a, b2, CompareOptions{}); !badinput.Is(err) || !strings.Contains(err.Error(), ipath) {
		t.Errorf("truncated point: %v", err)
	}
	run := compareRun(t, root, "run", compareScenario("1", `["hydra", "static"]`, ""))
	if _, err := Compare(run, a, CompareOptions{Force: true}); !badinput.Is(err) || !strings.Contains(err.Error(), "a run folder and B "+a+" a sweep folder") {
		t.Errorf("run against sweep: %v", err)
	}
	empty := filepath.Join(root, "empty")
	os.MkdirAll(filepath.Join(empty, "points"), 0o755)
	if _, err := Compare(empty, a, CompareOptions{}); !badinput.Is(err) || !strings.Contains(err.Error(), "no point folders") {
		t.Errorf("empty sweep: %v", err)
	}
}

// TestComparePairedFindsShift: a profile whose BF16 peak is 2% lower, on
// the same batches (same seed), makes every policy slower by a little, and
// the paired test finds it significant for each; the same two profiles
// under different seeds (other batches: Welch's test) find nothing.
func TestComparePairedFindsShift(t *testing.T) {
	root := t.TempDir()
	h20, err := calib.LookupProfile("H20")
	if err != nil {
		t.Fatal(err)
	}
	slow := *h20
	slow.Name = "H20-slower"
	slow.PeakBF16FLOPs.Value *= 0.98
	slow.PeakBF16FLOPs.Source = "test: the H20's peak less 2%"
	b, err := slow.Encode()
	if err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(root, "h20-slower.toml")
	if err := os.WriteFile(prof, b, 0o644); err != nil {
		t.Fatal(err)
	}
	withSlow := func(seed string) string {
		return compareScenario(seed, "", "") + "\n[costs]\nprofile = " + strconv.Quote(prof) + "\n"
	}
	base := compareRun(t, root, "base", compareScenario("1", "", ""))
	for _, tc := range []struct {
		name, seed, test string
		significant      bool
	}{
		{"same batches", "1", results.CompareTestPaired, true},
		{"other batches", "2", results.CompareTestWelch, false},
	} {
		c, err := Compare(base, compareRun(t, root, tc.name, withSlow(tc.seed)), CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c.Rows {
			t.Logf("%s, %s: %+.2f%% [%+.2f, %+.2f] (%s, df %.1f)", tc.name, r.Policy, r.ChangePct, r.CILowPct, r.CIHighPct, r.Test, r.DF)
			if r.Test != tc.test || r.Significant != tc.significant {
				t.Errorf("%s, %s: test %s, significant %v; want %s, %v", tc.name, r.Policy, r.Test, r.Significant, tc.test, tc.significant)
			}
			if tc.significant && !(r.ChangePct > 0 && r.ChangePct < 2.5) {
				t.Errorf("%s, %s: a change of %+.2f%%, want a slowdown of at most the peak's 2%%", tc.name, r.Policy, r.ChangePct)
			}
		}
	}
}

// TestPairedT: the paired interval against the formula, and its limits.
func TestPairedT(t *testing.T) {
	a, b := []float64{1, 2, 3, 4}, []float64{1.1, 2.3, 3.1, 4.3} // d = .1 .3 .1 .3
	w := pairedT(a, b, 0.95)
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 3}.Quantile(0.975) * math.Sqrt(variance([]float64{.1, .3, .1, .3})/4)
	if !w.defined || w.df != 3 || math.Abs(w.diff-0.2) > 1e-12 || math.Abs(w.lo-(0.2-half)) > 1e-12 || math.Abs(w.hi-(0.2+half)) > 1e-12 || !w.significant {
		t.Errorf("paired %+v, want 0.2 ± %g on 3 df", w, half)
	}
	if w := pairedT([]float64{1, 2}, []float64{2, 3}, 0.95); !w.defined || w.lo != 1 || w.hi != 1 || !w.significant {
		t.Errorf("constant differences: %+v, want [1, 1]", w)
	}
	if w := pairedT([]float64{1}, []float64{2}, 0.95); w.defined {
		t.Errorf("one pair: %+v, want no interval", w)
	}
}
