package report

import (
	"encoding/json"
	"github.com/dcpsim/dcpsim/results"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeteroSection: the mixed-cluster section reads its runs and sweeps,
// computes throughput ratios from tokens per day, labels the review's
// figures and says whether ours are within 15% of them; a missing folder is
// named, not fatal.
func TestHeteroSection(t *testing.T) {
	dir := t.TempDir()
	write := func(name, file string, v any) {
		b, _ := json.Marshal(v)
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(tpd map[string]float64) results.Summary {
		s := results.Summary{Iterations: 2, Layout: results.Layout{GPUs: 64, GPU: "32×H100-SXM + 32×A100-80G", Model: "llama-3-8b", TP: 1, PP: 1, PoolRanks: 64, BudgetTokens: 1000, ContextTokens: 32000}}
		for _, p := range []string{"hexiseq", "usp", "hydra-hetero", "hydra"} {
			s.Policies = append(s.Policies, results.PolicySummary{Policy: p, TokensPerDay: tpd[p], StepSecondsMean: 1e9 / tpd[p]})
		}
		return s
	}
	write("hexiseq-h100-a100", "summary.json", run(map[string]float64{"hexiseq": 2.4e9, "usp": 2e9, "hydra-hetero": 2.2e9, "hydra": 1e9}))
	pts := []results.SweepPoint{{Summary: run(map[string]float64{"hexiseq": 2.2e9, "usp": 2e9, "hydra-hetero": 2e9, "hydra": 2e9})},
		{Summary: run(map[string]float64{"hexiseq": 2.4e9, "usp": 2e9, "hydra-hetero": 2e9, "hydra": 2e9})}}
	write("hexiseq-contexts", "sweep.json", sweepJSON{Points: pts})
	var b strings.Builder
	writeHetero(&b, dir)
	out := b.String()
	for _, want := range []string{
		"| hexiseq | 0.42 | 2.40 | 0.0 | 0.0 | 1.20 |",
		"| llama-3-8b | 31K | 50 | 1.10 | 1.00 | 1.00 |",
		"| H100 + A100, mean of 2 settings | 1.15 | 1.11 | +4%, within 15% |",
		"| H100 + A100, best | 1.20 | 1.19 | +1%, within 15% |",
		"**Review-reported**",
		"Missing: " + filepath.Join(dir, "hexiseq-four-kinds", "sweep.json"),
		"Missing: " + filepath.Join(dir, "hetero-long-256k", "summary.json"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
	if got := reviewVerdict(1.6, 1.36); !strings.Contains(got, "+18%, **outside 15%**") {
		t.Errorf("reviewVerdict(1.6, 1.36) = %q", got)
	}
}
