package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/dcpsim/dcpsim/results"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/scenarios"
)

// compareScenarioText is a 48-GPU scenario of two policies, 16 iterations
// (well under a second); OPTIONS is replaced. HyDra with its cap forced to 4
// is 40-60% slower than with its closed-form cap, far outside the noise of
// 15 measured iterations.
const compareScenarioText = `name = "tiny"

[cluster]
gpu = "H20"
gpus = 48

[model]
preset = "deepseek-v2-lite"

[parallel]
pp = 3
ep = 8
budget_tokens = 8192

[workload]
preset = "long-256k"
context_tokens = 32768
batch_tokens = 131072

[run]
iterations = 16
warmup_iterations = 1
seed = 1
policies = ["hydra", "static"]
OPTIONS
`

// compareFolder runs src and writes its results folder (no figures) as
// root/name, as dcpsim run would.
func compareFolder(t *testing.T, root, name, src string) string {
	t.Helper()
	sc, err := scenarios.Parse([]byte(src), name+".toml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := experiment.Run(sc, experiment.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, name)
	if _, err := experiment.WriteRun(context.Background(), dir, sc, out, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// compareFolders are a run, the same run again, and the run with HyDra's
// cap forced to 4 (slower), under root.
func compareFolders(t *testing.T) (root, base, same, slower string) {
	root = t.TempDir()
	base = compareFolder(t, root, "base", strings.Replace(compareScenarioText, "OPTIONS", "", 1))
	same = compareFolder(t, root, "same", strings.Replace(compareScenarioText, "OPTIONS", "", 1))
	slower = compareFolder(t, root, "slower", strings.Replace(compareScenarioText, "OPTIONS", "[run.options.hydra]\ncap = 4\n", 1))
	return root, base, same, slower
}

// TestCompareCommand: identical folders change by exactly 0 and exit 0;
// --fail-on-regression exits 1 naming the slowed policy (and only it) when
// its change is significant and beyond the threshold, 0 otherwise; --json
// prints the object alone; --out writes the four files.
func TestCompareCommand(t *testing.T) {
	root, base, same, slower := compareFolders(t)

	code, out, errOut := dcpsim(t, "compare", base, same, "--fail-on-regression", "0")
	if code != exitOK || errOut != "" {
		t.Fatalf("identical: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"compare runs of tiny\n", "differs: nothing", "15/15", "+0.00", "paired t interval"} {
		if !strings.Contains(out, want) {
			t.Errorf("identical: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " yes ") {
		t.Errorf("identical folders show a significant change:\n%s", out)
	}

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{base, slower, "--fail-on-regression", "10"}, exitFailure},
		{[]string{"--fail-on-regression", "0", base, slower}, exitFailure},
		{[]string{base, slower, "--fail-on-regression", "1000"}, exitOK},
		{[]string{base, slower}, exitOK},
		{[]string{slower, base, "--fail-on-regression", "0"}, exitOK}, // B is faster
	} {
		code, out, errOut := dcpsim(t, append([]string{"compare"}, c.args...)...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d: %s", c.args, code, c.code, errOut)
			continue
		}
		if !strings.Contains(out, "hydra") || !strings.Contains(out, " yes ") {
			t.Errorf("%v: the table shows no significant change of hydra:\n%s", c.args, out)
		}
		if c.code == exitFailure && (!strings.Contains(errOut, "1 policy slower in B") || !strings.Contains(errOut, ": hydra +") || strings.Contains(errOut, "static")) {
			t.Errorf("%v: stderr %q, want hydra named alone", c.args, errOut)
		}
		if c.code == exitOK && errOut != "" {
			t.Errorf("%v: stderr %q", c.args, errOut)
		}
	}

	outDir := filepath.Join(root, "cmp", "out")
	code, out, errOut = dcpsim(t, "compare", "--json", "--out", outDir, base, slower)
	if code != exitOK {
		t.Fatalf("--json --out: exit %d: %s", code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var c results.Comparison
	if err := dec.Decode(&c); err != nil || dec.More() || len(c.Rows) != 2 || c.Rows[0].Policy != "hydra" || !c.Rows[0].Significant || c.Rows[0].ChangePct <= 0 {
		t.Errorf("--json: %v, %+v", err, c)
	}
	if !strings.Contains(errOut, "wrote "+outDir+"/: compare.csv, compare.json, compare.png, compare.svg") {
		t.Errorf("--json --out: stderr %q", errOut)
	}
	file, _ := os.ReadFile(filepath.Join(outDir, "compare.json"))
	if !bytes.Equal(file, []byte(out)) {
		t.Error("compare.json is not what --json prints")
	}
	for _, f := range results.CompareFiles {
		if st, err := os.Stat(filepath.Join(outDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	code, out, _ = dcpsim(t, "compare", "--out", outDir, base, slower)
	if code != exitOK || !strings.HasSuffix(out, "wrote "+outDir+"/: compare.csv, compare.json, compare.png, compare.svg, index.html\n") {
		t.Errorf("--out again: exit %d:\n%s", code, out)
	}
}

// TestCompareCommandBadInput: a missing folder, a file, a folder without
// summary.json, a truncated iterations.csv, a summary of another scenario
// (both named; --force compares them), a foreign summary.json, and flags out
// of range all exit 2 naming what is wrong (table-driven).
func TestCompareCommandBadInput(t *testing.T) {
	root, base, _, _ := compareFolders(t)
	other := compareFolder(t, root, "other", strings.NewReplacer("OPTIONS", "", `name = "tiny"`, `name = "other"`).Replace(compareScenarioText))
	copyOf := func(name string, edit func(dir string)) string {
		dir := filepath.Join(root, name)
		os.MkdirAll(dir, 0o755)
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(base, e.Name()))
			os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
		}
		edit(dir)
		return dir
	}
	noSummary := copyOf("nosummary", func(d string) { os.Remove(filepath.Join(d, "summary.json")) })
	truncated := copyOf("truncated", func(d string) {
		b, _ := os.ReadFile(filepath.Join(d, "iterations.csv"))
		os.WriteFile(filepath.Join(d, "iterations.csv"), b[:len(b)*2/3], 0o644)
	})
	foreign := copyOf("foreign", func(d string) { os.WriteFile(filepath.Join(d, "summary.json"), []byte(`{"name": "not ours"}`), 0o644) })
	file := filepath.Join(root, "file.txt")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"missing folder", []string{base, filepath.Join(root, "nope")}, []string{filepath.Join(root, "nope"), "no such folder"}},
		{"a file", []string{file, base}, []string{"A " + file, "not a folder"}},
		{"no summary.json", []string{base, noSummary}, []string{filepath.Join(noSummary, "summary.json"), "missing"}},
		{"truncated iterations.csv", []string{truncated, base}, []string{filepath.Join(truncated, "iterations.csv"), "truncated"}},
		{"foreign summary.json", []string{base, foreign}, []string{filepath.Join(foreign, "summary.json"), `unknown field "name"`}},
		{"another scenario", []string{base, other}, []string{base, other, `"tiny"`, `"other"`, "--force"}},
		{"one folder", []string{base}, []string{"takes two results folders"}},
		{"three folders", []string{base, base, base}, []string{"takes two results folders"}},
		{"negative threshold", []string{base, base, "--fail-on-regression", "-1"}, []string{"--fail-on-regression -1"}},
		{"NaN threshold", []string{base, base, "--fail-on-regression", "NaN"}, []string{"--fail-on-regression NaN"}},
		{"--out a file", []string{base, base, "--out", file}, []string{"--out " + file, "not a folder"}},
		{"--out is A", []string{base, other, "--force", "--out", base}, []string{"--out " + base, "is results folder A"}},
		{"unknown flag", []string{base, base, "--paired"}, []string{"-paired"}},
	} {
		code, out, errOut := dcpsim(t, append([]string{"compare"}, c.args...)...)
		if code != exitInput || out != "" {
			t.Errorf("%s: exit %d, want 2 with nothing on stdout: %s%s", c.name, code, out, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q lacks %q", c.name, errOut, w)
			}
		}
	}
	if entries, _ := os.ReadDir(base); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "compare") }) {
		t.Error("--out A wrote into A")
	}
	code, out, errOut := dcpsim(t, "compare", "--force", base, other)
	if code != exitOK || !strings.Contains(out, "of different scenarios (--force): tiny and other") || !strings.Contains(out, "scenario tiny → other") {
		t.Errorf("--force: exit %d: %s%s", code, out, errOut)
	}
}
