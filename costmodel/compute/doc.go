// Package compute prices computation for the cost model: one job's layers,
// attention, LM head and optimizer step on one GPU kind, from a calibration
// profile (calib) and a model preset (job). costmodel is its user, beside
// sim/network for communication; calib/kineto uses it to compare a trace's
// kernels with their prices.
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
// (the HyDra paper's per-microbatch cost c·Λ + θ) from the same constants.
package compute
