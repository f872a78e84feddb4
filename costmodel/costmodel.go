// Package costmodel prices a DCP plan for the engine (sim/step): calib prices
// the computation and sim/network the communication of one job, each HDP rank
// on its own device, under the CP execution the policy assumes. The engine
// imports neither calib nor sim/network; it asks a step.Costs, which
// Model.Price builds. Model.Simulate lays a plan out, prices it and runs it in
// one call, in storage the Model reuses from call to call.
//
// # Devices
//
// A Model maps every HDP rank to a Device: a GPU kind with its calibration
// profile, compute model and token budget. A one-kind cluster maps every rank
// to its one device; a mixed cluster (job.Cluster.Pools) numbers its ranks
// kind by kind, each kind filling whole nodes (network.NewMixedTopology prices
// each link on its kind's NVLink or the slower NIC). A group of the even split
// runs at the slowest of its ranks' devices; a group with a CP × HP layout
// (sched.Layout) prices each rank on its own device for its own shard and
// heads, and the layer waits for the slowest rank at each all-to-all:
// max over ranks of the layer ops + max over ranks of core attention +
// the exposed CP communication (network.LayoutCPLayer). Ranks on different
// kinds need no change to the engine or to Price's callers.
//
// # Pricing a domain op
//
// For a domain op of one chunk on one stage, per layer of the chunk:
//
//   - every CP group (all its ranks alike) runs the layer's ops
//     (compute.Compute.LayerOps: GEMMs by shape, memory-bound ops, kernel launch
//     gaps) for its per-rank tokens ⌈Σ s / k⌉, the core attention of each of
//     its sequences (s, k) at the kernel block the exec implies (s for Ulysses,
//     s/r for a ring of r), and the CP communication network.CPLayer leaves
//     exposed (ring steps hidden behind attention blocks; with overlap the
//     Q/K/V all-to-alls hidden behind the rank's GEMM time of the layer);
//   - with tp > 1 every group adds the layer's tensor-parallel collectives in
//     each pass (network.TPLayerSeconds: sequence parallelism's all-gathers
//     and reduce-scatters, or the all-reduces without it; not overlapped, as
//     in Megatron-LM 2022), and the backward pass runs again what
//     job.Parallel.Recompute names: the layer's whole forward (full; for the
//     first RecomputeLayers layers of each chunk when set) or its core
//     attention's (selective) (layer.go); a group with a CP × HP layout pays
//     the same for its fullest rank;
//   - the domain's layer time is the slowest group's, plus on an MoE layer the
//     slowest EP block's dispatch and combine (network.MoELayer at the most
//     tokens any rank of the block routes): the all-to-all is a barrier, so the
//     whole block waits for it.
//
// A chunk is layers [c·n/v, (c+1)·n/v) of the stage's n layers (integer
// division, compute.Compute.StageLayers); the last stage's last chunk adds the
// head (compute.Compute.HeadOps: final norm, LM head, loss) for the domain's
// fullest rank. A Ulysses group wider than the query
// heads per TP rank allow runs as UlyssesRing (Megatron's a2a+p2p
// hierarchical CP). P2P moves the fullest rank's activations (or gradients)
// across the stage boundary. The gradient sync is network.GradSync of the
// stage's dense parameters per GPU (embedding on the first stage, output layer
// on the last, /tp) and routed-expert parameters (/(tp·ep)); the optimizer
// step updates the distributed optimizer's shard: dense/G + expert·ep/G. With
// job.GradAllReduce (no distributed optimizer) the gradients are all-reduced
// instead (network.GradAllReduce) and the step updates every parameter the GPU
// holds. With job.Parallel.OverlapGradReduce (and under job.GradFSDP) each
// chunk's share of the reduce-scatter overlaps the backward in buckets
// (Iteration.ChunkGradSync, step.OverlappedGradSyncer), and
// OverlapParamGather leaves only stage 0's first bucket of the all-gather
// exposed. MoE parallel folding (job.Parallel.ETP below tp) runs the
// all-to-alls among ep expert-TP groups of etp GPUs (network.Topology.WithTP). Options.AttentionKernel picks the core attention priced
// (compute.AttentionKernel).
//
// Price prices every domain before the run and returns an error for a plan the
// network cannot run, so the engine's questions are lookups that cannot fail.
package costmodel

import (
	"fmt"
	"math"
	"sync"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
)

// Device is one GPU kind of the cluster.
type Device struct {
	// Name is the profile's name, e.g. "H800".
	Name string
	// Profile holds the kind's calibrated constants.
	Profile *calib.Profile
	// Compute prices the job's computation on this kind.
	Compute *compute.Compute
	// BudgetTokens is the most tokens a rank of this kind may hold in a
	// microbatch (memory.Model.KindBudgetTokens).
	BudgetTokens int
	// Ranks is how many consecutive HDP ranks of a stage are of this kind.
	Ranks int
}

// Options are what-if switches of the cost model.
type Options struct {
	// UlyssesAcrossNodes lets the inner Ulysses degree of a Ulysses × ring
	// group grow past the node, up to the query heads per TP rank
	// (network.UlyssesDegreeWithin; the HyDra paper's layout, and the scenario
	// default); false keeps it inside NVLink.
	UlyssesAcrossNodes bool
	// NoComm prices compute only: CP, MoE, P2P and gradient sync are free.
	NoComm bool
	// FP8Dispatch sends MoE dispatch buffers in FP8; FP8 training
	// (job.PrecisionFP8) always does.
	FP8Dispatch bool
	// AttentionKernel is the core-attention implementation priced
	// (compute.FlashAttention, the zero value, or compute.MegatronSoftmax for
	// Megatron-LM's runs before FlashAttention).
	AttentionKernel compute.AttentionKernel
}

// Model is the cost model of one job on one cluster. It is immutable after New
// and safe for concurrent use: Price builds a per-plan step.Costs, and
// Simulate and Price work in scratch storage pooled per Model (sync.Pool:
// concurrent calls take different scratches; what a scratch holds never
// changes a result), so goroutines may share one Model.
type Model struct {
	job     job.Job
	opts    Options
	devices []Device
	// rankDevice[r] is the index in devices of HDP rank r's device; nil when
	// every rank runs on devices[0].
	rankDevice []int
	topo       network.Topology
	mem        *memory.Model
	// scores says a chunk's activations count attention scores (the
	// Megatron softmax kernel keeps them), so groups' shards need them.
	scores bool
	// vpp is the chunks per stage; ep the HDP ranks of an EP group
	// (job.Parallel.EPRanks).
	vpp, ep int
	// fsdpLayer is fsdpLayers: per layer kind the all-gather and
	// reduce-scatter seconds under job.GradFSDPReshard (zero otherwise).
	fsdpLayer [2][2]float64
	// etp is the expert TP degree when it differs from tp (MoE parallel
	// folding: the MoE all-to-alls run among ep expert-TP groups of etp
	// GPUs, network.Topology.WithTP); 0 when etp = tp.
	etp int
	// One dense and one MoE layer of the model (-1: none): layers of a kind
	// cost the same.
	denseLayer, moeLayer int
	layerKind            [][]chunkLayers // [stage][chunk]
	// offBytes is offloadBytes: the offloadable bytes per token of a dense
	// and of an MoE layer.
	offBytes [2]float64
	// gradSync and optimizer are per stage the sync after the last backward
	// (all of it, or with overlap_grad_reduce what the overlapped chunks
	// leave exposed) and the optimizer step, in seconds; chunkSync[stage]
	// the overlapped chunks' reduce-scatters (nil without overlap).
	gradSync, optimizer []float64
	chunkSync           [][]chunkSync
	// syncs are per stage the end of iteration as priced (gradSyncAndOptimizer),
	// before any overlap: what GradSyncParts breaks down.
	syncs []stageSync
	// scratches pools the working storage of Price and Simulate (*scratch):
	// one per concurrent call, reused by later ones.
	scratches sync.Pool
}

// chunkLayers counts a chunk's dense and MoE layers, of them the recomputed
// ones (job.Parallel.Recomputed) and the ones offload may move (all but the
// chunk's last two; see offload.go).
type chunkLayers struct{ dense, moe, rdense, rmoe, odense, omoe int }

// New builds the cost model of job j with every rank on the GPU kind of prof.
// It fails when the profile, the job and the network do not fit together (a
// stage with fewer layers than vpp chunks, ep not dividing the pool, ...), or
// when the job's cluster mixes kinds (use NewMixed).
func New(j job.Job, prof *calib.Profile, opts Options) (*Model, error) {
	return NewMixed(j, []*calib.Profile{prof}, opts)
}

// NewMixed builds the cost model of job j on a cluster whose kinds
// (j.Cluster.Kinds) have the profiles profs, in the same order: one profile
// for a one-kind cluster, one per pool for a mixed one. Each kind's token
// budget is memory.Model.KindBudgetTokens of the profiles' HBM (a
// budget_tokens = "auto" job is resolved here too).
func NewMixed(j job.Job, profs []*calib.Profile, opts Options) (*Model, error) {
	kinds := j.Cluster.Kinds()
	if len(profs) != len(kinds) {
		return nil, fmt.Errorf("costmodel: %d profiles for the cluster's %d GPU kinds", len(profs), len(kinds))
	}
	flat := make([]calib.Profile, len(profs))
	hbm := make([]float64, len(profs))
	for i, prof := range profs {
		if prof == nil {
			return nil, fmt.Errorf("costmodel: nil profile")
		}
		flat[i] = *prof
		hbm[i] = prof.HBMBytes.Value
	}
	mem, err := memory.New(j, opts.AttentionKernel)
	if err != nil {
		return nil, fmt.Errorf("costmodel: %w", err)
	}
	budgets, err := mem.KindBudgetTokens(hbm)
	if err != nil {
		return nil, fmt.Errorf("costmodel: %w", err)
	}
	if j.Parallel.BudgetAuto {
		j.Parallel.BudgetTokens, j.Parallel.BudgetAuto = budgets[0], false
	}
	par := j.Parallel
	topo, err := network.NewMixedTopology(flat, j.Cluster, par.TP, max(par.PP, 1))
	if err != nil {
		return nil, err
	}
	ranks := j.KindRanks()
	opts.FP8Dispatch = opts.FP8Dispatch || j.Parallel.FP8()
	m := &Model{job: j, opts: opts, topo: topo, mem: mem, scores: mem.KeepsScores(),
		vpp: max(par.VPP, 1), ep: max(par.EPRanks(), 1), denseLayer: -1, moeLayer: -1}
	if etp := par.ExpertTP(); etp != par.TP && j.Model.RoutedExperts > 0 {
		if j.Cluster.Mixed() {
			return nil, fmt.Errorf("costmodel: parallel.etp = %d differs from tp = %d: expert TP on a mixed cluster is not modelled", etp, par.TP)
		}
		if _, err := topo.WithTP(etp); err != nil {
			return nil, err
		}
		m.etp = etp
	}
	for i, prof := range profs {
		comp, err := compute.NewCompute(prof, j)
		if err != nil {
			return nil, err
		}
		comp.Attention = opts.AttentionKernel
		m.devices = append(m.devices, Device{Name: prof.Name, Profile: prof, Compute: comp, BudgetTokens: budgets[i], Ranks: ranks[i]})
	}
	if !j.Cluster.Mixed() {
		m.devices[0].Ranks = topo.PoolRanks
	} else {
		m.rankDevice = make([]int, topo.PoolRanks)
		for r := range m.rankDevice {
			m.rankDevice[r] = topo.KindOf(r)
		}
	}
	comp := m.devices[0].Compute
	if topo.PoolRanks%m.ep != 0 {
		return nil, fmt.Errorf("costmodel: ep = %d does not divide the pool's %d ranks", m.ep, topo.PoolRanks)
	}
	model := j.Model
	for l := range model.Layers {
		if model.IsMoELayer(l) {
			m.moeLayer = max(m.moeLayer, l)
		} else {
			m.denseLayer = max(m.denseLayer, l)
		}
	}
	for s := range topo.PP {
		first, n := comp.StageLayers(s)
		if n < m.vpp && par.PipelineLayout == "" {
			return nil, fmt.Errorf("costmodel: stage %d has %d layers, fewer than vpp = %d chunks", s, n, m.vpp)
		}
		chunks := make([]chunkLayers, m.vpp)
		for c := range m.vpp {
			k := &chunks[c]
			lo, hi := par.ChunkRange(s, first, n, c)
			for l := lo; l < hi; l++ {
				r := 0
				if par.Recomputed(l - lo) {
					r = 1
				}
				if model.IsMoELayer(l) {
					k.moe++
					k.rmoe += r
				} else {
					k.dense++
					k.rdense += r
				}
			}
		}
		for c := range m.vpp {
			lo, hi := par.ChunkRange(s, first, n, c)
			chunks[c].odense, chunks[c].omoe = offloadable(model, lo, hi)
		}
		m.layerKind = append(m.layerKind, chunks)
		dense, expert := m.stageParams(s)
		st := m.gradSyncAndOptimizer(s, dense, expert)
		m.syncs = append(m.syncs, st)
		sync := st.rs() + st.ag()
		if par.OverlapGradReduce || par.GradSyncMode() == job.GradFSDP {
			var cs []chunkSync
			cs, sync = m.overlappedSync(s, st)
			m.chunkSync = append(m.chunkSync, cs)
		}
		m.gradSync = append(m.gradSync, sync)
		m.optimizer = append(m.optimizer, st.optimizer)
	}
	m.offBytes = offloadBytes(m)
	m.fsdpLayer = m.fsdpLayers()
	return m, nil
}

// moeComm prices one MoE layer's dispatch and combine for the EP group of
// HDP ranks [first, first+ep) whose fullest rank routes tokens tokens, on
// the stage topology t (its stretched view when priced in a window): as
// network.MoELayer over the HDP ranks when etp = tp; else over the ep
// expert-TP groups of etp GPUs the block's GPUs form, each routing its share
// tokens·etp/tp. job.DispatchDeepEP prices network.MoELayerDedup instead.
func (m *Model) moeComm(t network.Topology, first, tokens int) network.MoELayerCost {
	if cf := m.job.Parallel.MoECapacityFactor; cf > 0 {
		tokens = int(math.Round(float64(tokens) * cf)) // padded buffers
	}
	layer := network.MoELayer
	if m.job.Parallel.MoEDispatcher == job.DispatchDeepEP {
		layer = network.MoELayerDedup
	}
	if m.etp == 0 {
		return layer(t, m.job.Model, first, m.ep, tokens, m.opts.FP8Dispatch)
	}
	tp := m.job.Parallel.TP
	et, err := t.WithTP(m.etp)
	if err != nil {
		panic(fmt.Sprintf("costmodel: expert view checked by New: %v", err))
	}
	return layer(et, m.job.Model, first*tp/m.etp, m.job.Parallel.EP, tokens*m.etp/tp, m.opts.FP8Dispatch)
}

// Job returns the job the model prices.
func (m *Model) Job() job.Job { return m.job }

// Memory returns the job's memory model.
func (m *Model) Memory() *memory.Model { return m.mem }

// Topology returns the network of stage 0.
func (m *Model) Topology() network.Topology { return m.topo }

// Devices returns the cluster's device kinds.
func (m *Model) Devices() []Device { return m.devices }

// DeviceOf returns HDP rank r's device.
func (m *Model) DeviceOf(r int) *Device {
	if m.rankDevice == nil {
		return &m.devices[0]
	}
	return &m.devices[m.rankDevice[r]]
}

// MaxCPDegree is the largest CP degree exec runs on this job
// (network.MaxCPDegree): a policy's Inputs.MaxDegree.
func (m *Model) MaxCPDegree(exec sched.CPExec) int {
	return network.MaxCPDegree(exec, m.topo, m.job.Model)
}

// Overhead is HyDra's θ/c for the job (compute.Compute.Overhead) at the
// memory-minimum CP degree of the context and a block of B tokens (a rank at
// the load target holds up to B tokens), on the first device.
func (m *Model) Overhead() compute.Overhead {
	b := m.job.Parallel.BudgetTokens
	return m.devices[0].Compute.Overhead(sched.MemoryDegree(m.job.ContextTokens, b), b)
}

// PlannerStallSeconds models a plan's planning stall on the host: its
// StallWork priced with the per-operation CPython costs of calib.CPython (pool
// visits, heap operations, sequence visits; and the plan-building work around
// the placement loop: prepared sequences, sort steps, batch slots, sequence
// pieces, group sequences, groups (one batch-building step and one metadata
// record each) and group ranks) and the CBC costs of calib.CBC (solves,
// branch-and-bound nodes, simplex iterations; FlexSP's MILPs, priced as run
// one after another). The systems compared ship Python planners that run at
// the head of every iteration on the critical path (HyDra §3.4), or solvers
// that run ahead of it (FlexSP §5: what is on the path is the experiment's
// call); this is the deterministic model of that time, not our Go planners'
// wall time. An external policy's ReportedSeconds (its own figure, or its
// measured round trip when it reports no work) is added as it is.
func PlannerStallSeconds(w sched.StallWork) float64 {
	c, s := calib.CPython, calib.CBC
	return float64(w.PoolVisits)*c.PoolVisitSeconds.Value +
		float64(w.HeapOps)*c.HeapOpSeconds.Value +
		float64(w.SequenceVisits)*c.SequenceVisitSeconds.Value +
		float64(w.PreparedSequences)*c.PreparedSequenceSeconds.Value +
		float64(w.SortSteps)*c.SortStepSeconds.Value +
		float64(w.BatchSlots)*c.BatchSlotSeconds.Value +
		float64(w.SequencePieces)*c.SequencePieceSeconds.Value +
		float64(w.GroupSequences)*c.GroupSequenceSeconds.Value +
		float64(w.Groups)*(c.GroupBatchSeconds.Value+c.GroupMetaSeconds.Value) +
		float64(w.GroupRanks)*c.GroupRankSeconds.Value +
		float64(w.SolverSolves)*s.SolveSeconds.Value +
		float64(w.SolverNodes)*s.NodeSeconds.Value +
		float64(w.SolverIterations)*s.IterationSeconds.Value +
		w.ReportedSeconds
}

// stageParams returns a stage's dense and routed-expert parameters per GPU
// (memory.States: dense over tp with the embedding on the first stage and
// the output layer on the last, experts over etp·ep).
func (m *Model) stageParams(stage int) (dense, expert float64) {
	st := m.mem.States(stage)
	return st.DenseParams, st.ExpertParams
}

// ModelFLOPs is the model FLOPs of one training iteration over a batch: the
// linear layers' 6 FLOPs per active weight per token (job.Model
// LinearTrainFLOPsPerToken, LM head included) and causal core attention at 3×
// its forward (MFU's convention: backward = 2× forward), summed over the
// sequences, every layer. Recomputation is not counted (it is not model work).
func (m *Model) ModelFLOPs(lengths []int) float64 {
	model := m.job.Model
	var tokens, attn float64
	for _, s := range lengths {
		tokens += float64(s)
		attn += model.AttentionFwdFLOPs(s)
	}
	return tokens*model.LinearTrainFLOPsPerToken() + 3*attn*float64(model.Layers)
}

// MFU is the model FLOPs utilization of an iteration of seconds over the
// batch lengths: ModelFLOPs / (GPUs × each GPU's BF16 peak × seconds).
func (m *Model) MFU(lengths []int, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	var peak float64
	gpus := m.job.Cluster.GPUs
	for r := range m.topo.PoolRanks {
		peak += m.DeviceOf(r).Profile.PeakBF16FLOPs.Value
	}
	peak *= float64(gpus) / float64(m.topo.PoolRanks) // every HDP rank stands for tp·pp GPUs
	return m.ModelFLOPs(lengths) / (peak * seconds)
}

// KindBudgetTokens returns each kind's per-rank token budget, in rank order.
func (m *Model) KindBudgetTokens() []int {
	out := make([]int, len(m.devices))
	for i, d := range m.devices {
		out[i] = d.BudgetTokens
	}
	return out
}

// MinBudgetTokens is the smallest kind's token budget: the budget of a
// policy that treats every device alike.
func (m *Model) MinBudgetTokens() int {
	b := m.devices[0].BudgetTokens
	for _, d := range m.devices[1:] {
		b = min(b, d.BudgetTokens)
	}
	return b
}

// PlanningCluster describes the cluster to the policies that plan for its
// GPU kinds (sched.Cluster): per kind its ranks and budget, and per layer of
// the stage with the most layers (the one Overhead prices), forward plus
// backward, its core attention per token² (at the kind's efficiency at the
// budget's block length, B tokens on one rank: (t_fwd(B) + t_bwd(B))/B²), its
// other ops per token (GEMMs and memory-bound ops of the stage's dense and MoE
// layers at B tokens, averaged over its layers; launch gaps are part of θ),
// its links' achieved rates (bandwidth × the curve's Max) and one hop of
// latency; θ is Overhead's on the first kind.
func (m *Model) PlanningCluster() *sched.Cluster {
	o := m.Overhead()
	first, n := m.devices[0].Compute.StageLayers(o.Stage)
	q, k, v, out := network.TokenBytes(m.topo, m.job.Model)
	c := &sched.Cluster{
		Layers:          o.Layers,
		OverheadSeconds: o.ThetaSeconds,
		QBytesPerToken:  q, KVBytesPerToken: k + v, OBytesPerToken: out,
		KVHeads:      max(m.job.Model.KVHeads/max(m.topo.TP, 1), 1),
		RanksPerNode: m.topo.RanksPerNode,
	}
	at := 0
	for _, d := range m.devices {
		comp, b := d.Compute, d.BudgetTokens
		attn := (comp.AttentionFwdSeconds(b, 1, b) + comp.AttentionBwdSeconds(b, 1, b)) / (float64(b) * float64(b))
		var lin float64
		for l := first; l < first+n; l++ {
			f, bw := compute.OpsSeconds(comp.LayerOps(l, b), compute.OpKindGEMM, compute.OpKindMemory)
			lin += f + bw
		}
		lin /= float64(n) * float64(b)
		ln := m.topo.LinksOf(at)
		c.Kinds = append(c.Kinds, sched.DeviceKind{
			Name: d.Name, Ranks: d.Ranks, BudgetTokens: b,
			AttentionSecondsPerToken2: attn, LinearSecondsPerToken: lin,
			NVLinkBytesPerSecond:  ln.NVLinkBytesPerSecond * ln.CollectiveIntra,
			NICBytesPerSecond:     ln.NICBytesPerSecond * ln.AllToAllInter,
			RingNICBytesPerSecond: ln.NICBytesPerSecond * ln.SendRecvInter,
			IntraLatencySeconds:   ln.IntraBaseSeconds + ln.IntraHopSeconds,
			InterLatencySeconds:   ln.InterBaseSeconds + ln.InterHopSeconds,
		})
		at += d.Ranks
	}
	return c
}
