// clang_prelude.cuh: the few CUDA names attentionSource uses, declared for
// clang's CUDA front end run with -nocudainc (no CUDA toolkit), so that
// kernels_test.go can compile the kernels to PTX where clang is installed.
// NVRTC provides the real ones; these map to clang's NVVM builtins.
// __syncthreads is a clang builtin already.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#include "__clang_cuda_builtin_vars.h"
__device__ float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
__device__ unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
__device__ float exp2f(float x) { return __nvvm_ex2_approx_f(x); }
__device__ float log2f(float x) { return __nvvm_lg2_approx_f(x); }
__device__ float fmaxf(float a, float b) { return __nvvm_fmax_f(a, b); }
__device__ float __shfl_xor_sync(unsigned m, float v, int l) { return __nvvm_shfl_sync_bfly_f32(m, v, l, 0x1f); }
__device__ float atomicAdd(float* p, float v) { return __nvvm_atom_add_gen_f(p, v); }
