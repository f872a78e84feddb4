// Package kineto reads a PyTorch profiler (Kineto) Chrome trace of a real
// training job, classifies its GPU kernels, infers their shapes from the ops
// that launched them, and (a) turns what it matched into calib.Measurement
// rows that calib.FitDetermined fits into a profile's curves, (b) sets the
// measured kernel time beside what the cost model predicts, per class and
// shape, per layer and per step. What it cannot classify it lists by name;
// it never guesses.
//
// # How to record a trace
//
// Profile a few steps of the real job with CPU and CUDA activities and
// record_shapes=True:
//
//	from torch.profiler import profile, schedule, ProfilerActivity, tensorboard_trace_handler
//
//	with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
//	             schedule=schedule(wait=1, warmup=1, active=2),
//	             record_shapes=True,
//	             on_trace_ready=tensorboard_trace_handler("traces")) as prof:
//	    for batch in loader:
//	        train_step(batch)
//	        prof.step()
//
// or, without a schedule, prof.export_chrome_trace("trace.json") after the
// profiled steps. ProfilerActivity.CUDA is what records the kernels (a trace
// without it is refused: "no GPU kernels"). record_shapes=True is what
// records every op's "Input Dims", "Input type" and "Concrete Inputs"; without
// it kernels are still classified and timed, but no shape is known, so
// nothing is fitted or priced ("shape not recorded"). Gzip files (.json.gz,
// what tensorboard_trace_handler writes with use_gzip=True) are read as they
// are, detected by their magic bytes. Each rank writes its own file; read
// one per GPU kind. Collective parameters (Collective name, In msg nelems,
// Group size, dtype) are recorded by PyTorch 2.3 and later.
//
// # What Read keeps
//
// Read streams traceEvents (json.Decoder tokens: the raw file is never held
// twice), at most MaxTraceBytes of JSON after decompression (a gzip bomb
// stops there) and MaxTraceEvents events. It keeps the kernel, gpu_memcpy and
// gpu_memset events (dur in microseconds, Kineto's unit; a negative,
// non-numeric or over-an-hour dur is an error), the cpu_ops and user annotations
// with their nesting and, of their args, only what shape inference reads,
// the cuda_runtime launches by correlation, deviceProperties,
// distributedInfo and the ProfilerStep#N annotations.
//
// Each kernel is linked to the op that launched it: the cpu_op with the
// kernel's External id when its cuda_runtime launch lies inside that op (or
// no launch was recorded), else the op with the launch's External id, else
// the innermost op on the launch's thread around it (older PyTorch, whose
// kernels' External id is their correlation). Ops nest by time on each
// thread (sort + stack, O(n log n); traces in whole microseconds get one
// microsecond of slack). Kernel.Op names that op.
//
// # Classes
//
// From the demangled kernel name (and, for collectives, the arguments):
// attention forward and backward (FlashAttention-2 flash_fwd_kernel,
// flash_fwd_splitkv_kernel, flash_bwd_dq_dk_dv_loop[_seqk_parallel]_kernel;
// FlashAttention-3 flash::FlashAttnFwdSm90 and FlashAttnBwdSm90, inside
// cutlass::device_kernel; cuDNN SDPA ..._sdpa_..._flash_fprop/_bprop_...;
// PyTorch's memory-efficient fmha_cutlassF_/fmha_cutlassB_), attention pre-
// and post-processing (flash_bwd_dot_do_o_kernel, flash_bwd_convert_dq_kernel,
// FlashAttention-3's preprocess, dQ conversion and dQaccum clearing, split-KV
// combines), dense GEMMs (sm90/sm80_xmma_gemm_*, ampere_*gemm*, cutlass
// tensorop/wmma GEMMs, cuBLAS >= 12.8's nvjet_*; precision from the name —
// nvjet_tst is bf16, nvjet_hsh fp16, a q in nvjet's type letters fp8 — or
// from the op's Input type; fp32 sgemm and tf32 s1688gemm are dense GEMMs of
// precision fp32/tf32), fp8 GEMMs (e4m3/e5m2 names, deep_gemm::), grouped
// GEMMs (grouped_gemm, GroupedGemm, m_grouped), NCCL collectives
// (ncclKernel_X / ncclDevKernel_X: all_reduce, all_gather, reduce_scatter,
// all_to_all, send_recv, broadcast), DeepEP-style dispatch/combine
// (deep_ep::intranode/internode/internode_ll, and dispatch/combine kernels of
// a moe/ep namespace), memory-bound kernels (PyTorch's elementwise, reduce,
// cat, index, softmax, loss and norm kernels, Transformer Engine's norm,
// cast and transpose kernels, apex's cuApplyRMSNorm/cuComputeGradInput,
// multi_tensor_apply optimizers, cuBLAS's split-K reduction and epilogue,
// Inductor's triton_poi_/triton_red_/triton_per_ kernels), memcpy and memset
// (their own events), and unknown: convolutions, sorts, scans, fbgemm's
// embedding kernels, custom kernels and anything else not named here.
//
// # Shapes
//
// A kernel's shape comes from the nearest op at or above the one that
// launched it whose Input Dims give it (backward GEMMs are found as the
// aten::mm inside MmBackward0 and the like):
//
//	gemm         aten::mm [[m,k],[k,n]], aten::addmm [bias,[m,k],[k,n]], aten::bmm/baddbmm
//	             [[b,m,k],[b,k,n]] (Batch b), aten::linear [[...,k],[n,k]] and aten::matmul
//	             with leading dims flattened into m, aten::_scaled_mm, aten::mv/addmv
//	attention    q, k, v of aten::scaled_dot_product_attention and its flash, cuDNN and
//	             efficient forms ([b, h, s, d]) and their backward ops; flash_attn's
//	             _flash_attn_forward/_backward ops, FlashAttnFunc and
//	             aten::_flash_attention_forward/backward ([b, s, h, d]); head_dim_qk
//	             is q's d, head_dim_v v's, kv_heads k's heads; causal from Concrete
//	             Inputs (is_causal, causal, custom_mask_type), else FlashAttention-2's
//	             Is_causal template argument in the kernel name; an autograd backward
//	             node without dims (FlashAttnFuncBackward of flash-attn < 2.6) takes
//	             the shape of the forward op with its sequence number
//	collective   bytes per rank: In msg nelems × the dtype's size (an all-gather's
//	             output: Group size × that); ranks: Group size; from the kernel's
//	             args or the record_param_comms op above it
//	memory-bound the HBM bytes of the op that launched the kernel, when it launched
//	             no other: the sum of its tensor inputs' numel × dtype size, plus the
//	             output estimated as its largest input (a convention: in-place ops
//	             and ops whose output is smaller are overestimated); an op with a
//	             tensor-list input records no per-tensor dims
//
// With no op, a FlashAttention-2 kernel's traits give its head dim and its
// grid (ceil(s/kBlockM), batch, heads) an upper bound of its sequence
// length: such a shape is marked SeqUpperBound and never fitted or priced.
// Varlen attention (q of [total_tokens, h, d]) records no per-sequence
// lengths and is not fitted; nor is attention with seq_q != seq_k.
//
// # Fitted, priced, listed
//
// Trace.Measurements gives calib.Measurement rows (median duration, count
// as Repeats) for bf16/fp16 dense GEMMs and for causal attention forward and
// backward main kernels of an exact shape at d_qk <= 128, 192 or 256 (the
// head dims calib fits); the attention pre/post-processing kernels are not
// added to the backward's row. Trace.MeasurementsFor(base) also leaves out
// the rows calib.Fit would refuse or be misled by on that base: a median not
// above its kernel_launch_seconds, and GEMMs its roofline prices by their
// memory side. NewComputePredictor prices those GEMMs and
// attention kernels (any head dim, interpolated as the cost model does),
// memory-bound kernels with bytes, and fp8 GEMMs on a profile with an FP8
// peak and curve, each plus the profile's KernelLaunchSeconds (which the
// fitter subtracts from every compute row). Everything else is classified,
// counted and timed but neither fitted nor priced, with the reason:
// non-causal attention (the cost model prices causal attention only),
// fp32/tf32 GEMMs (the cost model is BF16), grouped GEMMs, collectives and
// dispatch/combine (a kernel's time includes waiting for its peers;
// collectives are calibrated with nccl-tests, calib.ReadNCCLTests),
// attention pre/post-processing, memcpy/memset, and unknown kernels, which
// Compare lists by name.
//
// Compare's per-layer totals divide by the number of attention forward
// kernels, taking one per layer per micro-batch (a trace without attention
// has none); its per-step totals divide by the ProfilerStep count.
// Trace.Check refuses durations in the wrong unit against a profile.
//
// The package's test trace, testdata/synthetic-h100-llama-step.json.gz, is
// synthetic: made by the test generator from the cost model's own prices with
// ±2% noise, not recorded on a GPU (synth_test.go).
package kineto
