package calib

import "fmt"

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
)

// String names the kernel: "flash" or "megatron-softmax".
func (k AttentionKernel) String() string {
	switch k {
	case FlashAttention:
		return "flash"
	case MegatronSoftmax:
		return "megatron-softmax"
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

// MegatronAttentionSeconds is MegatronSoftmax's core attention for one rank's
// share of a sequence of seqTokens tokens over cpDegree ranks, on one GPU
// with its n_h/tp heads, forward and backward:
//
//	scores   n_h/tp GEMMs (s, s, d_qk): QKᵀ, the full square (the causal mask
//	         is applied after it)
//	softmax  MemorySeconds(MegatronSoftmaxFwdBytes · s²·n_h/tp)
//	values   n_h/tp GEMMs (s, d_v, s): probabilities × V
//	backward the GEMMs twice (GEMMSeconds' permuted shapes: dQ, dK and dP,
//	         dV) and MemorySeconds(MegatronSoftmaxBwdBytes · s²·n_h/tp)
//
// both scaled by 1/cpDegree (the rank's rows of the scores). The GEMMs run at
// the profile's GEMM curve by their shape: a score GEMM with d = 128 and s =
// 2048 has an effective size of 341 and is memory-bound on an A100 (it writes
// s² FP16 scores for 2·s²·d FLOPs). No work takes no time. It panics if
// seqTokens < 0 or cpDegree < 1.
func (c *Compute) MegatronAttentionSeconds(seqTokens, cpDegree int) (fwd, bwd float64) {
	if seqTokens < 0 || cpDegree < 1 {
		panic(fmt.Sprintf("calib: MegatronAttentionSeconds(%d, %d): need seqTokens >= 0 and cpDegree >= 1", seqTokens, cpDegree))
	}
	if seqTokens == 0 {
		return 0, 0
	}
	m := c.Job.Model
	s := float64(seqTokens)
	heads := float64(m.QueryHeads) / float64(max(c.Job.Parallel.TP, 1))
	scores := c.GEMMSeconds(GEMMShape{M: s, N: s, K: float64(m.HeadDimQK), Count: heads})
	values := c.GEMMSeconds(GEMMShape{M: s, N: float64(m.HeadDimV), K: s, Count: heads})
	elems := s * s * heads
	k := float64(cpDegree)
	fwd = (scores + values + c.MemorySeconds(MegatronSoftmaxFwdBytes*elems)) / k
	bwd = (2*(scores+values) + c.MemorySeconds(MegatronSoftmaxBwdBytes*elems)) / k
	return fwd, bwd
}
