package launchcfg_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/internal/launchcfg"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/scenarios"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGoldenLaunchLines: three launch scripts of the kind planners run (a
// dense GQA model, DeepSeek-V3 with MLA and expert parallelism, a
// long-context run with hierarchical context parallelism) import to the
// scenarios in testdata/golden (go test -update rewrites them; commit only
// diffs you understand), each of which parses, and the jobs say what the
// scripts say.
func TestGoldenLaunchLines(t *testing.T) {
	for _, c := range []struct {
		script string
		check  func(t *testing.T, im *launchcfg.Import)
	}{
		{"llama3-70b.sh", func(t *testing.T, im *launchcfg.Import) {
			p, m := im.Job.Parallel, im.Job.Model
			expect(t, "layout", p.TP == 4 && p.PP == 4 && p.VPP == 4 && im.CP == 2 && im.Job.Cluster.GPUs == 512)
			expect(t, "GQA with 8 groups", m.Attention == job.GQA && m.KVHeads == 8)
			expect(t, "FP8, BF16 gradients", p.Precision == job.PrecisionFP8 && !p.GradReduceFP32)
			expect(t, "vocabulary padded to 128·tp", m.Vocab == 128512)
		}},
		{"deepseek-v3.sh", func(t *testing.T, im *launchcfg.Import) {
			p, m := im.Job.Parallel, im.Job.Model
			expect(t, "layout", p.TP == 2 && p.PP == 16 && p.VPP == 1 && p.EP == 64 && p.ExpertTP() == 1 && im.Job.Cluster.GPUs == 1024)
			expect(t, "the recipe's pipeline layout", p.PipelineLayout == "4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,1")
			expect(t, "MLA", m.Attention == job.MLA && m.QLoRARank == 1536 && m.KVLoRARank == 512 && m.HeadDimQK == 192)
			expect(t, "3 dense layers, then MoE", m.DenseLayers == 3 && m.RoutedExperts == 256 && m.TopK == 8 && m.SharedExperts == 1)
			expect(t, "the vocabulary unpadded (129280 is a multiple of 3232 × tp 2)", m.Vocab == 129280)
		}},
		{"llama3-8b-128k-cp.sh", func(t *testing.T, im *launchcfg.Import) {
			p := im.Job.Parallel
			expect(t, "layout", p.TP == 2 && p.PP == 1 && im.CP == 16 && im.CPExec == "ulysses-ring" && im.Job.Cluster.GPUs == 256)
			expect(t, "budget 128K/16", p.BudgetTokens == 8192 && im.SeqLen == 131072 && im.GlobalBatch == 64)
			expect(t, "full recomputation", p.RecomputeMode() == job.RecomputeFull && p.RecomputeLayers == 0)
		}},
	} {
		t.Run(c.script, func(t *testing.T) {
			path := filepath.Join("testdata", "golden", c.script)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			im, err := launchcfg.MegatronScript(string(data), c.script, launchcfg.Options{GPU: "H100-SXM", NodeGPUs: 8})
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, im)
			name := strings.TrimSuffix(c.script, ".sh")
			got := im.Scenario(launchcfg.ScenarioOptions{Name: name})
			golden := filepath.Join("testdata", "golden", name+".toml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s imports to a scenario unlike %s (go test -update rewrites it):\n%s", c.script, golden, got)
			}
			if _, err := scenarios.Parse([]byte(got), name+".toml"); err != nil {
				t.Errorf("the scenario does not parse: %v", err)
			}
		})
	}
}

func expect(t *testing.T, what string, ok bool) {
	t.Helper()
	if !ok {
		t.Errorf("want %s", what)
	}
}
