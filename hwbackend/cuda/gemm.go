//go:build cuda && cgo

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/dcpsim/dcpsim/hwbackend"
)

// GEMM times C[M×N] = A[M×K]·B[K×N] with cublasGemmEx: BF16 A, B and C, FP32
// compute (CUBLAS_COMPUTE_32F), the default algorithm choice. cuBLAS is
// column-major, so the row-major product is issued as Cᵀ = Bᵀ·Aᵀ.
func (b *backend) GEMM(s hwbackend.GEMMShape, warmups, repeats int) (hwbackend.Timing, error) {
	if err := checkGEMM(s); err != nil {
		return hwbackend.Timing{}, err
	}
	if err := b.enter(warmups, repeats); err != nil {
		return hwbackend.Timing{}, err
	}
	defer b.mu.Unlock()
	if b.cublasErr != nil {
		return hwbackend.Timing{}, b.cublasErr
	}
	// Random inputs when the kernel module is already loaded; a constant
	// pattern otherwise (GEMM must not depend on NVRTC).
	m := b.attn
	w := b.primary
	var t hwbackend.Timing
	err := w.do(func() error {
		mm, nn, kk := int64(s.M), int64(s.N), int64(s.K)
		buf, err := w.reserve(2*mm*kk, 2*kk*nn, 2*mm*nn)
		if err != nil {
			return err
		}
		a, bm, c := buf[0], buf[1], buf[2]
		if err := fill(w, m, a, mm*kk, 1); err != nil {
			return err
		}
		if err := fill(w, m, bm, kk*nn, 2); err != nil {
			return err
		}
		alpha, beta := C.float(1), C.float(0)
		run := func() error {
			return cublasErr("cublasGemmEx", C.dcp_cublasGemmEx(b.cublas, C.DCP_CUBLAS_OP_N, C.DCP_CUBLAS_OP_N,
				C.int(s.N), C.int(s.M), C.int(s.K),
				unsafe.Pointer(&alpha), bm, C.DCP_CUDA_R_16BF, C.int(s.N),
				a, C.DCP_CUDA_R_16BF, C.int(s.K),
				unsafe.Pointer(&beta), c, C.DCP_CUDA_R_16BF, C.int(s.N),
				C.DCP_CUBLAS_COMPUTE_32F, C.DCP_CUBLAS_GEMM_DEFAULT))
		}
		t, err = w.timeRuns(warmups, repeats, run)
		return err
	})
	if err != nil {
		return hwbackend.Timing{}, fmt.Errorf("cuda: gemm %+v: %w", s, err)
	}
	return t, nil
}
