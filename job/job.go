package job

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Limits that keep a typo from exhausting memory or time. A scenario beyond them is
// refused with the limit named instead of being attempted.
const (
	// MaxGPUs bounds the simulated cluster size (the paper's largest is 40K).
	MaxGPUs = 1 << 20
	// MaxGPUsPerNode bounds the NVLink domain (GB200 NVL72 is 72; NVL576 is 576).
	MaxGPUsPerNode = 1024
	// MaxTP bounds tensor parallelism, which must stay inside one node.
	MaxTP = 64
	// MaxPP bounds the number of pipeline stages.
	MaxPP = 256
	// MaxVPP bounds the number of virtual pipeline chunks per stage.
	MaxVPP = 64
	// MaxBudgetTokens bounds the per-rank token budget B (16Mi tokens).
	MaxBudgetTokens = 1 << 24
	// MaxContextTokens bounds the training context (32Mi tokens; ByteScale's
	// largest published context is 2M).
	MaxContextTokens = 1 << 25
)

// Cluster is the hardware: which GPU profile, how many GPUs, and how many share an
// NVLink node. A cluster of one kind names it in GPU; a mixed cluster lists its
// kinds in Pools instead (see Pool) and leaves GPU empty, with GPUs their sum.
type Cluster struct {
	// GPU names the calibration profile of the GPU kind (e.g. "H20", "H800");
	// empty when Pools is set.
	GPU string `toml:"gpu"`
	// GPUs is the total number of GPUs in the job.
	GPUs int `toml:"gpus"`
	// GPUsPerNode is how many GPUs share one NVLink domain.
	GPUsPerNode int `toml:"gpus_per_node"`
	// Pools, when set, makes the cluster mixed: one pool per GPU kind, in the
	// order written, which is the order of the ranks (see Pool).
	Pools []Pool `toml:"pools"`
	// Fabric is the scale-out network the nodes hang off (zero fields take
	// the defaults of DefaultFabric).
	Fabric
}

// Fabric is the scale-out network of a cluster: NICs per node, the
// rail-optimised leaf switches that a group of nodes shares (one leaf per
// rail), and the spine above them with its oversubscription. Zero fields
// mean the defaults (DefaultFabric).
type Fabric struct {
	// NICsPerNode is the scale-out NICs of a node (0: one per GPU). It must
	// divide gpus_per_node: GPUs share NICs evenly.
	NICsPerNode int `toml:"nics_per_node"`
	// NodesPerLeaf is how many nodes one rail's leaf switch connects (a
	// scalable unit); traffic between nodes of different leaf groups
	// crosses the spine (0: DefaultNodesPerLeaf).
	NodesPerLeaf int `toml:"nodes_per_leaf"`
	// SpineOversubscription is the ratio of a leaf's downlink to its uplink
	// bandwidth: 1 is non-blocking, 2 gives the spine half the leaf's
	// bandwidth (0: DefaultSpineOversubscription).
	SpineOversubscription float64 `toml:"spine_oversubscription"`
}

// The fabric defaults: NVIDIA's reference designs for 8-GPU HGX/DGX nodes,
// which every shipped GPU profile describes.
const (
	// DefaultNodesPerLeaf is one scalable unit of the DGX SuperPOD H100
	// reference architecture: 32 nodes, their NIC i all on rail i's leaf
	// switch (docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest:
	// "a modular architecture based on SUs of 32 DGX H100 systems"; NVIDIA HGX
	// AI Factory RA, docs.nvidia.com/reference-architectures/hgx-ai-factory-h100-h200-b200:
	// a rail-optimized spine-leaf fabric at 32-128 nodes).
	DefaultNodesPerLeaf = 32
	// DefaultSpineOversubscription is a non-blocking spine: the SuperPOD's
	// fat tree has as many leaf-spine cables as node-leaf cables (its B200
	// RA's component table: 512 and 512 at 2 SUs), and Meta's RoCE AI Zone
	// is non-blocking inside the zone (Gangidi et al., "RDMA over Ethernet
	// for Distributed Training at Meta Scale", SIGCOMM'24).
	DefaultSpineOversubscription = 1.0
	// MaxSpineOversubscription bounds cluster.spine_oversubscription.
	MaxSpineOversubscription = 64.0
)

// Resolved returns the fabric with its zero fields replaced by the
// defaults for nodes of gpusPerNode GPUs (one NIC per GPU).
func (f Fabric) Resolved(gpusPerNode int) Fabric {
	if f.NICsPerNode == 0 {
		f.NICsPerNode = gpusPerNode
	}
	if f.NodesPerLeaf == 0 {
		f.NodesPerLeaf = DefaultNodesPerLeaf
	}
	if f.SpineOversubscription == 0 {
		f.SpineOversubscription = DefaultSpineOversubscription
	}
	return f
}

// Validate checks the fabric's keys for nodes of gpusPerNode GPUs: nics
// per node in [0, gpus_per_node] dividing it, nodes per leaf in
// [0, MaxGPUs], the oversubscription 0 or in [1, MaxSpineOversubscription].
func (f Fabric) Validate(gpusPerNode int) error {
	var errs []error
	if f.NICsPerNode < 0 || (gpusPerNode >= 1 && (f.NICsPerNode > gpusPerNode || (f.NICsPerNode > 0 && gpusPerNode%f.NICsPerNode != 0))) {
		errs = append(errs, fieldErr("cluster.nics_per_node", f.NICsPerNode, "must divide cluster.gpus_per_node (%d) (0: one NIC per GPU)", gpusPerNode))
	}
	if f.NodesPerLeaf < 0 || f.NodesPerLeaf > MaxGPUs {
		errs = append(errs, fieldErr("cluster.nodes_per_leaf", f.NodesPerLeaf, "must be in [1, %d] (0: %d)", MaxGPUs, DefaultNodesPerLeaf))
	}
	if o := f.SpineOversubscription; o != 0 && !(o >= 1 && o <= MaxSpineOversubscription) {
		errs = append(errs, fieldErr("cluster.spine_oversubscription", o, "must be in [1, %g] (0: %g, non-blocking)", MaxSpineOversubscription, DefaultSpineOversubscription))
	}
	return errors.Join(errs...)
}

// RecomputeGranularity is how much of a transformer layer's forward pass is
// run again in its backward pass instead of keeping its activations
// (Megatron-LM's --recompute-granularity).
type RecomputeGranularity string

const (
	// RecomputeNone keeps every activation; the empty value means it too.
	RecomputeNone RecomputeGranularity = "none"
	// RecomputeSelective runs the attention core (scores, softmax, dropout,
	// the weighted sum of values) again in the backward pass (Korthikanti et
	// al. 2022, "Reducing Activation Recomputation in Large Transformer
	// Models", §5).
	RecomputeSelective RecomputeGranularity = "selective"
	// RecomputeFull runs each layer's whole forward pass again in its backward
	// pass, keeping only the layer's input (Megatron-LM's full, uniform
	// recomputation of every layer).
	RecomputeFull RecomputeGranularity = "full"
)

// GradSync is how data-parallel replicas synchronise gradients at the end of
// an iteration.
type GradSync string

const (
	// GradReduceScatter is the distributed optimizer (ZeRO-1): gradients are
	// reduce-scattered, each replica updates its 1/DP shard and the updated
	// parameters are all-gathered. The empty value means it too.
	GradReduceScatter GradSync = "reduce-scatter"
	// GradAllReduce all-reduces the gradients and every replica runs the whole
	// optimizer step on its parameters (Megatron-LM before the distributed
	// optimizer, e.g. Narayanan et al. SC'21).
	GradAllReduce GradSync = "all-reduce"
	// GradFSDP is fully sharded data parallelism that keeps the gathered
	// parameters from the forward to the backward (Llama 3 §3.3.2: "we do
	// not reshard after forward"; torchtitan's FSDP2 under pipeline
	// parallelism): each layer's parameters are all-gathered once an
	// iteration ahead of its first forward, its FP32 gradients
	// reduce-scattered once, as the last microbatch's backward produces
	// them, both overlapped with compute layer by layer; the optimizer steps
	// the GPU's 1/G shard.
	GradFSDP GradSync = "fsdp"
	// GradFSDPReshard is FSDP that frees the gathered parameters after each
	// layer's forward (ZeRO-3; torchtitan's FSDP2 without pipeline
	// parallelism): every microbatch all-gathers each layer's parameters in
	// the forward and again in the backward and reduce-scatters its FP32
	// gradients, each overlapped with the neighbouring layers' compute.
	GradFSDPReshard GradSync = "fsdp-reshard"
)

// Sharded reports whether the mode shards the optimizer states over the
// pool (everything but GradAllReduce).
func (g GradSync) Sharded() bool { return g != GradAllReduce }

// FSDP reports whether the mode is one of the FSDP ones.
func (g GradSync) FSDP() bool { return g == GradFSDP || g == GradFSDPReshard }

// Parallel is the fixed part of the parallel layout (tp, pp, vpp, ep) plus the
// per-rank token budget; context and data parallelism are left to the DCP policy,
// which cuts CP groups out of the hybrid data-parallel (HDP) pool.
type Parallel struct {
	// TP is the tensor-parallel degree (inside one node).
	TP int `toml:"tp"`
	// PP is the number of pipeline stages.
	PP int `toml:"pp"`
	// VPP is the number of virtual pipeline chunks per stage (interleaved 1F1B); 1
	// means plain 1F1B.
	VPP int `toml:"vpp"`
	// EP is the expert-parallel degree (Megatron's
	// --expert-model-parallel-size): the GPUs of one expert-TP index that
	// split the routed experts. An EP group spans EPRanks() consecutive HDP
	// ranks, an aligned block of the pool.
	EP int `toml:"ep"`
	// ETP is the expert tensor-parallel degree (Megatron's
	// --expert-tensor-parallel-size): the GPUs that split each routed
	// expert's FFN. 0 means TP (Megatron-Core's default before its MoE
	// parallel folding). Below TP, the MoE layers re-partition the tp·G GPUs
	// of a stage into expert groups of ETP GPUs (MoE parallel folding; Liu
	// et al. 2025, arxiv.org/abs/2504.14960): EP·ETP must be a multiple of
	// TP.
	ETP int `toml:"etp"`
	// BudgetTokens is B, the most tokens one rank may hold in one microbatch.
	BudgetTokens int `toml:"budget_tokens"`
	// BudgetAuto says B is the largest budget whose peak memory fits
	// (scenarios' budget_tokens = "auto", memory.Model.AutoBudgetTokens):
	// BudgetTokens is 0 until the scenario resolves it.
	BudgetAuto bool `toml:"-"`
	// FirstStageLayers, when positive, is the layer count of the first pipeline
	// stage (Megatron's --decoder-first-pipeline-num-layers); 0 means an even share.
	FirstStageLayers int `toml:"first_stage_layers"`
	// LastStageLayers, when positive, is the layer count of the last pipeline stage
	// (Megatron's --decoder-last-pipeline-num-layers); 0 means an even share.
	LastStageLayers int `toml:"last_stage_layers"`
	// PipelineLayout, when set, gives the layers of every virtual pipeline
	// stage in Megatron's virtual order, comma-separated (virtual stage
	// c·pp + s is model chunk c of stage s; pp·vpp entries summing to the
	// model's layers, each stage at least one layer; a chunk of 0 holds only
	// the embedding or the loss, as Llama 3's first and last chunks do),
	// e.g. "7,8,8,8,8,8,8,7": Megatron-Core's
	// pipeline_model_parallel_layout, or what
	// --account-for-embedding-in-pipeline-split and
	// --account-for-loss-in-pipeline-split make of an uneven split. A stage's
	// layers are numbered contiguously (stage 0 first), its chunks in order
	// within it; layers differ only dense or MoE, so the numbering changes no
	// cost while the dense layers fit in the first virtual stage. It excludes
	// FirstStageLayers and LastStageLayers. (A string keeps Parallel
	// comparable.)
	PipelineLayout string `toml:"pipeline_layout"`
	// SequenceParallel splits a layer's norms, dropouts and residual adds over
	// the TP ranks by sequence and exchanges activations with all-gathers and
	// reduce-scatters (Megatron-LM's --sequence-parallel); false keeps them
	// whole on every TP rank and all-reduces instead (Megatron-LM's default).
	// Scenarios default to true. It changes nothing at tp = 1.
	SequenceParallel bool `toml:"sequence_parallel"`
	// TPCommOverlap overlaps the TP collectives (sequence parallelism's
	// all-gathers and reduce-scatters) with the GEMMs that produce or consume
	// them (Megatron-LM's --tp-comm-overlap, Transformer Engine's
	// userbuffers); false exposes them, as Megatron-LM did in 2022.
	TPCommOverlap bool `toml:"tp_comm_overlap"`
	// OverlapGradReduce reduce-scatters each model chunk's gradients during
	// the last microbatch's backward, in buckets, instead of after it
	// (Megatron-LM's --overlap-grad-reduce); OverlapParamGather all-gathers
	// the updated parameters during the next iteration's forward
	// (--overlap-param-gather). Both need the distributed optimizer
	// (GradReduceScatter) for the gather; the reduce overlaps either way.
	OverlapGradReduce  bool `toml:"overlap_grad_reduce"`
	OverlapParamGather bool `toml:"overlap_param_gather"`
	// GradReduceFP32 reduces the data-parallel gradients in FP32 (4 bytes an
	// element) instead of BF16 (Megatron-LM's default without
	// --grad-reduce-in-bf16, NeMo 2's bf16_mixed); FSDP always reduces in
	// FP32.
	GradReduceFP32 bool `toml:"grad_reduce_fp32"`
	// OverlapMoEComm hides each MoE layer's dispatch and combine behind the
	// other microbatch's compute of the same layer (Megatron-Core's
	// --overlap-moe-expert-parallel-comm, combined 1F1B): a pass exposes
	// only what outlasts the layer's compute.
	OverlapMoEComm bool `toml:"overlap_moe_comm"`
	// MoEDispatcher is how MoE tokens cross the fabric: DispatchAllToAll
	// (or "", every routed copy; Megatron-Core's alltoall dispatcher) or
	// DispatchDeepEP (once per destination node, NVLink forwarding the
	// copies; DeepEP, Megatron-Core's flex dispatcher).
	MoEDispatcher MoEDispatcher `toml:"moe_dispatcher"`
	// MoECapacityFactor, when positive, gives every expert a capacity of
	// c·(tokens·top_k/experts) rows, padded to it (Megatron-Core's
	// --moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity):
	// under the uniform routing priced, the expert GEMMs, their activations
	// and the dispatch and combine carry c times the routed rows. 0 is
	// dropless (each expert the rows routed to it).
	MoECapacityFactor float64 `toml:"moe_capacity_factor"`
	// Recompute is the activation recomputation: RecomputeNone (or ""),
	// RecomputeSelective or RecomputeFull.
	Recompute RecomputeGranularity `toml:"recompute"`
	// RecomputeLayers, with RecomputeFull, recomputes only the first
	// RecomputeLayers layers of every model chunk (Megatron-LM's
	// --recompute-method block --recompute-num-layers N, per virtual
	// pipeline stage); the others keep their activations. 0 recomputes every
	// layer (--recompute-method uniform --recompute-num-layers 1).
	RecomputeLayers int `toml:"recompute_layers"`
	// GradSync is the data-parallel gradient synchronisation:
	// GradReduceScatter (or "", the distributed optimizer) or GradAllReduce.
	GradSync GradSync `toml:"grad_sync"`
	// Precision is the number format of the layers' GEMMs: PrecisionBF16 (or
	// "") or PrecisionFP8.
	Precision Precision `toml:"precision"`
}

// MoEDispatcher is how an MoE layer's dispatch and combine cross nodes.
type MoEDispatcher string

const (
	// DispatchAllToAll sends every routed copy of a token to its expert's
	// GPU (NCCL all-to-all; the empty value means it too).
	DispatchAllToAll MoEDispatcher = "alltoall"
	// DispatchDeepEP sends a token across the fabric once per node it is
	// routed to and forwards it over NVLink inside the node (DeepEP's
	// internode kernels; DeepSeek-V3 §3.2.2).
	DispatchDeepEP MoEDispatcher = "deepep"
)

// Precision is the number format a job trains its GEMMs in.
type Precision string

const (
	// PrecisionBF16 runs every GEMM in BF16 (the empty value means it too).
	PrecisionBF16 Precision = "bf16"
	// PrecisionFP8 is Transformer Engine's FP8 recipe as Megatron-LM runs it
	// (--fp8-format): every linear layer's GEMMs (forward, data and weight
	// gradients) in FP8 E4M3 on the FP8 tensor cores with BF16 outputs, their
	// inputs cast to FP8 (and transposed) per GEMM, the FP8 inputs kept for the
	// backward, FP8 copies of the weights beside the BF16 ones; core attention,
	// the MoE router, the LM head, norms and the optimizer stay BF16/FP32, the
	// components DeepSeek-V3 (arxiv.org/abs/2412.19437 §3.3.1) keeps at higher
	// precision. The MoE dispatch goes in FP8 (its tokens are the experts' FP8
	// inputs), the combine in BF16.
	PrecisionFP8 Precision = "fp8"
	// PrecisionMXFP8 is the same recipe with the OCP microscaling format
	// (E4M3 elements, one E8M0 scale per 32; Transformer Engine's MXFP8 on
	// Blackwell), which Blackwell's tensor cores run at the FP8 rate
	// (docs.nvidia.com/cutlass blackwell_functionality:
	// kind::mxf8f6f4.block_scale at 2x Hopper FP8, as kind::f8f6f4): priced
	// as PrecisionFP8.
	PrecisionMXFP8 Precision = "mxfp8"
)

// PrecisionMode is Precision with the empty value read as PrecisionBF16.
func (p Parallel) PrecisionMode() Precision {
	if p.Precision == "" {
		return PrecisionBF16
	}
	return p.Precision
}

// ExpertRowScale is the factor on the rows an MoE layer's experts process
// and exchange: MoECapacityFactor when positive, else 1 (dropless).
func (p Parallel) ExpertRowScale() float64 {
	if p.MoECapacityFactor > 0 {
		return p.MoECapacityFactor
	}
	return 1
}

// FP8 reports whether the job's GEMMs run in FP8.
func (p Parallel) FP8() bool { return p.Precision == PrecisionFP8 || p.Precision == PrecisionMXFP8 }

// RecomputeMode is Recompute with the empty value read as RecomputeNone.
func (p Parallel) RecomputeMode() RecomputeGranularity {
	if p.Recompute == "" {
		return RecomputeNone
	}
	return p.Recompute
}

// Recomputed reports whether the layer at 0-based position i of its model
// chunk runs its forward again in the backward pass: every layer under
// selective recomputation (its core attention) and full recomputation with
// RecomputeLayers 0, the first RecomputeLayers of each chunk otherwise, and
// none without recomputation.
func (p Parallel) Recomputed(i int) bool {
	switch p.RecomputeMode() {
	case RecomputeSelective:
		return true
	case RecomputeFull:
		return p.RecomputeLayers == 0 || i < p.RecomputeLayers
	}
	return false
}

// ExpertTP is ETP with 0 read as TP: the GPUs that split one routed expert.
func (p Parallel) ExpertTP() int {
	if p.ETP == 0 {
		return p.TP
	}
	return p.ETP
}

// EPRanks is the HDP ranks one EP group spans, EP·ExpertTP/TP: EP when
// ETP is TP (or 0); EP/TP·ETP when the MoE layers fold expert parallelism
// into the TP GPUs. It is 0 when the degrees are not positive.
func (p Parallel) EPRanks() int {
	if p.TP < 1 || p.EP < 1 || p.ExpertTP() < 1 {
		return 0
	}
	return p.EP * p.ExpertTP() / p.TP
}

// GradSyncMode is GradSync with the empty value read as GradReduceScatter.
func (p Parallel) GradSyncMode() GradSync {
	if p.GradSync == "" {
		return GradReduceScatter
	}
	return p.GradSync
}

// Job is one training job: a model on a cluster under a parallel layout at a
// context length.
type Job struct {
	// Model is the architecture being trained.
	Model Model
	// Cluster is the hardware.
	Cluster Cluster
	// Parallel is the fixed parallel layout and the per-rank token budget.
	Parallel Parallel
	// ContextTokens is the longest sequence a batch may contain.
	ContextTokens int
}

// PoolRanks is G = gpus / (tp·pp), the number of ranks per pipeline stage in the
// hybrid data-parallel pool that DCP policies cut CP groups from.
func (j Job) PoolRanks() int {
	d := j.Parallel.TP * j.Parallel.PP
	if d <= 0 {
		return 0
	}
	return j.Cluster.GPUs / d
}

// EPGroups is the number of expert-parallel groups per stage, G /
// EPRanks().
func (j Job) EPGroups() int {
	if j.Parallel.EPRanks() <= 0 {
		return 0
	}
	return j.PoolRanks() / j.Parallel.EPRanks()
}

// Nodes is the number of NVLink nodes, gpus / gpus_per_node.
func (j Job) Nodes() int {
	if j.Cluster.GPUsPerNode <= 0 {
		return 0
	}
	return j.Cluster.GPUs / j.Cluster.GPUsPerNode
}

// stageOverridesErr says that first_stage_layers and last_stage_layers leave
// too few of the model's layers for the pp stages: the larger override is
// blamed.
func stageOverridesErr(first, last, layers, pp int) error {
	key, val := "parallel.first_stage_layers", first
	if last > first {
		key, val = "parallel.last_stage_layers", last
	}
	others := pp
	if first > 0 {
		others--
	}
	if last > 0 {
		others--
	}
	return fieldErr(key, val,
		"the stage overrides exceed the layers: first_stage_layers = %d + last_stage_layers = %d must be at most model.layers (%d) less one layer for each of the other %d stage(s) (at most %d)",
		first, last, layers, others, layers-others)
}

// ChunkRange returns the layers [lo, hi) of model chunk c of a stage whose
// layers are [first, first+n): the c-th of vpp near-even slices
// [first + c·n/vpp, first + (c+1)·n/vpp), or with PipelineLayout the
// chunk's own count after those of the stage's earlier chunks.
// A layout the job does not validate panics.
func (p Parallel) ChunkRange(stage, first, n, c int) (lo, hi int) {
	if p.PipelineLayout == "" {
		v := max(p.VPP, 1)
		return first + c*n/v, first + (c+1)*n/v
	}
	layout, err := p.Layout()
	if err != nil {
		panic(fmt.Sprintf("job: ChunkRange on an unchecked layout: %v", err))
	}
	lo = first
	for k := range c {
		lo += layout[k*p.PP+stage]
	}
	return lo, lo + layout[c*p.PP+stage]
}

// Layout returns PipelineLayout's layer counts in virtual order (nil when
// it is empty), or an error naming the key when an entry is not an integer
// in [1, 1024].
func (p Parallel) Layout() ([]int, error) {
	if p.PipelineLayout == "" {
		return nil, nil
	}
	fields := strings.Split(p.PipelineLayout, ",")
	if len(fields) > MaxPP*MaxVPP {
		return nil, fieldErr("parallel.pipeline_layout", fmt.Sprintf("%q", p.PipelineLayout), "lists %d virtual stages: at most %d", len(fields), MaxPP*MaxVPP)
	}
	out := make([]int, len(fields))
	for i, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > maxModelLayers {
			return nil, fieldErr("parallel.pipeline_layout", fmt.Sprintf("%q", p.PipelineLayout), "entry %d is %q: every virtual stage holds 0 to %d layers", i, strings.TrimSpace(f), maxModelLayers)
		}
		out[i] = n
	}
	return out, nil
}

// PoolCapacityTokens is G·B, the most tokens one microbatch can hold across the
// pool; no plan can place a sequence longer than this.
func (j Job) PoolCapacityTokens() int64 {
	return int64(j.PoolRanks()) * int64(j.Parallel.BudgetTokens)
}

// StageLayers returns the number of transformer layers on each pipeline stage:
// FirstStageLayers and LastStageLayers where set, the rest split evenly. It
// returns an error (a *FieldError) when the layers cannot be split that way.
func (j Job) StageLayers() ([]int, error) {
	p := j.Parallel
	layers := j.Model.Layers
	if p.PP < 1 {
		return nil, fieldErr("parallel.pp", p.PP, "must be in [1, %d]", MaxPP)
	}
	stages := make([]int, p.PP)
	if p.PipelineLayout != "" {
		layout, err := p.checkLayout(layers)
		if err != nil {
			return nil, err
		}
		for v, n := range layout {
			stages[v%p.PP] += n
		}
		for st, n := range stages {
			if n == 0 {
				return nil, fieldErr("parallel.pipeline_layout", fmt.Sprintf("%q", p.PipelineLayout), "gives stage %d no layer: every stage holds at least one", st)
			}
		}
		return stages, nil
	}
	first, last := p.FirstStageLayers, p.LastStageLayers
	if p.PP == 1 {
		if first != 0 || last != 0 {
			return nil, fieldErr("parallel.first_stage_layers", first,
				"must be 0 (with last_stage_layers) when pp = 1")
		}
		stages[0] = layers
		return stages, nil
	}
	if first > layers || last > layers || first+last > layers {
		return nil, stageOverridesErr(first, last, layers, p.PP)
	}
	lo, hi := 0, p.PP // stages [lo, hi) share the remaining layers evenly
	rest := layers
	if first > 0 {
		stages[0] = first
		rest -= first
		lo = 1
	}
	if last > 0 {
		stages[p.PP-1] = last
		rest -= last
		hi = p.PP - 1
	}
	n := hi - lo
	switch {
	case rest < n:
		// The overrides leave fewer layers than the other stages.
		return nil, stageOverridesErr(first, last, layers, p.PP)
	case n == 0 && rest != 0:
		return nil, fieldErr("parallel.first_stage_layers", first,
			"first_stage_layers + last_stage_layers must equal model.layers (%d) when pp = 2", layers)
	case n > 0 && (rest <= 0 || rest%n != 0):
		key, val := "parallel.pp", any(p.PP)
		if first > 0 || last > 0 {
			key, val = "parallel.first_stage_layers", first
		}
		return nil, fieldErr(key, val,
			"the %d layers left after the first/last stage overrides must split evenly over %d stages; "+
				"pick pp dividing model.layers (%d) or set first_stage_layers/last_stage_layers", rest, n, layers)
	}
	for s := lo; s < hi; s++ {
		stages[s] = rest / n
	}
	return stages, nil
}

// checkLayout checks PipelineLayout against the layout and the model's
// layers and returns its counts.
func (p Parallel) checkLayout(layers int) ([]int, error) {
	layout, err := p.Layout()
	if err != nil {
		return nil, err
	}
	v := max(p.VPP, 1)
	val := fmt.Sprintf("%q", p.PipelineLayout)
	switch {
	case len(layout) != p.PP*v:
		return nil, fieldErr("parallel.pipeline_layout", val, "must list pp·vpp = %d·%d = %d virtual stages", p.PP, v, p.PP*v)
	case p.FirstStageLayers != 0 || p.LastStageLayers != 0:
		return nil, fieldErr("parallel.pipeline_layout", val, "excludes first_stage_layers and last_stage_layers (set them to 0)")
	}
	sum := 0
	for _, n := range layout {
		sum += n
	}
	if sum != layers {
		return nil, fieldErr("parallel.pipeline_layout", val, "sums to %d layers: must be model.layers (%d)", sum, layers)
	}
	return layout, nil
}

// Validate checks the job as a whole and returns every problem it finds (joined
// with errors.Join), each a *FieldError naming the scenario key and the allowed
// range; nil means the job is consistent.
func (j Job) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(j.Model.Validate())

	c, p := j.Cluster, j.Parallel
	switch {
	case c.Mixed():
		for _, e := range j.validatePools() {
			add(e)
		}
	case c.GPU == "":
		add(fieldErr("cluster.gpu", `""`, "must name a GPU profile (e.g. \"H20\", \"H800\")"))
	}
	add(checkRange("cluster.gpus", c.GPUs, 1, MaxGPUs))
	add(checkRange("cluster.gpus_per_node", c.GPUsPerNode, 1, MaxGPUsPerNode))
	add(c.Fabric.Validate(c.GPUsPerNode))
	if !c.Mixed() && c.GPUs > c.GPUsPerNode && c.GPUsPerNode >= 1 && c.GPUs%c.GPUsPerNode != 0 {
		add(fieldErr("cluster.gpus", c.GPUs, "must be a multiple of cluster.gpus_per_node (%d), or fit in one node", c.GPUsPerNode))
	}
	tpOK := checkRange("parallel.tp", p.TP, 1, MaxTP)
	add(tpOK)
	ppOK := checkRange("parallel.pp", p.PP, 1, MaxPP)
	add(ppOK)
	add(checkRange("parallel.vpp", p.VPP, 1, MaxVPP))
	epOK := checkRange("parallel.ep", p.EP, 1, MaxGPUs)
	add(epOK)
	if !p.BudgetAuto || p.BudgetTokens != 0 {
		add(checkRange("parallel.budget_tokens", p.BudgetTokens, 1, MaxBudgetTokens))
	}
	add(checkRange("context_tokens", j.ContextTokens, 1, MaxContextTokens))
	if p.FirstStageLayers < 0 {
		add(fieldErr("parallel.first_stage_layers", p.FirstStageLayers, "must be >= 0 (0 = even share)"))
	}
	if p.LastStageLayers < 0 {
		add(fieldErr("parallel.last_stage_layers", p.LastStageLayers, "must be >= 0 (0 = even share)"))
	}
	switch p.Recompute {
	case "", RecomputeNone, RecomputeSelective, RecomputeFull:
	default:
		add(fieldErr("parallel.recompute", fmt.Sprintf("%q", string(p.Recompute)), "must be %q, %q or %q",
			RecomputeNone, RecomputeSelective, RecomputeFull))
	}
	switch {
	case p.RecomputeLayers < 0 || p.RecomputeLayers > maxModelLayers:
		add(checkRange("parallel.recompute_layers", p.RecomputeLayers, 0, maxModelLayers))
	case p.RecomputeLayers > 0 && p.RecomputeMode() != RecomputeFull:
		add(fieldErr("parallel.recompute_layers", p.RecomputeLayers, "needs recompute = %q (it counts the layers of each model chunk fully recomputed); 0 otherwise", RecomputeFull))
	}
	switch p.GradSync {
	case "", GradReduceScatter, GradAllReduce, GradFSDP, GradFSDPReshard:
	default:
		add(fieldErr("parallel.grad_sync", fmt.Sprintf("%q", string(p.GradSync)), "must be %q, %q, %q or %q",
			GradReduceScatter, GradAllReduce, GradFSDP, GradFSDPReshard))
	}
	if c := p.MoECapacityFactor; c != 0 && !(c >= 0.1 && c <= 16) {
		add(fieldErr("parallel.moe_capacity_factor", c, "must be 0 (dropless) or in [0.1, 16]"))
	}
	switch p.MoEDispatcher {
	case "", DispatchAllToAll, DispatchDeepEP:
	default:
		add(fieldErr("parallel.moe_dispatcher", fmt.Sprintf("%q", string(p.MoEDispatcher)), "must be %q or %q", DispatchAllToAll, DispatchDeepEP))
	}
	if p.OverlapParamGather && p.GradSyncMode() == GradAllReduce {
		add(fieldErr("parallel.overlap_param_gather", true, "needs a sharded optimizer (grad_sync %q): with %q there is no parameter all-gather", GradReduceScatter, GradAllReduce))
	}
	if (p.OverlapGradReduce || p.OverlapParamGather) && p.GradSyncMode().FSDP() {
		add(fieldErr("parallel.overlap_grad_reduce", p.OverlapGradReduce, "must be false with grad_sync %q: FSDP always overlaps its collectives", p.GradSync))
	}
	if p.TPCommOverlap && p.TP > 1 && !p.SequenceParallel {
		add(fieldErr("parallel.tp_comm_overlap", true, "needs sequence_parallel = true (Megatron-LM's --tp-comm-overlap overlaps sequence parallelism's all-gathers and reduce-scatters)"))
	}
	switch p.Precision {
	case "", PrecisionBF16, PrecisionFP8, PrecisionMXFP8:
	default:
		add(fieldErr("parallel.precision", fmt.Sprintf("%q", string(p.Precision)), "must be %q, %q or %q", PrecisionBF16, PrecisionFP8, PrecisionMXFP8))
	}
	if len(errs) > 0 && (tpOK != nil || ppOK != nil || epOK != nil || c.GPUs < 1 || c.GPUsPerNode < 1) {
		// The derived checks below divide by these; report what we have.
		return errors.Join(errs...)
	}

	if p.TP > 1 {
		if c.GPUsPerNode%p.TP != 0 {
			add(fieldErr("parallel.tp", p.TP, "must divide cluster.gpus_per_node (%d): TP stays inside one NVLink node", c.GPUsPerNode))
		}
		if j.Model.QueryHeads > 0 && j.Model.QueryHeads%p.TP != 0 {
			add(fieldErr("parallel.tp", p.TP, "must divide model.query_heads (%d)", j.Model.QueryHeads))
		}
		if j.Model.KVHeads > 0 && j.Model.KVHeads%p.TP != 0 {
			add(fieldErr("parallel.tp", p.TP, "must divide model.kv_heads (%d), as Megatron requires num_query_groups %% tp == 0", j.Model.KVHeads))
		}
	}
	if c.GPUs%(p.TP*p.PP) != 0 {
		add(fieldErr("cluster.gpus", c.GPUs, "must be a multiple of tp*pp (%d*%d = %d)", p.TP, p.PP, p.TP*p.PP))
	}
	if p.VPP > 1 && p.PP < 2 {
		add(fieldErr("parallel.vpp", p.VPP, "must be 1 when pp = 1 (interleaving needs at least 2 stages)"))
	}
	if j.Model.Layers > 0 && p.PP > j.Model.Layers {
		add(fieldErr("parallel.pp", p.PP, "must be in [1, model.layers = %d]", j.Model.Layers))
	} else if j.Model.Layers > 0 {
		stages, err := j.StageLayers()
		add(err)
		if err == nil && p.VPP > 1 && p.PipelineLayout == "" {
			for s, n := range stages {
				if n%p.VPP != 0 {
					add(fieldErr("parallel.vpp", p.VPP, "must divide the layers of every stage (stage %d has %d)", s, n))
					break
				}
			}
		}
	}
	etpOK := true
	if p.ETP < 0 || p.ETP > MaxTP {
		add(checkRange("parallel.etp", p.ETP, 0, MaxTP))
		etpOK = false
	} else if p.ETP > 0 {
		switch {
		case c.GPUsPerNode%p.ETP != 0:
			add(fieldErr("parallel.etp", p.ETP, "must divide cluster.gpus_per_node (%d): expert TP stays inside one NVLink node", c.GPUsPerNode))
			etpOK = false
		case (p.EP*p.ETP)%p.TP != 0:
			add(fieldErr("parallel.etp", p.ETP, "ep·etp = %d·%d must be a multiple of tp (%d): an EP group spans whole HDP ranks", p.EP, p.ETP, p.TP))
			etpOK = false
		case j.Model.RoutedExperts == 0 && p.ETP != p.TP:
			add(fieldErr("parallel.etp", p.ETP, "must be 0 or tp (%d) for a dense model", p.TP))
		}
	}
	g := j.PoolRanks()
	if g >= 1 && etpOK {
		if epr := p.EPRanks(); epr > g || g%epr != 0 {
			if epr == p.EP {
				add(fieldErr("parallel.ep", p.EP, "must divide the HDP pool G = gpus/(tp*pp) = %d so EP groups are aligned blocks inside it", g))
			} else {
				add(fieldErr("parallel.ep", p.EP, "spans ep·etp/tp = %d HDP ranks: they must divide the HDP pool G = gpus/(tp*pp) = %d so EP groups are aligned blocks inside it", epr, g))
			}
		}
		if j.Model.RoutedExperts == 0 && p.EP != 1 {
			add(fieldErr("parallel.ep", p.EP, "must be 1 for a dense model"))
		}
		if j.Model.RoutedExperts > 0 && j.Model.RoutedExperts%p.EP != 0 {
			add(fieldErr("parallel.ep", p.EP, "must divide model.routed_experts (%d)", j.Model.RoutedExperts))
		}
		if p.BudgetTokens >= 1 && p.BudgetTokens <= MaxBudgetTokens && g <= MaxGPUs && j.ContextTokens >= 1 && int64(j.ContextTokens) > j.PoolCapacityTokens() {
			// In range, G·B <= 2^20·2^24 cannot overflow; out of range is reported above.
			add(fieldErr("context_tokens", j.ContextTokens,
				"must be <= G*B = %d*%d = %d, else no plan can hold the longest sequence", g, p.BudgetTokens, j.PoolCapacityTokens()))
		}
	}
	return errors.Join(errs...)
}

// String summarises the layout, e.g. "512×H20 (8/node) tp1 pp4 vpp1 ep8 G=128
// B=8192 ctx=262144", or "64×(32×H100-SXM + 32×A100-80G) (8/node) ..." for a
// mixed cluster.
func (j Job) String() string {
	gpu := j.Cluster.GPU
	if j.Cluster.Mixed() {
		gpu = "(" + j.Cluster.Label() + ")"
	}
	return fmt.Sprintf("%d×%s (%d/node) tp%d pp%d vpp%d ep%d G=%d B=%d ctx=%d",
		j.Cluster.GPUs, gpu, j.Cluster.GPUsPerNode, j.Parallel.TP, j.Parallel.PP,
		j.Parallel.VPP, j.Parallel.EP, j.PoolRanks(), j.Parallel.BudgetTokens, j.ContextTokens)
}
