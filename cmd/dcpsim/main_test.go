package main

import (
	"bytes"
	"encoding/json"
	"github.com/dcpsim/dcpsim/results"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/experiment"
)

// dcpsim runs the CLI in-process and returns its exit status and output.
func dcpsim(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string // in stdout+stderr
	}{
		{nil, exitInput, "usage: dcpsim <command>"},
		{[]string{"help"}, exitOK, "workload"},
		{[]string{"help", "workload"}, exitOK, "workload stats"},
		{[]string{"help", "nope"}, exitInput, `unknown command "nope"`},
		{[]string{"nope"}, exitInput, `unknown command "nope"`},
		{[]string{"version"}, exitOK, "dcpsim"},
		{[]string{"models"}, exitOK, "deepseek-v2-lite"},
		{[]string{"models", "hy3"}, exitOK, "295.0"},
		{[]string{"models", "gpt-5"}, exitInput, "known: bytescale-llama-7b, deepseek-v2-lite"},
		{[]string{"scenarios"}, exitOK, "testbed-256k"},
		{[]string{"scenarios", "show", "hy3-8k"}, exitOK, "G = 1024 ranks per stage"},
		{[]string{"scenarios", "show", "--source", "testbed-32k"}, exitOK, "# testbed-32k:"},
		{[]string{"scenarios", "show", "no-such"}, exitInput, "no embedded scenario"},
		{[]string{"scenarios", "frobnicate"}, exitInput, "unknown scenarios subcommand"},
		{[]string{"scenarios", "check", "../../scenarios/testdata/good.toml"}, exitOK, "ok   ../../scenarios/testdata/good.toml"},
		{[]string{"workload"}, exitInput, "usage"},
		{[]string{"workload", "stats", "--bogus"}, exitInput, "flag provided but not defined"},
		{[]string{"workload", "stats", "--scenario", "x", "--file", "y"}, exitInput, "exclusive"},
		{[]string{"workload", "stats", "--plot", "cdf.pdf"}, exitInput, ".png or .svg"},
		{[]string{"workload", "stats", "--file", "/no/such/file"}, exitInput, "no such file"},
		{[]string{"workload", "stats", "--scenario", "testbed-32k", "--iterations", "2"}, exitOK, "256K dataset (§2.2; for comparison)"},
		// Flags that used to be ignored silently.
		{[]string{"workload", "stats", "--seed", "-1"}, exitInput, "--seed = -1: must be >= 0"},
		{[]string{"workload", "stats", "--iterations", "0"}, exitInput, "--iterations = 0: must be in [1, "},
		{[]string{"workload", "stats", "--file", "x", "--batch-tokens", "0"}, exitInput, "--batch-tokens = 0: must be >= 1"},
		{[]string{"workload", "stats", "--format", "jsonl"}, exitInput, "--format goes with --file"},
		{[]string{"workload", "stats", "--scenario", "testbed-32k", "--context", "8"}, exitInput, "--context goes with --file"},
		{[]string{"workload", "stats", "--file", "x", "--seed", "3"}, exitInput, "--seed goes with --batch-tokens"},
		{[]string{"workload", "stats", "--file", "x", "--iterations", "3"}, exitInput, "--iterations goes with --batch-tokens"},
		{[]string{"workload", "stats", "--scenario", "testbed-32k", "--iterations", "1", "--seed", "0"}, exitOK, "256K dataset (§2.2; for comparison)"},
	} {
		code, out, errOut := dcpsim(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("dcpsim %q: exit %d, want %d; output lacks %q?\nstdout: %s\nstderr: %s", c.args, code, c.code, c.want, out, errOut)
		}
	}
}

// TestBadScenarioFilesExit2 runs `scenarios check` on every malformed scenario:
// each must exit 2 and name its file.
func TestBadScenarioFilesExit2(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/testdata/bad/*.toml")
	if err != nil || len(files) < 20 {
		t.Fatalf("want 20+ malformed scenarios, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		code, _, errOut := dcpsim(t, "scenarios", "check", f)
		if code != exitInput || !strings.Contains(errOut, f+":") {
			t.Errorf("check %s: exit %d, want 2 with the file named; stderr:\n%s", f, code, errOut)
		}
		code, _, errOut = dcpsim(t, "workload", "stats", "--scenario", f)
		if code != exitInput || !strings.Contains(errOut, f) {
			t.Errorf("workload stats --scenario %s: exit %d, want 2; stderr:\n%s", f, code, errOut)
		}
	}
}

// TestWorkloadStatsPaperShape is the foundation issue's acceptance check: the
// default 256K scenario shows the dataset shape of hydra-paper.txt §2.2.
func TestWorkloadStatsPaperShape(t *testing.T) {
	code, out, errOut := dcpsim(t, "workload", "stats", "--scenario", "testbed-256k")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"paper >85%: alike", "paper <0.6%: alike", "four orders of magnitude: alike", "4,194,304"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestWorkloadStatsDeterministic: the same scenario and seed print the same bytes
// whatever GOMAXPROCS is, and another seed prints other batches.
func TestWorkloadStatsDeterministic(t *testing.T) {
	args := []string{"workload", "stats", "--scenario", "testbed-256k", "--iterations", "6", "--json"}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	_, one, _ := dcpsim(t, args...)
	runtime.GOMAXPROCS(4)
	_, four, _ := dcpsim(t, args...)
	if one != four {
		t.Errorf("output differs between GOMAXPROCS=1 and 4")
	}
	_, other, _ := dcpsim(t, append(args, "--seed", "2")...)
	if other == one {
		t.Errorf("seed 2 printed the same batches as seed 1")
	}
	var rep results.WorkloadStats
	if err := json.Unmarshal([]byte(one), &rep); err != nil {
		t.Fatalf("--json output does not parse: %v", err)
	}
	if len(rep.Batches) != 6 || rep.Batches[5].Tokens != 4194304 {
		t.Errorf("batches: %+v", rep.Batches)
	}
}

func TestWorkloadStatsFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "lengths.csv")
	if err := os.WriteFile(good, []byte("id,length\n1,100\n2,3000\n3,70000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := dcpsim(t, "workload", "stats", "--file", good, "--batch-tokens", "100000", "--context", "32768", "--iterations", "3")
	if code != exitOK || !strings.Contains(out, "3 × 100,000 tokens") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("100\n200\nabc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = dcpsim(t, "workload", "stats", "--file", bad)
	if code != exitInput || !strings.Contains(errOut, bad+":3") {
		t.Errorf("bad length file: exit %d, want 2 naming %s:3; stderr: %s", code, bad, errOut)
	}
}

// TestWorkloadStatsPlot writes both figure formats and leaves no temp files.
func TestWorkloadStatsPlot(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cdf.png", "cdf.svg"} {
		path := filepath.Join(dir, name)
		code, _, errOut := dcpsim(t, "workload", "stats", "--scenario", "testbed-32k", "--iterations", "2", "--plot", path)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() < 1000 {
			t.Errorf("%s: %v (size %v)", name, err, fi)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("folder holds %d entries, want the 2 figures only (no temp files)", len(entries))
	}
}

func TestPlanCommand(t *testing.T) {
	code, out, errOut := dcpsim(t, "plan", "--policy", "static", "--scenario", "testbed-32k", "--iteration", "1")
	if code != exitOK || !strings.Contains(out, "CP degree                8") || !strings.Contains(out, "memory degree") {
		t.Errorf("plan static testbed-32k: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan"}, "--policy is required"},
		{[]string{"plan", "--policy", "nope"}, `unknown policy "nope"`},
		{[]string{"plan", "--policy", "static", "--iteration", "-1"}, "--iteration = -1"},
		{[]string{"plan", "--policy", "static", "--overhead-ratio", "-5"}, "--overhead-ratio"},
		// NaN and Inf used to fall back to the profile's θ/c silently; -1 named the default.
		{[]string{"plan", "--policy", "hydra", "--overhead-ratio", "NaN"}, "--overhead-ratio = NaN: must be a finite number >= 0"},
		{[]string{"plan", "--policy", "hydra", "--overhead-ratio", "Inf"}, "--overhead-ratio = +Inf: must be a finite number >= 0"},
		{[]string{"plan", "--policy", "hydra", "--overhead-ratio", "-Inf"}, "--overhead-ratio = -Inf"},
		{[]string{"plan", "--policy", "hydra", "--overhead-ratio", "-1"}, "--overhead-ratio = -1"},
		{[]string{"plan", "--policy", "hydra", "--overhead-ratio", "NaN", "--batches", "/no/such.jsonl"}, "--overhead-ratio = NaN"},
		{[]string{"plan", "--policy", "static", "--batches", "x", "--scenario", "y"}, "exclusive"},
		{[]string{"plan", "--policy", "static", "--batches", "/no/such.jsonl"}, "no such file"},
	} {
		code, _, errOut := dcpsim(t, c.args...)
		if code != exitInput || !strings.Contains(errOut, c.want) {
			t.Errorf("dcpsim %q: exit %d, want 2 with %q; stderr: %s", c.args, code, c.want, errOut)
		}
	}
}

// TestPlanBatches checks the --batches contract: one JSON line per batch line,
// with microbatches, groups and diagnostics, and file:line on bad input.
func TestPlanBatches(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	lines := `{"ranks": 4, "budget_tokens": 4, "lengths": [5, 3, 4, 4, 2, 7, 1], "context_tokens": 8}

{"ranks": 2, "budget_tokens": 8, "lengths": [3, 3], "pp": 2, "vpp": 1, "microbatches": [[[0],[1]]]}
`
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	code, _, errOut := dcpsim(t, "plan", "--policy", "static", "--batches", in, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(got) != 2 {
		t.Fatalf("%d output lines, want 2 (one per non-blank input line)", len(got))
	}
	var first experiment.PlanLine
	if err := json.Unmarshal([]byte(got[0]), &first); err != nil {
		t.Fatal(err)
	}
	want := [][][]int{{{0, 1}, {0, 1}, {2, 3}, {2, 3}}, {{4}, {4}, {5, 6}, {5, 6}}}
	if !reflect.DeepEqual(first.Microbatches, want) || len(first.Groups) != 2 || first.Groups[0][1].FirstRank != 2 {
		t.Errorf("first line %+v", first)
	}
	if first.Diagnostics["policy"] != "static" || first.Diagnostics["degree"] != 2.0 {
		t.Errorf("diagnostics %v", first.Diagnostics)
	}

	for _, c := range []struct{ line, want string }{
		{`{"ranks": 4, "budget_tokens": 4, "lengths": [17]}`, "in.jsonl:1: sequence 0 has 17 tokens"},
		{`{"ranks": 4, "budget": 4, "lengths": [1]}`, `in.jsonl:1: not a batch object: unknown key "budget"; allowed: ranks, budget_tokens,`},
		{`[1, 2]`, "in.jsonl:1: not a batch object"},
		{`{"ranks": 0, "budget_tokens": 4, "lengths": [1]}`, "in.jsonl:1: invalid scheduling input"},
	} {
		if err := os.WriteFile(in, []byte(c.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := dcpsim(t, "plan", "--policy", "static", "--batches", in)
		if code != exitInput || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, want 2 with %q; stderr: %s", c.line, code, c.want, errOut)
		}
	}
}
