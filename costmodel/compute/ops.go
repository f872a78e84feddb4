package compute

import (
	"fmt"
	"github.com/dcpsim/dcpsim/calib"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/job"
)

// OpKind classifies an Op by what bounds its time.
type OpKind int

const (
	// OpKindGEMM is a matrix product, priced by its shape (GEMMSeconds).
	OpKindGEMM OpKind = iota + 1
	// OpKindMemory is a memory-bound kernel, priced by the HBM bytes it moves
	// (MemorySeconds).
	OpKindMemory
	// OpKindLaunch is the per-kernel fixed cost of a layer's kernels:
	// KernelLaunchSeconds times the kernels it launches.
	OpKindLaunch
)

// String names the kind: "gemm", "memory" or "launch".
func (k OpKind) String() string {
	switch k {
	case OpKindGEMM:
		return "gemm"
	case OpKindMemory:
		return "memory"
	case OpKindLaunch:
		return "launch"
	}
	return fmt.Sprintf("OpKind(%d)", int(k))
}

// Names of the ops of a layer (LayerOps) and of the last stage's head
// (HeadOps). They are stable: callers select ops by them (AllToAllWindowOps).
const (
	// OpInputNorm is the RMSNorm before attention.
	OpInputNorm = "input_norm"
	// OpQProj is the query projection h → n_h·d_qk (MHA/GQA, and MLA without
	// query compression).
	OpQProj = "q_proj"
	// OpQDown, OpQNorm and OpQUp are MLA's compressed query path: h → q_lora,
	// the latent RMSNorm, q_lora → n_h·d_qk.
	OpQDown = "q_down"
	OpQNorm = "q_norm"
	OpQUp   = "q_up"
	// OpKProj and OpVProj are the MHA/GQA key and value projections.
	OpKProj = "k_proj"
	OpVProj = "v_proj"
	// OpKVDown, OpKVNorm and OpKVUp are MLA's key/value path: h → kv_lora +
	// d_rope (the latent and the shared RoPE key), the latent RMSNorm, kv_lora →
	// n_h·(d_nope + d_v).
	OpKVDown = "kv_down"
	OpKVNorm = "kv_norm"
	OpKVUp   = "kv_up"
	// OpQKNorm is the per-head RMSNorm of queries and keys (Qwen3, Hy3).
	OpQKNorm = "qk_norm"
	// OpRoPE applies rotary embeddings to the queries' and keys' RoPE parts.
	OpRoPE = "rope"
	// OpConcat joins MLA's no-RoPE and RoPE parts into per-head Q and K (the
	// shared RoPE key broadcast to every head).
	OpConcat = "concat"
	// OpGate is gated attention's gate projection h → n_h·d_v, and OpGateMul its
	// sigmoid-multiply with the attention output.
	OpGate    = "gate"
	OpGateMul = "gate_mul"
	// OpOProj is the output projection n_h·d_v → h.
	OpOProj = "o_proj"
	// OpAttentionResidual and OpFFNResidual are the residual adds of the two
	// blocks.
	OpAttentionResidual = "attention_residual"
	OpFFNResidual       = "ffn_residual"
	// OpPostAttentionNorm is the RMSNorm before the FFN.
	OpPostAttentionNorm = "post_attention_norm"
	// OpGateUp, OpSwiGLU and OpDown are a dense layer's SwiGLU MLP: h → 2f, the
	// activation, f → h.
	OpGateUp = "gate_up"
	OpSwiGLU = "swiglu"
	OpDown   = "down"
	// OpUp and OpGELU are a dense GELU MLP's up projection h → f and its
	// (bias-)GELU; its down projection is OpDown.
	OpUp   = "up"
	OpGELU = "gelu"
	// OpGeGLU is a GeGLU MLP's activation (after OpGateUp), OpSquaredReLU a
	// squared-ReLU MLP's (after OpUp).
	OpGeGLU       = "geglu"
	OpSquaredReLU = "squared_relu"
	// OpRouter is the MoE router GEMM h → E, OpRouterTopK its score function
	// and top-k selection.
	OpRouter     = "router"
	OpRouterTopK = "router_topk"
	// OpPermute gathers each token's k copies into expert order before the
	// dispatch; OpUnpermute weights and sums the k expert outputs after the
	// combine.
	OpPermute   = "permute"
	OpUnpermute = "unpermute"
	// OpExpertGateUp, OpExpertSwiGLU and OpExpertDown are the routed experts'
	// SwiGLU MLPs, one grouped GEMM over the rank's local experts each; a
	// model of another activation has "expert_" + its activation op
	// (ActivationOp) and, when not gated, OpExpertUp instead of
	// OpExpertGateUp.
	OpExpertGateUp = "expert_gate_up"
	OpExpertUp     = "expert_up"
	OpExpertSwiGLU = "expert_swiglu"
	OpExpertDown   = "expert_down"
	// OpSharedGateUp, OpSharedSwiGLU and OpSharedDown are the shared experts'
	// SwiGLU MLP (all shared experts as one of width shared_experts·f_s);
	// likewise "shared_" + the activation op and OpSharedUp for others.
	OpSharedGateUp = "shared_gate_up"
	OpSharedUp     = "shared_up"
	OpSharedSwiGLU = "shared_swiglu"
	OpSharedDown   = "shared_down"
	// OpLaunch is the per-kernel fixed cost of every kernel the layer (or the
	// head) launches, core attention's included.
	OpLaunch = "launch"
	// OpFP8Cast is, under FP8 training (job.PrecisionFP8), the casts of the
	// layer's FP8 GEMMs' inputs: one cast-transpose kernel per GEMM each
	// pass (forward the activation, backward the output gradient).
	OpFP8Cast = "fp8_cast"
	// OpFinalNorm, OpLMHead and OpCrossEntropy are the last stage's head: the
	// final RMSNorm, the h → V projection and the loss over the vocabulary.
	OpFinalNorm    = "final_norm"
	OpLMHead       = "lm_head"
	OpCrossEntropy = "cross_entropy"
)

// AllToAllWindowOps are the ops of a layer's attention that neither wait for
// nor feed the CP Q/K/V all-to-alls, so those all-to-alls can hide behind them
// (HyDra §5.2.2: "the KV down- and up-projections, RoPE and concatenation, and
// the gate projection"): for MLA the key/value path with its latent norm, RoPE
// and the concatenation, and the gate of gated attention. MHA/GQA layers have
// only RoPE and the gate of these. AllToAllWindowSeconds sums them.
var AllToAllWindowOps = []string{OpKVDown, OpKVNorm, OpKVUp, OpRoPE, OpConcat, OpGate}

// Attention kernels a layer launches, which OpLaunch counts although core
// attention is not an Op (its time depends on the rank's sequences): one
// forward kernel and FlashAttention-3's three backward kernels (preprocess,
// main, dQ conversion; github.com/Dao-AILab/flash-attention
// hopper/flash_bwd_launch_template.h).
const (
	AttentionFwdKernels = 1
	AttentionBwdKernels = 3
)

// GEMMShape is the per-GPU shape of Count equal GEMMs of m×k by k×n.
type GEMMShape struct {
	// M is the rows (tokens), N the output features, K the contraction.
	M, N, K float64
	// Count is the number of such GEMMs in the op (local experts of a grouped
	// GEMM); 1 otherwise.
	Count float64
}

// FP8CastBytesPerElement is the HBM traffic of casting one BF16 element to FP8
// with its transposed copy (Transformer Engine's fused cast_transpose, which
// Hopper's TN-only FP8 GEMMs need for the weight gradient): read 2 bytes,
// write 1 + 1.
const FP8CastBytesPerElement = 4

// FP8WeightCastBytesPerParam is the per-iteration recast of a BF16 weight to
// its FP8 copy and transpose (cached across the iteration's micro-batches, as
// Megatron-LM's is_first_microbatch lets Transformer Engine do).
const FP8WeightCastBytesPerParam = FP8CastBytesPerElement

// FLOPs is 2·m·n·k·Count.
func (g GEMMShape) FLOPs() float64 { return 2 * g.M * g.N * g.K * g.Count }

// Bytes is the BF16 bytes the GEMMs read and write at least once:
// 2·(m·k + k·n + m·n)·Count.
func (g GEMMShape) Bytes() float64 { return 2 * (g.M*g.K + g.K*g.N + g.M*g.N) * g.Count }

// Op is one operator of a layer (or of the head) on one GPU of a rank, for
// the rank's tokens: its forward and backward seconds and what they come from.
type Op struct {
	// Name is one of the Op* names.
	Name string
	// Kind says how the op is priced.
	Kind OpKind
	// FwdSeconds and BwdSeconds are the op's time in the forward and backward
	// pass, on one GPU.
	FwdSeconds, BwdSeconds float64
	// Shape is a GEMM op's per-GPU shape (zero for other kinds).
	Shape GEMMShape
	// FwdBytes and BwdBytes are a memory-bound op's HBM bytes per GPU in each
	// pass (zero for other kinds).
	FwdBytes, BwdBytes float64
	// FwdKernels and BwdKernels are the kernels the op launches in each pass
	// (for OpLaunch, the layer's total, core attention's included).
	FwdKernels, BwdKernels int
}

// GEMMSeconds is the time of the GEMMs of shape g on one GPU, a roofline of
// compute and memory:
//
//	max(2·m·n·k / (peak·η_gemm(GEMMEffectiveSize(m, n, k))),
//	    2·(m·k + k·n + m·n) / (HBM·memory_bound_efficiency)) · Count
//
// Compute wins for every GEMM of the presets at a few hundred tokens; the
// memory side bounds a GEMM with very few rows. The backward's two GEMMs
// (data and weight gradients) have permuted shapes, so the same efficiency and
// bytes: backward = 2 × forward. No work takes no time.
func (c *Compute) GEMMSeconds(g GEMMShape) float64 {
	if g.FLOPs() <= 0 {
		return 0
	}
	compute, memory := c.GEMMRoofline(g, false)
	return max(compute, memory)
}

// FP8GEMMSeconds is GEMMSeconds for an FP8 GEMM (E4M3 inputs, BF16 output):
//
//	max(2·m·n·k / (peak_fp8·η_gemm_fp8(GEMMEffectiveSize(m, n, k))),
//	    (m·k + k·n + 2·m·n) / (HBM·memory_bound_efficiency)) · Count
//
// It is 0 for no work and +Inf on a profile without FP8 (Profile.HasFP8;
// NewCompute refuses FP8 training on one).
func (c *Compute) FP8GEMMSeconds(g GEMMShape) float64 {
	if g.FLOPs() <= 0 {
		return 0
	}
	compute, memory := c.GEMMRoofline(g, true)
	return max(compute, memory)
}

// GEMMRoofline returns the two sides of the roofline GEMMSeconds (fp8:
// FP8GEMMSeconds) takes the larger of, for all Count GEMMs of g: the compute
// side at the peak and curve of the precision, and the memory side, its
// bytes (Bytes; FP8: m·k + k·n + 2·m·n) at HBM × memory_bound_efficiency. The FP8
// compute side is +Inf on a profile without FP8.
func (c *Compute) GEMMRoofline(g GEMMShape, fp8 bool) (compute, memory float64) {
	p := c.Profile
	x := calib.GEMMEffectiveSize(g.M, g.N, g.K)
	if !fp8 {
		compute = 2 * g.M * g.N * g.K / (p.TensorPeak(false) * p.GEMM.At(x))
		memory = 2 * (g.M*g.K + g.K*g.N + g.M*g.N) / c.memoryBytesPerSecond()
	} else {
		compute = math.Inf(1)
		if p.HasFP8() {
			compute = 2 * g.M * g.N * g.K / (p.TensorPeak(true) * p.GEMMFP8.At(x))
		}
		memory = (g.M*g.K + g.K*g.N + 2*g.M*g.N) / c.memoryBytesPerSecond()
	}
	// Per GEMM, then times Count: the order GEMMSeconds always used, so its
	// prices are the same to the bit (max(a·n, b·n) = max(a, b)·n).
	return compute * g.Count, memory * g.Count
}

// fp8GEMM reports whether the op of that name runs in FP8 under FP8 training:
// every linear layer but the router (and the LM head, which HeadOps prices).
func fp8GEMM(name string) bool { return name != OpRouter && name != OpLMHead }

// MemorySeconds is the time of a memory-bound kernel moving bytes HBM bytes on
// one GPU: bytes / (HBM·memory_bound_efficiency).
func (c *Compute) MemorySeconds(bytes float64) float64 {
	if bytes <= 0 {
		return 0
	}
	return bytes / c.memoryBytesPerSecond()
}

func (c *Compute) memoryBytesPerSecond() float64 {
	return c.Profile.HBMBytesPerSecond.Value * c.Profile.MemoryBoundEfficiency.Value
}

// opBuilder collects a layer's ops, appended to ops from index first on.
type opBuilder struct {
	c     *Compute
	ops   []Op
	first int
	// castFwd and castBwd are the bytes of the FP8 casts of the GEMMs added
	// so far, castsFwd and castsBwd their kernels: the OpFP8Cast of
	// fp8Cast.
	castFwd, castBwd   float64
	castsFwd, castsBwd int
}

// fusedInputCast reports whether the forward FP8 cast of the named GEMM's
// input is fused into the kernel that produces it, costing no pass of its
// own: Transformer Engine's LayerNormLinear and LayerNormMLP write the
// norm's output in FP8 (the QKV, MLA down/up, gate and FC1 inputs, the
// shared experts'), its activation kernels write FC2's input in FP8, and the
// FP8 MoE dispatch delivers the experts' inputs in FP8. The attention
// output feeding the output projection is cast on its own, as is every
// backward output gradient (a cast-transpose for the weight gradient).
func fusedInputCast(name string) bool { return name != OpOProj }

// gemm adds a GEMM op of shape (m, n, k) × count: one kernel forward, two
// backward (data and weight gradients), backward = 2 × forward. Under FP8
// training an FP8 GEMM (fp8GEMM) is priced by FP8GEMMSeconds and its casts
// are counted for fp8Cast: the m×k input forward unless fused
// (fusedInputCast), the m×n output gradient backward.
func (b *opBuilder) gemm(name string, m, n, k, count float64) {
	g := GEMMShape{M: m, N: n, K: k, Count: count}
	var f float64
	if b.c.Job.Parallel.FP8() && fp8GEMM(name) {
		f = b.c.FP8GEMMSeconds(g)
		if !fusedInputCast(name) {
			b.castFwd += FP8CastBytesPerElement * m * k * count
			b.castsFwd++
		}
		b.castBwd += FP8CastBytesPerElement * m * n * count
		b.castsBwd++
	} else {
		f = b.c.GEMMSeconds(g)
	}
	b.ops = append(b.ops, Op{Name: name, Kind: OpKindGEMM, FwdSeconds: f, BwdSeconds: 2 * f, Shape: g, FwdKernels: 1, BwdKernels: 2})
}

// fp8Cast adds the OpFP8Cast of the FP8 GEMMs added, if any: a memory-bound
// op of their cast bytes, one kernel per cast each pass.
func (b *opBuilder) fp8Cast() {
	if b.castsBwd > 0 {
		b.ops = append(b.ops, Op{Name: OpFP8Cast, Kind: OpKindMemory, FwdSeconds: b.c.MemorySeconds(b.castFwd), BwdSeconds: b.c.MemorySeconds(b.castBwd),
			FwdBytes: b.castFwd, BwdBytes: b.castBwd, FwdKernels: b.castsFwd, BwdKernels: b.castsBwd})
	}
}

// memory adds a memory-bound op moving fwd and bwd bytes, launching kernels
// kernels in each pass.
func (b *opBuilder) memory(name string, fwd, bwd float64, kernels int) {
	b.ops = append(b.ops, Op{Name: name, Kind: OpKindMemory, FwdSeconds: b.c.MemorySeconds(fwd), BwdSeconds: b.c.MemorySeconds(bwd),
		FwdBytes: fwd, BwdBytes: bwd, FwdKernels: kernels, BwdKernels: kernels})
}

// rmsNorm adds an RMSNorm over width elements for tokens tokens: forward reads
// x and writes y (2 bytes each), 4·width bytes per token; backward reads dy and
// x and writes dx, 6·width. (The FP32 reciprocal RMS, 4 bytes per token, and
// the weight are left out.)
func (b *opBuilder) rmsNorm(name string, width, tokens float64) {
	b.memory(name, 4*width*tokens, 6*width*tokens, 1)
}

// swiGLU adds a SwiGLU activation of width f for tokens tokens: forward reads
// the gate and up halves and writes the product, 6·f bytes per token; backward
// reads dy, gate and up and writes their two gradients, 10·f.
func (b *opBuilder) swiGLU(name string, f, tokens float64) {
	b.memory(name, 6*f*tokens, 10*f*tokens, 1)
}

// ActivationOp is the op name of activation a in an FFN whose op names
// begin with prefix ("" for a dense FFN, "expert_" or "shared_"): prefix +
// OpSwiGLU, OpGeGLU, OpGELU or OpSquaredReLU.
func ActivationOp(prefix string, a job.Activation) string {
	switch a {
	case job.GeGLU:
		return ffnOpName(prefix, OpGeGLU)
	case job.GELU:
		return ffnOpName(prefix, OpGELU)
	case job.SquaredReLU:
		return ffnOpName(prefix, OpSquaredReLU)
	}
	return ffnOpName(prefix, OpSwiGLU)
}

// ffnOpNames holds prefix + name of every FFN op name under the prefixes
// the builder uses, so that pricing a layer (many times an iteration)
// builds no string.
var ffnOpNames = func() map[[2]string]string {
	m := map[[2]string]string{}
	for _, p := range []string{"expert_", "shared_"} {
		for _, n := range []string{OpGateUp, OpUp, OpDown, OpSwiGLU, OpGeGLU, OpGELU, OpSquaredReLU} {
			m[[2]string{p, n}] = p + n
		}
	}
	return m
}()

// ffnOpName is prefix + name, from ffnOpNames when it is there.
func ffnOpName(prefix, name string) string {
	if prefix == "" {
		return name
	}
	if s, ok := ffnOpNames[[2]string{prefix, name}]; ok {
		return s
	}
	return prefix + name
}

// ffn adds an FFN of width f on tokens tokens (rows), count experts of it
// for a grouped GEMM (1 otherwise), with op names beginning with prefix
// ("", "expert_", "shared_"): under a gated activation the gate-and-up GEMM
// (rows, 2f, h), the activation (SwiGLU's bytes) on act activation rows and
// the down GEMM (rows, h, f); otherwise the up GEMM (rows, f, h), the
// activation (GELU's bytes, per row of act) and the down GEMM.
func (b *opBuilder) ffn(prefix string, a job.Activation, rows, act, f, h, count float64) {
	if a.Gated() {
		b.gemm(ffnOpName(prefix, OpGateUp), rows, 2*f, h, count)
		b.swiGLU(ActivationOp(prefix, a), f, act)
	} else {
		b.gemm(ffnOpName(prefix, OpUp), rows, f, h, count)
		b.memory(ActivationOp(prefix, a), 4*f*act, 6*f*act, 1)
	}
	b.gemm(ffnOpName(prefix, OpDown), rows, h, f, count)
}

// launch adds the OpLaunch of every op so far plus core attention's kernels
// (attention: whether the layer has them; AttentionKernel.Kernels).
func (b *opBuilder) launch(attention bool) {
	fk, bk := 0, 0
	if attention {
		fk, bk = b.c.Attention.Kernels()
	}
	for _, o := range b.ops[b.first:] {
		fk += o.FwdKernels
		bk += o.BwdKernels
	}
	gap := b.c.Profile.KernelLaunchSeconds.Value
	b.ops = append(b.ops, Op{Name: OpLaunch, Kind: OpKindLaunch, FwdSeconds: float64(fk) * gap, BwdSeconds: float64(bk) * gap,
		FwdKernels: fk, BwdKernels: bk})
}

// LayerOps returns the ops of the 0-based layer on one GPU of a rank holding
// tokens tokens, in forward order, core attention left out (AttentionFwdSeconds
// prices it per sequence) and OpLaunch last. With T = tokens, tp = TP and BF16
// activations, per GPU:
//
//	attention   input_norm (RMSNorm h on T/tp)
//	  MLA       q_proj (T, n_h·d_qk/tp, h), or q_down (T/tp, q_lora, h), q_norm
//	            (RMSNorm q_lora), q_up (T, n_h·d_qk/tp, q_lora); kv_down (T/tp,
//	            kv_lora + d_rope, h), kv_norm (RMSNorm kv_lora), kv_up (T,
//	            n_h·(d_nope + d_v)/tp, kv_lora); rope; concat
//	  MHA/GQA   q_proj (T, n_h·d_qk/tp, h), k_proj (T, n_kv·d_qk/tp, h), v_proj
//	            (T, n_kv·d_v/tp, h); qk_norm (Qwen3/Hy3); rope (none with learned
//	            positions)
//	            [core attention]
//	  gated     gate (T, n_h·d_v/tp, h), gate_mul
//	            o_proj (T, h, n_h·d_v/tp), attention_residual
//	dense FFN   post_attention_norm, gate_up (T, 2f/tp, h), swiglu, down (T, h, f/tp)
//	  GELU      post_attention_norm, up (T, f/tp, h), gelu, down (T, h, f/tp)
//	MoE FFN     post_attention_norm, router (T/tp, E, h), router_topk, permute,
//	            expert_gate_up (E/ep × (X, 2f_e/tp, h)), expert_swiglu,
//	            expert_down (E/ep × (X, h, f_e/tp)), unpermute, shared_gate_up
//	            (T, 2·s·f_s/tp, h), shared_swiglu, shared_down (T, h, s·f_s/tp)
//	            [s shared experts, if any]; X = ExpertTokens(T)
//	            ffn_residual, launch
//
// where (m, n, k) is a GEMM's per-GPU shape, priced by GEMMSeconds; tensor
// parallelism splits n (column-parallel) or k (row-parallel), and the
// projections it does not split (MLA's down-projections, the router) run on
// the GPU's sequence-parallel share T/tp, so every GPU does 1/tp of the rank's
// FLOPs, as before. Without sequence parallelism (Parallel.SequenceParallel
// false, tp > 1) every GPU runs those projections, the norms and the residual
// adds on all T tokens instead of T/tp, as Megatron-LM does. Memory-bound ops
// move, per token of the GPU's share T/tp (BF16, 2 bytes an element;
// forward / backward bytes):
//
//	RMSNorm of width w      4w / 6w   (read x, write y / read dy and x, write dx)
//	rope                    4w / 4w   (read and write the RoPE parts, w = n_h·d_rope +
//	                                   d_rope for MLA, (n_h + n_kv)·d_qk for MHA/GQA)
//	concat (MLA)            2·(3·n_h·d_qk + n_h·d_nope + d_rope) both ways (read the parts,
//	                                   write per-head Q and K; backward splits their gradients)
//	qk_norm                 RMSNorm of w = (n_h + n_kv)·d_qk
//	swiglu of width f       6f / 10f  (read gate and up, write / read dy, gate, up, write two)
//	gelu of width f         4f / 6f   (read x, write / read dy and x, write dx; per token of T)
//	gate_mul, w = n_h·d_v   6w / 10w  (the same shape as SwiGLU)
//	residual add            6h / 6h   (read two, write one)
//	router_topk             8E + 8k both ways (FP32 logits read, scores written, top-k
//	                                   weights and indices)
//	permute                 4kh / 4kh (read and write k copies of the token)
//	unpermute               2kh + 2h + 4k / 4kh + 2h (read k outputs and weights, write
//	                                   one / read dy and the outputs, write k gradients)
//	expert_swiglu           SwiGLU of f_e for each of the k copies
//
// each priced by MemorySeconds. Under FP8 training (job.PrecisionFP8) every
// GEMM but the router's runs at FP8GEMMSeconds, and OpFP8Cast (before OpLaunch)
// casts their inputs: FP8CastBytesPerElement per element of each GEMM's m×k
// input forward and of its m×n output gradient backward, one kernel per GEMM
// each pass. (The casts are priced unfused; Transformer Engine fuses the
// norms' into the norm, so the estimate is on the high side by at most the
// two norm outputs' casts.) Forward kernels: one per op, two for qk_norm and
// rope (q and k), core attention's (AttentionKernel.Kernels: one for
// FlashAttention); backward: two per GEMM (data and weight gradients), one per
// memory-bound op (two for qk_norm and rope), core attention's (three for
// FlashAttention). OpLaunch charges
// KernelLaunchSeconds for each, e.g. DeepSeek-V2-Lite's MoE layer: 23 forward
// and 34 backward kernels, its dense layer 16 and 24 (TestLayerKernels pins
// every preset). It panics if layer is out of range or tokens < 0.
func (c *Compute) LayerOps(layer, tokens int) []Op { return c.AppendLayerOps(nil, layer, tokens) }

// AppendLayerOps appends LayerOps(layer, tokens) to dst and returns the
// extended slice: a caller pricing many layers reuses one buffer
// (AppendLayerOps(buf[:0], ...)) instead of allocating the ops each time.
func (c *Compute) AppendLayerOps(dst []Op, layer, tokens int) []Op {
	if tokens < 0 {
		panic(fmt.Sprintf("compute: LayerOps: tokens = %d < 0", tokens))
	}
	m := c.Job.Model
	moe := m.IsMoELayer(layer) // panics on a bad layer
	t, tp := float64(tokens), float64(c.Job.Parallel.TP)
	ts := c.seqShare(t) // the GPU's sequence-parallel share (all T without SP)
	h, nh, nkv := float64(m.Hidden), float64(m.QueryHeads), float64(m.KVHeads)
	dqk, dv := float64(m.HeadDimQK), float64(m.HeadDimV)
	b := &opBuilder{c: c, ops: dst, first: len(dst)}

	b.rmsNorm(OpInputNorm, h, ts)
	if m.Attention == job.MLA {
		ql, kl := float64(m.QLoRARank), float64(m.KVLoRARank)
		nope, rope := float64(m.QKNopeHeadDim), float64(m.QKRopeHeadDim)
		if m.QLoRARank > 0 {
			b.gemm(OpQDown, ts, ql, h, 1)
			b.rmsNorm(OpQNorm, ql, ts)
			b.gemm(OpQUp, t, nh*dqk/tp, ql, 1)
		} else {
			b.gemm(OpQProj, t, nh*dqk/tp, h, 1)
		}
		b.gemm(OpKVDown, ts, kl+rope, h, 1)
		b.rmsNorm(OpKVNorm, kl, ts)
		b.gemm(OpKVUp, t, nh*(nope+dv)/tp, kl, 1)
		w := nh*rope + rope
		b.memory(OpRoPE, 4*w*ts, 4*w*ts, 2)
		cat := 2 * (3*nh*dqk + nh*nope + rope)
		b.memory(OpConcat, cat*ts, cat*ts, 1)
	} else {
		b.gemm(OpQProj, t, nh*dqk/tp, h, 1)
		b.gemm(OpKProj, t, nkv*dqk/tp, h, 1)
		b.gemm(OpVProj, t, nkv*dv/tp, h, 1)
		w := (nh + nkv) * dqk
		if m.QKNorm {
			b.memory(OpQKNorm, 4*w*ts, 6*w*ts, 2)
		}
		if !m.LearnedPositions {
			b.memory(OpRoPE, 4*w*ts, 4*w*ts, 2)
		}
	}
	if m.GatedAttention {
		b.gemm(OpGate, t, nh*dv/tp, h, 1)
		w := nh * dv
		b.memory(OpGateMul, 6*w*ts, 10*w*ts, 1)
	}
	b.gemm(OpOProj, t, h, nh*dv/tp, 1)
	b.memory(OpAttentionResidual, 6*h*ts, 6*h*ts, 1)

	b.rmsNorm(OpPostAttentionNorm, h, ts)
	if !moe {
		b.ffn("", m.Activation, t, t, float64(m.DenseFFN)/tp, h, 1)
	} else {
		e, k, fe := float64(m.RoutedExperts), float64(m.TopK), float64(m.ExpertFFN)
		local := e / float64(c.Job.Parallel.EP)
		x := c.ExpertTokens(tokens)
		b.gemm(OpRouter, ts, e, h, 1)
		b.memory(OpRouterTopK, (8*e+8*k)*ts, (8*e+8*k)*ts, 1)
		b.memory(OpPermute, 4*k*h*ts, 4*k*h*ts, 1)
		// Each expert's FFN is split over the expert TP GPUs; the activation
		// runs on the GPU's share of the k·T routed copies either way.
		width, rows := fe/tp, k*t
		if etp := c.Job.Parallel.ExpertTP(); etp != c.Job.Parallel.TP {
			width, rows = fe/float64(etp), k*t*float64(etp)/tp
		}
		if cf := c.Job.Parallel.MoECapacityFactor; cf > 0 {
			rows *= cf
		}
		b.ffn("expert_", m.Activation, x, rows, width, h, local)
		b.memory(OpUnpermute, (2*k*h+2*h+4*k)*ts, (4*k*h+2*h)*ts, 1)
		if m.SharedExperts > 0 {
			fs := float64(m.SharedExperts * m.SharedExpertFFN)
			b.ffn("shared_", m.Activation, t, t, fs/tp, h, 1)
		}
	}
	b.memory(OpFFNResidual, 6*h*ts, 6*h*ts, 1)
	b.fp8Cast()
	b.launch(true)
	return b.ops
}

// HeadOps returns the last stage's head on one GPU of a rank holding tokens
// tokens: final_norm (RMSNorm h on T/tp), lm_head (T, V/tp, h), cross_entropy
// and OpLaunch. The loss reads the BF16 logits and keeps the FP32 softmax for
// the backward (Megatron's vocab-parallel cross entropy), 2V + 4V bytes per
// token forward; the backward reads it and writes the logits' gradient, 4V +
// 2V; both on the GPU's V/tp share of the vocabulary for all T tokens. The head
// costs the same tied or not. It panics if tokens < 0.
func (c *Compute) HeadOps(tokens int) []Op { return c.AppendHeadOps(nil, tokens) }

// AppendHeadOps appends HeadOps(tokens) to dst and returns the extended slice
// (see AppendLayerOps).
func (c *Compute) AppendHeadOps(dst []Op, tokens int) []Op {
	if tokens < 0 {
		panic(fmt.Sprintf("compute: HeadOps: tokens = %d < 0", tokens))
	}
	m := c.Job.Model
	t, tp := float64(tokens), float64(c.Job.Parallel.TP)
	h, v := float64(m.Hidden), float64(m.Vocab)
	b := &opBuilder{c: c, ops: dst, first: len(dst)}
	b.rmsNorm(OpFinalNorm, h, c.seqShare(t))
	b.gemm(OpLMHead, t, v/tp, h, 1)
	b.memory(OpCrossEntropy, 6*v/tp*t, 6*v/tp*t, 1)
	b.launch(false)
	return b.ops
}

// seqShare is the tokens of a rank's t that one of its GPUs runs the
// layer's norms, residual adds and the other unsplit ops on: t/tp with
// sequence parallelism (or tp = 1), all t without it (every TP rank
// repeats them, as Megatron-LM does without --sequence-parallel).
func (c *Compute) seqShare(t float64) float64 {
	par := c.Job.Parallel
	if par.SequenceParallel || par.TP <= 1 {
		return t / float64(max(par.TP, 1))
	}
	return t
}

// OpsSeconds sums ops' forward and backward seconds, of every kind when kinds
// is empty, else of the kinds given.
func OpsSeconds(ops []Op, kinds ...OpKind) (fwd, bwd float64) {
	for _, o := range ops {
		if len(kinds) == 0 || slices.Contains(kinds, o.Kind) {
			fwd += o.FwdSeconds
			bwd += o.BwdSeconds
		}
	}
	return fwd, bwd
}

// LayerOpsSeconds is the 0-based layer's time outside core attention for
// tokens tokens: LayerOps summed, forward and backward.
func (c *Compute) LayerOpsSeconds(layer, tokens int) (fwd, bwd float64) {
	return OpsSeconds(c.LayerOps(layer, tokens))
}

// HeadSeconds is the last stage's head for tokens tokens: HeadOps summed,
// forward and backward.
func (c *Compute) HeadSeconds(tokens int) (fwd, bwd float64) {
	return OpsSeconds(c.HeadOps(tokens))
}

// AllToAllWindowSeconds is the time of the layer's AllToAllWindowOps for tokens
// tokens, forward and backward (their adjoints): the compute HyDra §5.2.2 hides
// the Q/K/V all-to-alls (and dQ/dK/dV) behind.
func (c *Compute) AllToAllWindowSeconds(layer, tokens int) (fwd, bwd float64) {
	for _, o := range c.LayerOps(layer, tokens) {
		if slices.Contains(AllToAllWindowOps, o.Name) {
			fwd += o.FwdSeconds
			bwd += o.BwdSeconds
		}
	}
	return fwd, bwd
}

// LayerKernels is the kernels the 0-based layer launches, forward and backward,
// core attention's included (the OpLaunch of LayerOps).
func (c *Compute) LayerKernels(layer int) (fwd, bwd int) {
	ops := c.LayerOps(layer, 0)
	l := ops[len(ops)-1]
	return l.FwdKernels, l.BwdKernels
}
