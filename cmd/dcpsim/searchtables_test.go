package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/results"
)

// searchTablesFile is a search of two policies on 16, 32 and 64 GPUs with
// known figures: at 64 GPUs hydra leads (120 B tokens/day, a tight
// interval), mcore ties it (110 B, a wide interval) and at 32 GPUs hydra's
// best leaves 2% of its HBM free.
func searchTablesFile() *experiment.SearchFile {
	row := func(id, gpus int, policy string, tpd, step, ci, peakGiB float64) results.SearchRow {
		return results.SearchRow{ID: id, GPUs: gpus, GPU: "H800", Model: "m", TP: 1, PP: 4, VPP: 1, EP: 8, BudgetTokens: 8192,
			Recompute: "selective", Precision: "bf16", Policy: policy, Status: results.SearchOK, Rung: 2, Iterations: 10,
			SearchFigures: results.SearchFigures{StepSecondsMean: step, StepSecondsP95: step * 1.1, TokensPerDay: tpd,
				DollarsPer1TTokens: 2 * float64(gpus) * 24e12 / tpd, PeakMemoryBytes: peakGiB * (1 << 30), HBMBytes: 80 << 30,
				PPBubbleShare: 0.2, DPBubbleShare: 0.05, MFU: 0.3},
			StepSecondsCI95: ci}
	}
	rows := []results.SearchRow{
		row(0, 16, "hydra", 31e9, 10, 0.2, 60),
		row(1, 16, "mcore", 29e9, 10.7, 0.3, 62),
		row(2, 32, "hydra", 61e9, 10.1, 0.2, 78.4),
		row(3, 32, "mcore", 58e9, 10.6, 0.4, 64),
		row(4, 64, "hydra", 120e9, 10.3, 0.1, 70),
		row(5, 64, "mcore", 110e9, 11.2, 1.5, 72),
		row(6, 64, "mcore", 90e9, 13.7, 0.2, 50),
	}
	for i, id := range []int{4, 5, 6, 2, 3, 0, 1} {
		rows[id].Rank = i + 1
	}
	return &experiment.SearchFile{Search: "tables", Model: "m", Iterations: 10, WarmupIterations: 1, DollarsPerGPUHour: 2, Candidates: rows}
}

// TestSearchTablesGolden: the tables a planner reads, against golden files
// (-update rewrites them): with a token target the answer comes first and
// the best per policy is at the answer's cluster size; the leader's ties
// are marked; --memory-headroom leaves out a candidate short of HBM and
// the answer moves to the next size.
func TestSearchTablesGolden(t *testing.T) {
	for _, tc := range []struct {
		name     string
		target   *results.SearchTarget
		headroom float64
	}{
		{"no-target", nil, 0},
		{"target", &results.SearchTarget{Tokens: 1.5e12, Days: 30}, 0},
		{"target-headroom", &results.SearchTarget{Tokens: 1.5e12, Days: 30}, 0.05},
		{"unreachable", &results.SearchTarget{Tokens: 1e13, Days: 30}, 0},
	} {
		var b bytes.Buffer
		printSearchTables(&b, searchTablesFile(), 5, tc.target, tc.headroom)
		golden := filepath.Join("testdata", "searchtables", tc.name+".golden")
		if *updateGolden {
			if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s: the tables differ from %s (go test ./cmd/dcpsim -run SearchTablesGolden -update):\n%s", tc.name, golden, b.String())
		}
	}
}
