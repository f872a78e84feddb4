package costmodel

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"weak"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sim/network"
)

// StepLowerBoundSeconds returns a lower bound on the step time (seconds) that
// Simulate/Price gives for ANY plan of the batch lengths (every sequence placed
// once, any CP degrees/executions, any microbatching), under any policy's CP
// execution and any planner stall. With G the pool's ranks, w_s(x) the
// rank-seconds stage s spends on a sequence of x tokens,
//
//	w_s(x) = A_s·x + L_s·q(x) + R_s·q_f(x),
//
// and tail_s = GradSyncSeconds(s) + OptimizerSeconds(s), it is the larger of
//
//	stages: max over s of  Σ_i w_s(s_i) / G + tail_s
//	chain:  max over i of  Σ_s w_s(s_i) / G + tail_0
//
// where, per token or per sequence of the batch:
//
//   - A_s is the rank-seconds per token of the stage's layer ops (LayerOps of
//     its dense and MoE layers, forward and backward, the forward again for
//     the layers job.Parallel.Recomputed runs in full, the head on the last
//     stage), its TP collectives (each pass, and the recomputed forward's)
//     and its MoE dispatch and combine: each is, in the tokens t a rank holds,
//     a maximum of affine terms with non-negative constants (a GEMM's time at
//     Max·x/(x+Half) of its harmonic-mean size x is 2mnk/(peak·Max) plus
//     (2/3)·Half·(mn + nk + km)/(peak·Max), affine in the rows m ∝ t; a
//     memory-bound op or a transfer is linear in its bytes; a launch or a
//     latency is a constant), so it is at least its asymptotic slope times t,
//     and that slope is at least the difference quotient between 2^20 and
//     2^21 tokens (a convex function's chords rise to its last slope). The
//     ops' slope is the cheapest device's (a mixed cluster's fastest kind
//     stands for every rank: sound, loose when kinds differ much), the MoE
//     slope the cheapest EP block's (the fastest all-to-all placement).
//   - q(x) = AttentionFwdSeconds(x, 1, x) + AttentionBwdSeconds(x, 1, x) and
//     q_f(x) its forward, on the cheapest device: the k ranks of a sequence
//     split k ways run c·x²/k each at a kernel block of at most x tokens, and
//     the attention curves rise with the block, so together they spend at
//     least q(x) whatever k, the CP execution or a CP × HP layout (its heads
//     and chunks share the sequence out exactly). MegatronSoftmax ignores the
//     block and splits by 1/k, so its q is the exact sum over the ranks.
//   - L_s is the stage's layers, R_s those whose core attention the backward
//     runs again (every layer under selective recomputation, the recomputed
//     ones under full, none without).
//
// Why (sim/step): each rank of a stage runs its schedule's domain ops one
// after another from time 0, each lasting its domain's ChunkSeconds, which is
// at least each of its groups' compute + TP collectives + (MoE layers) the
// slowest EP block's all-to-all, every rank of the domain held for all of it.
// Every rank-token is on one rank of one group (⌈Σ s/k⌉ per rank of an even
// split, a layout's shards summing to Σ s), so the ranks' busy times on stage
// s sum to at least Σ_i w_s(s_i), and the busiest is at least their mean. Its
// last op is a backward; the stage's gradient sync starts when its last rank's
// last backward ends, runs GradSyncSeconds (never stretched by contention),
// then the optimizer; the iteration ends no earlier than any stage's optimizer
// step: the stages term. The chain term follows one sequence's microbatch
// through the pipeline: its forward on every chunk of every stage, then its
// backward back to stage 0, each op waiting for the one before (pipeline's
// Dep); on each the fullest rank of the sequence's group (of at most G ranks)
// holds at least 1/G of its tokens and its attention, and stage 0's gradient
// sync waits for the chain's last backward. Exposed CP communication, held
// (imbalance) time, pipeline bubbles, P2P and the planner stall only add, so
// they are left out.
//
// The engine keeps whole nanoseconds (sim.FromSeconds rounds each op to the
// nearest): an op of a rank with work lasts at least its layers' kernel
// launches beyond its share of the bound, which absorbs the half nanosecond
// it may lose, so the bound subtracts that only for a profile whose launches
// take under a nanosecond; it subtracts a half nanosecond for each of the
// gradient sync and the optimizer step, and keeps a 1e-12 relative margin for
// floating-point rounding.
//
// Precondition: lengths are the sequences the plan trains, as the engine
// prices them: the sampler's batch (workload.Sampler.Batch, overlong
// sequences already split into context-sized pieces), or the plan's own set
// (sched.Plan.Trained) for a policy that keeps sequences across iterations:
// wlb-llm delays outliers, so its step may train fewer tokens than the batch
// and a bound on the batch alone can exceed it. The per-stage slopes are
// computed once per Model; a call costs O(len(lengths)) (times the GPU kinds).
// It panics on a negative length.
func (m *Model) StepLowerBoundSeconds(lengths []int) float64 {
	b := m.stepBound()
	var tokens, attnAll, attnFwd, chain float64
	seqs := 0
	for _, s := range lengths {
		if s < 0 {
			panic(fmt.Sprintf("costmodel: StepLowerBoundSeconds: sequence of %d tokens", s))
		}
		if s == 0 {
			continue
		}
		seqs++
		all, fwd := math.Inf(1), math.Inf(1)
		for _, d := range m.devices {
			f, bw := d.Compute.AttentionFwdSeconds(s, 1, s), d.Compute.AttentionBwdSeconds(s, 1, s)
			all, fwd = min(all, f+bw), min(fwd, f)
		}
		x := float64(s)
		tokens += x
		attnAll += all
		attnFwd += fwd
		chain = max(chain, b.chain.seconds(x, all, fwd))
	}
	g := float64(m.topo.PoolRanks)
	share := (1 - boundRelativeMargin) / g
	// A rank has work in at most one microbatch per sequence, 2·vpp ops each
	// on a stage; the chain is 2·pp·vpp ops.
	lb := chain*share - b.opRoundingSeconds*float64(2*m.topo.PP*m.vpp) + b.chain.tailSeconds
	rounding := b.opRoundingSeconds * float64(2*m.vpp*seqs)
	for _, st := range b.stages {
		lb = max(lb, st.seconds(tokens, attnAll, attnFwd)*share-rounding+st.tailSeconds)
	}
	return max(lb, 0)
}

// boundRelativeMargin is the relative slack StepLowerBoundSeconds keeps for
// floating-point rounding (its sums and the pricer's differ by a few ulps).
const boundRelativeMargin = 1e-12

// Token counts of the difference quotients: beyond every roofline crossover
// of the presets, exact in float64 and for every tp and ep.
const (
	boundTokensLo = 1 << 20
	boundTokensHi = 1 << 21
)

// stepBound is what StepLowerBoundSeconds precomputes for a Model. It holds
// no pointer to the Model (the cache keys it weakly).
type stepBound struct {
	once   sync.Once
	stages []stageBound
	// chain sums the stages' rates, with stage 0's tail.
	chain stageBound
	// opRoundingSeconds is what the engine's rounding may take from each op
	// of a rank with work: 0 when every layer's kernel launches absorb it.
	opRoundingSeconds float64
}

// stageBound is one stage's part of the bound.
type stageBound struct {
	// tokenSeconds is A_s: rank-seconds per token of the batch.
	tokenSeconds float64
	// attnLayers is L_s and attnRecomputed R_s (see StepLowerBoundSeconds).
	attnLayers, attnRecomputed float64
	// tailSeconds is the gradient sync and optimizer step, less their
	// rounding.
	tailSeconds float64
}

// seconds is Σ w_s over sequences of tokens tokens whose attention (on one
// rank, the cheapest device) is attnAll forward and backward, attnFwd
// forward.
func (st *stageBound) seconds(tokens, attnAll, attnFwd float64) float64 {
	return st.tokenSeconds*tokens + st.attnLayers*attnAll + st.attnRecomputed*attnFwd
}

// stepBounds caches each Model's stepBound without keeping the Model alive:
// the key is a weak pointer, and the entry goes when the Model does
// (runtime.AddCleanup).
var stepBounds sync.Map // weak.Pointer[Model] -> *stepBound

// stepBound returns m's precomputed bound, computing it on first use.
func (m *Model) stepBound() *stepBound {
	key := weak.Make(m)
	v, ok := stepBounds.Load(key)
	if !ok {
		var loaded bool
		if v, loaded = stepBounds.LoadOrStore(key, new(stepBound)); !loaded {
			runtime.AddCleanup(m, func(k weak.Pointer[Model]) { stepBounds.Delete(k) }, key)
		}
	}
	b := v.(*stepBound)
	b.once.Do(func() { b.init(m) })
	return b
}

// chord is the difference quotient of f between boundTokensLo and
// boundTokensHi, at least 0: a lower bound on the last slope of a convex f.
func chord(f func(tokens int) float64) float64 {
	return max(0, (f(boundTokensHi)-f(boundTokensLo))/float64(boundTokensHi-boundTokensLo))
}

// deviceSlopes are one device's per-token seconds, forward and backward, of
// a dense and an MoE layer's ops ([kind][pass]) and of the head.
type deviceSlopes struct {
	layer [2][2]float64
	head  [2]float64
}

// slopesOf returns comp's per-token slopes of the dense and MoE layers
// (layer indices; -1: none) and of the head, and the fewest seconds a
// layer's pass spends in kernel launches.
func slopesOf(comp *compute.Compute, dense, moe int) (deviceSlopes, float64) {
	var ops []compute.Op
	pass := func(ops []compute.Op, backward int) float64 {
		f, b := compute.OpsSeconds(ops)
		return [2]float64{f, b}[backward]
	}
	var out deviceSlopes
	launch := math.Inf(1)
	for kind, l := range [2]int{dense, moe} {
		if l < 0 {
			continue
		}
		for k := range 2 {
			out.layer[kind][k] = chord(func(t int) float64 {
				ops = comp.AppendLayerOps(ops[:0], l, t)
				return pass(ops, k)
			})
		}
		f, b := compute.OpsSeconds(comp.LayerOps(l, 0), compute.OpKindLaunch)
		launch = min(launch, f, b)
	}
	for k := range 2 {
		out.head[k] = chord(func(t int) float64 {
			ops = comp.AppendHeadOps(ops[:0], t)
			return pass(ops, k)
		})
	}
	return out, launch
}

// init computes the bound's parts for m.
func (b *stepBound) init(m *Model) {
	devs := make([]deviceSlopes, len(m.devices))
	launch := math.Inf(1) // the fewest launch seconds of a layer's pass
	for i, d := range m.devices {
		var l float64
		devs[i], l = slopesOf(d.Compute, m.denseLayer, m.moeLayer)
		launch = min(launch, l)
	}
	if !(launch >= 1e-9) { // a layer's launches absorb a rounding of 0.5 ns with room to spare
		b.opRoundingSeconds = 0.5e-9
	}

	par := m.job.Parallel
	full := par.RecomputeMode() == job.RecomputeFull
	attnAgain := par.RecomputeMode() != job.RecomputeNone
	classes := 1
	if m.topo.PoolRanks%m.topo.RanksPerNode != 0 {
		classes = m.topo.PP // Price's classes: each stage on its own layout
	}
	last := len(m.layerKind) - 1
	for s, chunks := range m.layerKind {
		t := m.topo.ForStage(0)
		if classes > 1 {
			t = m.topo.ForStage(s)
		}
		tp, moe := m.commSlopes(t)
		var st stageBound
		var layers, again, commSeconds float64
		opsSeconds := math.Inf(1) // the cheapest device's
		for _, dv := range devs {
			var sec float64
			for _, ck := range chunks {
				sec += float64(ck.dense)*(dv.layer[0][0]+dv.layer[0][1]) + float64(ck.moe)*(dv.layer[1][0]+dv.layer[1][1])
				if full {
					sec += float64(ck.rdense)*dv.layer[0][0] + float64(ck.rmoe)*dv.layer[1][0]
				}
			}
			if s == last {
				sec += dv.head[0] + dv.head[1]
			}
			opsSeconds = min(opsSeconds, sec)
		}
		for _, ck := range chunks {
			n, r := float64(ck.dense+ck.moe), float64(ck.rdense+ck.rmoe)
			layers += n
			if attnAgain {
				again += r
			}
			commSeconds += 2*n*tp + float64(ck.moe)*moe
			if full {
				commSeconds += r * tp // the recomputed forward's TP collectives
			}
		}
		st.tokenSeconds = opsSeconds + commSeconds
		st.attnLayers, st.attnRecomputed = layers, again
		st.tailSeconds = roundedDown(m.gradSync[s]) + roundedDown(m.optimizer[s])
		b.stages = append(b.stages, st)
		b.chain.tokenSeconds += st.tokenSeconds
		b.chain.attnLayers += st.attnLayers
		b.chain.attnRecomputed += st.attnRecomputed
	}
	b.chain.tailSeconds = b.stages[0].tailSeconds
}

// roundedDown is sec less the half nanosecond sim.FromSeconds may round it
// down by (0 stays 0).
func roundedDown(sec float64) float64 {
	if sec <= 0 {
		return 0
	}
	return sec - 0.5e-9
}

// commSlopes are the per-token seconds, per layer and per rank-token, of one
// pass's TP collectives and of an MoE layer's dispatch and combine forward
// and backward on the cheapest EP block, on the stage topology t: 0 with
// Options.NoComm.
func (m *Model) commSlopes(t network.Topology) (tp, moe float64) {
	if m.opts.NoComm {
		return 0, 0
	}
	model := m.job.Model
	tp = chord(func(tok int) float64 {
		return network.TPLayerSeconds(t, model.Hidden, tok, m.job.Parallel.SequenceParallel)
	})
	if m.moeLayer < 0 || m.ep <= 1 {
		return tp, 0
	}
	// The domain's ranks wait for its slowest block, whose all-to-all takes
	// at least its own block's at the most tokens a rank of it holds: per
	// rank-token, at least the cheapest block's slope.
	moe = math.Inf(1)
	for first := 0; first+m.ep <= m.topo.PoolRanks; first += m.ep {
		moe = min(moe, chord(func(tok int) float64 {
			c := m.moeComm(t, first, tok)
			return c.FwdSeconds + c.BwdSeconds
		}))
	}
	return tp, moe
}
