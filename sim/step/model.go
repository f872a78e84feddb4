package step

import (
	"fmt"
	"math"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
)

// ExecFor returns the CP execution a policy's plans assume and whether its
// Q/K/V all-to-alls are overlapped with independent compute: HyDra (and its
// linear-scan form) runs inner Ulysses × outer ring with the all-to-alls
// overlapped (HyDra §5.2); Megatron-Core dynamic CP and static CP run Ulysses
// with every all-to-all exposed (HyDra §3.1). It returns (0, false) for a
// policy it does not know.
func ExecFor(policy string) (network.CPExec, bool) {
	switch policy {
	case "hydra", "hydra-scan":
		return network.UlyssesRing, true
	case "mcore", "static":
		return network.Ulysses, false
	}
	return 0, false
}

// ModelCosts is the cost-model mode of Costs: calib prices the computation and
// sim/network the communication of one job. For a domain op of one chunk on
// one stage, per layer of the chunk:
//
//   - every CP group (all its ranks alike) runs the GEMMs of its per-rank tokens
//     ⌈Σ s / k⌉, the core attention of each of its sequences (s, k) at the kernel
//     block the exec implies (s for Ulysses, s/r for a ring of r), and the CP
//     communication network.CPLayer leaves exposed (ring steps hidden behind
//     attention blocks; with Overlap the Q/K/V all-to-alls hidden behind the
//     rank's GEMM time of the layer);
//   - the domain's layer time is the slowest group's, plus on an MoE layer the
//     slowest EP block's dispatch and combine (network.MoELayer at the most
//     tokens any rank of the block routes): the all-to-all is a barrier, so the
//     whole block waits for it.
//
// A chunk is layers [c·n/v, (c+1)·n/v) of the stage's n layers (integer
// division, calib.Compute.StageLayers); the last stage's last chunk adds the
// LM head for the domain's fullest rank. A Ulysses group wider than the query
// heads per TP rank allow runs as UlyssesRing (Megatron's a2a+p2p
// hierarchical CP). P2P moves the fullest rank's activations (or gradients)
// across the stage boundary. The gradient sync is network.GradSync of the
// stage's dense parameters per GPU (embedding on the first stage, output layer
// on the last, /tp) and routed-expert parameters (/(tp·ep)); the optimizer
// step updates the distributed optimizer's shard: dense/G + expert·ep/G.
//
// A cost-model error (a group the network cannot run) makes ChunkSeconds
// return NaN, which Simulate rejects; Err then says why. A ModelCosts caches
// per-domain results and is not safe for concurrent use.
type ModelCosts struct {
	// Compute prices the computation; Topo the network of stage 0.
	Compute *calib.Compute
	Topo    network.Topology
	// Lengths[i] is sequence i's length in tokens.
	Lengths []int
	// Exec and Overlap are the CP execution the policy assumes (ExecFor).
	Exec    network.CPExec
	Overlap bool
	// NoComm prices compute only: CP, MoE, P2P and gradient sync are free.
	NoComm bool
	// FP8Dispatch sends MoE dispatch buffers in FP8.
	FP8Dispatch bool
	// UlyssesAcrossNodes lets the inner Ulysses degree of a Ulysses × ring
	// group grow past the node, up to the query heads per TP rank
	// (network.UlyssesDegreeWithin); false keeps it inside NVLink.
	UlyssesAcrossNodes bool
	// PlannerSeconds is the planner's stall put at the head of the iteration
	// (PlannerStallSeconds; see PlannerStall for how to model it).
	PlannerSeconds float64

	model   job.Model
	vpp, ep int
	// One dense and one MoE layer of the model (-1: none): layers of a kind
	// cost the same.
	denseLayer, moeLayer int
	cache                map[[2]int]domainCost
	layerKind            [][]chunkLayers // [stage][chunk]
	err                  error
}

// chunkLayers counts a chunk's dense and MoE layers.
type chunkLayers struct{ dense, moe int }

// domainCost is a domain's per-layer times, forward and backward.
type domainCost struct {
	dense, moe [2]float64 // compute + exposed CP, max over groups
	// denseComm and moeCPComm are the exposed CP part of dense and moe (the
	// slowest group's).
	denseComm, moeCPComm [2]float64
	moeComm              [2]float64 // EP dispatch + combine, max over blocks
	maxTokens            int        // the fullest rank's tokens
}

// NewModelCosts checks that comp and topo describe the same layout and returns
// the costs of batch lengths under exec (see ExecFor). VPP is comp.Job's
// (at least 1).
func NewModelCosts(comp *calib.Compute, topo network.Topology, lengths []int, exec network.CPExec, overlap bool) (*ModelCosts, error) {
	if comp == nil {
		return nil, fmt.Errorf("step: nil compute")
	}
	par := comp.Job.Parallel
	switch {
	case exec < network.Ulysses || exec > network.UlyssesRing:
		return nil, fmt.Errorf("step: invalid CP exec %d", int(exec))
	case topo.TP != par.TP || topo.PP != max(par.PP, 1):
		return nil, fmt.Errorf("step: topology tp %d pp %d, job tp %d pp %d", topo.TP, topo.PP, par.TP, par.PP)
	case topo.PoolRanks%par.EP != 0:
		return nil, fmt.Errorf("step: ep = %d does not divide the pool's %d ranks", par.EP, topo.PoolRanks)
	}
	mc := &ModelCosts{Compute: comp, Topo: topo, Lengths: lengths, Exec: exec, Overlap: overlap,
		model: comp.Job.Model, vpp: max(par.VPP, 1), ep: par.EP, cache: map[[2]int]domainCost{},
		denseLayer: -1, moeLayer: -1}
	for l := range mc.model.Layers {
		if mc.model.IsMoELayer(l) {
			mc.moeLayer = max(mc.moeLayer, l)
		} else {
			mc.denseLayer = max(mc.denseLayer, l)
		}
	}
	for s := range topo.PP {
		first, n := comp.StageLayers(s)
		if n < mc.vpp {
			return nil, fmt.Errorf("step: stage %d has %d layers, fewer than vpp = %d chunks", s, n, mc.vpp)
		}
		chunks := make([]chunkLayers, mc.vpp)
		for c := range mc.vpp {
			k := &chunks[c]
			for l := first + c*n/mc.vpp; l < first+(c+1)*n/mc.vpp; l++ {
				if mc.model.IsMoELayer(l) {
					k.moe++
				} else {
					k.dense++
				}
			}
		}
		mc.layerKind = append(mc.layerKind, chunks)
	}
	return mc, nil
}

// Err returns the first cost-model error met, or nil.
func (m *ModelCosts) Err() error { return m.err }

func (m *ModelCosts) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// groupTokens is a group's per-rank tokens ⌈Σ s / k⌉ and its total Σ s; ok is
// false if it names an unknown sequence.
func (m *ModelCosts) groupTokens(g sched.Group) (perRank, total int, ok bool) {
	for _, id := range g.Seqs {
		if id < 0 || id >= len(m.Lengths) {
			return 0, 0, false
		}
		total += m.Lengths[id]
	}
	return (total + g.Size - 1) / g.Size, total, true
}

// exec returns the execution of a group of degree k and its ring degree.
func (m *ModelCosts) exec(k int) (network.CPExec, int) {
	e := m.Exec
	if e == network.Ulysses && k > network.MaxCPDegree(network.Ulysses, m.Topo, m.model) {
		e = network.UlyssesRing
	}
	switch e {
	case network.Ring:
		return e, k
	case network.UlyssesRing:
		return e, k / network.UlyssesDegreeWithin(m.Topo, m.model, k, m.UlyssesAcrossNodes)
	}
	return e, 1
}

// domain computes (or recalls) d's per-layer costs on stage.
func (m *ModelCosts) domain(stage int, d *Domain) (domainCost, bool) {
	key := [2]int{d.MB, d.FirstRank}
	// Stages share one layout when G·tp is node-aligned; key by stage otherwise.
	if m.Topo.PoolRanks%m.Topo.RanksPerNode != 0 {
		key[1] = key[1]*m.Topo.PP + stage
	}
	if dc, ok := m.cache[key]; ok {
		return dc, true
	}
	if len(d.Groups) == 0 {
		// An idle block of a global MB: it runs the MB empty, in no collective
		// with anyone (its EP block holds no token).
		m.cache[key] = domainCost{}
		return domainCost{}, true
	}
	t := m.Topo.ForStage(stage)
	comp := m.Compute
	denseL, moeL := m.denseLayer, m.moeLayer
	var dc domainCost
	nb := d.Size / m.ep
	blockTokens := make([]int, nb)
	for _, g := range d.Groups {
		per, total, ok := m.groupTokens(g)
		if !ok || g.Size < 1 {
			m.fail(fmt.Errorf("step: microbatch %d: group at rank %d names a sequence outside the batch", d.MB, g.FirstRank))
			return domainCost{}, false
		}
		dc.maxTokens = max(dc.maxTokens, per)
		for b := (g.FirstRank - d.FirstRank) / m.ep; b <= (g.LastRank()-d.FirstRank)/m.ep; b++ {
			blockTokens[b] = max(blockTokens[b], per)
		}
		exec, ring := m.exec(g.Size)
		var af, ab float64
		for _, id := range g.Seqs {
			s := m.Lengths[id]
			if s == 0 {
				continue
			}
			blk := calib.KernelBlockTokens(s, ring)
			af += comp.AttentionFwdSeconds(s, g.Size, blk)
			ab += comp.AttentionBwdSeconds(s, g.Size, blk)
		}
		for kind, l := range [2]int{denseL, moeL} {
			if l < 0 {
				continue
			}
			gf := comp.GEMMFwdSeconds(l, per)
			gb := 2 * gf
			f, b := gf+af, gb+ab
			if !m.NoComm && g.Size > 1 {
				cp, err := network.CPLayer(t, m.model, network.CPGroup{Exec: exec, FirstRank: g.FirstRank, Degree: g.Size,
					UlyssesDegree: g.Size / ring, OverlapAllToAll: m.Overlap}, total, network.CPOverlap{AttentionFwdSeconds: af, AttentionBwdSeconds: ab,
					IndependentFwdSeconds: gf, IndependentBwdSeconds: gb})
				if err != nil {
					m.fail(fmt.Errorf("step: microbatch %d group at rank %d (degree %d): %w", d.MB, g.FirstRank, g.Size, err))
					return domainCost{}, false
				}
				f += cp.Fwd.ExposedSeconds
				b += cp.Bwd.ExposedSeconds
			}
			dst, comm := &dc.dense, &dc.denseComm
			if kind == 1 {
				dst, comm = &dc.moe, &dc.moeCPComm
			}
			for p, t := range [2]float64{f, b} {
				if t > dst[p] {
					dst[p], comm[p] = t, t-[2]float64{gf + af, gb + ab}[p]
				}
			}
		}
	}
	if !m.NoComm && moeL >= 0 && m.ep > 1 {
		for b, tok := range blockTokens {
			c := network.MoELayer(t, m.model, d.FirstRank+b*m.ep, m.ep, tok, m.FP8Dispatch)
			dc.moeComm[0], dc.moeComm[1] = max(dc.moeComm[0], c.FwdSeconds), max(dc.moeComm[1], c.BwdSeconds)
		}
	}
	m.cache[key] = dc
	return dc, true
}

// chunk returns domain d's per-layer costs on stage and the layers of chunk;
// ok is false (and Err says why) for a chunk outside the layout or a domain
// the cost model cannot price.
func (m *ModelCosts) chunk(stage, chunk int, d *Domain) (domainCost, chunkLayers, bool) {
	if stage < 0 || stage >= len(m.layerKind) || chunk < 0 || chunk >= m.vpp {
		m.fail(fmt.Errorf("step: stage %d chunk %d outside pp %d vpp %d", stage, chunk, len(m.layerKind), m.vpp))
		return domainCost{}, chunkLayers{}, false
	}
	dc, ok := m.domain(stage, d)
	return dc, m.layerKind[stage][chunk], ok
}

// ChunkSeconds returns the chunk's layers × the domain's per-layer times (see
// the type's doc), plus the LM head on the last stage's last chunk.
func (m *ModelCosts) ChunkSeconds(stage, chunk int, d *Domain) (forward, backward float64) {
	dc, ck, ok := m.chunk(stage, chunk, d)
	if !ok {
		return math.NaN(), math.NaN()
	}
	var out [2]float64
	for p := range 2 {
		out[p] = float64(ck.dense)*dc.dense[p] + float64(ck.moe)*(dc.moe[p]+dc.moeComm[p])
	}
	if stage == len(m.layerKind)-1 && chunk == m.vpp-1 && dc.maxTokens > 0 {
		out[0] += m.Compute.LMHeadFwdSeconds(dc.maxTokens)
		out[1] += m.Compute.LMHeadBwdSeconds(dc.maxTokens)
	}
	return out[0], out[1]
}

// ChunkExposedCommSeconds is the part of ChunkSeconds spent in exposed
// communication: per layer, the slowest group's exposed CP communication plus,
// on MoE layers, the EP dispatch and combine (step.CommSplitter).
func (m *ModelCosts) ChunkExposedCommSeconds(stage, chunk int, d *Domain) (forward, backward float64) {
	dc, ck, ok := m.chunk(stage, chunk, d)
	if !ok {
		return math.NaN(), math.NaN()
	}
	var out [2]float64
	for p := range 2 {
		out[p] = float64(ck.dense)*dc.denseComm[p] + float64(ck.moe)*(dc.moeCPComm[p]+dc.moeComm[p])
	}
	return out[0], out[1]
}

// PlannerStallSeconds returns PlannerSeconds (step.PlannerStaller).
func (m *ModelCosts) PlannerStallSeconds() float64 { return m.PlannerSeconds }

// PlannerStall models a plan's planning stall on the host: its StallWork priced
// with calib.CPython's per-operation costs (pool visits, heap operations,
// sequence visits). The systems compared ship Python planners that run at the
// head of every iteration on the critical path (HyDra §3.4); this is the
// deterministic model of that time, not our Go planners' wall time.
func PlannerStall(w sched.StallWork) float64 {
	return float64(w.PoolVisits)*calib.CPython.PoolVisitSeconds.Value +
		float64(w.HeapOps)*calib.CPython.HeapOpSeconds.Value +
		float64(w.SequenceVisits)*calib.CPython.SequenceVisitSeconds.Value
}

// P2PSeconds is the fullest rank's activations (or gradients, the same size)
// sent over the boundary between the two stages (network.P2PSeconds from the
// lower one; the interleaved wrap from the last stage to the first is priced
// as the last boundary).
func (m *ModelCosts) P2PSeconds(fromStage, toStage, _ int, d *Domain, _ bool) float64 {
	if m.NoComm || m.Topo.PP < 2 {
		return 0
	}
	dc, ok := m.domain(fromStage, d)
	if !ok {
		return math.NaN()
	}
	lo := min(min(fromStage, toStage), m.Topo.PP-2)
	return network.P2PSeconds(m.Topo, lo, d.FirstRank, network.P2PActivationBytes(m.Topo, m.model.Hidden, dc.maxTokens))
}

// stageParams returns a stage's dense and routed-expert parameters per GPU.
func (m *ModelCosts) stageParams(stage int) (dense, expert float64) {
	first, n := m.Compute.StageLayers(stage)
	for l := first; l < first+n; l++ {
		e := m.model.LayerExpertParams(l)
		dense += m.model.LayerParams(l) - e
		expert += e
	}
	if stage == 0 {
		dense += m.model.EmbeddingParams()
	}
	if stage == m.Topo.PP-1 {
		dense += m.model.OutputParams()
	}
	tp := float64(m.Topo.TP)
	return dense / tp, expert / (tp * float64(m.ep))
}

// GradSyncSeconds is network.GradSync of the stage's parameters per GPU.
func (m *ModelCosts) GradSyncSeconds(stage int) float64 {
	if m.NoComm {
		return 0
	}
	dense, expert := m.stageParams(stage)
	return network.GradSync(m.Topo.ForStage(stage), dense, expert, m.ep).Seconds()
}

// OptimizerSeconds is the optimizer step over this GPU's shard of the stage's
// parameters: dense/G + expert/(G/ep).
func (m *ModelCosts) OptimizerSeconds(stage int) float64 {
	dense, expert := m.stageParams(stage)
	g := float64(m.Topo.PoolRanks)
	return m.Compute.OptimizerStepSeconds(dense/g + expert*float64(m.ep)/g)
}
