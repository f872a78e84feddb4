package costmodel

import (
	"math"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
)

// modelSetup is 16 H20 GPUs (2 nodes), tp1 pp1 ep8, DeepSeek-V2-Lite (27
// layers: 1 dense, 26 MoE). constant makes GEMM and attention efficiencies
// constant (Half = 0).
func modelSetup(t *testing.T, constant bool, opts Options) (*Model, *compute.Compute, network.Topology) {
	t.Helper()
	p, err := calib.LookupProfile("H20")
	if err != nil {
		t.Fatal(err)
	}
	prof := *p
	if constant {
		for _, c := range []*calib.Curve{&prof.GEMM, &prof.AttentionFwd, &prof.AttentionBwd} {
			c.Half.Value = 0
		}
	}
	m, err := job.LookupModel(job.ModelDeepSeekV2Lite)
	if err != nil {
		t.Fatal(err)
	}
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: "H20", GPUs: 16, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 8, BudgetTokens: 8192}, ContextTokens: 8192}
	mod, err := New(j, &prof, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mod, mod.Devices()[0].Compute, mod.Topology()
}

// price lays plan out (ep 8) and prices it under exec.
func price(t *testing.T, mod *Model, plan *sched.Plan, lengths []int, exec sched.CPExec, overlap bool) (*step.Layout, *Iteration) {
	t.Helper()
	l, err := step.NewLayout(plan, 8)
	if err != nil {
		t.Fatal(err)
	}
	it, err := mod.Price(l, lengths, Exec{CP: exec, OverlapAllToAll: overlap}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l, it
}

// modelPlan is one MB: sequence 0 (long tokens) on ranks {0, 1}, sequences
// 1..14 (1,024 tokens) on ranks 2..15, one each.
func modelPlan(long int) (*sched.Plan, []int) {
	lengths := []int{long}
	groups := []sched.Group{{FirstRank: 0, Size: 2, Seqs: []int{0}}}
	for r := 2; r < 16; r++ {
		groups = append(groups, sched.Group{FirstRank: r, Size: 1, Seqs: []int{len(lengths)}})
		lengths = append(lengths, 1024)
	}
	return &sched.Plan{PoolRanks: 16, Microbatches: []sched.Microbatch{{Groups: groups}}}, lengths
}

// TestModelCostsHand: with constant efficiencies, ranks {0, 1} run 4,096 tokens
// each and half the causal attention of an 8K sequence, which dominates; the
// domain of EP block 0 (ranks 0..7) takes their time per layer plus the CP and
// MoE communication, and ranks 2..7 are held for all of it (the EP barrier),
// while block 1 (ranks 8..15, 1,024 tokens each) is much faster.
func TestModelCostsHand(t *testing.T) {
	mod, comp, topo := modelSetup(t, true, Options{})
	plan, lengths := modelPlan(8192)
	l, mc := price(t, mod, plan, lengths, sched.UlyssesRing, true)
	res, err := step.Run(l, 1, 1, mc)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Domains) != 2 {
		t.Fatalf("%d domains, want 2", len(res.Domains))
	}
	m := comp.Job.Model
	// Hand formula for domain 0, forward: u = 2 (two ranks inside a node), ring 1,
	// so the kernel sees the whole 8K sequence.
	af := comp.AttentionFwdSeconds(8192, 2, 8192)
	denseOps, _ := comp.LayerOpsSeconds(0, 4096) // GEMMs, memory-bound ops, launch gaps
	moeOps, _ := comp.LayerOpsSeconds(1, 4096)
	dense := denseOps + af
	moe := moeOps + af
	// The Q/K/V all-to-alls hide only behind the ops independent of them
	// (HyDra §5.2.2), not behind the whole layer's GEMMs.
	wf, wb := comp.AllToAllWindowSeconds(1, 4096)
	if g := comp.GEMMFwdSeconds(1, 4096); !(wf > 0 && wf < g/2) {
		t.Fatalf("window %g s against the layer's GEMMs %g s: want a small positive part", wf, g)
	}
	cp, err := network.CPLayer(topo, m, network.CPGroup{Exec: sched.UlyssesRing, Degree: 2, OverlapAllToAll: true},
		8192, network.CPOverlap{AttentionFwdSeconds: af, AttentionBwdSeconds: comp.AttentionBwdSeconds(8192, 2, 8192),
			IndependentFwdSeconds: wf, IndependentBwdSeconds: wb})
	if err != nil {
		t.Fatal(err)
	}
	ep := network.MoELayer(topo, m, 0, 8, 4096, false).FwdSeconds
	// Rank 0's layer (attention load 8192²/2 tokens², 32× the others') dominates.
	lightOps, _ := comp.LayerOpsSeconds(1, 1024)
	light := lightOps + comp.AttentionFwdSeconds(1024, 1, 1024)
	if moe < 3*light || cp.Fwd.ExposedSeconds <= 0 || ep <= 0 {
		t.Fatalf("case not as designed: heavy layer %g, light %g, CP %g, EP %g", moe, light, cp.Fwd.ExposedSeconds, ep)
	}
	// The dense layer's window is the same attention-side ops.
	dwf, _ := comp.AllToAllWindowSeconds(0, 4096)
	cpDense, _ := network.CPLayer(topo, m, network.CPGroup{Exec: sched.UlyssesRing, Degree: 2, OverlapAllToAll: true},
		8192, network.CPOverlap{AttentionFwdSeconds: af, IndependentFwdSeconds: dwf})
	head, _ := comp.HeadSeconds(4096)
	want := dense + cpDense.Fwd.ExposedSeconds + 26*(moe+cp.Fwd.ExposedSeconds+ep) + head
	op := res.Ops[res.OpIndex(0, 0, 0, false)]
	if got := (op.End - op.Start).Seconds(); math.Abs(got-want) > 1e-8 {
		t.Errorf("domain 0 forward %.9f s, want %.9f", got, want)
	}
	st := res.Stages[0]
	for r := 1; r < 8; r++ {
		if st.Ranks[r].Busy != st.Ranks[0].Busy {
			t.Errorf("rank %d busy %v, rank 0 %v: the EP barrier should hold it", r, st.Ranks[r].Busy, st.Ranks[0].Busy)
		}
	}
	if st.Ranks[8].Busy*3 > st.Ranks[0].Busy {
		t.Errorf("block 1 busy %v, block 0 %v: want block 1 much faster", st.Ranks[8].Busy, st.Ranks[0].Busy)
	}
	if r := st.Ranks[8]; r.DPBubble == 0 {
		t.Errorf("rank 8 has no DP bubble: %+v", r)
	}
	if mc.GradSyncSeconds(0) <= 0 || mc.OptimizerSeconds(0) <= 0 {
		t.Errorf("sync %g, optimizer %g: want > 0", mc.GradSyncSeconds(0), mc.OptimizerSeconds(0))
	}
}

// TestModelCostsNoCommIsCompute: with communication off, a domain's chunk
// time on the only (so last) stage is calib's RankStageSeconds of its slowest
// rank, LM head included.
func TestModelCostsNoCommIsCompute(t *testing.T) {
	for _, constant := range []bool{true, false} {
		mod, comp, _ := modelSetup(t, constant, Options{NoComm: true})
		plan, lengths := modelPlan(12288)
		l, mc := price(t, mod, plan, lengths, sched.Ulysses, false)
		doms := l.Domains
		f, b := mc.ChunkSeconds(0, 0, &doms[0])
		want := comp.RankStageSeconds(0, 6144, []compute.Piece{{SeqTokens: 12288, CPDegree: 2, BlockTokens: 12288}})
		if math.Abs(f-want.FwdSeconds()) > 1e-12 || math.Abs(b-want.BwdSeconds()) > 1e-12 {
			t.Errorf("constant %v: chunk %g/%g s, want %g/%g", constant, f, b, want.FwdSeconds(), want.BwdSeconds())
		}
		f, _ = mc.ChunkSeconds(0, 0, &doms[1])
		want = comp.RankStageSeconds(0, 1024, []compute.Piece{{SeqTokens: 1024, CPDegree: 1, BlockTokens: 1024}})
		if math.Abs(f-want.FwdSeconds()) > 1e-12 {
			t.Errorf("constant %v: block 1 forward %g s, want %g", constant, f, want.FwdSeconds())
		}
		if mc.GradSyncSeconds(0) != 0 || mc.P2PSeconds(0, 0, 0, &doms[0], false) != 0 {
			t.Error("NoComm: sync or p2p not free")
		}
	}
}

// TestModelCostsMonotone: more tokens in the long group never cost less, under
// every exec, with communication and size-dependent efficiencies.
func TestModelCostsMonotone(t *testing.T) {
	mod, _, _ := modelSetup(t, false, Options{})
	for _, exec := range []sched.CPExec{sched.Ulysses, sched.Ring, sched.UlyssesRing} {
		for _, overlap := range []bool{false, true} {
			var pf, pb float64
			for long := 256; long <= 65536; long += 256 {
				plan, lengths := modelPlan(long)
				l, mc := price(t, mod, plan, lengths, exec, overlap)
				f, b := mc.ChunkSeconds(0, 0, &l.Domains[0])
				if f < pf-1e-15 || b < pb-1e-15 {
					t.Fatalf("%v overlap %v: %d tokens cost %g/%g s, fewer cost %g/%g", exec, overlap, long, f, b, pf, pb)
				}
				pf, pb = f, b
			}
		}
	}
}

// TestModelCostsCommSplit: the exposed communication ModelCosts reports lies
// in [0, chunk time], is 0 with NoComm, and equals the difference between
// the priced chunk and a compute-only one for the slowest group when the
// domain has one group.
func TestModelCostsCommSplit(t *testing.T) {
	mod, _, _ := modelSetup(t, false, Options{})
	silent, _, _ := modelSetup(t, false, Options{NoComm: true})
	plan, lengths := modelPlan(65536)
	for _, exec := range []sched.CPExec{sched.Ulysses, sched.Ring, sched.UlyssesRing} {
		l, mc := price(t, mod, plan, lengths, exec, false)
		_, quiet := price(t, silent, plan, lengths, exec, false)
		doms := l.Domains
		for i := range doms {
			f, b := mc.ChunkSeconds(0, 0, &doms[i])
			cf, cb := mc.ChunkExposedCommSeconds(0, 0, &doms[i])
			if !(cf >= 0 && cf <= f && cb >= 0 && cb <= b) {
				t.Errorf("%v domain %d: comm %g/%g outside [0, %g/%g]", exec, i, cf, cb, f, b)
			}
			if qf, qb := quiet.ChunkExposedCommSeconds(0, 0, &doms[i]); qf != 0 || qb != 0 {
				t.Errorf("%v NoComm: comm %g/%g", exec, qf, qb)
			}
			if len(doms[i].Groups) == 1 {
				nf, _ := quiet.ChunkSeconds(0, 0, &doms[i])
				if math.Abs(f-cf-nf) > 1e-12 {
					t.Errorf("%v domain %d: chunk %g − comm %g ≠ compute %g", exec, i, f, cf, nf)
				}
			}
		}
	}
}

// TestPlannerStall prices each kind of work at its calib.CPython constant.
func TestPlannerStall(t *testing.T) {
	c := calib.CPython
	w := sched.StallWork{PoolVisits: 1e7, HeapOps: 1e5, SequenceVisits: 1e6}
	want := 1e7*c.PoolVisitSeconds.Value + 1e5*c.HeapOpSeconds.Value + 1e6*c.SequenceVisitSeconds.Value
	if got := PlannerStallSeconds(w); math.Abs(got-want) > 1e-12 || got <= 0 {
		t.Errorf("stall %g s, want %g", got, want)
	}
	if PlannerStallSeconds(sched.StallWork{}) != 0 {
		t.Error("no work, yet a stall")
	}
	s := calib.CBC
	solver := sched.StallWork{SolverSolves: 100, SolverNodes: 300, SolverIterations: 5000}
	want = 100*s.SolveSeconds.Value + 300*s.NodeSeconds.Value + 5000*s.IterationSeconds.Value
	if got := PlannerStallSeconds(solver); math.Abs(got-want) > 1e-12 || got < 2 || got > 5 {
		t.Errorf("100 CBC solves: %g s, want %g (a few seconds)", got, want)
	}
}

// TestPriceErrors: a plan the cost model cannot price is an error from Price,
// never a NaN found later; a question outside the priced layout gets NaN,
// which the engine refuses.
func TestPriceErrors(t *testing.T) {
	mod, _, _ := modelSetup(t, false, Options{})
	plan, lengths := modelPlan(8192)
	l, err := step.NewLayout(plan, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		l       *step.Layout
		lengths []int
		exec    Exec
		stall   float64
		want    string
	}{
		{"short batch", l, lengths[:3], Exec{CP: sched.Ulysses}, 0, "sequence 3 outside the batch [0, 3)"},
		{"bad exec", l, lengths, Exec{}, 0, "invalid CP exec 0"},
		{"nil layout", nil, lengths, Exec{CP: sched.Ulysses}, 0, "nil layout"},
		{"bad stall", l, lengths, Exec{CP: sched.Ulysses}, math.NaN(), "planner stall NaN"},
	} {
		if _, err := mod.Price(c.l, c.lengths, c.exec, c.stall); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	l1, _ := step.NewLayout(plan, 1)
	if _, err := mod.Price(l1, lengths, Exec{CP: sched.Ulysses}, 0); err == nil || !strings.Contains(err.Error(), "ep = 1") {
		t.Errorf("ep mismatch: %v", err)
	}
	it, err := mod.Price(l, lengths, Exec{CP: sched.Ulysses}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	stray := l.Domains[1]
	stray.Index = 0
	if f, _ := it.ChunkSeconds(0, 0, &stray); !math.IsNaN(f) {
		t.Errorf("a domain outside the layout priced %v", f)
	}
	if f, _ := it.ChunkSeconds(0, 5, &l.Domains[0]); !math.IsNaN(f) {
		t.Errorf("chunk 5 of vpp 1 priced %v", f)
	}
	if it.PlannerStallSeconds() != 0.5 || math.IsNaN(it.GradSyncSeconds(0)) || !math.IsNaN(it.GradSyncSeconds(1)) {
		t.Errorf("stall %v, sync %v / %v", it.PlannerStallSeconds(), it.GradSyncSeconds(0), it.GradSyncSeconds(1))
	}
	if mod.DeviceOf(15).Name != "H20" || len(mod.Devices()) != 1 {
		t.Errorf("devices %+v", mod.Devices())
	}
}

// TestUnevenPlan: a plan of partial microbatches, DP replica A (EP block 0,
// ranks 0-7) running three MBs and replica B (ranks 8-15) one, is priced and
// timed: A's ranks are busy about three times as long as B's, which wait for
// the gradient sync.
func TestUnevenPlan(t *testing.T) {
	mod, _, _ := modelSetup(t, false, Options{})
	lengths := []int{4096, 4096, 4096, 4096}
	mb := func(first int, seq int) sched.Microbatch {
		return sched.Microbatch{Groups: []sched.Group{{FirstRank: first, Size: 8, Seqs: []int{seq}}}}
	}
	plan := &sched.Plan{PoolRanks: 16, PartialMicrobatches: true, Microbatches: []sched.Microbatch{mb(0, 0), mb(8, 1), mb(0, 2), mb(0, 3)}}
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 8192, PP: 1, VPP: 1, EP: 8}
	if err := sched.Validate(plan, lengths, in, sched.Promises{}); err != nil {
		t.Fatal(err)
	}
	l, it := price(t, mod, plan, lengths, sched.Ulysses, false)
	res, err := step.Run(l, 1, 1, it)
	if err != nil {
		t.Fatal(err)
	}
	a, b := res.Stages[0].Ranks[0], res.Stages[0].Ranks[8]
	if a.Microbatches != 3 || b.Microbatches != 1 || math.Abs(float64(a.Busy)/float64(b.Busy)-3) > 0.01 || b.DPBubble <= 0 || a.DPBubble != 0 {
		t.Errorf("replica A %+v, replica B %+v", a, b)
	}
}

// TestHeldSeconds: ranks held by their domain's slowest CP group: a light
// one-rank group waits the difference of the chunk times, a rank in no group
// of its EP block waits the whole chunk, a group spanning its block waits for
// no one; the head (last stage) is no part of it.
func TestHeldSeconds(t *testing.T) {
	mod, comp, _ := modelSetup(t, false, Options{NoComm: true})
	lengths := []int{8000, 1000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000}
	alone := func(first int, seq int) (fwd, bwd float64) {
		plan := &sched.Plan{PoolRanks: 16, Microbatches: []sched.Microbatch{{Groups: []sched.Group{{FirstRank: first, Size: 1, Seqs: []int{seq}}}}}}
		l, it := price(t, mod, plan, lengths, sched.Ulysses, false)
		f, b := it.ChunkSeconds(0, 0, &l.Domains[0])
		hf, hb := comp.HeadSeconds(lengths[seq])
		return f - hf, b - hb
	}
	slowF, slowB := alone(0, 0)
	fastF, fastB := alone(1, 1)
	plan := &sched.Plan{PoolRanks: 16, Microbatches: []sched.Microbatch{{Groups: []sched.Group{
		{FirstRank: 0, Size: 1, Seqs: []int{0}}, {FirstRank: 1, Size: 1, Seqs: []int{1}},
		{FirstRank: 8, Size: 8, Seqs: []int{2, 3, 4, 5, 6, 7, 8, 9}}}}}}
	_, it := price(t, mod, plan, lengths, sched.Ulysses, false)
	want := (slowF - fastF) + (slowB - fastB) + 6*(slowF+slowB)
	if got := it.HeldSeconds(); !near(got, want, 1e-9) || want <= 0 {
		t.Errorf("held %v rank-seconds, want (slow − fast) + 6 idle × slow = %v", got, want)
	}
	one := &sched.Plan{PoolRanks: 16, Microbatches: []sched.Microbatch{{Groups: []sched.Group{
		{FirstRank: 0, Size: 8, Seqs: []int{0}}, {FirstRank: 8, Size: 8, Seqs: []int{2, 3}}}}}}
	if _, it := price(t, mod, one, lengths, sched.Ulysses, false); it.HeldSeconds() != 0 {
		t.Errorf("groups spanning their EP blocks are held %v s", it.HeldSeconds())
	}
}
