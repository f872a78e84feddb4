package costmodel

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
)

// gptCase is Megatron-LM's 22B GPT (h 6144, 64 heads, 48 layers) on 16 A100s
// at tp 8, pp 1 (G = 2 DP replicas), priced with MegatronSoftmax attention,
// and a plan of one microbatch of four 2,048-token sequences per rank.
func gptCase(t *testing.T, par job.Parallel) (*Model, *Iteration, *step.Domain) {
	t.Helper()
	m, err := job.GPT("gpt-22b", 6144, 4*6144, 64, 48, 51200, 2048)
	if err != nil {
		t.Fatal(err)
	}
	par.TP, par.PP, par.VPP, par.EP, par.BudgetTokens = 8, 1, 1, 1, 8192
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: "A100-80G", GPUs: 16, GPUsPerNode: 8}, Parallel: par, ContextTokens: 2048}
	prof, err := calib.LookupProfile("A100-80G")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := New(j, prof, Options{AttentionKernel: calib.MegatronSoftmax})
	if err != nil {
		t.Fatal(err)
	}
	lengths := []int{2048, 2048, 2048, 2048, 2048, 2048, 2048, 2048}
	plan := &sched.Plan{Policy: "static", PoolRanks: 2, Microbatches: []sched.Microbatch{{Groups: []sched.Group{
		{FirstRank: 0, Size: 1, Seqs: []int{0, 1, 2, 3}}, {FirstRank: 1, Size: 1, Seqs: []int{4, 5, 6, 7}}}}}}
	l, err := step.NewLayout(plan, 1)
	if err != nil {
		t.Fatal(err)
	}
	it, err := mod.Price(l, lengths, Exec{CP: sched.Ulysses}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return mod, it, &l.Domains[0]
}

// TestRecomputeAddsTheForward: full recomputation adds exactly the layers'
// forward (ops, core attention and TP collectives) to the backward pass,
// selective exactly the core attention's forward, and neither changes the
// forward pass; the recomputed collectives count as exposed communication.
func TestRecomputeAddsTheForward(t *testing.T) {
	for _, sp := range []bool{true, false} {
		mod, none, d := gptCase(t, job.Parallel{SequenceParallel: sp})
		_, sel, _ := gptCase(t, job.Parallel{SequenceParallel: sp, Recompute: job.RecomputeSelective})
		_, full, _ := gptCase(t, job.Parallel{SequenceParallel: sp, Recompute: job.RecomputeFull})
		comp := mod.Devices()[0].Compute
		headF, _ := comp.HeadSeconds(8192)
		layers := 48.0
		attnF := 4 * comp.AttentionFwdSeconds(2048, 1, 2048)
		tp := network.TPLayerSeconds(mod.Topology(), 6144, 8192, sp)

		nf, nb := none.ChunkSeconds(0, 0, d)
		sf, sb := sel.ChunkSeconds(0, 0, d)
		ff, fb := full.ChunkSeconds(0, 0, d)
		if nf != sf || nf != ff {
			t.Errorf("sp %v: recomputation changed the forward: %v, %v, %v", sp, nf, sf, ff)
		}
		if got, want := fb-nb, nf-headF; !near(got, want, 1e-9) {
			t.Errorf("sp %v: full adds %v s to the backward, want the layers' forward %v", sp, got, want)
		}
		if got, want := sb-nb, layers*attnF; !near(got, want, 1e-9) {
			t.Errorf("sp %v: selective adds %v s, want the core attention forward %v", sp, got, want)
		}
		opsF, _ := calib.OpsSeconds(comp.LayerOps(0, 8192))
		if want := layers*(opsF+attnF+tp) + headF; !near(nf, want, 1e-9) {
			t.Errorf("sp %v: forward %v, want layers × (ops + attention + TP) + head = %v", sp, nf, want)
		}
		cf, cb := none.ChunkExposedCommSeconds(0, 0, d)
		_, fcb := full.ChunkExposedCommSeconds(0, 0, d)
		if !near(cf, layers*tp, 1e-9) || !near(cb, layers*tp, 1e-9) || !near(fcb, 2*layers*tp, 1e-9) {
			t.Errorf("sp %v: exposed comm %v / %v (full: %v), want %v / %v (%v)", sp, cf, cb, fcb, layers*tp, layers*tp, 2*layers*tp)
		}
	}
}

// TestGradSyncChoice: the distributed optimizer reduce-scatters the
// gradients, all-gathers the parameters and updates a 1/G shard; without it
// the gradients are all-reduced and every GPU updates all its parameters.
func TestGradSyncChoice(t *testing.T) {
	mod, rs, _ := gptCase(t, job.Parallel{SequenceParallel: true})
	_, ar, _ := gptCase(t, job.Parallel{SequenceParallel: true, GradSync: job.GradAllReduce})
	dense, expert := mod.stageParams(0)
	if expert != 0 {
		t.Fatalf("a dense model has %v expert parameters", expert)
	}
	topo, comp := mod.Topology(), mod.Devices()[0].Compute
	if got, want := ar.GradSyncSeconds(0), network.GradAllReduce(topo, dense, 0, 1).Seconds(); got != want || got <= 0 {
		t.Errorf("all-reduce sync %v, want %v", got, want)
	}
	if got, want := rs.GradSyncSeconds(0), network.GradSync(topo, dense, 0, 1).Seconds(); got != want {
		t.Errorf("reduce-scatter sync %v, want %v", got, want)
	}
	if got, want := ar.OptimizerSeconds(0), comp.OptimizerStepSeconds(dense); got != want {
		t.Errorf("all-reduce optimizer %v, want every parameter's %v", got, want)
	}
	if got, want := rs.OptimizerSeconds(0), comp.OptimizerStepSeconds(dense/2); got != want {
		t.Errorf("distributed optimizer %v, want a half shard's %v", got, want)
	}
	if want := mod.Job().Model.TotalParams() / 8; !near(dense, want, 1e-12) {
		t.Errorf("dense params per GPU %v, want P/tp = %v", dense, want)
	}
}

// near reports whether got is within rel of want (relative).
func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }
