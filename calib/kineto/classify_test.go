package kineto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
)

// TestClassifyName: the kernel names of the libraries the package knows,
// each with its class and the precision its name states; convolutions,
// fbgemm's embedding kernels and custom kernels stay unknown.
func TestClassifyName(t *testing.T) {
	const fa3fwd = "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, false, false, false, false, false, false, false, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, false, false, false, false>, flash::StaticPersistentTileScheduler<false> > > >(flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...> >::Params)"
	for _, c := range []struct {
		name      string
		class     Class
		precision string
	}{
		{kFA2Fwd, ClassAttentionFwd, PrecisionBF16},
		{"void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::half_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::half_t> >, true, false, false, false, true, false, false, false>(Flash_fwd_params)", ClassAttentionFwd, PrecisionFP16},
		{"void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 1, true>(Flash_fwd_params)", ClassAttentionAux, ""},
		{kFA2Bwd, ClassAttentionBwd, PrecisionBF16},
		{"void flash_bwd_dq_dk_dv_loop_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 4, 4, false, false, cutlass::half_t, Flash_kernel_traits<64, 128, 128, 8, cutlass::half_t> >, false, true, false, false, true, true>(Flash_bwd_params)", ClassAttentionBwd, PrecisionFP16},
		{kFA2DotDoO, ClassAttentionAux, ""},
		{kFA2ConvDQ, ClassAttentionAux, ""},
		{fa3fwd, ClassAttentionFwd, PrecisionBF16},
		{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<flash::CollectiveMainloopBwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<128>, cute::C<128> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, false, false, 2, 2, 1, false, false, false, false>, flash::CollectiveEpilogueBwd<...> > > >(...)", ClassAttentionBwd, PrecisionBF16},
		{"void cutlass::device_kernel<flash::FlashAttnBwdPreprocess<cute::tuple<cute::C<64>, cute::C<128> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false> >(flash::FlashAttnBwdPreprocess<...>::Params)", ClassAttentionAux, ""},
		{"void cutlass::device_kernel<flash::FlashAttnBwdPostprocessConvertdQ<cute::tuple<cute::C<64>, cute::C<128> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, 256, cute::TiledMMA<...>, false, false, false> >(...)", ClassAttentionAux, ""},
		{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", ClassAttentionFwd, PrecisionFP16},
		{"cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3_64x128x128_4x1x1_kernel0_0", ClassAttentionBwd, PrecisionFP16},
		{"fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)", ClassAttentionFwd, PrecisionBF16},
		{"fmha_cutlassB_bf16_aligned_128x64_k128_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, true, 128, 64, 128, false>::Params)", ClassAttentionBwd, PrecisionBF16},
		{kSM90GEMM, ClassGEMM, PrecisionBF16},
		{"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", ClassGEMM, PrecisionBF16},
		{"sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize96x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", ClassGEMM, PrecisionFP16},
		{"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", ClassGEMM, PrecisionBF16},
		{"ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_tn", ClassGEMM, PrecisionFP16},
		{"void cutlass::Kernel<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8::Params)", ClassGEMM, PrecisionBF16},
		{"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)", ClassGEMM, PrecisionBF16},
		{kNvjetTNT, ClassGEMM, PrecisionBF16},
		{"nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNN", ClassGEMM, PrecisionFP16},
		{"nvjet_qqtst_128x128_128x6_1x1_v_bz_TNT", ClassGEMMFP8, PrecisionFP8},
		{"nvjet_sm100_qqtst_mma_128x256_128x4_2x1_2cta_h_bz_TNT", ClassGEMMFP8, PrecisionFP8},
		{"nvjet_sss_128x64_32x8_1x1_v_bz_NNT", ClassGEMM, PrecisionFP32},
		{kFP8GEMM, ClassGEMMFP8, PrecisionFP8},
		{"void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 160u, 128u, 8u, 1u, 128u, (deep_gemm::GemmType)0, 3u, 1u>(float*, int*, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)", ClassGEMMFP8, PrecisionFP8},
		{"void deep_gemm::sm90_m_grouped_fp8_gemm_contiguous_1d1d_impl<128u, 7168u, 128u, 160u, 128u, 8u>(...)", ClassGroupedGEMM, PrecisionFP8},
		{"void cutlass::Kernel<cutlass::gemm::kernel::GemmGrouped<cutlass::gemm::threadblock::MmaMultistage<...>, cutlass::bfloat16_t> >(...)", ClassGroupedGEMM, PrecisionBF16},
		{"volta_sgemm_128x64_nn", ClassGEMM, PrecisionFP32},
		{"void cutlass::Kernel2<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::MmaMultistage<cutlass::bfloat16_t>, cutlass::epilogue::threadblock::Epilogue<cutlass::NumericConverter<float, cutlass::bfloat16_t> > > >(...)", ClassGEMM, PrecisionBF16},
		{"_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemmMultistageINS_4gemm9GemmShapeILi128ELi", ClassUnknown, ""},
		{"ampere_sgemm_32x32_sliced1x4_tn", ClassGEMM, PrecisionFP32},
		{"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)", ClassGEMM, PrecisionTF32},
		{"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", ClassCollective, ""},
		{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", ClassCollective, ""},
		{kRedScatter, ClassCollective, ""},
		{"void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int4 const*, float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, int, void**, int, int, int)", ClassEPDispatch, ""},
		{"void deep_ep::internode_ll::combine<false, 7168>(void*, int*, long*, void const*, void*, int*, void*, int const*, long const*, float const*, int const*, int*, int*, int, int, int, int, int, int, int, int, int, bool)", ClassEPDispatch, ""},
		{"void moe::dispatch_tokens_kernel<__nv_bfloat16>(__nv_bfloat16 const*, int const*, __nv_bfloat16*, int)", ClassEPDispatch, ""},
		{kAdd, ClassMemoryBound, ""},
		{"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, ...)", ClassMemoryBound, ""},
		{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<...>)", ClassMemoryBound, ""},
		{"void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 128, 1>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)", ClassMemoryBound, ""},
		{"void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<...> >(long, ...)", ClassMemoryBound, ""},
		{"void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)", ClassMemoryBound, ""},
		{kLogSoftmax, ClassMemoryBound, ""},
		{kTENormFwd, ClassMemoryBound, ""},
		{"void transformer_engine::transpose::cast_transpose_kernel<8, false, __nv_bfloat16, __nv_fp8_e4m3>(...)", ClassMemoryBound, ""},
		{"void cuApplyRMSNorm<c10::BFloat16, float, c10::BFloat16>(c10::BFloat16*, float*, c10::BFloat16 const*, int, int, float, c10::BFloat16 const*)", ClassMemoryBound, ""},
		{"void cuComputeGradInput<c10::BFloat16, float, c10::BFloat16>(c10::BFloat16 const*, c10::BFloat16 const*, int, int, float const*, float const*, float, c10::BFloat16 const*, c10::BFloat16*, bool)", ClassMemoryBound, ""},
		{kAdam, ClassMemoryBound, ""},
		{"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float)", ClassMemoryBound, ""},
		{"triton_poi_fused_add_mul_0", ClassMemoryBound, ""},
		{"triton_red_fused__to_copy_mean_pow_1", ClassMemoryBound, ""},
		{"triton_per_fused_native_layer_norm_2", ClassMemoryBound, ""},
		{"void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*)", ClassMemoryBound, ""},
		{"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel__5x_cudnn", ClassUnknown, ""},
		{"cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", ClassUnknown, ""},
		{"void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int, int, int, int const*, decltype(nullptr) const*, int const*, int const*, int*, decltype(nullptr)*)", ClassUnknown, ""},
		{"triton__0d1d2d3d", ClassUnknown, ""},
		{kRope, ClassUnknown, ""},
		{kPermute, ClassUnknown, ""},
		{"", ClassUnknown, ""},
	} {
		in := classifyName(c.name)
		if in.class != c.class || in.precision != c.precision {
			t.Errorf("%s: %s %q, want %s %q", short(c.name, 90), in.class, in.precision, c.class, c.precision)
		}
	}
	// FlashAttention-2's traits and Is_causal.
	for _, c := range []struct {
		name               string
		d, m, n, gridBlock int64
		causal             Causality
	}{
		{kFA2Fwd, 128, 128, 64, 128, Causal},
		{kFA2FwdFull, 128, 128, 64, 128, NonCausal},
		{kFA2Bwd, 128, 64, 128, 128, Causal},
		{"void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<(int)64, (int)64, (int)256, (int)4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 64, 256, 4, cutlass::bfloat16_t> >, (bool)1, false, false, false, true, false, true, false>(Flash_fwd_params)", 64, 64, 256, 0, Causal},
	} {
		in := classifyName(c.name)
		if in.headDim != c.d || in.blockM != c.m || in.blockN != c.n || in.gridBlock != c.gridBlock || in.causal != c.causal {
			t.Errorf("%s: traits %d %d %d grid block %d %s", short(c.name, 60), in.headDim, in.blockM, in.blockN, in.gridBlock, in.causal)
		}
	}
	if k := classifyName("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)").collective; k != calib.KindAllGather {
		t.Errorf("nccl AllGather: %q", k)
	}
}

// tiny builds a trace of cpu ops (with optional children) and kernels.
type tinyOp struct {
	name     string
	dims     any
	types    []string
	concrete []string
	seq      int64
	args     map[string]any
	kernel   string // launched inside this op, after its children
	kargs    map[string]any
	grid     [3]int
	children []tinyOp
}

// tinyTrace writes ops on one thread, each kernel linked either by External
// id (modern) or only by its correlation and time (old PyTorch).
func tinyTrace(t *testing.T, modern bool, ops ...tinyOp) []byte {
	t.Helper()
	var evs []map[string]any
	var ext, corr int64
	clock := int64(1000)
	gpu := int64(1000000)
	var walk func(o tinyOp)
	walk = func(o tinyOp) {
		ext++
		me := ext
		start := clock
		clock += 2
		at := len(evs)
		evs = append(evs, nil)
		for _, c := range o.children {
			walk(c)
		}
		if o.kernel != "" {
			corr++
			rt := map[string]any{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": clock, "dur": 3,
				"args": map[string]any{"correlation": corr}}
			kargs := map[string]any{"correlation": corr, "device": 0, "stream": 7, "grid": o.grid, "block": [3]int{128, 1, 1}}
			if modern {
				rt["args"].(map[string]any)["External id"] = me
				kargs["External id"] = me
			} else {
				kargs["External id"] = corr + 5000
			}
			for k, v := range o.kargs {
				kargs[k] = v
			}
			evs = append(evs, rt, map[string]any{"ph": "X", "cat": "kernel", "name": o.kernel, "pid": 0, "tid": 7, "ts": gpu, "dur": 50, "args": kargs})
			gpu += 100
			clock += 5
		}
		clock += 2
		args := map[string]any{"External id": me}
		if o.dims != nil {
			args["Input Dims"], args["Input type"] = o.dims, o.types
			if o.concrete != nil {
				args["Concrete Inputs"] = o.concrete
			}
		}
		if o.seq > 0 {
			args["Sequence number"] = o.seq
		}
		for k, v := range o.args {
			args[k] = v
		}
		evs[at] = map[string]any{"ph": "X", "cat": "cpu_op", "name": o.name, "pid": 1, "tid": 1, "ts": start, "dur": clock - start, "args": args}
		clock++
	}
	for _, o := range ops {
		walk(o)
	}
	b, err := json.Marshal(map[string]any{"schemaVersion": 1, "traceEvents": evs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInferShapes: shapes from each kind of op, through both kinds of
// linking (External id; correlation and time nesting in integer-microsecond
// traces of older PyTorch).
func TestInferShapes(t *testing.T) {
	const gemmK = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"
	b16 := "c10::BFloat16"
	sdpaCausal := []string{"", "", "", "0.0", "True", "False", ""}
	cases := []struct {
		name  string
		op    tinyOp
		shape string
		prec  string
		why   string
	}{
		{"mm", tinyOp{name: "aten::mm", dims: [][]int{{64, 32}, {32, 16}}, types: []string{b16, b16}, kernel: gemmK}, "m=64;n=16;k=32", "bf16", ""},
		{"addmm", tinyOp{name: "aten::addmm", dims: [][]int{{16}, {64, 32}, {32, 16}, {}, {}}, types: []string{b16, b16, b16, "Scalar", "Scalar"}, kernel: gemmK}, "m=64;n=16;k=32", "bf16", ""},
		{"bmm", tinyOp{name: "aten::bmm", dims: [][]int{{4, 64, 32}, {4, 32, 16}}, types: []string{b16, b16}, kernel: gemmK}, "m=64;n=16;k=32;batch=4", "bf16", ""},
		{"linear 3-d", tinyOp{name: "aten::linear", dims: [][]int{{2, 8, 32}, {16, 32}, {16}}, types: []string{b16, b16, b16}, kernel: gemmK}, "m=16;n=16;k=32", "bf16", ""},
		{"linear → matmul → mm", tinyOp{name: "aten::linear", dims: [][]int{{2, 8, 32}, {16, 32}, {}}, types: []string{b16, b16, ""},
			children: []tinyOp{{name: "aten::matmul", dims: [][]int{{2, 8, 32}, {32, 16}}, types: []string{b16, b16},
				children: []tinyOp{{name: "aten::mm", dims: [][]int{{16, 32}, {32, 16}}, types: []string{b16, b16}, kernel: gemmK}}}}}, "m=16;n=16;k=32", "bf16", ""},
		{"mm without record_shapes", tinyOp{name: "MmBackward0", children: []tinyOp{{name: "aten::mm", kernel: gemmK}}}, "", "bf16", whyShapeNotRecorded},
		{"inconsistent mm", tinyOp{name: "aten::mm", dims: [][]int{{64, 32}, {31, 16}}, types: []string{b16, b16}, kernel: gemmK}, "", "bf16", "aten::mm: inputs [64 32] and [31 16]"},
		{"fp32 sgemm", tinyOp{name: "aten::mm", dims: [][]int{{64, 32}, {32, 16}}, types: []string{"float", "float"}, kernel: "volta_sgemm_128x64_nn"}, "m=64;n=16;k=32", "fp32", "fp32 GEMM: the cost model is BF16"},
		{"GEMM of unnamed precision", tinyOp{name: "aten::mm", dims: [][]int{{64, 32}, {32, 16}}, types: []string{"c10::Half", "c10::Half"}, kernel: "gemmSN_TN_kernel"}, "m=64;n=16;k=32", "fp16", ""},
		{"sdpa (b, h, s, d)", tinyOp{name: "aten::_scaled_dot_product_flash_attention", dims: [][]int{{2, 16, 256, 128}, {2, 4, 256, 128}, {2, 4, 256, 64}, {}, {}, {}, {}},
			types: []string{b16, b16, b16, "Scalar", "Scalar", "Scalar", ""}, concrete: sdpaCausal, kernel: "fmha_cutlassF_bf16_aligned_64x128_rf_sm80"}, "seq=256;heads=16;kv_heads=4;head_dim_qk=128;head_dim_v=64;batch=2;causal=1", "bf16", ""},
		{"cudnn sdpa, fp16 by its name, bf16 by its op", tinyOp{name: "aten::_scaled_dot_product_cudnn_attention", dims: [][]int{{1, 8, 512, 64}, {1, 8, 512, 64}, {1, 8, 512, 64}, {}, {}, {}, {}, {}, {}},
			types: []string{b16, b16, b16, "", "Scalar", "Scalar", "Scalar", "Scalar", ""}, concrete: []string{"", "", "", "", "False", "0.0", "True", "False", ""},
			kernel: "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0"}, "seq=512;heads=8;kv_heads=8;head_dim=64;batch=1;causal=1", "bf16", ""},
		{"varlen flash", tinyOp{name: "flash_attn::_flash_attn_varlen_forward", dims: [][]int{{4096, 16, 128}, {4096, 16, 128}, {4096, 16, 128}}, types: []string{b16, b16, b16}, kernel: kFA2Fwd}, "", "bf16", "flash_attn::_flash_attn_varlen_forward: " + whyVarlen},
		{"sdpa backward", tinyOp{name: "aten::_scaled_dot_product_flash_attention_backward",
			dims:  [][]int{{1, 8, 512, 64}, {1, 8, 512, 64}, {1, 8, 512, 64}, {1, 8, 512, 64}, {1, 8, 512, 64}, {1, 8, 512}, {}, {}, {}, {}, {}, {}, {}, {}, {}},
			types: []string{b16, b16, b16, b16, b16, "float", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "long", "long", ""}, concrete: []string{"", "", "", "", "", "", "", "", "512", "512", "0.0", "True", "", "", ""},
			kernel: "fmha_cutlassB_bf16_aligned_128x64_k128_sm80"}, "seq=512;heads=8;kv_heads=8;head_dim=64;batch=1;causal=1", "bf16", ""},
		{"flash backward by sequence number", tinyOp{name: "step", children: []tinyOp{
			{name: "FlashAttnFunc", dims: [][]int{{1, 1024, 8, 128}, {1, 1024, 2, 128}, {1, 1024, 2, 128}}, types: []string{b16, b16, b16}, seq: 77},
			{name: "FlashAttnFuncBackward", seq: 77, kernel: kFA2Bwd}}}, "seq=1024;heads=8;kv_heads=2;head_dim=128;batch=1;causal=1", "bf16", ""},
		{"head dim 160 priced, not fitted", tinyOp{name: "flash_attn::_flash_attn_forward", dims: [][]int{{1, 1024, 8, 160}, {1, 1024, 8, 160}, {1, 1024, 8, 160}},
			types: []string{b16, b16, b16}, concrete: []string{"", "", "", "0.0", "0.1", "True"}, kernel: kFA2Fwd}, "seq=1024;heads=8;kv_heads=8;head_dim=160;batch=1;causal=1", "bf16", ""},
		{"cross attention", tinyOp{name: "flash_attn::_flash_attn_forward", dims: [][]int{{1, 1024, 8, 128}, {1, 77, 8, 128}, {1, 77, 8, 128}},
			types: []string{b16, b16, b16}, concrete: []string{"", "", "", "0.0", "0.1", "False"}, kernel: kFA2FwdFull}, "", "bf16", "flash_attn::_flash_attn_forward: seq_q 1024 != seq_k 77"},
		{"collective from record_param_comms", tinyOp{name: "record_param_comms", args: map[string]any{"Collective name": "allgather_into_tensor_coalesced", "In msg nelems": 1000, "Out msg nelems": 8000, "Group size": 8, "dtype": "BFloat16"},
			kernel: "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"}, "all_gather;bytes=16000;ranks=8", "", ""},
		{"collective kind from the annotation", tinyOp{name: "nccl:all_reduce", kernel: "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"}, "all_reduce", "", whyCommNotRecorded},
		{"elementwise bytes", tinyOp{name: "aten::add", dims: [][]int{{1024, 1024}, {1024}, {}}, types: []string{b16, b16, "Scalar"}, kernel: kAdd}, "bytes=4196352", "", ""},
		{"elementwise 0-d tensor", tinyOp{name: "aten::mul", dims: [][]int{{1000}, {}}, types: []string{"float", "float"}, kernel: kMul}, "bytes=8004", "", ""},
		{"cat of a tensor list", tinyOp{name: "aten::cat", dims: []any{[][]int{{4, 4}, {4, 4}}, []int{}}, types: []string{"TensorList", "Scalar"}, kernel: "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>(float*)"}, "", "", whyMemListInput},
		{"grid only", tinyOp{name: "CompiledFunction", kernel: kFA2Fwd, grid: [3]int{8, 2, 16}}, "seq<=1024;heads=16;head_dim=128;batch=2;causal=1", "bf16", "shape from the kernel grid: seq <= 1024"},
	}
	for _, c := range cases {
		for _, modern := range []bool{true, false} {
			name := fmt.Sprintf("%s (modern %v)", c.name, modern)
			tr, err := Read(bytes.NewReader(tinyTrace(t, modern, c.op)), "tiny.json")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(tr.Kernels) != 1 {
				t.Fatalf("%s: %d kernels", name, len(tr.Kernels))
			}
			k := tr.Kernels[0]
			if k.Op == "" || k.Shape.String() != c.shape || k.Precision != c.prec || !strings.HasPrefix(k.Why, c.why) || (c.why == "") != (k.Why == "") {
				t.Errorf("%s: op %q, shape %q precision %q why %q; want %q %q %q", name, k.Op, k.Shape, k.Precision, k.Why, c.shape, c.prec, c.why)
			}
		}
	}
}

// TestMeasurementsSkip: fittable kernels become rows; the others are
// grouped by reason, with the head-dim rule of calib's attention curves.
func TestMeasurementsSkip(t *testing.T) {
	b16 := "c10::BFloat16"
	data := tinyTrace(t, true,
		tinyOp{name: "flash_attn::_flash_attn_forward", dims: [][]int{{1, 1024, 8, 160}, {1, 1024, 8, 160}, {1, 1024, 8, 160}},
			types: []string{b16, b16, b16}, concrete: []string{"", "", "", "0.0", "0.1", "True"}, kernel: kFA2Fwd},
		tinyOp{name: "flash_attn::_flash_attn_forward", dims: [][]int{{1, 1024, 8, 128}, {1, 1024, 8, 128}, {1, 1024, 8, 128}},
			types: []string{b16, b16, b16}, concrete: []string{"", "", "", "0.0", "0.1", "True"}, kernel: kFA2Fwd},
		tinyOp{name: "aten::mm", dims: [][]int{{64, 32}, {32, 16}}, types: []string{b16, b16}, kernel: kNvjetTNT},
		tinyOp{name: "aten::mm", dims: [][]int{{64, 32}, {32, 16}}, types: []string{b16, b16}, kernel: kNvjetTNT},
		tinyOp{name: "mylib::x", kernel: kRope},
	)
	tr, err := Read(bytes.NewReader(data), "tiny.json")
	if err != nil {
		t.Fatal(err)
	}
	ms, skipped := tr.Measurements()
	if len(ms) != 2 || ms[0].Operation != calib.OpAttentionFwd || ms[1].Operation != calib.OpGEMM || ms[1].Repeats != 2 || math.Abs(ms[1].Seconds-50e-6) > 1e-15 {
		t.Errorf("rows %+v", ms)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0].Reason, "head dim (qk) 160") || skipped[1].Class != ClassUnknown {
		t.Errorf("skipped %+v", skipped)
	}
	// Rows whose median is not above the base's launch cost are left out
	// for fitting onto it (the fitter would fail on them).
	slow := synthProfile(t)
	slow.KernelLaunchSeconds.Value = 60e-6
	ms, skipped = tr.MeasurementsFor(slow)
	if len(ms) != 0 || len(skipped) != 4 || !strings.Contains(skipped[0].Reason, "kernel_launch_seconds (60 µs)") || !strings.Contains(skipped[1].Reason, "head dim (qk) 160") || skipped[2].Kernels != 2 {
		t.Errorf("MeasurementsFor a 60 µs launch cost: rows %+v, skipped %+v", ms, skipped)
	}
	// The 64×16×32 GEMM is memory-bound in the roofline.
	ms, skipped = tr.MeasurementsFor(synthProfile(t))
	if len(ms) != 1 || ms[0].Operation != calib.OpAttentionFwd || len(skipped) != 3 || !strings.Contains(skipped[1].Reason, "memory-bound in the base profile's roofline") {
		t.Errorf("MeasurementsFor a 5 µs launch cost: rows %+v, skipped %+v", ms, skipped)
	}
	c := Compare(tr, NewComputePredictor(synthProfile(t)))
	for _, r := range c.Rows {
		if r.Class == ClassAttentionFwd && r.Priced != 1 {
			t.Errorf("attention at head dim 160 or 128 not priced: %+v", r)
		}
	}
}
