package costmodel

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
)

// mechJob is a preset on H100 nodes under par (its EP, ETP and overlaps),
// every microbatch one sequence of seq tokens per rank.
func mechJob(t *testing.T, preset string, gpus int, par job.Parallel, seq int) (*Model, *sched.Plan, []int) {
	t.Helper()
	m, err := job.LookupModel(preset)
	if err != nil {
		t.Fatal(err)
	}
	par.BudgetTokens = seq
	par.VPP = max(par.VPP, 1)
	par.EP = max(par.EP, 1)
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: "H100-SXM", GPUs: gpus, GPUsPerNode: 8}, Parallel: par, ContextTokens: seq}
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	prof, err := calib.LookupProfile("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := New(j, prof, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := j.PoolRanks()
	mbs := 2 * par.PP
	plan := &sched.Plan{PoolRanks: g}
	var lengths []int
	for range mbs {
		var mb sched.Microbatch
		for r := range g {
			mb.Groups = append(mb.Groups, sched.Group{FirstRank: r, Size: 1, Seqs: []int{len(lengths)}})
			lengths = append(lengths, seq)
		}
		plan.Microbatches = append(plan.Microbatches, mb)
	}
	return mod, plan, lengths
}

func iterSeconds(t *testing.T, mod *Model, plan *sched.Plan, lengths []int) float64 {
	t.Helper()
	out, err := mod.Simulate(plan, lengths, Exec{CP: sched.Ring}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return out.Result.IterationSeconds()
}

// TestExpertTPKeepsWork: folding expert TP into EP (etp 1, ep doubled) keeps
// each GPU's expert FLOPs, expert parameters and EP block in HDP ranks; only
// the GEMM shapes and the all-to-all's span change, so the iteration moves
// by little.
func TestExpertTPKeepsWork(t *testing.T) {
	a, pa, la := mechJob(t, job.ModelQwen3MoE30B, 16, job.Parallel{TP: 2, PP: 1, EP: 8, SequenceParallel: true}, 4096)
	b, pb, lb := mechJob(t, job.ModelQwen3MoE30B, 16, job.Parallel{TP: 2, PP: 1, EP: 16, ETP: 1, SequenceParallel: true}, 4096)
	if a.ep != 8 || b.ep != 8 {
		t.Fatalf("EP blocks %d and %d HDP ranks, want 8", a.ep, b.ep)
	}
	expertFLOPs := func(c *compute.Compute) float64 {
		var f float64
		for _, o := range c.LayerOps(1, 4096) {
			if len(o.Name) > 7 && o.Name[:7] == "expert_" && o.Kind == compute.OpKindGEMM {
				f += o.Shape.FLOPs()
			}
		}
		return f
	}
	fa, fb := expertFLOPs(a.Devices()[0].Compute), expertFLOPs(b.Devices()[0].Compute)
	if math.Abs(fa-fb) > 1e-9*fa {
		t.Errorf("expert FLOPs per GPU %g (etp = tp) vs %g (etp 1)", fa, fb)
	}
	if sa, sb := a.Memory().States(0).ExpertParams, b.Memory().States(0).ExpertParams; math.Abs(sa-sb) > 1e-9*sa {
		t.Errorf("expert params per GPU %g vs %g", sa, sb)
	}
	ta, tb := iterSeconds(t, a, pa, la), iterSeconds(t, b, pb, lb)
	if r := tb / ta; r < 0.8 || r > 1.25 {
		t.Errorf("iteration %g s (etp = tp) vs %g s (etp 1): ratio %.3f", ta, tb, r)
	}
}

// TestTPCommOverlap: overlapping the TP collectives with the GEMMs never
// slows an iteration, hides them where the GEMMs are longer, and costs at
// least the iteration with free communication.
func TestTPCommOverlap(t *testing.T) {
	par := job.Parallel{TP: 8, PP: 2, SequenceParallel: true}
	off, plan, lengths := mechJob(t, job.ModelLlama3With70B, 32, par, 8192)
	par.TPCommOverlap = true
	on, _, _ := mechJob(t, job.ModelLlama3With70B, 32, par, 8192)
	free, _, _ := mechJob(t, job.ModelLlama3With70B, 32, par, 8192)
	free.opts.NoComm = true
	tOff, tOn, tFree := iterSeconds(t, off, plan, lengths), iterSeconds(t, on, plan, lengths), iterSeconds(t, free, plan, lengths)
	if !(tOn < tOff) || tOn < tFree {
		t.Errorf("iteration: no overlap %g s, overlap %g s, free comm %g s", tOff, tOn, tFree)
	}
	topo := on.Topology()
	tp := network.TPLayerSeconds(topo, on.job.Model.Hidden, 8192, true)
	x := on.layerExtra(topo, layerIn{perRank: 8192, gemm: [2]float64{2 * tp, tp / 2}})
	if x.tpFwd != 0 || math.Abs(x.tpBwd-tp/2) > 1e-15 {
		t.Errorf("tp %g s, GEMMs 2tp and tp/2: exposed %g and %g, want 0 and tp/2", tp, x.tpFwd, x.tpBwd)
	}
}

// TestOverlapGradReduce: the chunks' overlapped reduce-scatters add up to
// the stage's, the all-gather stays exposed without overlap_param_gather
// and shrinks to stage 0's first bucket with it, and overlap shortens the
// iteration without going below the iteration with no sync at all.
func TestOverlapGradReduce(t *testing.T) {
	par := job.Parallel{TP: 4, PP: 2, VPP: 2, SequenceParallel: true}
	base, plan, lengths := mechJob(t, job.ModelLlama3With8B, 64, par, 4096)
	par.OverlapGradReduce = true
	ov, _, _ := mechJob(t, job.ModelLlama3With8B, 64, par, 4096)
	par.OverlapParamGather = true
	both, _, _ := mechJob(t, job.ModelLlama3With8B, 64, par, 4096)
	for s := range 2 {
		dense, expert := base.stageParams(s)
		st := base.gradSyncAndOptimizer(s, dense, expert)
		var sum float64
		for c := range 2 {
			cs := ov.chunkSync[s][c]
			if cs.last > cs.seconds || cs.last <= 0 {
				t.Errorf("stage %d chunk %d: last bucket %g of %g s", s, c, cs.last, cs.seconds)
			}
			sum += cs.seconds
		}
		if math.Abs(sum-st.rs()) > 1e-12*st.rs() {
			t.Errorf("stage %d: chunks reduce %g s, the stage %g s", s, sum, st.rs())
		}
		if ov.gradSync[s] != st.ag() {
			t.Errorf("stage %d: exposed %g s, want the all-gather %g s", s, ov.gradSync[s], st.ag())
		}
		if (s == 0) != (both.gradSync[s] > 0) || both.gradSync[s] >= st.ag() {
			t.Errorf("stage %d: with param gather overlap %g s exposed (all-gather %g s)", s, both.gradSync[s], st.ag())
		}
	}
	nosync, _, _ := mechJob(t, job.ModelLlama3With8B, 64, job.Parallel{TP: 4, PP: 2, VPP: 2, SequenceParallel: true}, 4096)
	for s := range nosync.gradSync {
		nosync.gradSync[s] = 0
	}
	tb, to, tboth, tn := iterSeconds(t, base, plan, lengths), iterSeconds(t, ov, plan, lengths), iterSeconds(t, both, plan, lengths), iterSeconds(t, nosync, plan, lengths)
	if !(to < tb) || !(tboth <= to) || tboth < tn {
		t.Errorf("iteration: serial %g, overlap %g, + param gather %g, no sync %g", tb, to, tboth, tn)
	}
}

// TestFSDP: FSDP reduce-scatters FP32 gradients (twice a BF16 distributed
// optimizer's bytes) overlapped layer by layer, and FSDP with resharding
// shards the weights and prices its per-layer gathers in the layers.
func TestFSDP(t *testing.T) {
	par := job.Parallel{TP: 8, PP: 2, SequenceParallel: true}
	dist, _, _ := mechJob(t, job.ModelLlama3With70B, 64, par, 8192)
	par.GradSync = job.GradFSDP
	fsdp, plan, lengths := mechJob(t, job.ModelLlama3With70B, 64, par, 8192)
	dense, expert := dist.stageParams(0)
	a, b := dist.gradSyncAndOptimizer(0, dense, expert), fsdp.gradSyncAndOptimizer(0, dense, expert)
	if !(b.rs() > 1.5*a.rs()) || b.ag() != a.ag() {
		t.Errorf("reduce-scatter %g s (distopt) vs %g s (FSDP, FP32); all-gather %g vs %g", a.rs(), b.rs(), a.ag(), b.ag())
	}
	if fsdp.chunkSync == nil || fsdp.gradSync[1] != 0 {
		t.Errorf("FSDP: chunk syncs %v, stage 1 exposed %g s", fsdp.chunkSync, fsdp.gradSync[1])
	}
	// The Chakra breakdown of the end of the iteration carries the FP32
	// bytes and the seconds the pricing used.
	parts, err := fsdp.GradSyncParts(0, 0)
	if err != nil || len(parts) == 0 || parts[0].Name != "dp-rs" || parts[0].Bytes != dense*FSDPGradBytesPerParam || parts[0].Seconds != b.denseRS {
		t.Errorf("FSDP's grad-sync parts %+v, %v: want dp-rs of %g B in %g s", parts, err, dense*FSDPGradBytesPerParam, b.denseRS)
	}
	par.GradSync = job.GradFSDPReshard
	re, _, _ := mechJob(t, job.ModelLlama3With70B, 64, par, 8192)
	if parts, err := re.GradSyncParts(0, 0); err != nil || parts != nil {
		t.Errorf("reshard: grad-sync parts %+v, %v: the gathers run in the layers", parts, err)
	}
	if re.fsdpLayer[0] == ([2]float64{}) || re.chunkSync != nil {
		t.Errorf("reshard: per-layer %v, chunk syncs %v", re.fsdpLayer, re.chunkSync)
	}
	if w, d := re.Memory().States(0).WeightBytes, dist.Memory().States(0).WeightBytes; !(w < d/2) { // G = 4
		t.Errorf("reshard weights %g B per GPU vs %g unsharded", w, d)
	}
	tf, tr := iterSeconds(t, fsdp, plan, lengths), iterSeconds(t, re, plan, lengths)
	if tf <= 0 || tr < tf*0.99 {
		t.Errorf("iteration FSDP %g s, with reshard %g s", tf, tr)
	}
}
