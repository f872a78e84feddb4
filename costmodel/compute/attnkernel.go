package compute

import (
	"fmt"
	"github.com/dcpsim/dcpsim/calib"
)

// AttentionKernel is the implementation of core attention (scores, softmax,
// the weighted sum of values) a Compute prices. The zero value is
// FlashAttention.
type AttentionKernel int

const (
	// FlashAttention is one fused kernel over the causal half of the scores,
	// priced by the profile's attention curves (AttentionFwdSeconds): the
	// FlashAttention-2/3 kernels of today's trainers. Forward one kernel,
	// backward three (FlashAttention-3's preprocess, main and dQ conversion).
	FlashAttention AttentionKernel = iota
	// MegatronSoftmax is Megatron-LM's core attention before FlashAttention
	// (the runs of Narayanan et al. SC'21 and Korthikanti et al. 2022):
	// per head, a batched GEMM of the full s×s scores QKᵀ, the fused causal
	// scale-mask-softmax, dropout on the probabilities (p = 0.1 in every
	// published Megatron-LM GPT run) and a batched GEMM of the probabilities
	// by V, every intermediate an s×s FP16 tensor in HBM. See
	// Compute.MegatronAttentionSeconds.
	MegatronSoftmax
	// FlashAttention2 is FlashAttention-2 on Hopper (PyTorch's flash SDPA
	// backend through 2024, e.g. torchtitan's runs): FlashAttention's
	// kernels at the profile's curves divided by FlashAttention-3's speed-up
	// over it, FA2FwdSlowdown and FA2BwdSlowdown.
	FlashAttention2
)

// FlashAttention-3's speed-ups over FlashAttention-2 on H100, the
// midpoints of the ranges its paper states (Shah et al. 2024,
// arxiv.org/abs/2407.08608: "1.5-2.0x faster than FlashAttention-2" in the
// forward pass, 1.5-1.75x in the backward): what FlashAttention2 divides the
// attention curves by (they are fitted to FlashAttention-3).
const (
	FA2FwdSlowdown = 1.75
	FA2BwdSlowdown = 1.625
)

// String names the kernel: "flash", "megatron-softmax" or "flash2".
func (k AttentionKernel) String() string {
	switch k {
	case FlashAttention:
		return "flash"
	case MegatronSoftmax:
		return "megatron-softmax"
	case FlashAttention2:
		return "flash2"
	}
	return fmt.Sprintf("AttentionKernel(%d)", int(k))
}

// Kernels is the kernels core attention launches per layer, forward and
// backward: FlashAttention 1 and 3 (AttentionFwdKernels,
// AttentionBwdKernels); MegatronSoftmax 4 (two batched GEMMs, the softmax,
// the dropout) and 6 (four batched GEMMs, the dropout's and the softmax's
// backward).
func (k AttentionKernel) Kernels() (fwd, bwd int) {
	if k == MegatronSoftmax {
		return 4, 6
	}
	return AttentionFwdKernels, AttentionBwdKernels
}

// Bytes per score element (one of the s² of a head) that MegatronSoftmax's
// memory-bound kernels move, FP16 scores and a one-byte dropout mask.
const (
	// MegatronSoftmaxFwdBytes: the fused causal softmax reads the unmasked
	// half of each row and writes the whole row (zeros above the diagonal),
	// 1 + 2 bytes (Megatron-LM megatron/fused_kernels/
	// scaled_upper_triang_masked_softmax.h, warp_forward: loads only
	// element_index < local_seq, stores every element); the dropout reads 2,
	// writes 2 and its mask 1.
	MegatronSoftmaxFwdBytes = 3 + 5
	// MegatronSoftmaxBwdBytes: the dropout's backward reads the gradient (2)
	// and the mask (1) and writes 2; the softmax's backward reads the
	// gradient and the output on the unmasked half (1 + 1) and writes every
	// element (2) (warp_backward, as above).
	MegatronSoftmaxBwdBytes = 5 + 4
)

// MegatronSoftmaxEfficiency is the fraction of HBM bandwidth at which
// MegatronSoftmax moves its bytes: the score and value GEMMs' operands and
// results (k = d is too thin for them to be compute-bound) and the softmax
// and dropout kernels. Fitted to Megatron's attention timed on an A100 (not
// to any run dcpsim validate checks); other parts take the same fraction
// (assumption: no published timing of this pre-FlashAttention kernel on
// them).
var MegatronSoftmaxEfficiency = calib.Const{
	Value: 0.611,
	Source: "fit:calib/testdata/megatron_attention_a100.csv (Dao et al. 2022, FlashAttention, arxiv.org/abs/2205.14135 Appendix E " +
		"Tables 15, 16, 18, 19, row Megatron: batch 16, 8 heads of 64, FP16, with and without dropout, forward and backward, " +
		"lengths 1024 and 2048, on an A100 40 GB; relative least squares, the per-kernel launch subtracted; TestMegatronSoftmaxFit)",
}

// megatronCore is Megatron's unfused core attention for one sequence of s
// tokens over heads heads on one GPU, its bytes moved at HBM·eta:
// scores (s, s, d_qk) and values (s, d_v, s) GEMMs, each the slower of its
// compute (the GEMM curve) and its bytes; the softmax (causal: read the
// unmasked half, write all; otherwise read and write all, backward reading
// two) and, with dropout, the dropout's 5 bytes per score each way.
func (c *Compute) megatronCore(s, heads, dqk, dv float64, causal, dropout bool, eta float64) (fwd, bwd float64) {
	if s <= 0 {
		return 0, 0
	}
	bw := c.Profile.HBMBytesPerSecond.Value * eta
	peak := c.Profile.TensorPeak(false)
	gemm := func(g GEMMShape) float64 {
		compute := g.FLOPs() / (peak * c.Profile.GEMM.At(calib.GEMMEffectiveSize(g.M, g.N, g.K)))
		return max(compute, g.Bytes()/bw)
	}
	mm := gemm(GEMMShape{M: s, N: s, K: dqk, Count: heads}) + gemm(GEMMShape{M: s, N: dv, K: s, Count: heads})
	fb, bb := 4.0, 6.0
	if causal {
		fb, bb = 3, 4
	}
	if dropout {
		fb, bb = fb+5, bb+5
	}
	elems := s * s * heads
	return mm + fb*elems/bw, 2*mm + bb*elems/bw
}

// MegatronAttentionSeconds is MegatronSoftmax's core attention for one rank's
// share of a sequence of seqTokens tokens over cpDegree ranks, on one GPU
// with its n_h/tp heads, forward and backward, every byte at HBM ×
// MegatronSoftmaxEfficiency:
//
//	scores   n_h/tp GEMMs (s, s, d_qk): QKᵀ, the full square (the causal mask
//	         is applied after it)
//	softmax  MegatronSoftmaxFwdBytes · s²·n_h/tp (causal softmax and dropout)
//	values   n_h/tp GEMMs (s, d_v, s): probabilities × V
//	backward the GEMMs twice (dQ, dK and dP, dV: permuted shapes) and
//	         MegatronSoftmaxBwdBytes · s²·n_h/tp
//
// a GEMM taking the slower of its compute (the profile's GEMM curve) and its
// bytes (with d = 128 and s = 2048 it writes s² FP16 scores for 2·s²·d
// FLOPs: memory-bound on an A100), both passes scaled by 1/cpDegree (the
// rank's rows of the scores). No work takes no time. It panics if seqTokens <
// 0 or cpDegree < 1.
func (c *Compute) MegatronAttentionSeconds(seqTokens, cpDegree int) (fwd, bwd float64) {
	if seqTokens < 0 || cpDegree < 1 {
		panic(fmt.Sprintf("compute: MegatronAttentionSeconds(%d, %d): need seqTokens >= 0 and cpDegree >= 1", seqTokens, cpDegree))
	}
	m := c.Job.Model
	heads := float64(m.QueryHeads) / float64(max(c.Job.Parallel.TP, 1))
	fwd, bwd = c.megatronCore(float64(seqTokens), heads, float64(m.HeadDimQK), float64(m.HeadDimV), true, true, MegatronSoftmaxEfficiency.Value)
	k := float64(cpDegree)
	return fwd / k, bwd / k
}
