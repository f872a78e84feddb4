package kineto

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
)

// Class is what a GPU kernel does, as far as its name (and, for collectives,
// its arguments) tells.
type Class int

// The classes, in the order reports list them.
const (
	// ClassUnknown is a kernel the classifier does not know; it is listed by
	// name, never guessed at.
	ClassUnknown Class = iota
	// ClassAttentionFwd is a fused attention forward kernel (FlashAttention-2
	// and -3, cuDNN SDPA, PyTorch's memory-efficient kernels).
	ClassAttentionFwd
	// ClassAttentionBwd is the main kernel of a fused attention backward.
	ClassAttentionBwd
	// ClassAttentionAux is an attention pre- or post-processing kernel:
	// FlashAttention-2's flash_bwd_dot_do_o_kernel and
	// flash_bwd_convert_dq_kernel, FlashAttention-3's preprocess, dQ
	// conversion and dQaccum clearing, split-KV combines.
	ClassAttentionAux
	// ClassGEMM is a dense matrix product; Kernel.Precision says bf16, fp16,
	// tf32 or fp32 (only bf16 and fp16 are fitted and priced).
	ClassGEMM
	// ClassGEMMFP8 is a dense FP8 matrix product.
	ClassGEMMFP8
	// ClassGroupedGEMM is a grouped GEMM (MoE experts), of any precision.
	ClassGroupedGEMM
	// ClassCollective is an NCCL collective or point-to-point kernel.
	ClassCollective
	// ClassEPDispatch is an expert-parallel dispatch or combine kernel
	// (DeepEP and kernels of a moe/ep namespace).
	ClassEPDispatch
	// ClassMemoryBound is an elementwise, reduction, normalisation, softmax,
	// loss, indexing, copy or optimizer kernel, or a Triton pointwise or
	// reduction kernel.
	ClassMemoryBound
	// ClassMemcpy and ClassMemset are the trace's gpu_memcpy and gpu_memset
	// events (not kernels, but GPU time).
	ClassMemcpy
	ClassMemset
)

// classOrder is the order of classes in reports: known classes first,
// unknown last.
var classOrder = []Class{ClassAttentionFwd, ClassAttentionBwd, ClassAttentionAux, ClassGEMM, ClassGEMMFP8,
	ClassGroupedGEMM, ClassCollective, ClassEPDispatch, ClassMemoryBound, ClassMemcpy, ClassMemset, ClassUnknown}

// Classes returns every class in report order (ClassUnknown last).
func Classes() []Class { return append([]Class(nil), classOrder...) }

// rank is c's position in classOrder.
func (c Class) rank() int {
	for i, o := range classOrder {
		if o == c {
			return i
		}
	}
	return len(classOrder)
}

// String names the class: "attention_fwd", "attention_bwd", "attention_aux",
// "gemm", "gemm_fp8", "grouped_gemm", "nccl", "ep_dispatch_combine",
// "memory_bound", "memcpy", "memset" or "unknown".
func (c Class) String() string {
	switch c {
	case ClassUnknown:
		return "unknown"
	case ClassAttentionFwd:
		return "attention_fwd"
	case ClassAttentionBwd:
		return "attention_bwd"
	case ClassAttentionAux:
		return "attention_aux"
	case ClassGEMM:
		return "gemm"
	case ClassGEMMFP8:
		return "gemm_fp8"
	case ClassGroupedGEMM:
		return "grouped_gemm"
	case ClassCollective:
		return "nccl"
	case ClassEPDispatch:
		return "ep_dispatch_combine"
	case ClassMemoryBound:
		return "memory_bound"
	case ClassMemcpy:
		return "memcpy"
	case ClassMemset:
		return "memset"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Precisions of Kernel.Precision.
const (
	PrecisionBF16 = "bf16"
	PrecisionFP16 = "fp16"
	PrecisionFP8  = "fp8"
	PrecisionTF32 = "tf32"
	PrecisionFP32 = "fp32"
	PrecisionFP64 = "fp64"
)

// Causality says whether an attention kernel applied a causal mask.
type Causality int

const (
	// CausalUnknown: neither the op's Concrete Inputs nor the kernel name say.
	CausalUnknown Causality = iota
	// Causal is a causal (lower-triangular) mask.
	Causal
	// NonCausal is full attention.
	NonCausal
)

// String is "causal", "non-causal" or "unknown".
func (c Causality) String() string {
	switch c {
	case Causal:
		return "causal"
	case NonCausal:
		return "non-causal"
	}
	return "unknown"
}

// Shape holds the sizes inferred for a kernel; a field is zero when unknown.
// Which fields are set depends on the class: M, N, K, Batch for GEMMs; Batch,
// Seq, Heads, KVHeads, HeadDimQK, HeadDimV, Causal for attention; Collective,
// Bytes, Ranks for collectives; Bytes for memory-bound kernels and
// memcpy/memset.
type Shape struct {
	// M, N and K are the product's sizes as the kernel computes it: an
	// M×K by K×N product. Batch is the number of equal products (bmm), and
	// the number of sequences of an attention call; 1 when there is one.
	M, N, K, Batch int64
	// Seq is the attention sequence length (queries = keys); Heads and
	// KVHeads the query and key/value heads; HeadDimQK and HeadDimV the
	// head dimensions of q/k and v.
	Seq, Heads, KVHeads, HeadDimQK, HeadDimV int64
	// Causal is the attention mask.
	Causal Causality
	// SeqUpperBound is set when Seq comes from the kernel's grid (blocks ×
	// block length): the true length is at most Seq and more than Seq minus
	// one block.
	SeqUpperBound bool
	// Collective is the collective's kind (calib.KindAllReduce, ...,
	// "broadcast", ...); Ranks its group size.
	Collective string
	Ranks      int64
	// Bytes is a collective's bytes per rank (the input buffer; the output
	// for an all-gather), or the HBM bytes of a memory-bound kernel (its
	// inputs plus an output estimated as its largest input), or a
	// memcpy/memset's bytes.
	Bytes int64
}

// String writes the shape as key=value pairs separated by ';' (the
// measurements file's syntax), "" when nothing is known.
func (s Shape) String() string {
	var parts []string
	add := func(k string, v int64) {
		if v != 0 {
			parts = append(parts, k+"="+strconv.FormatInt(v, 10))
		}
	}
	switch {
	case s.M > 0 || s.N > 0 || s.K > 0:
		add("m", s.M)
		add("n", s.N)
		add("k", s.K)
		if s.Batch > 1 {
			add("batch", s.Batch)
		}
	case s.Seq > 0 || s.HeadDimQK > 0 || s.Heads > 0:
		if s.SeqUpperBound {
			parts = append(parts, "seq<="+strconv.FormatInt(s.Seq, 10))
		} else {
			add("seq", s.Seq)
		}
		add("heads", s.Heads)
		add("kv_heads", s.KVHeads)
		if s.HeadDimQK == s.HeadDimV || s.HeadDimV == 0 {
			add("head_dim", s.HeadDimQK)
		} else {
			add("head_dim_qk", s.HeadDimQK)
			add("head_dim_v", s.HeadDimV)
		}
		add("batch", s.Batch)
		switch s.Causal {
		case Causal:
			parts = append(parts, "causal=1")
		case NonCausal:
			parts = append(parts, "causal=0")
		}
	default:
		if s.Collective != "" {
			parts = append(parts, s.Collective)
		}
		add("bytes", s.Bytes)
		add("ranks", s.Ranks)
	}
	return strings.Join(parts, ";")
}

// Device is one entry of the trace's deviceProperties.
type Device struct {
	// ID is the CUDA device index.
	ID int
	// Name is the device name, e.g. "NVIDIA H100 80GB HBM3".
	Name string
	// TotalGlobalMemBytes is the device memory.
	TotalGlobalMemBytes int64
	// SMs is the number of streaming multiprocessors.
	SMs int
	// ComputeMajor and ComputeMinor are the compute capability (9, 0 for Hopper).
	ComputeMajor, ComputeMinor int
}

// Trace is what Read found in one PyTorch profiler trace.
type Trace struct {
	// Name is the file name Read was given.
	Name string
	// Devices are the trace's deviceProperties, in file order.
	Devices []Device
	// Rank and WorldSize are from distributedInfo (0 and 1 when absent);
	// Backend is its backend ("nccl"), "" when absent.
	Rank, WorldSize int
	Backend         string
	// Steps is the number of distinct ProfilerStep#N annotations (0 when
	// none).
	Steps int
	// Kernels are every GPU kernel, memcpy and memset event, by start time
	// (file order among equal starts).
	Kernels []Kernel
	// Events is the number of traceEvents read.
	Events int
}

// Kernel is one GPU kernel (or memcpy/memset) event, classified.
type Kernel struct {
	// Name is the kernel's (demangled) name.
	Name string
	// StartMicros is its start (the trace's ts, microseconds); Seconds its
	// duration.
	StartMicros, Seconds float64
	// Device and Stream are where it ran.
	Device, Stream int
	// Grid and Block are its launch dimensions (zero when not recorded).
	Grid, Block [3]int
	// Op is the name of the cpu_op that launched it: the op with the
	// kernel's External id, or the op around its cuda_runtime launch (by
	// correlation, then by time nesting); "" if none.
	Op string
	// ShapeOp is the op the shape was read from (Op or one of its
	// ancestors, or the forward op of an attention backward matched by its
	// autograd sequence number); "" when the shape did not come from an op.
	ShapeOp string
	// Class is what the kernel does.
	Class Class
	// Precision is the GEMM or attention data type (PrecisionBF16, ...),
	// "" when unknown.
	Precision string
	// Shape holds the inferred sizes; zero when unknown.
	Shape Shape
	// Why says why the shape is unknown or the kernel cannot be fitted or
	// priced; "" for a kernel that can (and for classes with no such
	// reason of their own, see Measurements and Predictor).
	Why string
}

// exact reports whether the kernel has what pricing and fitting need: a
// bf16/fp16 dense GEMM, or a causal attention forward/backward, of an exact
// shape, with no reason recorded against it.
func (k *Kernel) exact() bool {
	switch k.Class {
	case ClassGEMM:
		return k.Why == "" && (k.Precision == PrecisionBF16 || k.Precision == PrecisionFP16) &&
			k.Shape.M > 0 && k.Shape.N > 0 && k.Shape.K > 0
	case ClassGEMMFP8:
		return k.Why == "" && k.Shape.M > 0 && k.Shape.N > 0 && k.Shape.K > 0
	case ClassAttentionFwd, ClassAttentionBwd:
		s := k.Shape
		return k.Why == "" && s.Causal == Causal && !s.SeqUpperBound && s.Seq > 0 && s.Heads > 0 && s.HeadDimQK > 0 && s.HeadDimV > 0
	}
	return false
}

// fitReason is why an exact kernel still gives no measurement row, "" when
// it gives one: calib fits attention at d_qk <= 128, 192 and 256 only
// (calib.AttentionCurves), though the cost model prices any head dim by
// interpolating between those curves.
func (k *Kernel) fitReason() string {
	if k.Class == ClassAttentionFwd || k.Class == ClassAttentionBwd {
		if _, _, err := calib.AttentionCurves(float64(k.Shape.HeadDimQK)); err != nil {
			return "priced, not fitted: " + err.Error()
		}
	}
	return ""
}

// fittable reports whether the kernel gives a measurement row.
func (k *Kernel) fittable() bool { return k.exact() && k.fitReason() == "" }

// FLOPs is the work of a GEMM (2·batch·m·n·k) or an attention kernel
// (calib.AttentionFwdFLOPs, times (3·d_qk + 2·d_v)/(d_qk + d_v) backward, the
// convention the profile's curves are fitted in); 0 for other kernels and
// unknown shapes.
func (k *Kernel) FLOPs() float64 {
	s := k.Shape
	b := float64(max(s.Batch, 1))
	switch k.Class {
	case ClassGEMM, ClassGEMMFP8, ClassGroupedGEMM:
		return 2 * b * float64(s.M) * float64(s.N) * float64(s.K)
	case ClassAttentionFwd, ClassAttentionBwd:
		if s.Seq <= 0 || s.Heads <= 0 || s.HeadDimQK <= 0 || s.HeadDimV <= 0 || s.Causal == CausalUnknown {
			return 0
		}
		dqk, dv := float64(s.HeadDimQK), float64(s.HeadDimV)
		f := calib.AttentionFwdFLOPs(b, float64(s.Seq), float64(s.Heads), dqk, dv, s.Causal == Causal)
		if k.Class == ClassAttentionBwd {
			f *= (3*dqk + 2*dv) / (dqk + dv)
		}
		return f
	}
	return 0
}

// measurement is the kernel's measurement row (operation and shape), ok
// false when it is not fittable.
func (k *Kernel) measurement() (op string, shape map[string]int64, ok bool) {
	if !k.fittable() {
		return "", nil, false
	}
	s := k.Shape
	switch k.Class {
	case ClassGEMM:
		shape = map[string]int64{"m": s.M, "n": s.N, "k": s.K}
		if s.Batch > 1 {
			shape["batch"] = s.Batch
		}
		return calib.OpGEMM, shape, true
	case ClassGEMMFP8:
		shape = map[string]int64{"m": s.M, "n": s.N, "k": s.K}
		if s.Batch > 1 {
			shape["batch"] = s.Batch
		}
		return calib.OpGEMMFP8, shape, true
	case ClassAttentionFwd, ClassAttentionBwd:
		shape = map[string]int64{"seq": s.Seq, "heads": s.Heads, "batch": max(s.Batch, 1), "causal": 1}
		if s.KVHeads > 0 {
			shape["kv_heads"] = s.KVHeads
		}
		if s.HeadDimQK == s.HeadDimV {
			shape["head_dim"] = s.HeadDimQK
		} else {
			shape["head_dim_qk"], shape["head_dim_v"] = s.HeadDimQK, s.HeadDimV
		}
		op = calib.OpAttentionFwd
		if k.Class == ClassAttentionBwd {
			op = calib.OpAttentionBwd
		}
		return op, shape, true
	}
	return "", nil, false
}
