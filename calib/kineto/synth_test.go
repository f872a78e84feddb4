package kineto

// The shipped trace, testdata/synthetic-h100-llama-step.json.gz, is
// SYNTHETIC: no GPU was used to make it. synthTrace below writes it: a
// Kineto-format Chrome trace of two steps of a Llama-3-8B-style bf16 training
// slice (two decoder layers and the LM head, FSDP over 8 H100 SXM, rank 0) whose kernel durations are the cost model's own
// prices (compute.Compute with the known curves of synthProfile, plus
// KernelLaunchSeconds) times a deterministic noise of at most ±2%. It tests the
// reader, the classifier, shape inference, Measurements, the fitter's
// recovery of known curves and Compare; it says nothing about real GPUs.
// `go test ./calib/kineto/ -run TestSynthetic -update` rewrites it.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
)

var update = flag.Bool("update", false, "rewrite testdata/synthetic-h100-llama-step.json.gz from the generator")

// synthSeed seeds the noise (math/rand/v2 PCG): fixed, so the trace is
// reproducible.
var synthSeed = [2]uint64{20240917, 7}

// synthFile is the shipped synthetic trace.
const synthFile = "testdata/synthetic-h100-llama-step.json.gz"

// The generating curves: known constants, not measurements.
const (
	synthGEMMMax, synthGEMMHalf = 0.78, 250.0
	synthFwdMax, synthFwdHalf   = 0.70, 900.0
	synthBwdMax, synthBwdHalf   = 0.55, 1100.0
	synthNoise                  = 0.02
)

// synthPin pins the constants the generated durations depend on besides
// the curves (the H100 SXM's published peaks and bandwidth, and the launch
// cost), so that the shipped trace stays what the generator writes when the
// embedded profile's other constants are revised.
func synthPin(p *calib.Profile) {
	src := "assumption: synthetic test constant (calib/kineto synth_test.go)"
	p.PeakBF16FLOPs = calib.Const{Value: 989e12, Source: src}
	p.HBMBytesPerSecond = calib.Const{Value: 3.35e12, Source: src}
	p.MemoryBoundEfficiency = calib.Const{Value: 0.8955, Source: src}
	p.KernelLaunchSeconds = calib.Const{Value: 5e-6, Source: src}
	p.NVLinkBytesPerSecond = calib.Const{Value: 3.76e11, Source: src}
	p.SustainedEfficiency = calib.Const{} // the generator's kernels run at the curves' rate
	if p.HasFP8() {
		p.PeakFP8FLOPs = calib.Const{Value: 1.979e15, Source: src}
		p.GEMMFP8 = calib.Curve{Max: calib.Const{Value: 0.78, Source: src}, Half: calib.Const{Value: 1200, Source: src}}
	}
}

// synthBase is the fit's base: the embedded H100-SXM profile (other curves
// than the generating ones) with synthPin's constants.
func synthBase(t testing.TB) *calib.Profile {
	t.Helper()
	p, err := calib.LookupProfile("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	synthPin(p)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// synthProfile is synthBase with its gemm and attention curves replaced by
// the generating constants.
func synthProfile(t testing.TB) *calib.Profile {
	t.Helper()
	p := synthBase(t)
	src := "assumption: synthetic test constant (calib/kineto synth_test.go)"
	c := func(mx, half float64) calib.Curve {
		return calib.Curve{Max: calib.Const{Value: mx, Source: src}, Half: calib.Const{Value: half, Source: src}}
	}
	p.GEMM = c(synthGEMMMax, synthGEMMHalf)
	p.AttentionFwd = c(synthFwdMax, synthFwdHalf)
	p.AttentionBwd = c(synthBwdMax, synthBwdHalf)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// The model slice: Llama-3-8B sizes, data parallel (FSDP) over synthWorld
// GPUs, so every GEMM has the model's full shape.
const (
	synthHidden  = 4096
	synthWorld   = 8
	synthHeads   = 32
	synthKV      = 8
	synthHeadDim = 128
	synthFFN     = 14336
	synthVocab   = 128256
	synthLayers  = 2
	// synthLayerParams are one layer's parameters (q, k, v, o, gate, up,
	// down, two norms), what FSDP all-gathers and reduce-scatters.
	synthLayerParams = (synthHeads+2*synthKV)*synthHeadDim*synthHidden + synthHeads*synthHeadDim*synthHidden +
		3*synthFFN*synthHidden + 2*synthHidden
	synthPid     = 4242
	synthFwdTid  = 4242
	synthBwdTid  = 4250
	synthCompute = 7  // compute stream
	synthComm    = 20 // NCCL stream
)

// synthSteps are the micro-batches (one sequence each, tokens) of the two
// profiler steps: seven lengths from 512 to 32K, so attention and the GEMMs
// span their curves.
var synthSteps = [][]int{{512, 2048, 8192, 32768}, {1024, 4096, 16384}}

// Kernel names the generator writes.
const (
	kSM90GEMM   = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
	kNvjetTNT   = "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
	kNvjetNNT   = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_NNT"
	kNvjetTNN   = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNN"
	kFP8GEMM    = "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	kFA2Traits  = "Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >"
	kFA2BTraits = "Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >"
	kFA2Fwd     = "void flash_fwd_kernel<" + kFA2Traits + ", false, true, false, false, true, true, false, false>(Flash_fwd_params)"
	kFA2FwdFull = "void flash_fwd_kernel<" + kFA2Traits + ", false, false, false, false, true, true, false, false>(Flash_fwd_params)"
	kFA2Bwd     = "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<" + kFA2BTraits + ", false, true, false, false, true, true, false>(Flash_bwd_params)"
	kFA2DotDoO  = "void flash_bwd_dot_do_o_kernel<true, " + kFA2BTraits + " >(Flash_bwd_params)"
	kFA2ConvDQ  = "void flash_bwd_convert_dq_kernel<" + kFA2BTraits + " >(Flash_bwd_params, int)"
	kTENormFwd  = "void transformer_engine::normalization::rmsnorm_fwd_tuned_kernel<transformer_engine::normalization::Kernel_traits<float, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 4096u, 1u, 4u, 1u, 16u, transformer_engine::normalization::Kernel_traits_finalize<4096u, 1u, 4u, 1u, 32u> > >(transformer_engine::normalization::FwdParams)"
	kTENormBwd  = "void transformer_engine::normalization::rmsnorm_bwd_tuned_kernel<transformer_engine::normalization::Kernel_traits<float, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 4096u, 1u, 4u, 1u, 16u, transformer_engine::normalization::Kernel_traits_finalize<4096u, 1u, 4u, 1u, 32u> > >(transformer_engine::normalization::BwdParams)"
	kAdd        = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)"
	kSilu       = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)"
	kSiluBwd    = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)"
	kMul        = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)"
	kLogSoftmax = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)"
	kLogSMBwd   = "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<8, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, long)"
	kNLLFwd     = "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<c10::BFloat16, float, long>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, long const*, c10::BFloat16 const*, bool, long, long, long, long)"
	kNLLBwd     = "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<c10::BFloat16, long>(c10::BFloat16*, c10::BFloat16 const*, long const*, c10::BFloat16 const*, c10::BFloat16 const*, bool, int, int, long, long)"
	kAdam       = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double, double, double, double, double, bool, float const*, float const*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double, double, double, double, double, bool, float const*, float const*)"
	kAllGather  = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
	kRedScatter = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
	kAllReduce  = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
	kRope       = "void my_fused_rope_kernel<__nv_bfloat16, 128>(__nv_bfloat16*, __nv_bfloat16 const*, float const*, int, int)"
	kRopeBwd    = "void my_fused_rope_bwd_kernel<__nv_bfloat16, 128>(__nv_bfloat16*, __nv_bfloat16 const*, float const*, int, int)"
	kPermute    = "void custom_ops::weird_permute_kernel<float>(float const*, float*, long)"
)

// synthUnknown are the generator's kernels the classifier must not know.
var synthUnknown = []string{kRope, kRopeBwd, kPermute}

// synth builds a trace.
type synth struct {
	t      testing.TB
	prof   *calib.Profile
	comp   *compute.Compute // GEMMs and memory-bound kernels
	attn   *compute.Compute // the slice's attention (4 heads, 1 kv head, d 128)
	rng    *rand.Rand
	events []string
	ext    int64
	corr   int64
	cpu    map[int]int64   // ns per thread
	gpu    map[int]int64   // ns per stream
	stack  map[int][]int64 // open ops' External ids per thread
	seq    int64           // autograd sequence numbers
	// expected results
	counts  map[Class]int
	fwdAttn int
}

// synthResult is the generated trace and what reading it must give.
type synthResult struct {
	JSON    []byte
	Counts  map[Class]int
	FwdAttn int
	Kernels int
}

// synthTrace generates the synthetic trace (deterministic: fixed seed, no
// clock).
func synthTrace(t testing.TB) synthResult {
	t.Helper()
	p := synthProfile(t)
	m := job.Model{QueryHeads: synthHeads, KVHeads: synthKV, HeadDimQK: synthHeadDim, HeadDimV: synthHeadDim}
	g := &synth{t: t, prof: p, comp: &compute.Compute{Profile: p},
		attn:   &compute.Compute{Profile: p, Job: job.Job{Model: m, Parallel: job.Parallel{TP: 1}}},
		rng:    rand.New(rand.NewPCG(synthSeed[0], synthSeed[1])),
		cpu:    map[int]int64{synthFwdTid: 1712195495502094500, synthBwdTid: 0},
		gpu:    map[int]int64{},
		stack:  map[int][]int64{},
		seq:    1000,
		counts: map[Class]int{}}
	for step, seqs := range synthSteps {
		g.step(step+1, seqs)
	}
	var b bytes.Buffer
	b.WriteString(`{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 84934656000,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,
      "numSms": 132, "sharedMemPerBlockOptin": 232448
    }
  ],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 1, "nccl_version": "2.21.5"},
  "comment": "SYNTHETIC trace made by calib/kineto synth_test.go, not recorded on a GPU",
  "record_shapes": 1,
  "traceEvents": [
`)
	for i, e := range g.events {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(e)
	}
	b.WriteString(`
  ],
  "traceName": "synthetic-h100-llama-step.json",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1712195400000000000
}
`)
	n := 0
	for _, c := range g.counts {
		n += c
	}
	return synthResult{JSON: b.Bytes(), Counts: g.counts, FwdAttn: g.fwdAttn, Kernels: n}
}

// us writes nanoseconds as Kineto's microseconds with three decimals.
func us(ns int64) string { return fmt.Sprintf("%d.%03d", ns/1000, ns%1000) }

// ns converts seconds to nanoseconds.
func ns(s float64) int64 { return int64(math.Round(s * 1e9)) }

// emit appends one complete event.
func (g *synth) emit(cat, name string, pid, tid int, ts, dur int64, args map[string]any) string {
	a, err := json.Marshal(args)
	if err != nil {
		g.t.Fatal(err)
	}
	nm, _ := json.Marshal(name)
	return fmt.Sprintf(`  {"ph": "X", "cat": %q, "name": %s, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": %s}`,
		cat, nm, pid, tid, us(ts), us(dur), a)
}

// noisy is a model time plus the launch cost, times 1 ± up to synthNoise.
func (g *synth) noisy(model float64) float64 {
	return (model + g.prof.KernelLaunchSeconds.Value) * (1 + synthNoise*(2*g.rng.Float64()-1))
}

// opArgs are a cpu_op's recorded inputs.
type opArgs struct {
	dims     []any
	types    []string
	concrete []string
	seq      bool
	extra    map[string]any
}

// dims is a shorthand for Input Dims entries.
func dims(ds ...[]int64) []any {
	out := make([]any, len(ds))
	for i, d := range ds {
		if d == nil {
			d = []int64{}
		}
		out[i] = d
	}
	return out
}

// op records a cpu_op on thread tid around body.
func (g *synth) op(tid int, cat, name string, a opArgs, body func()) {
	g.ext++
	ext := g.ext
	start := g.cpu[tid]
	at := len(g.events)
	g.events = append(g.events, "")
	g.stack[tid] = append(g.stack[tid], ext)
	g.cpu[tid] += 2000
	if body != nil {
		body()
	}
	g.cpu[tid] += 2000
	g.stack[tid] = g.stack[tid][:len(g.stack[tid])-1]
	args := map[string]any{"External id": ext, "Record function id": 0, "Ev Idx": at}
	if a.dims != nil {
		args["Input Dims"] = a.dims
		args["Input type"] = a.types
		c := a.concrete
		if c == nil {
			c = make([]string, len(a.dims))
		}
		args["Concrete Inputs"] = c
	}
	if a.seq {
		g.seq++
		args["Sequence number"] = g.seq
		args["Fwd thread id"] = 0
	}
	for k, v := range a.extra {
		args[k] = v
	}
	g.events[at] = g.emit(cat, name, synthPid, tid, start, g.cpu[tid]-start, args)
	g.cpu[tid] += 1000
}

// cpuOp is op with cat cpu_op.
func (g *synth) cpuOp(tid int, name string, a opArgs, body func()) {
	g.op(tid, "cpu_op", name, a, body)
}

// launch records a kernel launched from thread tid (its cudaLaunchKernel,
// the flow pair and the kernel) and counts its class.
func (g *synth) launch(tid, stream int, cat string, name string, seconds float64, grid, block [3]int, class Class, extra map[string]any) {
	g.corr++
	ext := int64(0)
	if s := g.stack[tid]; len(s) > 0 {
		ext = s[len(s)-1]
	}
	ts := g.cpu[tid]
	rt := "cudaLaunchKernel"
	switch cat {
	case "gpu_memcpy":
		rt = "cudaMemcpyAsync"
	case "gpu_memset":
		rt = "cudaMemsetAsync"
	}
	g.events = append(g.events, g.emit("cuda_runtime", rt, synthPid, tid, ts, 4000, map[string]any{"External id": ext, "cbid": 211, "correlation": g.corr}))
	g.events = append(g.events, fmt.Sprintf(`  {"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}`, g.corr, synthPid, tid, us(ts)))
	start := max(g.gpu[stream], ts+3000)
	dur := ns(seconds)
	args := map[string]any{"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": stream, "correlation": g.corr}
	if cat == "kernel" {
		args["grid"], args["block"] = grid, block
		args["registers per thread"], args["shared memory"] = 128, 0
	}
	for k, v := range extra {
		args[k] = v
	}
	g.events = append(g.events, g.emit(cat, name, 0, stream, start, dur, args))
	g.events = append(g.events, fmt.Sprintf(`  {"ph": "f", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}`, g.corr, 0, stream, us(start)))
	g.gpu[stream] = start + dur + 1500
	g.cpu[tid] += 5000
	g.counts[class]++
	if class == ClassAttentionFwd {
		g.fwdAttn++
	}
}

// kernel launches a compute-stream kernel.
func (g *synth) kernel(tid int, name string, seconds float64, grid [3]int, class Class) {
	g.launch(tid, synthCompute, "kernel", name, seconds, grid, [3]int{128, 1, 1}, class, nil)
}

const bf16 = "c10::BFloat16"

// gemm records an aten::mm of [m,k]×[k,n] and its kernel at the model's time.
func (g *synth) gemm(tid int, kernel string, m, n, k int64) {
	s := compute.GEMMShape{M: float64(m), N: float64(n), K: float64(k), Count: 1}
	compute := s.FLOPs() / (g.prof.TensorPeak(false) * g.prof.GEMM.At(calib.GEMMEffectiveSize(s.M, s.N, s.K)))
	if model := g.comp.GEMMSeconds(s); model > compute*(1+1e-12) {
		g.t.Fatalf("synthetic GEMM %d×%d×%d is memory-bound in the model: the fit test needs compute-bound shapes", m, n, k)
	}
	g.cpuOp(tid, "aten::mm", opArgs{dims: dims([]int64{m, k}, []int64{k, n}), types: []string{bf16, bf16}}, func() {
		g.kernel(tid, kernel, g.noisy(g.comp.GEMMSeconds(s)), [3]int{int(n / 128), int(m / 128), 1}, ClassGEMM)
	})
}

// linear records aten::linear → aten::matmul → aten::mm for x [1, s, k] and
// weight [n, k].
func (g *synth) linear(tid int, kernel string, s, n, k int64) {
	g.cpuOp(tid, "aten::linear", opArgs{dims: dims([]int64{1, s, k}, []int64{n, k}, nil), types: []string{bf16, bf16, ""}}, func() {
		g.cpuOp(tid, "aten::t", opArgs{dims: dims([]int64{n, k}), types: []string{bf16}}, nil)
		g.cpuOp(tid, "aten::matmul", opArgs{dims: dims([]int64{1, s, k}, []int64{k, n}), types: []string{bf16, bf16}}, func() {
			g.gemm(tid, kernel, s, n, k)
		})
	})
}

// memBytes is the package's memory-bound convention: the inputs' bytes plus
// the largest again (the output estimate).
func memBytes(sizes ...int64) int64 {
	var sum, big int64
	for _, s := range sizes {
		sum += s
		big = max(big, s)
	}
	return sum + big
}

// memOp records op name with bf16 (or given) inputs and its one kernel,
// priced by MemorySeconds of the convention's bytes.
func (g *synth) memOp(tid int, name, kernel string, ins [][]int64, types []string, concrete []string) {
	var sizes []int64
	for i, d := range ins {
		if d == nil {
			continue
		}
		n := int64(dtypeBytes[types[i]])
		for _, x := range d {
			n *= x
		}
		sizes = append(sizes, n)
	}
	b := memBytes(sizes...)
	g.cpuOp(tid, name, opArgs{dims: dims(ins...), types: types, concrete: concrete}, func() {
		g.kernel(tid, kernel, g.noisy(g.comp.MemorySeconds(float64(b))), [3]int{int(min(b/4096, 1<<20)) + 1, 1, 1}, ClassMemoryBound)
	})
}

// rmsNorm records a Transformer Engine RMSNorm forward or backward over
// rows × hidden.
func (g *synth) rmsNorm(tid int, rows int64, backward bool) {
	if !backward {
		g.memOp(tid, "transformer_engine_torch::rmsnorm_fwd", kTENormFwd,
			[][]int64{{rows, synthHidden}, {synthHidden}, nil, nil}, []string{bf16, bf16, "Scalar", ""}, []string{"", "", "1e-05", ""})
		return
	}
	g.memOp(tid, "transformer_engine_torch::rmsnorm_bwd", kTENormBwd,
		[][]int64{{rows, synthHidden}, {rows, synthHidden}, {rows}, {synthHidden}}, []string{bf16, bf16, "float", bf16}, nil)
}

// collective records a record_param_comms op with an nccl: annotation and
// its NCCL kernel on the comm stream, with PyTorch 2.3's kernel args.
func (g *synth) collective(tid int, kind, collName, kernel string, inNelems, outNelems int64, dtype string) {
	elem := dtypeBytes[dtype]
	args := map[string]any{"Collective name": collName, "In msg nelems": inNelems, "Out msg nelems": outNelems,
		"Group size": synthWorld, "dtype": dtype, "In split size": "[]", "Out split size": "[]",
		"Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}
	bus := float64(max(inNelems, outNelems)*elem) * (synthWorld - 1) / synthWorld
	if kind == "all_reduce" {
		bus *= 2
	}
	sec := bus/(0.9*g.prof.NVLinkBytesPerSecond.Value) + 12e-6
	g.cpuOp(tid, "record_param_comms", opArgs{extra: args}, func() {
		g.op(tid, "user_annotation", "nccl:"+kind, opArgs{}, func() {
			g.launch(tid, synthComm, "kernel", kernel, sec*(1+synthNoise*(2*g.rng.Float64()-1)), [3]int{16, 1, 1}, [3]int{640, 1, 1}, ClassCollective, args)
		})
	})
}

// allGather and reduceScatter are FSDP's collectives of one layer's
// parameters (gathered before its forward and backward) and gradients.
func (g *synth) allGather(tid int) {
	g.collective(tid, "_all_gather_base", "_allgather_base", kAllGather, synthLayerParams/synthWorld, synthLayerParams, "BFloat16")
}

func (g *synth) reduceScatter(tid int) {
	g.collective(tid, "_reduce_scatter_base", "_reduce_scatter_base", kRedScatter, synthLayerParams, synthLayerParams/synthWorld, "BFloat16")
}

// unknownKernel records a custom op and its kernel (which the classifier
// must not know).
func (g *synth) unknownKernel(tid int, op, kernel string, s int64) {
	g.cpuOp(tid, op, opArgs{dims: dims([]int64{1, s, synthHeads, synthHeadDim}, []int64{s, synthHeadDim / 2}), types: []string{bf16, "float"}}, func() {
		g.kernel(tid, kernel, g.noisy(float64(s)*synthHeads*synthHeadDim*8/2.5e12), [3]int{int(s), 1, 1}, ClassUnknown)
	})
}

// qkv are attention's q, k and v dims in flash_attn's [b, s, h, d] layout.
func qkv(s int64) [][]int64 {
	return [][]int64{{1, s, synthHeads, synthHeadDim}, {1, s, synthKV, synthHeadDim}, {1, s, synthKV, synthHeadDim}}
}

// step records one ProfilerStep of the given micro-batches.
func (g *synth) step(n int, seqs []int) {
	g.op(synthFwdTid, "user_annotation", fmt.Sprintf("ProfilerStep#%d", n), opArgs{}, func() {
		for _, seq := range seqs {
			s := int64(seq)
			// The tokens come in: one memcpy, and a memset of the loss buffer.
			g.cpuOp(synthFwdTid, "aten::copy_", opArgs{dims: dims([]int64{1, s}, []int64{1, s}, nil), types: []string{"long", "long", "Scalar"}}, func() {
				g.launch(synthFwdTid, synthCompute, "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 2e-6+float64(s*8)/25e9, [3]int{}, [3]int{}, ClassMemcpy, map[string]any{"bytes": s * 8})
			})
			g.cpuOp(synthFwdTid, "aten::zero_", opArgs{dims: dims([]int64{1}), types: []string{"float"}}, func() {
				g.launch(synthFwdTid, synthCompute, "gpu_memset", "Memset (Device)", 1.5e-6, [3]int{}, [3]int{}, ClassMemset, map[string]any{"bytes": 4})
			})
			// Step 2 uses flash-attn before 2.6: no flash_attn:: ops, the
			// kernels launched from FlashAttnFunc and its backward node.
			g.forward(s, n == 2)
			g.backward(s, n == 2)
		}
		if n == 2 {
			g.extras()
		}
		// Gradient-norm all-reduce and the optimizer.
		g.collective(synthFwdTid, "all_reduce", "allreduce", kAllReduce, 1, 1, "Float")
		g.cpuOp(synthFwdTid, "Optimizer.step#AdamW.step", opArgs{}, func() {
			params := [][]int64{{synthLayerParams / synthWorld}, {synthLayerParams / synthWorld}}
			list := []any{params, params, params, params}
			g.cpuOp(synthFwdTid, "aten::_fused_adamw_", opArgs{dims: append(list, []int64{}, []int64{}), types: []string{"TensorList", "TensorList", "TensorList", "TensorList", "Scalar", "Scalar"}}, func() {
				for range 2 {
					g.kernel(synthFwdTid, kAdam, g.noisy(g.comp.MemorySeconds(28*synthLayerParams/synthWorld)), [3]int{320, 1, 1}, ClassMemoryBound)
				}
			})
		})
	})
}

// forward records the slice's forward on one micro-batch of s tokens.
func (g *synth) forward(s int64, oldFlash bool) {
	tid := synthFwdTid
	for range synthLayers {
		g.allGather(tid)
		g.rmsNorm(tid, s, false)
		g.linear(tid, kSM90GEMM, s, (synthHeads+2*synthKV)*synthHeadDim, synthHidden)
		g.unknownKernel(tid, "mylib::fused_rope", kRope, s)
		q := qkv(s)
		attn := func() {
			g.kernel(tid, kFA2Fwd, g.noisy(g.attn.AttentionFwdSeconds(int(s), 1, int(s))), [3]int{int((s + 127) / 128), 1, synthHeads}, ClassAttentionFwd)
		}
		g.cpuOp(tid, "FlashAttnFunc", opArgs{dims: dims(q[0], q[1], q[2], nil, nil, nil), types: []string{bf16, bf16, bf16, "Scalar", "Scalar", "Scalar"}, seq: true}, func() {
			if oldFlash {
				attn()
				return
			}
			g.cpuOp(tid, "flash_attn::_flash_attn_forward", opArgs{dims: dims(q[0], q[1], q[2], nil, nil, nil, nil, nil, nil, nil, nil),
				types:    []string{bf16, bf16, bf16, "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "Scalar"},
				concrete: []string{"", "", "", "0.0", "0.08838834764831845", "True", "-1", "-1", "0.0", "", "False"}}, attn)
		})
		g.linear(tid, kSM90GEMM, s, synthHidden, synthHeads*synthHeadDim)
		g.memOp(tid, "aten::add", kAdd, [][]int64{{1, s, synthHidden}, {1, s, synthHidden}, nil}, []string{bf16, bf16, "Scalar"}, nil)
		g.rmsNorm(tid, s, false)
		g.linear(tid, kNvjetTNT, s, 2*synthFFN, synthHidden)
		g.memOp(tid, "aten::silu", kSilu, [][]int64{{1, s, synthFFN}}, []string{bf16}, nil)
		g.memOp(tid, "aten::mul", kMul, [][]int64{{1, s, synthFFN}, {1, s, synthFFN}}, []string{bf16, bf16}, nil)
		g.linear(tid, kSM90GEMM, s, synthHidden, synthFFN)
		g.memOp(tid, "aten::add", kAdd, [][]int64{{1, s, synthHidden}, {1, s, synthHidden}, nil}, []string{bf16, bf16, "Scalar"}, nil)
	}
	// Head: final norm, LM head, loss.
	g.rmsNorm(tid, s, false)
	g.linear(tid, kSM90GEMM, s, synthVocab, synthHidden)
	g.cpuOp(tid, "aten::cross_entropy_loss", opArgs{dims: dims([]int64{s, synthVocab}, []int64{s}), types: []string{bf16, "long"}}, func() {
		g.memOp(tid, "aten::_log_softmax", kLogSoftmax, [][]int64{{s, synthVocab}, nil, nil}, []string{bf16, "Scalar", "Scalar"}, nil)
		g.memOp(tid, "aten::nll_loss_forward", kNLLFwd, [][]int64{{s, synthVocab}, {s}, nil, nil, nil}, []string{bf16, "long", "", "Scalar", "Scalar"}, nil)
	})
}

// bwdNode records an autograd node on the backward thread.
func (g *synth) bwdNode(name string, body func()) {
	tid := synthBwdTid
	g.cpuOp(tid, "autograd::engine::evaluate_function: "+name, opArgs{}, func() {
		g.cpuOp(tid, name, opArgs{seq: true}, body)
	})
}

// linearBwd records MmBackward0's data- and weight-gradient products of a
// linear layer x [s, k] · Wᵀ [k, n].
func (g *synth) linearBwd(s, n, k int64) {
	tid := synthBwdTid
	g.bwdNode("MmBackward0", func() {
		g.gemm(tid, kNvjetNNT, s, k, n) // dx = dy [s, n] · W [n, k]
		g.gemm(tid, kNvjetTNN, n, k, s) // dW = dyᵀ [n, s] · x [s, k]
	})
}

// backward records the slice's backward on one micro-batch of s tokens, on
// the autograd thread, after the forward.
func (g *synth) backward(s int64, oldFlash bool) {
	tid := synthBwdTid
	g.cpu[tid] = max(g.cpu[tid], g.cpu[synthFwdTid]+50000)
	add := func() {
		g.bwdNode("AddBackward0", func() {
			g.memOp(tid, "aten::add", kAdd, [][]int64{{1, s, synthHidden}, {1, s, synthHidden}, nil}, []string{bf16, bf16, "Scalar"}, nil)
		})
	}
	g.bwdNode("NllLossBackward0", func() {
		g.memOp(tid, "aten::nll_loss_backward", kNLLBwd, [][]int64{{}, {s, synthVocab}, {s}, nil, nil, nil, {}},
			[]string{bf16, bf16, "long", "", "Scalar", "Scalar", bf16}, nil)
	})
	g.bwdNode("LogSoftmaxBackward0", func() {
		g.memOp(tid, "aten::_log_softmax_backward_data", kLogSMBwd, [][]int64{{s, synthVocab}, {s, synthVocab}, nil, nil}, []string{bf16, bf16, "Scalar", "Scalar"}, nil)
	})
	g.linearBwd(s, synthVocab, synthHidden)
	g.rmsNorm(tid, s, true)
	for layer := range synthLayers {
		g.allGather(tid)
		g.linearBwd(s, synthHidden, synthFFN)
		g.bwdNode("MulBackward0", func() {
			for range 2 {
				g.memOp(tid, "aten::mul", kMul, [][]int64{{1, s, synthFFN}, {1, s, synthFFN}}, []string{bf16, bf16}, nil)
			}
		})
		g.bwdNode("SiluBackward0", func() {
			g.memOp(tid, "aten::silu_backward", kSiluBwd, [][]int64{{1, s, synthFFN}, {1, s, synthFFN}}, []string{bf16, bf16}, nil)
		})
		g.linearBwd(s, 2*synthFFN, synthHidden)
		g.rmsNorm(tid, s, true)
		add()
		g.linearBwd(s, synthHidden, synthHeads*synthHeadDim)
		// The attention backward: FlashAttention-2's three kernels, under a
		// node whose sequence number is the forward FlashAttnFunc's.
		q := qkv(s)
		bwd := func() {
			aux := float64(s) * synthHeads * synthHeadDim * 2 * 3 / 2.5e12
			g.kernel(tid, kFA2DotDoO, g.noisy(aux), [3]int{int((s + 127) / 128), 1, synthHeads}, ClassAttentionAux)
			g.kernel(tid, kFA2Bwd, g.noisy(g.attn.AttentionBwdSeconds(int(s), 1, int(s))), [3]int{int((s + 127) / 128), 1, synthHeads}, ClassAttentionBwd)
			g.kernel(tid, kFA2ConvDQ, g.noisy(aux), [3]int{int((s + 127) / 128), 1, synthHeads}, ClassAttentionAux)
		}
		g.cpuOp(tid, "autograd::engine::evaluate_function: FlashAttnFuncBackward", opArgs{}, func() {
			g.attnBwdNode(s, layer, func() {
				if oldFlash {
					bwd()
					return
				}
				lse := []int64{1, synthHeads, s}
				g.cpuOp(tid, "flash_attn::_flash_attn_backward", opArgs{
					dims:     dims(q[0], q[0], q[1], q[2], q[0], lse, q[0], q[1], q[2], nil, nil, nil, nil, nil, nil, nil, nil, nil),
					types:    []string{bf16, bf16, bf16, bf16, bf16, "float", bf16, bf16, bf16, "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "Scalar", ""},
					concrete: []string{"", "", "", "", "", "", "", "", "", "0.0", "0.08838834764831845", "True", "-1", "-1", "0.0", "", "False", ""}}, bwd)
			})
		})
		g.unknownKernel(tid, "mylib::fused_rope_backward", kRopeBwd, s)
		g.linearBwd(s, (synthHeads+2*synthKV)*synthHeadDim, synthHidden)
		g.rmsNorm(tid, s, true)
		add()
		g.reduceScatter(tid)
	}
	g.cpu[synthFwdTid] = max(g.cpu[synthFwdTid], g.cpu[tid]+20000)
}

// attnBwdNode records FlashAttnFuncBackward with the sequence number of
// the forward FlashAttnFunc of the given layer: the sequence numbers of one
// micro-batch's forward are found by scanning back the recorded events.
func (g *synth) attnBwdNode(s int64, layer int, body func()) {
	// The forward FlashAttnFuncs of this micro-batch are the last
	// synthLayers ones recorded with dims of s tokens; the backward runs the
	// layers in reverse.
	var seqs []int64
	want := fmt.Sprintf(`"Input Dims":[[1,%d,%d,%d]`, s, synthHeads, synthHeadDim)
	for i := len(g.events) - 1; i >= 0 && len(seqs) < synthLayers; i-- {
		e := g.events[i]
		if strings.Contains(e, `"name": "FlashAttnFunc"`) && strings.Contains(e, want) {
			var ev struct {
				Args struct {
					Seq int64 `json:"Sequence number"`
				} `json:"args"`
			}
			if err := json.Unmarshal([]byte(e), &ev); err != nil {
				g.t.Fatal(err)
			}
			seqs = append(seqs, ev.Args.Seq)
		}
	}
	if len(seqs) != synthLayers {
		g.t.Fatalf("synthetic backward of %d tokens: %d forward FlashAttnFuncs found", s, len(seqs))
	}
	seq := seqs[layer] // the latest forward (last layer) is the first backward
	g.ext++
	ext := g.ext
	tid := synthBwdTid
	start := g.cpu[tid]
	at := len(g.events)
	g.events = append(g.events, "")
	g.stack[tid] = append(g.stack[tid], ext)
	g.cpu[tid] += 2000
	body()
	g.cpu[tid] += 2000
	g.stack[tid] = g.stack[tid][:len(g.stack[tid])-1]
	g.events[at] = g.emit("cpu_op", "FlashAttnFuncBackward", synthPid, tid, start, g.cpu[tid]-start,
		map[string]any{"External id": ext, "Sequence number": seq, "Fwd thread id": 0, "Ev Idx": at})
	g.cpu[tid] += 1000
}

// extras records, in step 2, the kernels of the other classes: a non-causal
// SDPA call, an attention kernel with no op above it (shape from the grid
// only), an fp8 GEMM and a third unknown kernel.
func (g *synth) extras() {
	tid := synthFwdTid
	const s = 1024
	full := [][]int64{{1, synthHeads, s, synthHeadDim}, {1, synthKV, s, synthHeadDim}, {1, synthKV, s, synthHeadDim}}
	g.cpuOp(tid, "aten::scaled_dot_product_attention", opArgs{dims: dims(full[0], full[1], full[2], nil, nil, nil, nil, nil),
		types: []string{bf16, bf16, bf16, "", "Scalar", "Scalar", "", "Scalar"}, concrete: []string{"", "", "", "", "0.0", "False", "", "True"}}, func() {
		g.cpuOp(tid, "aten::_scaled_dot_product_flash_attention", opArgs{dims: dims(full[0], full[1], full[2], nil, nil, nil, nil),
			types: []string{bf16, bf16, bf16, "Scalar", "Scalar", "Scalar", ""}, concrete: []string{"", "", "", "0.0", "False", "False", ""}, seq: true}, func() {
			q := qkv(s)
			g.cpuOp(tid, "aten::_flash_attention_forward", opArgs{dims: dims(q[0], q[1], q[2], nil, nil, nil, nil, nil, nil, nil, nil),
				types:    []string{bf16, bf16, bf16, "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", ""},
				concrete: []string{"", "", "", "", "", "1024", "1024", "0.0", "False", "False", ""}}, func() {
				f := calib.AttentionFwdFLOPs(1, s, synthHeads, synthHeadDim, synthHeadDim, false)
				g.kernel(tid, kFA2FwdFull, g.noisy(f/(g.prof.PeakBF16FLOPs.Value*0.6)), [3]int{s / 128, 1, synthHeads}, ClassAttentionFwd)
			})
		})
	})
	g.cpuOp(tid, "CompiledFunction", opArgs{}, func() {
		g.kernel(tid, kFA2Fwd, g.noisy(g.attn.AttentionFwdSeconds(2000, 1, 2000)), [3]int{16, 1, synthHeads}, ClassAttentionFwd)
	})
	fp8 := compute.GEMMShape{M: 4096, N: 4096, K: 4096, Count: 1}
	sec := g.comp.GEMMSeconds(fp8) / 1.8
	if g.prof.HasFP8() {
		sec = g.comp.FP8GEMMSeconds(fp8)
	}
	g.cpuOp(tid, "aten::_scaled_mm", opArgs{dims: dims([]int64{4096, 4096}, []int64{4096, 4096}, []int64{}, []int64{}),
		types: []string{"c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float"}}, func() {
		g.kernel(tid, kFP8GEMM, g.noisy(sec), [3]int{32, 32, 1}, ClassGEMMFP8)
	})
	g.cpuOp(tid, "mylib::permute", opArgs{dims: dims([]int64{4096, 64}), types: []string{"float"}}, func() {
		g.kernel(tid, kPermute, 7.5e-6, [3]int{256, 1, 1}, ClassUnknown)
	})
}

// gzipBytes compresses b deterministically (no name, no time).
func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
