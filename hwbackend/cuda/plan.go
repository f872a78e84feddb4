package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/hwbackend"
)

// Tile sizes of the NVRTC attention kernels (BM, BN and PAD in attentionSource).
const (
	attnBlock   = 64 // query rows per forward block, key rows per backward block
	attnPad     = 8  // BF16 elements of padding per shared-memory row
	fwdThreads  = 128
	bwdThreads  = 256
	dotThreads  = 256 // 8 rows (warps) per block
	elemThreads = 256 // fill and convert kernels
	// optInSharedBytes is the largest dynamic shared memory a block of sm_90
	// may opt into (227 KiB); the device's own limit is checked at run time.
	optInSharedBytes = 227 * 1024
)

// headDims is one (QK, V) head-dimension pair the kernels are compiled for.
type headDims struct{ qk, v int }

// supportedHeadDims lists the compiled pairs: 64, 128 and 192 (with V 128 or
// 192, as in MLA-style models).
var supportedHeadDims = []headDims{{64, 64}, {128, 128}, {192, 128}, {192, 192}}

func fwdKernelName(d headDims) string { return fmt.Sprintf("attn_fwd_%d_%d", d.qk, d.v) }
func bwdKernelName(d headDims) string { return fmt.Sprintf("attn_bwd_%d_%d", d.qk, d.v) }

// kernelNames lists every __global__ function attentionSource defines.
func kernelNames() []string {
	names := []string{"fill_bf16", "f32_to_bf16", "attn_bwd_dot"}
	for _, d := range supportedHeadDims {
		names = append(names, fwdKernelName(d), bwdKernelName(d))
	}
	return names
}

// fwdSharedBytes is the forward kernel's dynamic shared memory: Q, K and V tiles.
func fwdSharedBytes(d headDims) int {
	ldq, ldv := d.qk+attnPad, d.v+attnPad
	return 2 * (attnBlock*ldq + attnBlock*ldq + attnBlock*ldv)
}

// bwdSharedBytes is the backward kernel's: K, V, Q, dO, P and dS tiles plus
// the LSE and dsum rows.
func bwdSharedBytes(d headDims) int {
	ldq, ldv, ldp := d.qk+attnPad, d.v+attnPad, attnBlock+attnPad
	return 2*(2*attnBlock*ldq+2*attnBlock*ldv+2*attnBlock*ldp) + 4*2*attnBlock
}

// attentionPlan is one validated attention call and its launch geometry.
type attentionPlan struct {
	shape hwbackend.AttentionShape
	dims  headDims
	// blocks is the number of 64-row tiles per sequence (grid x).
	blocks int
	// scale is 1/sqrt(HeadDimQK); scaleLog2 folds in log2(e) for exp2.
	scale, scaleLog2 float32
}

// planAttention checks s against what the kernels support.
func planAttention(s hwbackend.AttentionShape) (attentionPlan, error) {
	var errs []error
	if s.Batch < 1 || s.SeqTokens < 1 || s.Heads < 1 || s.KVHeads < 1 {
		errs = append(errs, fmt.Errorf("batch %d, tokens %d, heads %d, kv heads %d must all be positive",
			s.Batch, s.SeqTokens, s.Heads, s.KVHeads))
	} else if s.Heads%s.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("heads %d is not a multiple of kv heads %d", s.Heads, s.KVHeads))
	}
	d := headDims{s.HeadDimQK, s.HeadDimV}
	if !slices.Contains(supportedHeadDims, d) {
		errs = append(errs, fmt.Errorf("head dims %d/%d not compiled (have 64/64, 128/128, 192/128, 192/192)",
			d.qk, d.v))
	}
	if s.Heads > 65535 || s.Batch > 65535 {
		errs = append(errs, fmt.Errorf("heads %d or batch %d above the grid limit 65535", s.Heads, s.Batch))
	}
	if s.SeqTokens > math.MaxInt32-attnBlock {
		errs = append(errs, fmt.Errorf("tokens %d above the kernels' 32-bit row index", s.SeqTokens))
	}
	if err := errors.Join(errs...); err != nil {
		return attentionPlan{}, fmt.Errorf("cuda: attention shape %+v: %w", s, err)
	}
	scale := 1 / math.Sqrt(float64(s.HeadDimQK))
	return attentionPlan{
		shape:     s,
		dims:      d,
		blocks:    (s.SeqTokens + attnBlock - 1) / attnBlock,
		scale:     float32(scale),
		scaleLog2: float32(scale * math.Log2E),
	}, nil
}

// Element counts of the attention tensors.
func (p attentionPlan) qElems() int64 { return p.rows(p.shape.Heads) * int64(p.dims.qk) }
func (p attentionPlan) kElems() int64 { return p.rows(p.shape.KVHeads) * int64(p.dims.qk) }
func (p attentionPlan) vElems() int64 { return p.rows(p.shape.KVHeads) * int64(p.dims.v) }
func (p attentionPlan) oElems() int64 { return p.rows(p.shape.Heads) * int64(p.dims.v) }

// rows is Batch·SeqTokens·heads: the rows of a [B][S][heads][D] tensor, also
// the length of an LSE or dsum vector when heads is Heads.
func (p attentionPlan) rows(heads int) int64 {
	return int64(p.shape.Batch) * int64(p.shape.SeqTokens) * int64(heads)
}

// checkGEMM validates a GEMM shape for cuBLAS's 32-bit dimensions.
func checkGEMM(s hwbackend.GEMMShape) error {
	if s.M < 1 || s.N < 1 || s.K < 1 || s.M > math.MaxInt32 || s.N > math.MaxInt32 || s.K > math.MaxInt32 {
		return fmt.Errorf("cuda: gemm shape %+v: dimensions must be in [1, 2^31)", s)
	}
	return nil
}

// checkRuns validates the warmup and repeat counts of a Backend call.
func checkRuns(warmups, repeats int) error {
	if warmups < 0 || repeats < 1 {
		return fmt.Errorf("cuda: warmups %d must be >= 0 and repeats %d >= 1", warmups, repeats)
	}
	return nil
}

// newTiming is the median of the timed runs' seconds (the mean of the two
// middle ones for an even count).
func newTiming(seconds []float64, warmups int) hwbackend.Timing {
	s := slices.Clone(seconds)
	slices.Sort(s)
	var median float64
	if n := len(s); n > 0 {
		median = s[n/2]
		if n%2 == 0 {
			median = (s[n/2-1] + s[n/2]) / 2
		}
	}
	return hwbackend.Timing{Seconds: median, Repeats: len(s), Warmups: warmups}
}

// ceilDiv is ⌈a/b⌉ for positive b.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// elemGrid is the grid of a grid-stride elementwise kernel over n elements.
func elemGrid(n int64) uint32 {
	return uint32(max(1, min(ceilDiv(n, elemThreads), 1<<16)))
}

// ncclVersionString renders NCCL's version code (major·10000+minor·100+patch
// since 2.9, major·1000+minor·100+patch before).
func ncclVersionString(code int) string {
	if code >= 20900 {
		return fmt.Sprintf("%d.%d.%d", code/10000, code/100%100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code/100%10, code%100)
}

// cudaVersionString renders a CUDA runtime or driver version (1000·major+10·minor).
func cudaVersionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// cublasVersionString renders cuBLAS's version (major·10000+minor·100+patch).
func cublasVersionString(v int) string {
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}
