package cuda

// Symbol is one C function the backend resolves with dlsym at run time.
type Symbol struct {
	// Library is the first file name tried for the library that holds it.
	Library string
	// Name is the symbol looked up; Alt, when set, is tried if Name is absent.
	Name, Alt string
	// Optional symbols may be missing; the backend then takes another path.
	Optional bool
}

// Library file names, the first candidate of each (shim.c tries the others).
const (
	libCUDART = "libcudart.so.12"
	libCUDA   = "libcuda.so.1"
	libCUBLAS = "libcublas.so.12"
	libNVRTC  = "libnvrtc.so.12"
	libNCCL   = "libnccl.so.2"
)

// Symbols lists every function the C shim (shim.h's DCP_SYMBOLS table)
// resolves, in table order. Tests compare it with the table in both builds.
func Symbols() []Symbol {
	return []Symbol{
		{Library: libCUDART, Name: "cudaGetErrorString"},
		{Library: libCUDART, Name: "cudaRuntimeGetVersion"},
		{Library: libCUDART, Name: "cudaDriverGetVersion"},
		{Library: libCUDART, Name: "cudaGetDeviceCount"},
		{Library: libCUDART, Name: "cudaSetDevice"},
		{Library: libCUDART, Name: "cudaDeviceGetAttribute"},
		{Library: libCUDART, Name: "cudaDeviceSynchronize"},
		{Library: libCUDART, Name: "cudaMemGetInfo"},
		{Library: libCUDART, Name: "cudaMalloc"},
		{Library: libCUDART, Name: "cudaFree"},
		{Library: libCUDART, Name: "cudaMemcpy"},
		{Library: libCUDART, Name: "cudaMemsetAsync"},
		{Library: libCUDART, Name: "cudaStreamCreateWithFlags"},
		{Library: libCUDART, Name: "cudaStreamDestroy"},
		{Library: libCUDART, Name: "cudaStreamSynchronize"},
		{Library: libCUDART, Name: "cudaEventCreate"},
		{Library: libCUDART, Name: "cudaEventDestroy"},
		{Library: libCUDART, Name: "cudaEventRecord"},
		{Library: libCUDART, Name: "cudaEventSynchronize"},
		{Library: libCUDART, Name: "cudaEventElapsedTime", Alt: "cudaEventElapsedTime_v2"},
		{Library: libCUDA, Name: "cuInit"},
		{Library: libCUDA, Name: "cuGetErrorString"},
		{Library: libCUDA, Name: "cuDeviceGet"},
		{Library: libCUDA, Name: "cuDeviceGetName"},
		{Library: libCUDA, Name: "cuModuleLoadData"},
		{Library: libCUDA, Name: "cuModuleUnload"},
		{Library: libCUDA, Name: "cuModuleGetFunction"},
		{Library: libCUDA, Name: "cuFuncSetAttribute"},
		{Library: libCUDA, Name: "cuLaunchKernel"},
		{Library: libCUBLAS, Name: "cublasCreate_v2", Alt: "cublasCreate"},
		{Library: libCUBLAS, Name: "cublasDestroy_v2", Alt: "cublasDestroy"},
		{Library: libCUBLAS, Name: "cublasSetStream_v2", Alt: "cublasSetStream"},
		{Library: libCUBLAS, Name: "cublasGetVersion_v2", Optional: true},
		{Library: libCUBLAS, Name: "cublasGetStatusString", Optional: true},
		{Library: libCUBLAS, Name: "cublasGemmEx"},
		{Library: libNVRTC, Name: "nvrtcVersion"},
		{Library: libNVRTC, Name: "nvrtcGetErrorString"},
		{Library: libNVRTC, Name: "nvrtcCreateProgram"},
		{Library: libNVRTC, Name: "nvrtcCompileProgram"},
		{Library: libNVRTC, Name: "nvrtcGetProgramLogSize"},
		{Library: libNVRTC, Name: "nvrtcGetProgramLog"},
		{Library: libNVRTC, Name: "nvrtcGetCUBINSize"},
		{Library: libNVRTC, Name: "nvrtcGetCUBIN"},
		{Library: libNVRTC, Name: "nvrtcDestroyProgram"},
		{Library: libNCCL, Name: "ncclGetVersion"},
		{Library: libNCCL, Name: "ncclGetErrorString"},
		{Library: libNCCL, Name: "ncclCommInitAll"},
		{Library: libNCCL, Name: "ncclCommDestroy"},
		{Library: libNCCL, Name: "ncclGroupStart"},
		{Library: libNCCL, Name: "ncclGroupEnd"},
		{Library: libNCCL, Name: "ncclSend"},
		{Library: libNCCL, Name: "ncclRecv"},
		{Library: libNCCL, Name: "ncclAlltoAll", Optional: true},
	}
}
