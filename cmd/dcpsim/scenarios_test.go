package main

import (
	"encoding/json"
	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/scenarios"
	"os"
	"strings"
	"testing"
)

// TestScenarioFlagEverywhere: every command that reads a scenario takes it
// by --scenario as well as as its argument, and refuses it named twice.
func TestScenarioFlagEverywhere(t *testing.T) {
	code, byFlag, stderr := dcpsim(t, "memory", "--scenario", "testbed-32k")
	if code != exitOK {
		t.Fatalf("memory --scenario: exit %d: %s", code, stderr)
	}
	if _, byArg, _ := dcpsim(t, "memory", "testbed-32k"); byArg != byFlag {
		t.Errorf("memory --scenario S and memory S differ:\n%s\n%s", byFlag, byArg)
	}
	for _, cmd := range []string{"sweep", "search", "trace", "memory", "run"} {
		code, _, stderr := dcpsim(t, cmd, "--scenario", "testbed-32k", "testbed-256k")
		if code != exitInput || !strings.Contains(stderr, "testbed-256k") {
			t.Errorf("%s with a scenario named twice: exit %d, %s", cmd, code, stderr)
		}
	}
}

// TestRunOverrides: --iterations and --seed replace [run]'s without editing
// the file, the summary records them, and the results' hash tells the run
// apart from the file's own.
func TestRunOverrides(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := dcpsim(t, "run", "testbed-32k", "--iterations", "3", "--seed", "7", "--out", dir+"/o")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(dir + "/o/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Seed             uint64 `json:"seed"`
		Iterations       int    `json:"iterations"`
		WarmupIterations int    `json:"warmup_iterations"`
		Hash             string `json:"scenario_sha256"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	sc, _ := scenarios.Preset("testbed-32k")
	if s.Seed != 7 || s.Iterations != 3 || s.WarmupIterations > 2 || s.Hash == experiment.Hash(sc) {
		t.Errorf("summary %+v: want seed 7, 3 iterations and a hash other than the file's", s)
	}
	for _, args := range [][]string{{"run", "testbed-32k", "--iterations", "0", "--no-files"}, {"run", "testbed-32k", "--iterations", "100000000", "--no-files"}} {
		if code, _, stderr := dcpsim(t, args...); code != exitInput || !strings.Contains(stderr, "--iterations") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}

// TestScenariosNewAndCheck: scenarios new prints a scenario that check
// passes without a warning; check warns, with the figure, of a scenario
// whose budget does not fit its HBM and notes the uneven split it derives
// for a pp that does not divide the layers.
func TestScenariosNewAndCheck(t *testing.T) {
	dir := t.TempDir()
	code, tmpl, stderr := dcpsim(t, "scenarios", "new")
	if code != exitOK || !strings.Contains(tmpl, "[parallel]") {
		t.Fatalf("new: exit %d: %s", code, stderr)
	}
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newFile := write("new.toml", tmpl)
	if code, out, stderr := dcpsim(t, "scenarios", "check", newFile); code != exitOK || !strings.HasPrefix(out, "ok ") || strings.Contains(out, "warn") {
		t.Errorf("check of new's output: exit %d, %q %s", code, out, stderr)
	}
	big := write("big.toml", strings.Replace(tmpl, "budget_tokens = 8192 ", "budget_tokens = 65536", 1))
	code, out, _ := dcpsim(t, "scenarios", "check", big)
	if code != exitOK || !strings.Contains(out, "warn ") || !strings.Contains(out, "GiB of HBM") || !strings.Contains(out, "ok ") {
		t.Errorf("check of a budget past HBM: exit %d, %q", code, out)
	}
	uneven := write("uneven.toml", strings.Replace(strings.Replace(tmpl, "pp = 4 ", "pp = 7 ", 1), "gpus = 64", "gpus = 112", 1))
	code, out, stderr = dcpsim(t, "scenarios", "check", uneven)
	if code != exitOK || !strings.Contains(out, "first_stage_layers = 3 and last_stage_layers = 4 derived") {
		t.Errorf("check of pp 7 for 32 layers: exit %d, %q %s", code, out, stderr)
	}
}
