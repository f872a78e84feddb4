package compute

import "fmt"

// CPCollectivesPerLayer is how many CP collectives a microbatch runs per layer
// (forward and backward) whose base latency Overhead charges: Ulysses' all-to-all
// of Q/K/V and of the output in the forward, and their mirrors in the backward.
// Ring steps overlap with block compute and are not charged.
const CPCollectivesPerLayer = 4

// MoECollectivesPerLayer is the dispatch and combine all-to-alls of one MoE layer
// in the forward and their mirrors in the backward (costmodel §4.4).
const MoECollectivesPerLayer = 4

// Overhead is HyDra's per-microbatch cost model for one pipeline stage (spec
// hydra-scheduler.md §3): a balanced microbatch at per-rank load Λ (tokens²)
// takes c·Λ + θ, and the scheduler needs only θ/c.
type Overhead struct {
	// Stage is the stage priced: the one with the most layers (ties: the most MoE
	// layers, then the lowest index), which sets the pipeline's pace.
	Stage int `json:"stage"`
	// Layers and MoELayers count the stage's layers and its MoE layers.
	Layers    int `json:"layers"`
	MoELayers int `json:"moe_layers"`
	// BlockTokens is the attention block length at which c's efficiencies are taken.
	BlockTokens int `json:"block_tokens"`
	// CPDegree is the CP degree whose collective latencies each microbatch pays.
	CPDegree int `json:"cp_degree"`

	// LaunchSeconds is KernelLaunchSeconds times the kernels the stage's layers
	// launch, forward and backward (LayerKernels, e.g. 57 for a DeepSeek-V2-Lite
	// MoE layer).
	LaunchSeconds float64 `json:"launch_seconds"`
	// PipelineP2PSeconds is twice a send/recv's latency when pp > 1: the
	// activation received in the forward and the gradient in the backward;
	// inter-node (InterP2PLatencySeconds) when a stage spans at least a node
	// (Megatron puts pp outermost: gpus/pp ≥ gpus_per_node), else α(2 ranks).
	PipelineP2PSeconds float64 `json:"pipeline_p2p_seconds"`
	// MoECollectiveSeconds is MoELayers·MoECollectivesPerLayer·α(ep), intra-node
	// when ep·tp ≤ gpus_per_node.
	MoECollectiveSeconds float64 `json:"moe_collective_seconds"`
	// CPCollectiveSeconds is Layers·CPCollectivesPerLayer·α(CPDegree) for
	// CPDegree > 1, intra-node when CPDegree·tp ≤ gpus_per_node.
	CPCollectiveSeconds float64 `json:"cp_collective_seconds"`
	// ThetaSeconds is θ, the sum of the four terms above.
	ThetaSeconds float64 `json:"theta_seconds"`

	// CSecondsPerSquareToken is c = Layers·a·(1/η_fwd(b) + r/η_bwd(b)) / (TP·peak):
	// the stage's causal attention time, forward and backward, per token² of
	// per-rank load, with a = Model.AttentionFwdFLOPsPerSquareToken, r =
	// Model.AttentionBwdFactor and b = BlockTokens.
	CSecondsPerSquareToken float64 `json:"c_seconds_per_token2"`
	// RatioSquareTokens is θ/c in tokens², what sched.Inputs.OverheadRatio takes.
	RatioSquareTokens float64 `json:"ratio_tokens2"`
}

// gpusPerNode is the job's NVLink domain, or the profile's when the job leaves it 0.
func (c *Compute) gpusPerNode() int {
	if g := c.Job.Cluster.GPUsPerNode; g > 0 {
		return g
	}
	return int(c.Profile.GPUsPerNode.Value)
}

// Overhead derives HyDra's θ and c for this job from the same cost model the
// simulator uses (see the Overhead fields for each term). cpDegree is the CP degree
// whose collective latencies a microbatch pays (1: none; HyDra's C_mem is a fair
// choice), blockTokens the attention block length at which c's efficiency is
// taken (the token budget B is a fair choice: a rank at load Λ holds up to B
// tokens). The fixed costs not modelled: the GEMM efficiency lost by splitting a
// batch into more, smaller microbatches, and the planner's own time.
func (c *Compute) Overhead(cpDegree, blockTokens int) Overhead {
	if cpDegree < 1 || blockTokens < 1 {
		panic(fmt.Sprintf("compute: Overhead(%d, %d): need cpDegree >= 1 and blockTokens >= 1", cpDegree, blockTokens))
	}
	m, par, p := c.Job.Model, c.Job.Parallel, c.Profile
	o := Overhead{Stage: -1, BlockTokens: blockTokens, CPDegree: cpDegree}
	for s := range c.stageLayers {
		first, n := c.StageLayers(s)
		moe := 0
		for l := first; l < first+n; l++ {
			if m.IsMoELayer(l) {
				moe++
			}
		}
		if o.Stage < 0 || n > o.Layers || (n == o.Layers && moe > o.MoELayers) {
			o.Stage, o.Layers, o.MoELayers = s, n, moe
		}
	}
	g := c.gpusPerNode()
	first, _ := c.StageLayers(o.Stage)
	kernels := 0
	for l := first; l < first+o.Layers; l++ {
		f, b := c.LayerKernels(l)
		kernels += f + b
	}
	o.LaunchSeconds = p.KernelLaunchSeconds.Value * float64(kernels)
	if par.PP > 1 {
		o.PipelineP2PSeconds = 2 * p.CollectiveLatencySeconds(2, false)
		if c.Job.Cluster.GPUs/par.PP >= g {
			o.PipelineP2PSeconds = 2 * p.InterP2PLatencySeconds.Value
		}
	}
	if o.MoELayers > 0 {
		o.MoECollectiveSeconds = float64(o.MoELayers*MoECollectivesPerLayer) * p.CollectiveLatencySeconds(par.EP, par.EP*par.ExpertTP() > g)
	}
	o.CPCollectiveSeconds = float64(o.Layers*CPCollectivesPerLayer) * p.CollectiveLatencySeconds(cpDegree, cpDegree*par.TP > g)
	o.ThetaSeconds = o.LaunchSeconds + o.PipelineP2PSeconds + o.MoECollectiveSeconds + o.CPCollectiveSeconds

	b := float64(blockTokens)
	perSquare := 1/c.AttentionEfficiency(false, b) + m.AttentionBwdFactor()/c.AttentionEfficiency(true, b)
	o.CSecondsPerSquareToken = float64(o.Layers) * m.AttentionFwdFLOPsPerSquareToken() * perSquare /
		(float64(par.TP) * p.TensorPeak(false))
	o.RatioSquareTokens = o.ThetaSeconds / o.CSecondsPerSquareToken
	return o
}

// OverheadRatio is Overhead(cpDegree, blockTokens).RatioSquareTokens: HyDra's θ/c
// in tokens².
func (c *Compute) OverheadRatio(cpDegree, blockTokens int) float64 {
	return c.Overhead(cpDegree, blockTokens).RatioSquareTokens
}
