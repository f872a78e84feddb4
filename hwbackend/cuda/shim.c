//go:build cuda && cgo

/*
 * shim.c: loads the CUDA libraries with dlopen and resolves the symbol table
 * of shim.h with dlsym. Nothing here is linked against CUDA.
 */
#include "shim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Candidate file names per library, most specific first. */
static const char *const dcp_lib_files[DCP_LIB_COUNT][4] = {
	[DCP_LIB_CUDART] = {"libcudart.so.12", "libcudart.so.13", "libcudart.so", NULL},
	[DCP_LIB_CUDA] = {"libcuda.so.1", "libcuda.so", NULL, NULL},
	[DCP_LIB_CUBLAS] = {"libcublas.so.12", "libcublas.so.13", "libcublas.so", NULL},
	[DCP_LIB_NVRTC] = {"libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so", NULL},
	[DCP_LIB_NCCL] = {"libnccl.so.2", "libnccl.so", NULL, NULL},
};

static void *dcp_lib_handles[DCP_LIB_COUNT];

struct dcp_sym {
	int lib;
	const char *name;
	const char *alt;
	int optional;
};

#define DCP_SYM_ENTRY(lib, ret, name, alt, optional, params, args) {lib, #name, alt, optional},
static const struct dcp_sym dcp_syms[DCP_SYM_COUNT] = {DCP_SYMBOLS(DCP_SYM_ENTRY)};

static void *dcp_ptrs[DCP_SYM_COUNT];

#define DCP_SYM_WRAPPER(lib, ret, name, alt, optional, params, args) \
	ret dcp_##name params { return ((ret(*) params)dcp_ptrs[DCP_SYM_##name]) args; }
DCP_SYMBOLS(DCP_SYM_WRAPPER)

int dcp_lib_count(void) { return DCP_LIB_COUNT; }

const char *dcp_lib_name(int lib) {
	if (lib < 0 || lib >= DCP_LIB_COUNT) return "";
	return dcp_lib_files[lib][0];
}

int dcp_sym_count(void) { return DCP_SYM_COUNT; }

const char *dcp_sym_name(int i) { return (i >= 0 && i < DCP_SYM_COUNT) ? dcp_syms[i].name : ""; }

const char *dcp_sym_alt(int i) { return (i >= 0 && i < DCP_SYM_COUNT) ? dcp_syms[i].alt : ""; }

int dcp_sym_lib(int i) { return (i >= 0 && i < DCP_SYM_COUNT) ? dcp_syms[i].lib : -1; }

int dcp_sym_optional(int i) { return (i >= 0 && i < DCP_SYM_COUNT) ? dcp_syms[i].optional : 0; }

int dcp_sym_loaded(int i) { return (i >= 0 && i < DCP_SYM_COUNT) ? dcp_ptrs[i] != NULL : 0; }

int dcp_load_lib(int lib, char *err, int errlen) {
	if (lib < 0 || lib >= DCP_LIB_COUNT) {
		snprintf(err, (size_t)errlen, "no library %d", lib);
		return 1;
	}
	if (dcp_lib_handles[lib] == NULL) {
		char first[512] = "";
		for (int i = 0; i < 4 && dcp_lib_files[lib][i] != NULL; i++) {
			void *h = dlopen(dcp_lib_files[lib][i], RTLD_NOW | RTLD_GLOBAL);
			if (h != NULL) {
				dcp_lib_handles[lib] = h;
				break;
			}
			if (i == 0) {
				const char *e = dlerror();
				snprintf(first, sizeof first, "%s", e ? e : dcp_lib_files[lib][0]);
			}
		}
		if (dcp_lib_handles[lib] == NULL) {
			snprintf(err, (size_t)errlen, "%s (also tried the other names of %s)", first, dcp_lib_files[lib][0]);
			return 1;
		}
	}
	for (int i = 0; i < DCP_SYM_COUNT; i++) {
		if (dcp_syms[i].lib != lib || dcp_ptrs[i] != NULL) continue;
		void *p = dlsym(dcp_lib_handles[lib], dcp_syms[i].name);
		if (p == NULL && dcp_syms[i].alt[0] != '\0') p = dlsym(dcp_lib_handles[lib], dcp_syms[i].alt);
		if (p == NULL && !dcp_syms[i].optional) {
			snprintf(err, (size_t)errlen, "%s: symbol %s not found", dcp_lib_files[lib][0], dcp_syms[i].name);
			return 1;
		}
		dcp_ptrs[i] = p;
	}
	return 0;
}

int dcp_launch(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
	unsigned int bx, unsigned int shared_bytes, cudaStream_t stream,
	unsigned long long *args, int nargs) {
	void *params[24];
	if (nargs < 0 || nargs > 24) return -1;
	for (int i = 0; i < nargs; i++) params[i] = &args[i];
	return dcp_cuLaunchKernel(fn, gx, gy, gz, bx, 1, 1, shared_bytes, stream, params, NULL);
}

int dcp_nvrtc_compile(const char *src, const char *name, int sm,
	char **cubin, size_t *cubin_size, char **log, const char **stage) {
	char arch[64];
	snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d", sm);
	const char *opts[] = {arch, "--std=c++17", "--use_fast_math"};
	nvrtcProgram prog = NULL;
	*cubin = NULL;
	*cubin_size = 0;
	*log = NULL;
	*stage = "nvrtcCreateProgram";
	int rc = dcp_nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
	if (rc != 0) return rc;
	*stage = "nvrtcCompileProgram";
	rc = dcp_nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
	size_t log_size = 0;
	if (dcp_nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 1) {
		*log = malloc(log_size);
		if (*log != NULL && dcp_nvrtcGetProgramLog(prog, *log) != 0) {
			free(*log);
			*log = NULL;
		}
	}
	if (rc == 0) {
		*stage = "nvrtcGetCUBINSize";
		rc = dcp_nvrtcGetCUBINSize(prog, cubin_size);
	}
	if (rc == 0) {
		*stage = "nvrtcGetCUBIN";
		*cubin = malloc(*cubin_size);
		if (*cubin == NULL) {
			rc = -1;
		} else {
			rc = dcp_nvrtcGetCUBIN(prog, *cubin);
		}
	}
	dcp_nvrtcDestroyProgram(&prog);
	if (rc != 0) {
		free(*cubin);
		*cubin = NULL;
		*cubin_size = 0;
	}
	return rc;
}
