// Package cuda is the CUDA calibration backend of dcpsim: an hwbackend.Backend
// that times causal attention, BF16 GEMMs and NCCL collectives on the NVIDIA
// GPUs of one node, for `dcpsim calibrate --backend cuda`.
//
// # Builds
//
// Built without the cuda tag or without cgo (the default, and CI), New always
// returns an error wrapping hwbackend.ErrNoDevice that says so (stub.go). Built
// with `CGO_ENABLED=1 go build -tags cuda`, the package compiles a small C shim
// (shim.c, shim.h) that dlopen()s the CUDA libraries at run time and calls them
// through our own prototypes: no CUDA header or library is needed to build, so
// `go vet -tags cuda` and `go test -tags cuda` work on a machine without CUDA,
// where New returns ErrNoDevice naming the library that failed to load and the
// GPU tests skip with that message. Symbols lists every function the shim
// resolves; a test keeps it equal to the shim's table.
//
// # Libraries
//
// Loaded by file name, most specific first (LD_LIBRARY_PATH applies):
//
//   - libcudart.so.12 or .13: devices, memory, streams, events. Required.
//   - libcuda.so.1 (the driver): cuModuleLoadData and cuLaunchKernel for the
//     NVRTC kernels, device names. Required.
//   - libcublas.so.12 or .13: cublasGemmEx. Without it GEMM fails.
//   - libnvrtc.so.12 or .13: compiles the attention kernels. Without it the
//     attention calls fail.
//   - libnccl.so.2: collectives; ncclAlltoAll is used when NCCL is 2.28 or
//     newer and exports it, grouped ncclSend/ncclRecv otherwise. Without NCCL
//     the collectives fail.
//   - libcudnn is not loaded: see "cuDNN" below.
//
// Calls that fail for want of a library return errors wrapping ErrNoDevice,
// so a caller can skip that family of measurements.
//
// # What runs where
//
// Each GPU is driven by one goroutine locked to an OS thread (the CUDA current
// device is per thread) with its own non-blocking stream, a pair of CUDA events
// and a device buffer that grows as needed. Attention and GEMM run on
// Options.Device. A collective over r ranks runs on devices 0..r-1, one
// goroutine and stream per GPU, over communicators from ncclCommInitAll; each
// rank times its part between events and a run counts as its slowest rank.
// Every method runs its warmups untimed and returns the median of its repeats
// (hwbackend.Timing). Inputs are pseudo-random BF16 values in [-1, 1).
//
//   - GEMM: cublasGemmEx, BF16 A, B and C, FP32 compute (CUBLAS_COMPUTE_32F),
//     default algorithm, issued column-major as Cᵀ = Bᵀ·Aᵀ.
//   - Attention: this package's causal FlashAttention-2-style kernels
//     (attentionSource), CUDA C++ in a Go string compiled at first use by
//     NVRTC to a cubin for the device's sm_XY, loaded with cuModuleLoadData
//     and launched with cuLaunchKernel through libcuda.so.1. The driver API
//     was chosen over cudaLaunchKernel because cudaLaunchKernel launches only
//     kernels registered with the runtime by nvcc, not NVRTC modules.
//     Layout [batch][token][head][dim]; head dims 64/64, 128/128, 192/128 and
//     192/192; GQA (heads a multiple of KV heads). BF16 in and out, FP32
//     accumulation on tensor cores (mma.sync.m16n8k16, so sm_80 or newer).
//     Forward: 64 query rows per block of 4 warps, online softmax, K/V tiles
//     of 64. Backward: 64 key rows per block of 8 warps, dK and dV held in
//     registers, dQ added atomically in FP32; AttentionBackward times the
//     accumulator zeroing, the dO·O row sums, the kernel and the conversions.
//     Fragments are loaded from shared memory with plain loads (no ldmatrix,
//     no cp.async pipelining, no Hopper wgmma/TMA), so expect speeds below
//     FlashAttention-2/3 and cuDNN: the measured efficiency is a lower bound
//     for what a production kernel reaches.
//   - cuDNN: Options.AttentionKernel "cudnn" returns ErrUnimplemented. Its
//     fused SDPA is reached through the cuDNN graph (backend descriptor) API,
//     some twenty descriptors that could not be wired and checked without a
//     GPU; "" therefore means NVRTC today.
//
// # Running calibrate.sh
//
// On a GPU machine, from the repository:
//
//	bash hwbackend/cuda/calibrate.sh [OUT_DIR]
//
// prints nvidia-smi and the CUDA libraries it finds (ldconfig -p,
// /usr/local/cuda, pip's nvidia-* wheels, which it adds to LD_LIBRARY_PATH),
// builds `go build -tags cuda -o /tmp/dcpsim ./cmd/dcpsim` (or uses
// $DCPSIM_BIN, or bin/dcpsim-cuda built elsewhere when the machine has no Go),
// then runs `dcpsim calibrate --backend cuda --base H200 --budget 6m` writing
// profile.toml, measurements.csv and calibrate.log to OUT_DIR ($OUT or
// ./calibration-out by default), in under 8 minutes.
//
// # What is verified, and what is not
//
// No GPU was available in the session that wrote this package. The CUDA,
// cuBLAS, NVRTC and NCCL calls compile and link but have never been executed
// on a GPU; nor have the kernels run on one, nor been compiled by NVRTC. What
// was checked without a GPU: the Go code under vet and staticcheck in both
// builds; the C shim's symbol table against Symbols(); the kernel source with
// clang's CUDA front end to PTX for sm_80, where clang is installed
// (TestKernelSourceCompilesForNVPTX); and the kernels' numerics by running
// them on CPU threads with warp shuffles and mma.sync emulated per the PTX
// fragment layouts, against a float64 reference, where g++ is installed
// (TestKernelsOnHostEmulation, testdata/emulate.cc). On a GPU machine run
//
//	CGO_ENABLED=1 go test -tags cuda -run GPU -v ./hwbackend/cuda/
//
// first: TestGPUAttentionNumerics compares the kernels' outputs with a host
// reference and TestGPUTimings calls every method once.
package cuda
