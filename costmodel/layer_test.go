package costmodel

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
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
	mod, err := New(j, prof, Options{AttentionKernel: compute.MegatronSoftmax})
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
		opsF, _ := compute.OpsSeconds(comp.LayerOps(0, 8192))
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

// TestPartialRecompute: recompute_layers = k recomputes exactly k of the 48
// layers, so the backward grows linearly from none's to full's, the forward
// does not move, and recompute_layers = 48 is full recomputation.
func TestPartialRecompute(t *testing.T) {
	_, none, d := gptCase(t, job.Parallel{SequenceParallel: true})
	_, full, _ := gptCase(t, job.Parallel{SequenceParallel: true, Recompute: job.RecomputeFull})
	nf, nb := none.ChunkSeconds(0, 0, d)
	_, fb := full.ChunkSeconds(0, 0, d)
	for _, k := range []int{1, 12, 47, 48} {
		_, part, _ := gptCase(t, job.Parallel{SequenceParallel: true, Recompute: job.RecomputeFull, RecomputeLayers: k})
		pf, pb := part.ChunkSeconds(0, 0, d)
		if want := nb + float64(k)/48*(fb-nb); pf != nf || !near(pb, want, 1e-9) {
			t.Errorf("k = %d: forward %v (none %v), backward %v, want none + k/48·(full − none) = %v", k, pf, nf, pb, want)
		}
	}
}

// TestLayoutGroupsPayRecompute: a group with a CP × HP layout (HexiSeq, USP)
// pays recomputation in its backward as an even-split group does: the same
// extra seconds for the equal layout.
func TestLayoutGroupsPayRecompute(t *testing.T) {
	lengths := []int{40000, 9000, 700}
	back := func(rc job.RecomputeGranularity, laid bool) float64 {
		m, err := job.LookupModel(job.ModelLlama3With8B)
		if err != nil {
			t.Fatal(err)
		}
		j := job.Job{Model: m, Cluster: job.Cluster{GPUs: 32, GPUsPerNode: 8,
			Pools: []job.Pool{{GPU: "H100-SXM", GPUs: 16}, {GPU: "A100-80G", GPUs: 16}}},
			Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 1, BudgetTokens: 8192, Recompute: rc}, ContextTokens: 65536}
		var profs []*calib.Profile
		for _, name := range []string{"H100-SXM", "A100-80G"} {
			p, _ := calib.LookupProfile(name)
			profs = append(profs, p)
		}
		mod, err := NewMixed(j, profs, Options{UlyssesAcrossNodes: true})
		if err != nil {
			t.Fatal(err)
		}
		g := sched.Group{FirstRank: 0, Size: 16, Seqs: []int{0, 1, 2}}
		if laid {
			g.Layout = equalLayout(16, network.UlyssesDegreeWithin(mod.Topology(), m, 16, true), 49700, m.QueryHeads)
		}
		l, err := step.NewLayout(&sched.Plan{PoolRanks: 32, Microbatches: []sched.Microbatch{{Groups: []sched.Group{g}}}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		it, err := mod.Price(l, lengths, Exec{CP: sched.UlyssesRing}, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, b := it.ChunkSeconds(0, 0, &l.Domains[0])
		return b
	}
	even := back(job.RecomputeFull, false) - back(job.RecomputeNone, false)
	laid := back(job.RecomputeFull, true) - back(job.RecomputeNone, true)
	if even <= 0 || math.Abs(laid-even) > 2e-3*even {
		t.Errorf("full recomputation adds %v s to an even group's backward and %v s to the equal layout's", even, laid)
	}
}
