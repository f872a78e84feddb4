// Package calib is dcpsim's cost model for computation: per-GPU calibration
// profiles (every constant with its provenance), the operator costs built from a
// profile and a model preset, and the fits that turn measurements into profile
// curves. Communication costs live in sim/network, priced by the same profile's
// link constants; calib knows nothing of policies or the engine. Every constant's
// source string names its evidence (datasheet, paper, repository file or fit).
//
// # Profiles
//
// calib/profiles/<GPU>.toml are embedded (ProfileNames, LookupProfile) for the GPU
// kinds scenarios name: A100-80G, B200, H100-SXM, H20, H20-3e, H200, H800. Every
// constant is a table {value, source}; the source is a costmodel.md reference
// ("[R1] ..."), a paper ("arxiv.org/abs/..."), "fit:calib/testdata/<file>.csv
// (<citation>)" for a curve fitted to a published table, or "assumption: <why>"
// (for example a curve shape transferred from the nearest part with its Max
// rescaled to this part's published point). ParseProfile is strict (unknown keys
// are errors with their line) and validates; WriteTOML writes the canonical form
// the embedded files are in. A test refits every "fit:" constant from its file.
//
// The curves are η(x) = Max·x/(x + Half), efficiency relative to a peak: GEMM and
// attention against PeakBF16FLOPs with x in tokens (GEMMEffectiveSize of the
// product; attention block length, at head dim 128 and 256), collectives against
// NVLinkBytesPerSecond (collective_intra: every collective inside a node) or
// NICBytesPerSecond (across nodes: collective_inter for reduce-scatter and
// all-gather, send_recv_inter for send/recv and pipeline transfers,
// all_to_all_inter for all-to-alls) with x the bytes per rank. A collective
// curve's Half already contains a fixed cost: S bytes take S/(B·Max) + Half/(B·Max)
// seconds, so a model that adds the base latencies on top counts latency twice at
// small sizes.
//
// # Planner costs
//
// CPython prices the elementary operations of a planner written in Python on
// the host CPU (a pool visit, a heapq operation, a sequence visit), which the
// simulator turns into the modelled planning stall. They describe the host and
// the interpreter, not a GPU, so they are stored once (planner.go), each with
// its source, and are not keys of a profile.
//
// # Compute costs
//
// NewCompute(profile, job) prices one job (see Compute): per rank (one TP group;
// times are per GPU, FLOPs/TP) and per layer, as a list of ops (LayerOps, with
// stable names such as OpKVDown, OpRoPE, OpGate):
//
//	GEMM op      max(2·m·n·k/(peak·η_gemm(x)), 2·(m·k+k·n+m·n)/(HBM·η_mem)) per GEMM of
//	             the op's per-GPU shape, x = GEMMEffectiveSize (the harmonic mean of m,
//	             n, k); backward 2 × forward (the gradients' shapes are permutations)
//	memory op    bytes/(HBM·η_mem), bytes per token stated per op (LayerOps), forward
//	             and backward
//	launch       kernel_launch_seconds × the kernels the layer launches (OpLaunch)
//	attn fwd     c·s²/k /(peak·η_fwd(block)),   c = n_h·(d_qk + d_v)  (job.Model)
//	attn bwd     r·c·s²/k /(peak·η_bwd(block)), r = (3·d_qk + 2·d_v)/(d_qk + d_v)
//	head         final norm, LM head GEMM (T, V/tp, h), cross entropy (HeadOps), last
//	             stage only
//	optimizer    params·28 bytes/(HBM·η_mem)
//
// with T the rank's tokens, s a sequence on a CP group of k ranks, block the
// length its kernel runs at (KernelBlockTokens) and η_mem the profile's
// memory_bound_efficiency. The GEMM ops are the attention projections (MLA's
// q or q_down/q_up, kv_down, kv_up; MHA/GQA's q, k, v), the gate of gated
// attention, o_proj, the dense SwiGLU (gate_up, down) or the MoE router, the
// routed experts' grouped GEMMs at ExpertTokens rows each and the shared
// experts. The attention FLOPs follow FlashAttention's convention (fwd
// 4·s²·n_h·d/2 causal, bwd 2.5×), the convention of the published TFLOPS the
// attention curves are fitted to, so those efficiencies apply unconverted;
// Megatron's MFU count (bwd 2×, 3× in all) would credit the same kernel time
// with 3/3.5 of the FLOPs (costmodel §2.1). Overhead derives HyDra's θ/c
// (sched/hydra's package doc, "Closed form") from the same constants.
//
// # Measurements
//
// A measurements CSV (ReadMeasurements, WriteMeasurements) has the header
// operation,shape,seconds,repeats; '#' lines are comments. Fit maps each row to a
// curve, a size x and the work that would take work/peak seconds at 100%:
//
//	gemm            shape m, n, k [, batch=1]       x = 3/(1/m+1/n+1/k)   FLOPs = 2·batch·m·n·k
//	                (x is GEMMEffectiveSize, the harmonic mean of the three sizes)
//	attention_fwd   shape seq, heads, head_dim      x = seq   FLOPs = 2·batch·heads·seq²·(d_qk+d_v)/2
//	                (rows of head_dim(_qk) 256 fit attention_fwd_d256, the others attention_fwd)
//	                (or head_dim_qk and head_dim_v)           (causal=1, the default;
//	                [, batch=1, kv_heads, causal=1])           causal=0 does not halve)
//	attention_bwd   as attention_fwd                x = seq   FLOPs = fwd·(3·d_qk+2·d_v)/(d_qk+d_v)
//	                (attention_bwd_d256 likewise)
//	<kind>_intra    shape bytes, ranks              x = bytes BusBytes(kind, false, ...), over NVLink
//	<kind>_inter    shape bytes, ranks,             x = bytes BusBytes(kind, true, ...), over the NIC
//	                gpus_per_node
//
// where <kind> is all_to_all, send_recv, all_reduce, all_gather or
// reduce_scatter and "bytes" is the per-rank buffer. kv_heads is recorded but does
// not change FLOPs. Unknown operations or shape keys are errors. FitCurve fits one
// curve by weighted least squares on 1/η against 1/x, bounded by Max <= 1 (a
// fit whose unbounded Max is above 1 is held at 1 with Half refitted;
// FitCurveBounded takes a lower, sourced ceiling and a per-call fixed time
// priced apart), and refuses ill-conditioned data; Fit fits every curve the
// rows cover onto a base profile, and
// FitDetermined does the same but keeps the base's values for the curves the
// rows cannot determine, listing them with the reason.
package calib

// Const is one calibration constant and where it came from: a datasheet URL, a
// paper table, a measurement file, or "fit:<file>". A constant without a source
// is a validation error.
type Const struct {
	// Value in the unit the field's name states.
	Value float64 `toml:"value"`
	// Source is the provenance of Value.
	Source string `toml:"source"`
}

// Curve is a saturating efficiency curve η(x) = Max · x / (x + Half): the fraction
// of peak a kernel or link reaches at size x (tokens for GEMMs and attention
// blocks, bytes for collectives). It is 0 at x = 0, Max/2 at x = Half, and tends
// to Max. 1/η is linear in 1/x (1/η = 1/Max + (Half/Max)/x), which is how Fit
// estimates it by least squares.
type Curve struct {
	// Max is the asymptotic efficiency, in (0, 1].
	Max Const `toml:"max"`
	// Half is the size at which the efficiency is Max/2 (tokens or bytes).
	Half Const `toml:"half"`
}

// At returns η(x); x <= 0 gives 0.
func (c Curve) At(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return c.Max.Value * x / (x + c.Half.Value)
}

// Profile is one GPU kind's calibration: peaks, memory, links, latencies and
// efficiency curves. Field names carry units; every Const carries a source.
type Profile struct {
	// Name is the GPU kind as scenarios name it (cluster.gpu), e.g. "H800".
	Name string `toml:"name"`
	// Description is one line about the part and the profile's origin.
	Description string `toml:"description"`

	// PeakBF16FLOPs is the dense BF16 tensor-core peak per GPU (FLOP/s).
	PeakBF16FLOPs Const `toml:"peak_bf16_flops"`
	// PeakFP8FLOPs is the dense FP8 (E4M3) tensor-core peak per GPU (FLOP/s),
	// what GEMMFP8 is measured against; optional: absent (zero, no source) for
	// a part without FP8 tensor cores, which then cannot train in FP8.
	PeakFP8FLOPs Const `toml:"peak_fp8_flops"`
	// HBMBytes is the device memory per GPU.
	HBMBytes Const `toml:"hbm_bytes"`
	// HBMBytesPerSecond is the memory bandwidth per GPU.
	HBMBytesPerSecond Const `toml:"hbm_bytes_per_second"`
	// GPUsPerNode is the size of the NVLink domain the profile's links describe.
	GPUsPerNode Const `toml:"gpus_per_node"`
	// NVLinkBytesPerSecond is the achieved unidirectional NVLink bandwidth per GPU.
	NVLinkBytesPerSecond Const `toml:"nvlink_bytes_per_second"`
	// NICBytesPerSecond is the achieved scale-out bandwidth per GPU (one NIC).
	NICBytesPerSecond Const `toml:"nic_bytes_per_second"`
	// HostToDeviceBytesPerSecond and DeviceToHostBytesPerSecond are the
	// achieved PCIe copy rates between a GPU and pinned host memory, one GPU
	// copying at a time: what activation offloading moves at (ByteScale §5.2
	// prices it by min(B_d2h, B_h2d)). Optional: a profile without them
	// cannot offload.
	HostToDeviceBytesPerSecond Const `toml:"host_to_device_bytes_per_second"`
	DeviceToHostBytesPerSecond Const `toml:"device_to_host_bytes_per_second"`
	// IntraBaseLatencySeconds and IntraHopLatencySeconds are the NCCL-style base
	// and per-hop latencies of a collective inside a node.
	IntraBaseLatencySeconds Const `toml:"intra_base_latency_seconds"`
	IntraHopLatencySeconds  Const `toml:"intra_hop_latency_seconds"`
	// InterBaseLatencySeconds and InterHopLatencySeconds are the same across nodes.
	InterBaseLatencySeconds Const `toml:"inter_base_latency_seconds"`
	InterHopLatencySeconds  Const `toml:"inter_hop_latency_seconds"`
	// InterP2PLatencySeconds is the latency of one point-to-point send/recv
	// between GPUs of different nodes (ring-attention steps, pipeline
	// transfers): NCCL's p2p path, cheaper than a many-peer collective's α.
	InterP2PLatencySeconds Const `toml:"inter_p2p_latency_seconds"`
	// KernelLaunchSeconds is the fixed cost of one kernel: its launch and
	// ramp, charged once per kernel a layer launches (OpLaunch), so the compute
	// curves are fitted with it subtracted (DefaultFitBounds).
	KernelLaunchSeconds Const `toml:"kernel_launch_seconds"`
	// MemoryBoundEfficiency is the fraction of HBMBytesPerSecond a memory-bound
	// kernel achieves (norms, RoPE, activations, permutes, the optimizer step,
	// and the memory side of a GEMM's roofline).
	MemoryBoundEfficiency Const `toml:"memory_bound_efficiency"`
	// SustainedEfficiency is the share of the GEMM and attention curves'
	// throughput the GPU sustains through a training run: the curves come
	// from short microbenchmarks (MAMF, FlashAttention's tables), while a
	// training job holds the tensor cores busy for hours under the power
	// limit. Optional: absent means 1 (TensorPeak).
	SustainedEfficiency Const `toml:"sustained_efficiency"`

	// GEMM is the GEMM efficiency vs the effective size of the product
	// (GEMMEffectiveSize, the harmonic mean of m, n and k).
	GEMM Curve `toml:"gemm"`
	// GEMMFP8 is the FP8 GEMM efficiency (E4M3 inputs, BF16 output, per-tensor
	// scaling as cuBLASLt runs Transformer Engine's GEMMs) against
	// PeakFP8FLOPs, vs the same effective size; optional, present exactly
	// when PeakFP8FLOPs is.
	GEMMFP8 Curve `toml:"gemm_fp8"`
	// AttentionFwd and AttentionBwd are the causal attention kernel efficiencies
	// vs the block length the kernel sees (tokens), at head dimension 128.
	AttentionFwd Curve `toml:"attention_fwd"`
	AttentionBwd Curve `toml:"attention_bwd"`
	// AttentionFwdD256 and AttentionBwdD256 are the same at head dimension 256;
	// a model's efficiency is interpolated linearly in d_qk between the two
	// (Compute.AttentionEfficiency).
	AttentionFwdD256 Curve `toml:"attention_fwd_d256"`
	AttentionBwdD256 Curve `toml:"attention_bwd_d256"`
	// AttentionFwdD192 and AttentionBwdD192 are the same at d_qk 192 (MLA's
	// 192/128); optional: when present, a model's efficiency is interpolated
	// piecewise through 128, 192 and 256, and when absent (no measurement at
	// 192; no embedded profile has one) between 128 and 256 alone.
	AttentionFwdD192 Curve `toml:"attention_fwd_d192"`
	AttentionBwdD192 Curve `toml:"attention_bwd_d192"`
	// CollectiveIntra is the bus-bandwidth efficiency of every collective
	// inside a node (NVLink) vs message bytes per rank.
	CollectiveIntra Curve `toml:"collective_intra"`
	// CollectiveInter is the NIC efficiency of ring collectives across nodes:
	// reduce-scatter, all-gather (and all-reduce, their sum), against the NIC
	// bytes of the hierarchical model (BusBytes).
	CollectiveInter Curve `toml:"collective_inter"`
	// SendRecvInter is the NIC efficiency of a point-to-point send/recv across
	// nodes: ring-attention steps and pipeline transfers.
	SendRecvInter Curve `toml:"send_recv_inter"`
	// AllToAllInter is the NIC efficiency of the off-node share of an
	// all-to-all (Ulysses, MoE dispatch and combine), which goes through one
	// NIC per GPU.
	AllToAllInter Curve `toml:"all_to_all_inter"`
	// AllToAllInterScale is A of the all-to-all's efficiency across k nodes,
	// η(k) = AllToAllInter.Max / (1 + A·log2(k/2)) for k > 2 (ScaleCurve, fitted
	// by FitScale to published measurements per node count); 0 keeps Max at
	// every scale.
	AllToAllInterScale Const `toml:"all_to_all_inter_scale"`
}
