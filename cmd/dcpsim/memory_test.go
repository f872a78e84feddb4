package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/scenarios"
)

// TestMemoryCommand: dcpsim memory prints the table, the verdict and the
// sources for a preset, exits 0 whether it fits or not, and --json (before or
// after the scenario) prints the same report as one object.
func TestMemoryCommand(t *testing.T) {
	code, out, errOut := dcpsim(t, "memory", "testbed-256k")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"scenario  testbed-256k: paper-mla on 512 GPUs (H20)", "tp1 pp4 vpp1 ep8, G = 128", "budget    B = 8192 tokens/rank",
		"activations at B", "headroom", "\nfits: the least headroom is", "arXiv 2205.05198", "theoretical_memory_usage.py", "dcpsim run reports the simulated peak"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	big := filepath.Join(t.TempDir(), "big-b.toml")
	if err := os.WriteFile(big, []byte(strings.Replace(memoryTOML(t), "budget_tokens = 8192", "budget_tokens = 262144", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = dcpsim(t, "memory", big)
	if code != exitOK || !strings.Contains(out, "\nOUT OF MEMORY on stage 3 (H20): needs 257.0 of 89.4 GiB\n") {
		t.Errorf("out of memory: exit %d, stderr %q:\n%s", code, errOut, out)
	}
	for _, args := range [][]string{{"memory", "--json", "hetero-long-256k"}, {"memory", "hetero-long-256k", "--json"}} {
		code, out, errOut = dcpsim(t, args...)
		var r report.MemoryReport
		if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Scenario != "hetero-long-256k" || len(r.Rows) != 2 || !r.Fits {
			t.Errorf("%q: exit %d, stderr %q, report %+v", args, code, errOut, r)
		}
	}
}

// TestMemoryBadInput: an unknown scenario, a scenario whose model states do
// not fit (scenarios.Parse refuses it), no or two scenarios and an unknown
// flag are exit 2.
func TestMemoryBadInput(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "deepseek-v3-on-8.toml")
	text := `name = "deepseek-v3-on-8"
description = "DeepSeek-V3 on one node"
[cluster]
gpu = "H800"
gpus = 8
gpus_per_node = 8
[model]
preset = "deepseek-v3"
[parallel]
tp = 1
pp = 1
vpp = 1
ep = 8
budget_tokens = 8192
[workload]
preset = "long-256k"
context_tokens = 32768
batch_tokens = 65536
overlong = "split"
[run]
iterations = 2
warmup_iterations = 0
seed = 1
policies = ["static"]
`
	if err := os.WriteFile(huge, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"memory", "no-such"}, "no embedded scenario"},
		{[]string{"memory", huge}, "the model states of pipeline stage 0 need 1489.8 GiB per GPU"},
		{[]string{"memory"}, "memory takes one scenario"},
		{[]string{"memory", "testbed-256k", "testbed-32k"}, "memory takes one scenario"},
		{[]string{"memory", "--yaml", "testbed-256k"}, "flag provided but not defined"},
	} {
		code, _, errOut := dcpsim(t, c.args...)
		if code != exitInput || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestScenariosShowMemory: scenarios show has the memory line.
func TestScenariosShowMemory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mem.toml")
	if err := os.WriteFile(f, []byte(memoryTOML(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := dcpsim(t, "scenarios", "show", f)
	if code != exitOK || !strings.Contains(out, "\nmemory       states 34.4 GiB (stage 3) + reserve 9.3 + activations at B 6.7 = 50.4 GiB of 89.4 GiB per H20: fits (dcpsim memory for the stages)\n") {
		t.Errorf("exit %d, stderr %q:\n%s", code, errOut, out)
	}
}

// memoryTOML is a scenario of its own, so that the numbers above move only
// with the memory model: testbed-256k's job with every layer recomputed
// (scenarios/testdata/memory-full-recompute.toml).
func memoryTOML(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../../scenarios/testdata/memory-full-recompute.toml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBudgetAutoPrinted: with budget_tokens = "auto", plan and run print the
// budget the memory model chose, the largest whose worst case fits.
func TestBudgetAutoPrinted(t *testing.T) {
	dir := t.TempDir()
	sc := writeTiny(t, dir, "tiny-auto", `["hydra"]`, "")
	src, err := os.ReadFile(sc)
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`budget_tokens = \d+`).ReplaceAllString(string(src), `budget_tokens = "auto"`)
	if text == string(src) {
		t.Fatal("the tiny scenario has no budget_tokens to replace")
	}
	if err := os.WriteFile(sc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	parsed, err := scenarios.Load(sc)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := memory.New(parsed.Job, compute.FlashAttention)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := parsed.Profile()
	if err != nil {
		t.Fatal(err)
	}
	want, err := mem.AutoBudgetTokens(prof.Name, prof.HBMBytes.Value, parsed.Job.ContextTokens)
	if err != nil || want != parsed.Job.Parallel.BudgetTokens {
		t.Fatalf("auto budget %d (%v), the scenario's %d", want, err, parsed.Job.Parallel.BudgetTokens)
	}
	line := fmt.Sprintf("B = %d (auto: the largest whose peak memory fits)", want)
	for _, args := range [][]string{{"plan", "--policy", "hydra", "--scenario", sc}, {"run", "--no-files", sc}} {
		code, out, errOut := dcpsim(t, args...)
		if code != exitOK || !strings.Contains(out, line) {
			t.Errorf("%v: exit %d, stderr %s; want %q in:\n%s", args, code, errOut, line, out)
		}
	}
}
