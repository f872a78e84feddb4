package launchcfg_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/launchcfg"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/scenarios"
)

// recipeFamilies are the at-scale source families whose runs come with a
// NeMo or Megatron-Bridge recipe or with Megatron-LM arguments.
var recipeFamilies = []string{"nemo", "megatron-bridge", "megatron-lm"}

// layoutDiffers are the rows whose recipe's pipeline layout is not the
// split the at-scale table assumes (experiment.SplitLayers: the embedding
// and the loss a layer each, the earlier stages taking the remainder):
// Megatron-Bridge's DeepSeek-V3 recipes (recipes/deepseek, at the commit the
// rows cite) put the embedding and four layers on the first virtual stage and
// one layer, the MTP layer and the loss on the last. The test checks the
// difference is exactly that, so either side changing is noticed.
var layoutDiffers = map[string]string{
	"MB-05": "4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,1",
	"MB-08": "4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,1",
}

// TestAtScaleRoundTrip: for every row of validation/atscale.csv whose
// source is a NeMo or Megatron-Bridge recipe or Megatron-LM's arguments,
// testdata/atscale/ID.yaml (a recipe) or ID.sh (a launch script), written
// from the row's published settings, imports to the row's layout as
// experiment.AtScaleJob builds it: tp, pp, vpp, cp, ep, expert TP, the
// layers of every virtual stage, micro and global batch, sequence length,
// budget, precision and (where the row states it) recomputation; and to
// the row's model. The scenario it prints parses to the same job.
func TestAtScaleRoundTrip(t *testing.T) {
	runs, err := experiment.ReadAtScaleTable(filepath.Join("..", "..", "validation", "atscale.csv"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range runs {
		fam := experiment.FamilyOf(r.Source)
		if !slices.Contains(recipeFamilies, fam.Name) {
			continue
		}
		checked++
		t.Run(r.ID, func(t *testing.T) {
			su, err := experiment.AtScaleJob(r)
			if err != nil {
				t.Fatal(err)
			}
			im := importRow(t, r.ID, launchcfg.Options{GPU: r.GPU, GPUs: r.GPUs, GPUsPerNode: su.Job.Cluster.GPUsPerNode})
			want, got := su.Job, im.Job
			for _, c := range []struct {
				name       string
				want, have any
			}{
				{"tp", want.Parallel.TP, got.Parallel.TP},
				{"pp", want.Parallel.PP, got.Parallel.PP},
				{"vpp", want.Parallel.VPP, got.Parallel.VPP},
				{"cp", su.CP, im.CP},
				{"ep", want.Parallel.EP, got.Parallel.EP},
				{"expert tp", want.Parallel.ExpertTP(), got.Parallel.ExpertTP()},
				{"micro batch", su.MBS, im.MicroBatch},
				{"global batch", r.GBS, im.GlobalBatch},
				{"sequence", r.SeqLen, im.SeqLen},
				{"budget", want.Parallel.BudgetTokens, got.Parallel.BudgetTokens},
				{"gpus", want.Cluster.GPUs, got.Cluster.GPUs},
				{"precision", want.Parallel.PrecisionMode(), got.Parallel.PrecisionMode()},
				{"policy", "static", im.Policy},
			} {
				if fmt.Sprint(c.want) != fmt.Sprint(c.have) {
					t.Errorf("%s = %v, the row's is %v", c.name, c.have, c.want)
				}
			}
			if r.Recompute != "" && got.Parallel.RecomputeMode() != r.Recompute {
				t.Errorf("recompute = %s, the row states %s", got.Parallel.RecomputeMode(), r.Recompute)
			}
			wantChunks, gotChunks := chunkLayers(t, want), chunkLayers(t, got)
			if differs, ok := layoutDiffers[r.ID]; ok {
				if gotChunks != differs || wantChunks == differs {
					t.Errorf("virtual stages %s (the table's %s): want the recipe's %s, unlike the table's", gotChunks, wantChunks, differs)
				}
			} else if gotChunks != wantChunks {
				t.Errorf("layers per virtual stage %s, the row's %s", gotChunks, wantChunks)
			}
			compareModel(t, r, want.Model, got.Model)
			// What the framework runs beside the layout: the family's
			// settings, logged where the recipe says otherwise.
			for _, c := range []struct {
				name       string
				want, have any
			}{
				{"sequence parallel", want.Parallel.SequenceParallel, got.Parallel.SequenceParallel},
				{"tp overlap", want.Parallel.TPCommOverlap, got.Parallel.TPCommOverlap},
				{"grad sync", want.Parallel.GradSyncMode(), got.Parallel.GradSyncMode()},
				{"overlap grad reduce", want.Parallel.OverlapGradReduce, got.Parallel.OverlapGradReduce},
				{"grad reduce fp32", want.Parallel.GradReduceFP32, got.Parallel.GradReduceFP32},
				{"dispatcher", dispatcher(want.Parallel), dispatcher(got.Parallel)},
				{"cp exec", su.Exec.String(), im.CPExec},
			} {
				if fmt.Sprint(c.want) != fmt.Sprint(c.have) {
					t.Logf("%s: the recipe says %v, the %s family %v", c.name, c.have, fam.Name, c.want)
				}
			}
			checkScenario(t, im, r.ID)
		})
	}
	if checked < 30 {
		t.Errorf("checked %d rows of the recipe families %q; the table has 32", checked, recipeFamilies)
	}
}

// importRow imports testdata/atscale/ID.yaml or ID.sh.
func importRow(t *testing.T, id string, o launchcfg.Options) *launchcfg.Import {
	t.Helper()
	base := filepath.Join("testdata", "atscale", id)
	if data, err := os.ReadFile(base + ".yaml"); err == nil {
		im, err := launchcfg.NeMo(data, id+".yaml", o)
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	data, err := os.ReadFile(base + ".sh")
	if err != nil {
		t.Fatalf("no recipe or launch script for row %s in testdata/atscale: %v", id, err)
	}
	o.GPUs = 0 // the launcher's --nnodes × --nproc_per_node
	im, err := launchcfg.MegatronScript(string(data), id+".sh", o)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// chunkLayers is a job's layers per virtual stage, in Megatron's virtual
// order (model chunk c of stage s is c·pp + s).
func chunkLayers(t *testing.T, j job.Job) string {
	t.Helper()
	stages, err := j.StageLayers()
	if err != nil {
		t.Fatal(err)
	}
	p := j.Parallel
	firsts := make([]int, p.PP)
	for s := 1; s < p.PP; s++ {
		firsts[s] = firsts[s-1] + stages[s-1]
	}
	out := make([]string, 0, p.PP*p.VPP)
	for c := range p.VPP {
		for s := range p.PP {
			lo, hi := p.ChunkRange(s, firsts[s], stages[s], c)
			out = append(out, fmt.Sprint(hi-lo))
		}
	}
	return strings.Join(out, ",")
}

// compareModel checks the model fields the row's columns state.
func compareModel(t *testing.T, r experiment.AtScaleRun, want, got job.Model) {
	t.Helper()
	step := func(n int) int { return max(n, 1) }
	for _, c := range []struct {
		name       string
		want, have any
	}{
		{"layers", want.Layers, got.Layers},
		{"hidden", want.Hidden, got.Hidden},
		{"attention", want.Attention, got.Attention},
		{"query heads", want.QueryHeads, got.QueryHeads},
		{"kv heads", want.KVHeads, got.KVHeads},
		{"head dim qk", want.HeadDimQK, got.HeadDimQK},
		{"head dim v", want.HeadDimV, got.HeadDimV},
		{"q lora", want.QLoRARank, got.QLoRARank},
		{"kv lora", want.KVLoRARank, got.KVLoRARank},
		{"activation", want.Activation, got.Activation},
		{"dense layers", want.DenseLayers, got.DenseLayers},
		{"moe step", step(want.MoELayerStep), step(got.MoELayerStep)},
		{"experts", want.RoutedExperts, got.RoutedExperts},
		{"top k", want.TopK, got.TopK},
		{"expert ffn", want.ExpertFFN, got.ExpertFFN},
		{"shared width", want.SharedExperts * want.SharedExpertFFN, got.SharedExperts * got.SharedExpertFFN},
		{"vocab", want.Vocab, got.Vocab},
	} {
		if fmt.Sprint(c.want) != fmt.Sprint(c.have) {
			t.Errorf("model %s = %v, the row's is %v", c.name, c.have, c.want)
		}
	}
	if want.HasDenseLayers() && want.DenseFFN != got.DenseFFN {
		t.Errorf("model dense ffn = %d, the row's is %d", got.DenseFFN, want.DenseFFN)
	}
}

// checkScenario checks that the printed scenario parses (as dcpsim
// scenarios check does) to the imported job.
func checkScenario(t *testing.T, im *launchcfg.Import, name string) {
	t.Helper()
	text := im.Scenario(launchcfg.ScenarioOptions{Name: launchcfg.ScenarioName(name)})
	sc, err := scenarios.Parse([]byte(text), name+".toml")
	if err != nil {
		t.Fatalf("the printed scenario does not parse: %v\n%s", err, text)
	}
	if !reflect.DeepEqual(sc.Job, im.Job) {
		t.Errorf("the printed scenario's job\n%+v\ndiffers from the import's\n%+v", sc.Job, im.Job)
	}
	if sc.Workload.BatchTokens != int64(im.GlobalBatch)*int64(im.SeqLen) || sc.Workload.ContextTokens != im.SeqLen {
		t.Errorf("the printed scenario's batch %d tokens at context %d: want %d × %d", sc.Workload.BatchTokens, sc.Workload.ContextTokens, im.GlobalBatch, im.SeqLen)
	}
}

// dispatcher is a job's MoE dispatcher, "" read as all-to-all.
func dispatcher(p job.Parallel) job.MoEDispatcher {
	if p.MoEDispatcher == "" {
		return job.DispatchAllToAll
	}
	return p.MoEDispatcher
}
