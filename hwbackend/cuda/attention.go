//go:build cuda && cgo

package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/dcpsim/dcpsim/hwbackend"
)

// attnModule is attentionSource compiled for the primary device and loaded.
type attnModule struct {
	module C.CUmodule
	fns    map[string]C.CUfunction
}

// launch starts kernel name on w's stream. Call on w's thread.
func (m *attnModule) launch(w *worker, name string, grid [3]uint32, threads uint32, shared int, args ...uint64) error {
	fn, ok := m.fns[name]
	if !ok {
		return fmt.Errorf("cuda: kernel %s not loaded", name)
	}
	if err := launch(fn, grid, threads, shared, w.stream, args); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// kernels compiles and loads attentionSource on first use; a failure is kept
// and returned again. NVRTC is loaded lazily so that GEMM and collectives work
// without it. Call with b.mu held.
func (b *backend) kernels() (*attnModule, error) {
	if b.attn != nil {
		return b.attn, nil
	}
	if b.attnErr != nil {
		return nil, b.attnErr
	}
	if err := libError(C.DCP_LIB_NVRTC); err != nil {
		return nil, err
	}
	if b.sm < 80 {
		b.attnErr = fmt.Errorf("cuda: attention kernels need sm_80 or newer (BF16 mma.sync), device is sm_%d: %w",
			b.sm, hwbackend.ErrNoDevice)
		return nil, b.attnErr
	}
	m := &attnModule{fns: map[string]C.CUfunction{}}
	err := b.primary.do(func() error { return m.load(b.sm, b.smem) })
	if err != nil {
		if m.module != nil {
			_ = b.primary.do(func() error { return cuErr("cuModuleUnload", C.dcp_cuModuleUnload(m.module)) })
		}
		b.attnErr = err
		return nil, err
	}
	b.attn = m
	return m, nil
}

// load compiles for sm_<sm>, loads the cubin and resolves every kernel,
// opting the attention kernels into the dynamic shared memory they use.
func (m *attnModule) load(sm, smemLimit int) error {
	src := C.CString(attentionSource)
	defer C.free(unsafe.Pointer(src))
	name := C.CString("dcpsim_attention.cu")
	defer C.free(unsafe.Pointer(name))
	var cubin, log *C.char
	var size C.size_t
	var stage *C.char
	rc := C.dcp_nvrtc_compile(src, name, C.int(sm), &cubin, &size, &log, &stage)
	defer C.free(unsafe.Pointer(cubin))
	defer C.free(unsafe.Pointer(log))
	if rc != 0 {
		return fmt.Errorf("cuda: NVRTC %s for sm_%d: %s\n%s",
			C.GoString(stage), sm, C.GoString(C.dcp_nvrtcGetErrorString(rc)), C.GoString(log))
	}
	if err := cuErr("cuModuleLoadData", C.dcp_cuModuleLoadData(&m.module, unsafe.Pointer(cubin))); err != nil {
		return err
	}
	for _, k := range kernelNames() {
		ck := C.CString(k)
		var fn C.CUfunction
		rc := C.dcp_cuModuleGetFunction(&fn, m.module, ck)
		C.free(unsafe.Pointer(ck))
		if err := cuErr("cuModuleGetFunction "+k, rc); err != nil {
			return err
		}
		m.fns[k] = fn
	}
	for _, d := range supportedHeadDims {
		for _, k := range []struct {
			name  string
			bytes int
		}{{fwdKernelName(d), fwdSharedBytes(d)}, {bwdKernelName(d), bwdSharedBytes(d)}} {
			if k.bytes > smemLimit {
				return fmt.Errorf("cuda: %s needs %d B of shared memory, device allows %d", k.name, k.bytes, smemLimit)
			}
			if err := cuErr("cuFuncSetAttribute "+k.name, C.dcp_cuFuncSetAttribute(m.fns[k.name],
				C.DCP_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, C.int(k.bytes))); err != nil {
				return err
			}
		}
	}
	return nil
}

// i32 and f32 encode 32-bit kernel arguments into 64-bit slots.
func i32(v int) uint64     { return uint64(uint32(int32(v))) }
func f32(v float32) uint64 { return uint64(math.Float32bits(v)) }

func (m *attnModule) forward(w *worker, p attentionPlan, q, k, v, o, lse C.dcp_dptr) error {
	s := p.shape
	return m.launch(w, fwdKernelName(p.dims), [3]uint32{uint32(p.blocks), uint32(s.Heads), uint32(s.Batch)},
		fwdThreads, fwdSharedBytes(p.dims),
		uint64(q), uint64(k), uint64(v), uint64(o), uint64(lse),
		i32(s.SeqTokens), i32(s.Heads), i32(s.KVHeads), f32(p.scaleLog2))
}

// AttentionForward times the causal forward kernel alone on fresh random inputs.
func (b *backend) AttentionForward(s hwbackend.AttentionShape, warmups, repeats int) (hwbackend.Timing, error) {
	p, err := planAttention(s)
	if err != nil {
		return hwbackend.Timing{}, err
	}
	if err := b.enter(warmups, repeats); err != nil {
		return hwbackend.Timing{}, err
	}
	defer b.mu.Unlock()
	m, err := b.kernels()
	if err != nil {
		return hwbackend.Timing{}, err
	}
	w := b.primary
	var t hwbackend.Timing
	err = w.do(func() error {
		buf, err := w.reserve(2*p.qElems(), 2*p.kElems(), 2*p.vElems(), 2*p.oElems(), 4*p.rows(s.Heads))
		if err != nil {
			return err
		}
		q, k, v, o, lse := buf[0], buf[1], buf[2], buf[3], buf[4]
		for i, in := range []struct {
			p C.dcp_dptr
			n int64
		}{{q, p.qElems()}, {k, p.kElems()}, {v, p.vElems()}} {
			if err := fill(w, m, in.p, in.n, uint32(i+1)); err != nil {
				return err
			}
		}
		t, err = w.timeRuns(warmups, repeats, func() error { return m.forward(w, p, q, k, v, o, lse) })
		return err
	})
	if err != nil {
		return hwbackend.Timing{}, fmt.Errorf("cuda: attention forward %+v: %w", s, err)
	}
	return t, nil
}

// attnBuffers are the device tensors of one backward pass.
type attnBuffers struct {
	q, k, v, o, lse, dout, dsum C.dcp_dptr
	dqAcc, dkAcc, dvAcc         C.dcp_dptr // FP32 gradient accumulators
	dq, dk, dv                  C.dcp_dptr // BF16 gradients
}

// setupBackward reserves the tensors of p, fills Q, K, V and dO with random
// values and runs one forward pass for O and the LSE. Call on w's thread.
func (m *attnModule) setupBackward(w *worker, p attentionPlan) (attnBuffers, error) {
	rows := p.rows(p.shape.Heads)
	buf, err := w.reserve(
		2*p.qElems(), 2*p.kElems(), 2*p.vElems(), 2*p.oElems(), 4*rows, // q k v o lse
		2*p.oElems(), 4*rows, // dout dsum
		4*p.qElems(), 4*p.kElems(), 4*p.vElems(), // FP32 accumulators
		2*p.qElems(), 2*p.kElems(), 2*p.vElems()) // BF16 gradients
	if err != nil {
		return attnBuffers{}, err
	}
	t := attnBuffers{
		q: buf[0], k: buf[1], v: buf[2], o: buf[3], lse: buf[4], dout: buf[5], dsum: buf[6],
		dqAcc: buf[7], dkAcc: buf[8], dvAcc: buf[9], dq: buf[10], dk: buf[11], dv: buf[12],
	}
	for i, in := range []struct {
		p C.dcp_dptr
		n int64
	}{{t.q, p.qElems()}, {t.k, p.kElems()}, {t.v, p.vElems()}, {t.dout, p.oElems()}} {
		if err := fill(w, m, in.p, in.n, uint32(i+1)); err != nil {
			return attnBuffers{}, err
		}
	}
	return t, m.forward(w, p, t.q, t.k, t.v, t.o, t.lse)
}

// backward enqueues one whole backward pass: zero the accumulators, the dO·O
// row sums, the backward kernel and the three FP32→BF16 conversions.
func (m *attnModule) backward(w *worker, p attentionPlan, t attnBuffers) error {
	s := p.shape
	rows := p.rows(s.Heads)
	for _, z := range []struct {
		p C.dcp_dptr
		n int64
	}{{t.dqAcc, p.qElems()}, {t.dkAcc, p.kElems()}, {t.dvAcc, p.vElems()}} {
		if err := cudaErr("cudaMemsetAsync", C.dcp_cudaMemsetAsync(z.p, 0, C.size_t(4*z.n), w.stream)); err != nil {
			return err
		}
	}
	if err := m.launch(w, "attn_bwd_dot", [3]uint32{uint32(ceilDiv(rows, dotThreads/32)), 1, 1}, dotThreads, 0,
		uint64(t.o), uint64(t.dout), uint64(t.dsum), i32(s.SeqTokens), i32(s.Heads), i32(s.HeadDimV), uint64(rows)); err != nil {
		return err
	}
	if err := m.launch(w, bwdKernelName(p.dims), [3]uint32{uint32(p.blocks), uint32(s.Heads), uint32(s.Batch)},
		bwdThreads, bwdSharedBytes(p.dims),
		uint64(t.q), uint64(t.k), uint64(t.v), uint64(t.dout), uint64(t.lse), uint64(t.dsum),
		uint64(t.dqAcc), uint64(t.dkAcc), uint64(t.dvAcc),
		i32(s.SeqTokens), i32(s.Heads), i32(s.KVHeads), f32(p.scaleLog2), f32(p.scale)); err != nil {
		return err
	}
	for _, c := range []struct {
		src, dst C.dcp_dptr
		n        int64
	}{{t.dqAcc, t.dq, p.qElems()}, {t.dkAcc, t.dk, p.kElems()}, {t.dvAcc, t.dv, p.vElems()}} {
		if err := m.launch(w, "f32_to_bf16", [3]uint32{elemGrid(c.n), 1, 1}, elemThreads, 0,
			uint64(c.src), uint64(c.dst), uint64(c.n)); err != nil {
			return err
		}
	}
	return nil
}

// AttentionBackward times the whole causal backward pass (see backward). O
// and the LSE come from one untimed forward on random inputs.
func (b *backend) AttentionBackward(s hwbackend.AttentionShape, warmups, repeats int) (hwbackend.Timing, error) {
	p, err := planAttention(s)
	if err != nil {
		return hwbackend.Timing{}, err
	}
	if err := b.enter(warmups, repeats); err != nil {
		return hwbackend.Timing{}, err
	}
	defer b.mu.Unlock()
	m, err := b.kernels()
	if err != nil {
		return hwbackend.Timing{}, err
	}
	w := b.primary
	var t hwbackend.Timing
	err = w.do(func() error {
		buf, err := m.setupBackward(w, p)
		if err != nil {
			return err
		}
		t, err = w.timeRuns(warmups, repeats, func() error { return m.backward(w, p, buf) })
		return err
	})
	if err != nil {
		return hwbackend.Timing{}, fmt.Errorf("cuda: attention backward %+v: %w", s, err)
	}
	return t, nil
}

// attentionTensors are host copies of one forward and backward pass.
type attentionTensors struct {
	q, k, v, dout, o []uint16 // BF16 bits
	lse              []float32
	dq, dk, dv       []uint16
}

// attentionRun runs one forward and one backward pass of s and copies every
// tensor to the host: the GPU test compares them with a CPU reference.
func (b *backend) attentionRun(s hwbackend.AttentionShape) (attentionTensors, error) {
	p, err := planAttention(s)
	if err != nil {
		return attentionTensors{}, err
	}
	if err := b.lock(); err != nil {
		return attentionTensors{}, err
	}
	defer b.mu.Unlock()
	m, err := b.kernels()
	if err != nil {
		return attentionTensors{}, err
	}
	w := b.primary
	var out attentionTensors
	err = w.do(func() error {
		buf, err := m.setupBackward(w, p)
		if err != nil {
			return err
		}
		if err := m.backward(w, p, buf); err != nil {
			return err
		}
		if err := cudaErr("cudaStreamSynchronize", C.dcp_cudaStreamSynchronize(w.stream)); err != nil {
			return err
		}
		out = attentionTensors{
			q: make([]uint16, p.qElems()), k: make([]uint16, p.kElems()), v: make([]uint16, p.vElems()),
			dout: make([]uint16, p.oElems()), o: make([]uint16, p.oElems()), lse: make([]float32, p.rows(s.Heads)),
			dq: make([]uint16, p.qElems()), dk: make([]uint16, p.kElems()), dv: make([]uint16, p.vElems()),
		}
		for _, c := range []struct {
			dst   unsafe.Pointer
			src   C.dcp_dptr
			bytes int
		}{
			{unsafe.Pointer(&out.q[0]), buf.q, 2 * len(out.q)},
			{unsafe.Pointer(&out.k[0]), buf.k, 2 * len(out.k)},
			{unsafe.Pointer(&out.v[0]), buf.v, 2 * len(out.v)},
			{unsafe.Pointer(&out.dout[0]), buf.dout, 2 * len(out.dout)},
			{unsafe.Pointer(&out.o[0]), buf.o, 2 * len(out.o)},
			{unsafe.Pointer(&out.lse[0]), buf.lse, 4 * len(out.lse)},
			{unsafe.Pointer(&out.dq[0]), buf.dq, 2 * len(out.dq)},
			{unsafe.Pointer(&out.dk[0]), buf.dk, 2 * len(out.dk)},
			{unsafe.Pointer(&out.dv[0]), buf.dv, 2 * len(out.dv)},
		} {
			if err := cudaErr("cudaMemcpy", C.dcp_cudaMemcpy(c.dst, c.src, C.size_t(c.bytes), C.DCP_cudaMemcpyDeviceToHost)); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}
