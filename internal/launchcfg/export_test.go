package launchcfg_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/internal/launchcfg"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/scenarios"
)

// TestExportImportRoundTrip: every embedded scenario of one GPU kind,
// exported as Megatron-LM arguments (static CP at the least degree whose
// budget holds the context) and imported back from the launch script the
// export prints, is the same job: the layout, the data-parallel scheme and
// overlaps, recomputation, precision and the model (the vocabulary padded
// as Megatron-LM pads it, shared experts as their total width).
func TestExportImportRoundTrip(t *testing.T) {
	n := 0
	for _, name := range scenarios.PresetNames() {
		sc, err := scenarios.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Job.Cluster.Mixed() {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			text, err := launchcfg.Export(launchcfg.ExportJob{Name: name, Job: sc.Job, Policy: "static", Static: true,
				CPExec: "ring", BatchTokens: sc.Workload.BatchTokens})
			if cp := leastDegree(sc.Job.ContextTokens, sc.Job.Parallel.BudgetTokens); sc.Job.PoolRanks()%cp != 0 {
				if err == nil || !strings.Contains(err.Error(), "does not divide") {
					t.Fatalf("CP %d does not divide the pool of %d: want the export refused, got %v", cp, sc.Job.PoolRanks(), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			im, err := launchcfg.MegatronScript(text, name+".sh", launchcfg.Options{GPU: sc.Job.Cluster.GPU, GPUsPerNode: sc.Job.Cluster.GPUsPerNode})
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			want, got := sc.Job, im.Job
			wp, gp := want.Parallel, got.Parallel
			tpOnly := func(on bool) bool { return on && wp.TP > 1 }
			for _, c := range []struct {
				name       string
				want, have any
			}{
				{"tp pp vpp ep etp", []int{wp.TP, wp.PP, wp.VPP, wp.EP, wp.ExpertTP()}, []int{gp.TP, gp.PP, gp.VPP, gp.EP, gp.ExpertTP()}},
				{"virtual stages", chunkLayers(t, want), chunkLayers(t, got)},
				{"gpus", want.Cluster.GPUs, got.Cluster.GPUs},
				{"context", want.ContextTokens, im.SeqLen},
				{"sequence parallel", tpOnly(wp.SequenceParallel), gp.SequenceParallel},
				{"tp overlap", tpOnly(wp.TPCommOverlap), gp.TPCommOverlap},
				{"grad sync", wp.GradSyncMode(), gp.GradSyncMode()},
				{"overlaps", []bool{wp.OverlapGradReduce, wp.OverlapParamGather, wp.GradReduceFP32}, []bool{gp.OverlapGradReduce, gp.OverlapParamGather, gp.GradReduceFP32}},
				{"recompute", fmt.Sprint(wp.RecomputeMode(), wp.RecomputeLayers), fmt.Sprint(gp.RecomputeMode(), gp.RecomputeLayers)},
				{"precision", wp.PrecisionMode(), gp.PrecisionMode()},
			} {
				if fmt.Sprint(c.want) != fmt.Sprint(c.have) {
					t.Errorf("%s: %v after the round trip, was %v", c.name, c.have, c.want)
				}
			}
			if want.Model.RoutedExperts > 0 {
				for _, c := range []struct {
					name       string
					want, have any
				}{
					{"dispatcher", dispatcher(wp), dispatcher(gp)},
					{"moe overlap", wp.OverlapMoEComm, gp.OverlapMoEComm},
					{"capacity", wp.MoECapacityFactor, gp.MoECapacityFactor},
				} {
					if fmt.Sprint(c.want) != fmt.Sprint(c.have) {
						t.Errorf("%s: %v after the round trip, was %v", c.name, c.have, c.want)
					}
				}
			}
			if wp.BudgetTokens*im.CP%want.ContextTokens == 0 && gp.BudgetTokens != wp.BudgetTokens {
				t.Errorf("budget %d after the round trip, was %d", gp.BudgetTokens, wp.BudgetTokens)
			}
			if a, b := normalModel(want.Model, wp.TP), normalModel(got.Model, wp.TP); a != b {
				t.Errorf("model after the round trip\n%+v\nwas\n%+v", b, a)
			}
		})
	}
	if n < 10 {
		t.Errorf("round-tripped %d embedded scenarios; are they there?", n)
	}
}

// normalModel is a model as a launch line can say it: no name or source,
// the vocabulary padded to a multiple of 128·tp, shared experts as one of
// their total width, an MoE step of 0 as 1, the dense width only where
// there are dense layers.
func normalModel(m job.Model, tp int) job.Model {
	m.Name, m.Source = "", ""
	mult := 128 * tp
	m.Vocab = (m.Vocab + mult - 1) / mult * mult
	if m.SharedExperts > 0 {
		m.SharedExperts, m.SharedExpertFFN = 1, m.SharedExperts*m.SharedExpertFFN
	}
	m.MoELayerStep = max(m.MoELayerStep, 1)
	if !m.HasDenseLayers() {
		m.DenseFFN = 0
	}
	if m.Activation == "" {
		m.Activation = job.SwiGLU
	}
	return m
}

// TestExportNotes: what Megatron-LM cannot run as dcpsim simulates is said
// in comments, never dropped.
func TestExportNotes(t *testing.T) {
	sc, err := scenarios.Preset("production-256k")
	if err != nil {
		t.Fatal(err)
	}
	text, err := launchcfg.Export(launchcfg.ExportJob{Name: "p", Job: sc.Job, Policy: "hydra", CPExec: "ulysses-ring", BatchTokens: sc.Workload.BatchTokens})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# policy hydra chooses each microbatch's CP degree; Megatron-LM runs one: 32",
		"--context-parallel-size 32", "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 8 4", "--recompute-method block --recompute-num-layers 6"} {
		if !strings.Contains(text, want) {
			t.Errorf("export lacks %q:\n%s", want, text)
		}
	}
}

// leastDegree is the least power of two d with d·budget >= context.
func leastDegree(context, budget int) int {
	d := 1
	for d*budget < context {
		d *= 2
	}
	return d
}
