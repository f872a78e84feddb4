// Package calib is dcpsim's cost model for computation: per-GPU calibration
// profiles (every constant with its provenance), the operator costs built from a
// profile and a model preset, and the fits that turn measurements into profile
// curves. Communication costs live in sim/network, priced by the same profile's
// link constants; calib knows nothing of policies or the engine.
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
	// IntraBaseLatencySeconds and IntraHopLatencySeconds are the NCCL-style base
	// and per-hop latencies of a collective inside a node.
	IntraBaseLatencySeconds Const `toml:"intra_base_latency_seconds"`
	IntraHopLatencySeconds  Const `toml:"intra_hop_latency_seconds"`
	// InterBaseLatencySeconds and InterHopLatencySeconds are the same across nodes.
	InterBaseLatencySeconds Const `toml:"inter_base_latency_seconds"`
	InterHopLatencySeconds  Const `toml:"inter_hop_latency_seconds"`
	// KernelLaunchSeconds is the fixed cost of one kernel launch.
	KernelLaunchSeconds Const `toml:"kernel_launch_seconds"`

	// GEMM is the GEMM efficiency vs tokens per rank.
	GEMM Curve `toml:"gemm"`
	// AttentionFwd and AttentionBwd are the causal attention kernel efficiencies
	// vs the block length the kernel sees (tokens).
	AttentionFwd Curve `toml:"attention_fwd"`
	AttentionBwd Curve `toml:"attention_bwd"`
	// CollectiveIntra and CollectiveInter are the bus-bandwidth efficiencies of
	// collectives vs message bytes per rank, inside a node and across nodes.
	CollectiveIntra Curve `toml:"collective_intra"`
	CollectiveInter Curve `toml:"collective_inter"`
}
