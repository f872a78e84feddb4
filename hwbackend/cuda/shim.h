/*
 * shim.h: our own declarations of the few CUDA runtime, CUDA driver, cuBLAS,
 * NVRTC and NCCL entry points the cuda backend calls. No CUDA header is
 * included anywhere: every library is dlopen()ed at run time by shim.c, so the
 * package builds with -tags cuda on a machine without CUDA.
 *
 * Conventions:
 *  - Status codes (cudaError_t, CUresult, cublasStatus_t, nvrtcResult,
 *    ncclResult_t) and enums are plain int: C enums are int-sized in the x86-64
 *    and AArch64 ABIs.
 *  - Handles are pointers to incomplete structs we never look inside.
 *  - Device addresses are dcp_dptr, a 64-bit integer. The real prototypes take
 *    void*; on LP64 ABIs a 64-bit integer travels in the same register, and Go
 *    can hold it without ever forming an unsafe.Pointer to non-Go memory.
 *    (cudaMemcpy is declared for device-to-host copies only: dst is a host
 *    pointer, src a device address.)
 */
#ifndef DCPSIM_CUDA_SHIM_H
#define DCPSIM_CUDA_SHIM_H

#include <stddef.h>

typedef unsigned long long dcp_dptr;

typedef struct dcp_stream_st *cudaStream_t;
typedef struct dcp_event_st *cudaEvent_t;
typedef struct dcp_cublas_st *cublasHandle_t;
typedef struct dcp_nccl_st *ncclComm_t;
typedef struct dcp_nvrtc_st *nvrtcProgram;
typedef struct dcp_module_st *CUmodule;
typedef struct dcp_function_st *CUfunction;
typedef int CUdevice;

/* Libraries, in load order. The first candidate name is the one we report. */
enum {
	DCP_LIB_CUDART,
	DCP_LIB_CUDA,
	DCP_LIB_CUBLAS,
	DCP_LIB_NVRTC,
	DCP_LIB_NCCL,
	DCP_LIB_COUNT
};

/* Values from the public CUDA, cuBLAS and NCCL documentation. */
enum {
	DCP_cudaDevAttrMultiProcessorCount = 16,
	DCP_cudaDevAttrComputeCapabilityMajor = 75,
	DCP_cudaDevAttrComputeCapabilityMinor = 76,
	DCP_cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
	DCP_cudaStreamNonBlocking = 1,
	DCP_cudaMemcpyDeviceToHost = 2,
	DCP_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
	DCP_CUBLAS_OP_N = 0,
	DCP_CUDA_R_32F = 0,
	DCP_CUDA_R_16BF = 14,
	DCP_CUBLAS_COMPUTE_32F = 68,
	DCP_CUBLAS_GEMM_DEFAULT = -1,
	DCP_ncclInt8 = 0
};

/*
 * The symbol table: X(library, return type, name, alternative name or "",
 * optional, (parameters), (arguments)). shim.c resolves every entry with
 * dlsym (trying the alternative name when the first is absent) and defines a
 * wrapper dcp_<name> with the same parameters; Symbols() in symbols.go must
 * list the same entries (symbols_test.go checks both).
 */
#define DCP_SYMBOLS(X) \
	X(DCP_LIB_CUDART, const char *, cudaGetErrorString, "", 0, (int err), (err)) \
	X(DCP_LIB_CUDART, int, cudaRuntimeGetVersion, "", 0, (int *version), (version)) \
	X(DCP_LIB_CUDART, int, cudaDriverGetVersion, "", 0, (int *version), (version)) \
	X(DCP_LIB_CUDART, int, cudaGetDeviceCount, "", 0, (int *count), (count)) \
	X(DCP_LIB_CUDART, int, cudaSetDevice, "", 0, (int device), (device)) \
	X(DCP_LIB_CUDART, int, cudaDeviceGetAttribute, "", 0, (int *value, int attr, int device), (value, attr, device)) \
	X(DCP_LIB_CUDART, int, cudaDeviceSynchronize, "", 0, (void), ()) \
	X(DCP_LIB_CUDART, int, cudaMemGetInfo, "", 0, (size_t *free_bytes, size_t *total_bytes), (free_bytes, total_bytes)) \
	X(DCP_LIB_CUDART, int, cudaMalloc, "", 0, (dcp_dptr *ptr, size_t size), (ptr, size)) \
	X(DCP_LIB_CUDART, int, cudaFree, "", 0, (dcp_dptr ptr), (ptr)) \
	X(DCP_LIB_CUDART, int, cudaMemcpy, "", 0, (void *dst, dcp_dptr src, size_t size, int kind), (dst, src, size, kind)) \
	X(DCP_LIB_CUDART, int, cudaMemsetAsync, "", 0, (dcp_dptr ptr, int value, size_t size, cudaStream_t stream), (ptr, value, size, stream)) \
	X(DCP_LIB_CUDART, int, cudaStreamCreateWithFlags, "", 0, (cudaStream_t *stream, unsigned int flags), (stream, flags)) \
	X(DCP_LIB_CUDART, int, cudaStreamDestroy, "", 0, (cudaStream_t stream), (stream)) \
	X(DCP_LIB_CUDART, int, cudaStreamSynchronize, "", 0, (cudaStream_t stream), (stream)) \
	X(DCP_LIB_CUDART, int, cudaEventCreate, "", 0, (cudaEvent_t *event), (event)) \
	X(DCP_LIB_CUDART, int, cudaEventDestroy, "", 0, (cudaEvent_t event), (event)) \
	X(DCP_LIB_CUDART, int, cudaEventRecord, "", 0, (cudaEvent_t event, cudaStream_t stream), (event, stream)) \
	X(DCP_LIB_CUDART, int, cudaEventSynchronize, "", 0, (cudaEvent_t event), (event)) \
	X(DCP_LIB_CUDART, int, cudaEventElapsedTime, "cudaEventElapsedTime_v2", 0, (float *ms, cudaEvent_t start, cudaEvent_t end), (ms, start, end)) \
	X(DCP_LIB_CUDA, int, cuInit, "", 0, (unsigned int flags), (flags)) \
	X(DCP_LIB_CUDA, int, cuGetErrorString, "", 0, (int err, const char **str), (err, str)) \
	X(DCP_LIB_CUDA, int, cuDeviceGet, "", 0, (CUdevice *device, int ordinal), (device, ordinal)) \
	X(DCP_LIB_CUDA, int, cuDeviceGetName, "", 0, (char *name, int len, CUdevice device), (name, len, device)) \
	X(DCP_LIB_CUDA, int, cuModuleLoadData, "", 0, (CUmodule *module, const void *image), (module, image)) \
	X(DCP_LIB_CUDA, int, cuModuleUnload, "", 0, (CUmodule module), (module)) \
	X(DCP_LIB_CUDA, int, cuModuleGetFunction, "", 0, (CUfunction *fn, CUmodule module, const char *name), (fn, module, name)) \
	X(DCP_LIB_CUDA, int, cuFuncSetAttribute, "", 0, (CUfunction fn, int attr, int value), (fn, attr, value)) \
	X(DCP_LIB_CUDA, int, cuLaunchKernel, "", 0, (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared_bytes, cudaStream_t stream, void **params, void **extra), (fn, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra)) \
	X(DCP_LIB_CUBLAS, int, cublasCreate_v2, "cublasCreate", 0, (cublasHandle_t *handle), (handle)) \
	X(DCP_LIB_CUBLAS, int, cublasDestroy_v2, "cublasDestroy", 0, (cublasHandle_t handle), (handle)) \
	X(DCP_LIB_CUBLAS, int, cublasSetStream_v2, "cublasSetStream", 0, (cublasHandle_t handle, cudaStream_t stream), (handle, stream)) \
	X(DCP_LIB_CUBLAS, int, cublasGetVersion_v2, "", 1, (cublasHandle_t handle, int *version), (handle, version)) \
	X(DCP_LIB_CUBLAS, const char *, cublasGetStatusString, "", 1, (int status), (status)) \
	X(DCP_LIB_CUBLAS, int, cublasGemmEx, "", 0, (cublasHandle_t handle, int transa, int transb, int m, int n, int k, const void *alpha, dcp_dptr a, int atype, int lda, dcp_dptr b, int btype, int ldb, const void *beta, dcp_dptr c, int ctype, int ldc, int compute, int algo), (handle, transa, transb, m, n, k, alpha, a, atype, lda, b, btype, ldb, beta, c, ctype, ldc, compute, algo)) \
	X(DCP_LIB_NVRTC, int, nvrtcVersion, "", 0, (int *major, int *minor), (major, minor)) \
	X(DCP_LIB_NVRTC, const char *, nvrtcGetErrorString, "", 0, (int result), (result)) \
	X(DCP_LIB_NVRTC, int, nvrtcCreateProgram, "", 0, (nvrtcProgram *prog, const char *src, const char *name, int num_headers, const char *const *headers, const char *const *include_names), (prog, src, name, num_headers, headers, include_names)) \
	X(DCP_LIB_NVRTC, int, nvrtcCompileProgram, "", 0, (nvrtcProgram prog, int num_options, const char *const *options), (prog, num_options, options)) \
	X(DCP_LIB_NVRTC, int, nvrtcGetProgramLogSize, "", 0, (nvrtcProgram prog, size_t *size), (prog, size)) \
	X(DCP_LIB_NVRTC, int, nvrtcGetProgramLog, "", 0, (nvrtcProgram prog, char *log), (prog, log)) \
	X(DCP_LIB_NVRTC, int, nvrtcGetCUBINSize, "", 0, (nvrtcProgram prog, size_t *size), (prog, size)) \
	X(DCP_LIB_NVRTC, int, nvrtcGetCUBIN, "", 0, (nvrtcProgram prog, char *cubin), (prog, cubin)) \
	X(DCP_LIB_NVRTC, int, nvrtcDestroyProgram, "", 0, (nvrtcProgram *prog), (prog)) \
	X(DCP_LIB_NCCL, int, ncclGetVersion, "", 0, (int *version), (version)) \
	X(DCP_LIB_NCCL, const char *, ncclGetErrorString, "", 0, (int result), (result)) \
	X(DCP_LIB_NCCL, int, ncclCommInitAll, "", 0, (ncclComm_t *comms, int ndev, const int *devices), (comms, ndev, devices)) \
	X(DCP_LIB_NCCL, int, ncclCommDestroy, "", 0, (ncclComm_t comm), (comm)) \
	X(DCP_LIB_NCCL, int, ncclGroupStart, "", 0, (void), ()) \
	X(DCP_LIB_NCCL, int, ncclGroupEnd, "", 0, (void), ()) \
	X(DCP_LIB_NCCL, int, ncclSend, "", 0, (dcp_dptr buf, size_t count, int dtype, int peer, ncclComm_t comm, cudaStream_t stream), (buf, count, dtype, peer, comm, stream)) \
	X(DCP_LIB_NCCL, int, ncclRecv, "", 0, (dcp_dptr buf, size_t count, int dtype, int peer, ncclComm_t comm, cudaStream_t stream), (buf, count, dtype, peer, comm, stream)) \
	X(DCP_LIB_NCCL, int, ncclAlltoAll, "", 1, (dcp_dptr sendbuf, dcp_dptr recvbuf, size_t count, int dtype, ncclComm_t comm, cudaStream_t stream), (sendbuf, recvbuf, count, dtype, comm, stream))

/* DCP_SYM_<name>: the index of each symbol in the table. */
#define DCP_SYM_ENUM(lib, ret, name, alt, optional, params, args) DCP_SYM_##name,
enum { DCP_SYMBOLS(DCP_SYM_ENUM) DCP_SYM_COUNT };

/* dcp_<name>: call the resolved function. Call only after dcp_load_lib
 * succeeded for its library and, for optional symbols, dcp_sym_loaded. */
#define DCP_SYM_PROTO(lib, ret, name, alt, optional, params, args) ret dcp_##name params;
DCP_SYMBOLS(DCP_SYM_PROTO)

/* Loading and introspection. dcp_load_lib returns 0, or non-zero with a
 * message in err naming the library or symbol that failed. */
int dcp_load_lib(int lib, char *err, int errlen);
int dcp_lib_count(void);
const char *dcp_lib_name(int lib);
int dcp_sym_count(void);
const char *dcp_sym_name(int i);
const char *dcp_sym_alt(int i);
int dcp_sym_lib(int i);
int dcp_sym_optional(int i);
int dcp_sym_loaded(int i);

/* dcp_launch packs nargs 64-bit argument slots into cuLaunchKernel's
 * parameter array. The driver reads sizeof(parameter) bytes from each slot,
 * so a 32-bit int or float sits in the low half (little-endian hosts). */
int dcp_launch(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
	unsigned int bx, unsigned int shared_bytes, cudaStream_t stream,
	unsigned long long *args, int nargs);

/* dcp_nvrtc_compile compiles src for sm_<sm> to a cubin. On return *cubin and
 * *log are malloc()ed (or NULL) and the caller frees them; *stage names the
 * NVRTC call that failed. Returns an nvrtcResult. */
int dcp_nvrtc_compile(const char *src, const char *name, int sm,
	char **cubin, size_t *cubin_size, char **log, const char **stage);

#endif
