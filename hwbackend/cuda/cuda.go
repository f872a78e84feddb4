//go:build cuda && cgo

package cuda

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/dcpsim/dcpsim/hwbackend"
)

// builtWithCUDA tells the tests which build they run in.
const builtWithCUDA = true

// libs holds the outcome of loading each library once per process.
var libs struct {
	once sync.Once
	err  [C.DCP_LIB_COUNT]error
}

// loadLibraries dlopen()s every library and resolves its symbols, once.
func loadLibraries() {
	libs.once.Do(func() {
		for lib := range int(C.dcp_lib_count()) {
			var msg [1024]C.char
			if C.dcp_load_lib(C.int(lib), &msg[0], C.int(len(msg))) != 0 {
				libs.err[lib] = errors.New(C.GoString(&msg[0]))
			}
		}
	})
}

// libError is nil when lib loaded, else an error wrapping hwbackend.ErrNoDevice
// that names the library.
func libError(lib C.int) error {
	loadLibraries()
	if err := libs.err[lib]; err != nil {
		return fmt.Errorf("cuda: %w: %v", hwbackend.ErrNoDevice, err)
	}
	return nil
}

// shimSymbols lists the C shim's symbol table as Symbols does, for the test
// that keeps the two in step.
func shimSymbols() []Symbol {
	var out []Symbol
	for i := range int(C.dcp_sym_count()) {
		out = append(out, Symbol{
			Library:  C.GoString(C.dcp_lib_name(C.dcp_sym_lib(C.int(i)))),
			Name:     C.GoString(C.dcp_sym_name(C.int(i))),
			Alt:      C.GoString(C.dcp_sym_alt(C.int(i))),
			Optional: C.dcp_sym_optional(C.int(i)) != 0,
		})
	}
	return out
}

func cudaErr(op string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s (cudaError %d)", op, C.GoString(C.dcp_cudaGetErrorString(rc)), int(rc))
}

func cuErr(op string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	var s *C.char
	if C.dcp_cuGetErrorString(rc, &s) != 0 || s == nil {
		return fmt.Errorf("cuda: %s: CUresult %d", op, int(rc))
	}
	return fmt.Errorf("cuda: %s: %s (CUresult %d)", op, C.GoString(s), int(rc))
}

func cublasErr(op string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	if C.dcp_sym_loaded(C.DCP_SYM_cublasGetStatusString) != 0 {
		return fmt.Errorf("cuda: %s: %s (cublasStatus %d)", op, C.GoString(C.dcp_cublasGetStatusString(rc)), int(rc))
	}
	return fmt.Errorf("cuda: %s: cublasStatus %d", op, int(rc))
}

func ncclErr(op string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %s (ncclResult %d)", op, C.GoString(C.dcp_ncclGetErrorString(rc)), int(rc))
}

// worker owns one GPU: a goroutine locked to an OS thread (the CUDA current
// device is per thread), a non-blocking stream, two timing events and a
// reusable device buffer.
type worker struct {
	device      int
	jobs        chan func()
	stream      C.cudaStream_t
	start, stop C.cudaEvent_t
	buf         C.dcp_dptr
	bufBytes    int64
}

func startWorker(device int) (*worker, error) {
	w := &worker{device: device, jobs: make(chan func())}
	go w.loop()
	err := w.do(func() error {
		if err := cudaErr("cudaSetDevice", C.dcp_cudaSetDevice(C.int(device))); err != nil {
			return err
		}
		// cudaFree(0) makes the device's primary context current on this
		// thread, which the driver-API calls (module load, launch) rely on.
		if err := cudaErr("cudaFree(0)", C.dcp_cudaFree(0)); err != nil {
			return err
		}
		if err := cudaErr("cudaStreamCreateWithFlags",
			C.dcp_cudaStreamCreateWithFlags(&w.stream, C.DCP_cudaStreamNonBlocking)); err != nil {
			return err
		}
		if err := cudaErr("cudaEventCreate", C.dcp_cudaEventCreate(&w.start)); err != nil {
			return err
		}
		return cudaErr("cudaEventCreate", C.dcp_cudaEventCreate(&w.stop))
	})
	if err != nil {
		close(w.jobs)
		return nil, fmt.Errorf("device %d: %w", device, err)
	}
	return w, nil
}

func (w *worker) loop() {
	// Never unlocked: the thread carries this device's CUDA state and exits
	// with the goroutine.
	runtime.LockOSThread()
	for f := range w.jobs {
		f()
	}
}

// do runs f on the worker's thread and waits for it.
func (w *worker) do(f func() error) error {
	done := make(chan error, 1)
	w.jobs <- func() { done <- f() }
	return <-done
}

func (w *worker) close() error {
	err := w.do(func() error {
		errs := []error{cudaErr("cudaDeviceSynchronize", C.dcp_cudaDeviceSynchronize())}
		if w.buf != 0 {
			errs = append(errs, cudaErr("cudaFree", C.dcp_cudaFree(w.buf)))
		}
		errs = append(errs,
			cudaErr("cudaEventDestroy", C.dcp_cudaEventDestroy(w.start)),
			cudaErr("cudaEventDestroy", C.dcp_cudaEventDestroy(w.stop)),
			cudaErr("cudaStreamDestroy", C.dcp_cudaStreamDestroy(w.stream)))
		return errors.Join(errs...)
	})
	close(w.jobs)
	return err
}

// reserve hands out device buffers of the given byte sizes, 256-byte aligned,
// from one allocation that grows when needed. Earlier reservations are void.
// Call on the worker's thread.
func (w *worker) reserve(sizes ...int64) ([]C.dcp_dptr, error) {
	const align = 256
	var total int64
	for _, n := range sizes {
		total += ceilDiv(max(n, 1), align) * align
	}
	if total > w.bufBytes {
		if w.buf != 0 {
			if err := cudaErr("cudaFree", C.dcp_cudaFree(w.buf)); err != nil {
				return nil, err
			}
			w.buf, w.bufBytes = 0, 0
		}
		var free, all C.size_t
		if err := cudaErr("cudaMemGetInfo", C.dcp_cudaMemGetInfo(&free, &all)); err != nil {
			return nil, err
		}
		if total > int64(free) {
			return nil, fmt.Errorf("cuda: device %d: needs %.2f GiB, %.2f GiB of %.2f GiB free",
				w.device, float64(total)/(1<<30), float64(free)/(1<<30), float64(all)/(1<<30))
		}
		if err := cudaErr(fmt.Sprintf("cudaMalloc(%.2f GiB)", float64(total)/(1<<30)),
			C.dcp_cudaMalloc(&w.buf, C.size_t(total))); err != nil {
			return nil, err
		}
		w.bufBytes = total
	}
	ptrs := make([]C.dcp_dptr, len(sizes))
	var off int64
	for i, n := range sizes {
		ptrs[i] = w.buf + C.dcp_dptr(off)
		off += ceilDiv(max(n, 1), align) * align
	}
	return ptrs, nil
}

// timeRuns runs run warmups+repeats times on the worker's stream, each between
// two events, and returns the median of the timed ones. Call on the thread.
func (w *worker) timeRuns(warmups, repeats int, run func() error) (hwbackend.Timing, error) {
	seconds := make([]float64, 0, repeats)
	for i := range warmups + repeats {
		ms, err := w.timeOne(run)
		if err != nil {
			return hwbackend.Timing{}, err
		}
		if i >= warmups {
			seconds = append(seconds, ms/1e3)
		}
	}
	return newTiming(seconds, warmups), nil
}

// timeOne times one run in milliseconds with the worker's events.
func (w *worker) timeOne(run func() error) (float64, error) {
	if err := cudaErr("cudaEventRecord", C.dcp_cudaEventRecord(w.start, w.stream)); err != nil {
		return 0, err
	}
	if err := run(); err != nil {
		return 0, err
	}
	if err := cudaErr("cudaEventRecord", C.dcp_cudaEventRecord(w.stop, w.stream)); err != nil {
		return 0, err
	}
	if err := cudaErr("cudaEventSynchronize", C.dcp_cudaEventSynchronize(w.stop)); err != nil {
		return 0, err
	}
	var ms C.float
	if err := cudaErr("cudaEventElapsedTime", C.dcp_cudaEventElapsedTime(&ms, w.start, w.stop)); err != nil {
		return 0, err
	}
	return float64(ms), nil
}

// backend implements hwbackend.Backend on CUDA GPUs.
type backend struct {
	mu      sync.Mutex
	opts    Options
	name    string
	devices int // visible GPUs
	ranks   int // GPUs the collectives may use
	sm      int // compute capability, e.g. 90
	smem    int // opt-in shared memory per block, bytes
	primary *worker
	workers map[int]*worker // by device ordinal, primary included
	cublas  C.cublasHandle_t
	// cublasErr is why GEMM cannot run: cuBLAS missing or its handle failed.
	cublasErr error
	attn      *attnModule
	attnErr   error // why the kernels failed to compile or load, kept
	groups    map[int]*commGroup
	closed    bool
}

var _ hwbackend.Backend = (*backend)(nil)

// New opens the CUDA backend on opts.Device. It returns an error wrapping
// hwbackend.ErrNoDevice, naming the library or the CUDA error, when libcudart
// or libcuda cannot be loaded or no GPU is visible. cuBLAS, NVRTC and NCCL are
// loaded too; when one is missing only the calls that need it fail (wrapping
// ErrNoDevice as well).
func New(opts Options) (hwbackend.Backend, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	for _, lib := range []C.int{C.DCP_LIB_CUDART, C.DCP_LIB_CUDA} {
		if err := libError(lib); err != nil {
			return nil, err
		}
	}
	if err := cuErr("cuInit", C.dcp_cuInit(0)); err != nil {
		return nil, fmt.Errorf("%w: %w", hwbackend.ErrNoDevice, err)
	}
	var count C.int
	if err := cudaErr("cudaGetDeviceCount", C.dcp_cudaGetDeviceCount(&count)); err != nil {
		return nil, fmt.Errorf("%w: %w", hwbackend.ErrNoDevice, err)
	}
	if count < 1 {
		return nil, fmt.Errorf("cuda: no GPU visible: %w", hwbackend.ErrNoDevice)
	}
	if opts.Device >= int(count) {
		return nil, fmt.Errorf("cuda: Options.Device %d but %d GPUs visible: %w", opts.Device, count, hwbackend.ErrNoDevice)
	}
	ranks := opts.Ranks
	if ranks == 0 || ranks > int(count) {
		ranks = int(count)
	}
	w, err := startWorker(opts.Device)
	if err != nil {
		return nil, err
	}
	b := &backend{
		opts:    opts,
		devices: int(count),
		ranks:   ranks,
		primary: w,
		workers: map[int]*worker{opts.Device: w},
		groups:  map[int]*commGroup{},
	}
	if err := w.do(b.describe); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

// describe reads the device's properties and library versions into b.name,
// and creates the cuBLAS handle when cuBLAS loaded. Runs on the primary thread.
func (b *backend) describe() error {
	dev := C.int(b.opts.Device)
	var major, minor, sms, smem, rt, drv C.int
	for _, q := range []struct {
		attr C.int
		out  *C.int
	}{
		{C.DCP_cudaDevAttrComputeCapabilityMajor, &major},
		{C.DCP_cudaDevAttrComputeCapabilityMinor, &minor},
		{C.DCP_cudaDevAttrMultiProcessorCount, &sms},
		{C.DCP_cudaDevAttrMaxSharedMemoryPerBlockOptin, &smem},
	} {
		if err := cudaErr("cudaDeviceGetAttribute", C.dcp_cudaDeviceGetAttribute(q.out, q.attr, dev)); err != nil {
			return err
		}
	}
	b.sm, b.smem = int(major)*10+int(minor), int(smem)
	_ = C.dcp_cudaRuntimeGetVersion(&rt)
	_ = C.dcp_cudaDriverGetVersion(&drv)
	name := "GPU"
	var cudev C.CUdevice
	var buf [256]C.char
	if C.dcp_cuDeviceGet(&cudev, dev) == 0 && C.dcp_cuDeviceGetName(&buf[0], C.int(len(buf)), cudev) == 0 {
		name = C.GoString(&buf[0])
	}
	parts := []string{
		fmt.Sprintf("sm_%d", b.sm),
		fmt.Sprintf("%d SMs", int(sms)),
		fmt.Sprintf("%d GPUs visible", b.devices),
		"CUDA runtime " + cudaVersionString(int(rt)),
		"driver " + cudaVersionString(int(drv)),
	}
	if err := libError(C.DCP_LIB_CUBLAS); err != nil {
		b.cublasErr = err
	} else if err := cublasErr("cublasCreate", C.dcp_cublasCreate_v2(&b.cublas)); err != nil {
		b.cublas, b.cublasErr = nil, err
	} else if err := cublasErr("cublasSetStream", C.dcp_cublasSetStream_v2(b.cublas, b.primary.stream)); err != nil {
		b.cublasErr = err
	}
	var v C.int
	switch {
	case b.cublasErr != nil:
		parts = append(parts, "no cuBLAS")
	case C.dcp_sym_loaded(C.DCP_SYM_cublasGetVersion_v2) != 0 && C.dcp_cublasGetVersion_v2(b.cublas, &v) == 0:
		parts = append(parts, "cuBLAS "+cublasVersionString(int(v)))
	default:
		parts = append(parts, "cuBLAS")
	}
	if libError(C.DCP_LIB_NVRTC) == nil {
		var ma, mi C.int
		if C.dcp_nvrtcVersion(&ma, &mi) == 0 {
			parts = append(parts, fmt.Sprintf("NVRTC %d.%d", int(ma), int(mi)))
		}
	} else {
		parts = append(parts, "no NVRTC")
	}
	if libError(C.DCP_LIB_NCCL) == nil {
		var v C.int
		if C.dcp_ncclGetVersion(&v) == 0 {
			parts = append(parts, "NCCL "+ncclVersionString(int(v)))
		}
	} else {
		parts = append(parts, "no NCCL")
	}
	parts = append(parts, "attention "+KernelNVRTC)
	b.name = fmt.Sprintf("cuda %s (%s)", name, strings.Join(parts, ", "))
	return nil
}

// Name identifies the device and the library versions in use.
func (b *backend) Name() string { return b.name }

// Ranks is the most ranks a collective may span: Options.Ranks, or every
// visible GPU when that is 0 (hwbackend.Ranker, which the calibrate command
// uses to size its collective sweep).
func (b *backend) Ranks() int { return b.ranks }

var _ interface{ Ranks() int } = (*backend)(nil)

// Close releases communicators, the kernel module, cuBLAS and the workers.
func (b *backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var errs []error
	for _, g := range b.groups {
		errs = append(errs, g.destroy())
	}
	if b.attn != nil && b.attn.module != nil {
		errs = append(errs, b.primary.do(func() error {
			return cuErr("cuModuleUnload", C.dcp_cuModuleUnload(b.attn.module))
		}))
	}
	if b.cublas != nil {
		errs = append(errs, b.primary.do(func() error {
			return cublasErr("cublasDestroy", C.dcp_cublasDestroy_v2(b.cublas))
		}))
	}
	for _, w := range b.workers {
		errs = append(errs, w.close())
	}
	return errors.Join(errs...)
}

// lock takes the backend's mutex and fails on a closed backend.
// enter checks a call's run counts and takes the backend's lock (lock); on nil
// the caller must defer b.mu.Unlock().
func (b *backend) enter(warmups, repeats int) error {
	if err := checkRuns(warmups, repeats); err != nil {
		return err
	}
	return b.lock()
}

func (b *backend) lock() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errors.New("cuda: backend is closed")
	}
	return nil
}

// fill writes pseudo-random BF16 values in [-1, 1) to n elements at p, or,
// without the kernel module, a constant byte pattern. Call on w's thread.
func fill(w *worker, m *attnModule, p C.dcp_dptr, n int64, seed uint32) error {
	if m == nil {
		// 0x3c3c is the BF16 value 0.0115: finite and non-zero.
		return cudaErr("cudaMemsetAsync", C.dcp_cudaMemsetAsync(p, 0x3c, C.size_t(2*n), w.stream))
	}
	return m.launch(w, "fill_bf16", [3]uint32{elemGrid(n), 1, 1}, elemThreads, 0,
		uint64(p), uint64(n), uint64(seed))
}

// launch starts fn on stream with threads per block. Each argument is one
// 64-bit slot (see dcp_launch); the slice is lent to C for the call only.
func launch(fn C.CUfunction, grid [3]uint32, threads uint32, shared int, stream C.cudaStream_t, args []uint64) error {
	var p *C.ulonglong
	if len(args) > 0 {
		p = (*C.ulonglong)(unsafe.Pointer(&args[0]))
	}
	return cuErr("cuLaunchKernel", C.dcp_launch(fn, C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(threads), C.uint(shared), stream, p, C.int(len(args))))
}
