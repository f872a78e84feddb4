package cuda

import (
	"errors"
	"fmt"
)

// Options configures the CUDA backend.
type Options struct {
	// Device is the CUDA ordinal of the GPU that times attention and GEMM.
	Device int
	// Ranks is how many GPUs of this node the collectives may use: a collective
	// over r ranks runs on devices 0..r-1. 0 means every visible GPU.
	Ranks int
	// AttentionKernel picks the attention implementation: "cudnn" (cuDNN's
	// fused flash attention; not implemented, see ErrUnimplemented), "nvrtc"
	// (this package's FlashAttention-2-style kernels compiled at run time), or
	// "" for cuDNN when it is available and NVRTC otherwise, which today always
	// means NVRTC.
	AttentionKernel string
}

// Attention kernel names accepted by Options.AttentionKernel.
const (
	KernelCuDNN = "cudnn"
	KernelNVRTC = "nvrtc"
)

// ErrUnimplemented is returned for a path of the backend that is deliberately
// not written yet, rather than faked.
var ErrUnimplemented = errors.New("cuda: not implemented")

// errCuDNNUnimplemented says why the cuDNN attention path is missing.
var errCuDNNUnimplemented = fmt.Errorf("attention kernel %q: %w: cuDNN's fused SDPA is reached through "+
	"the cuDNN graph (backend descriptor) API, which needs some twenty descriptors (tensors, matmuls, "+
	"pointwise scale/mask/exp, reductions, an engine heuristic and a variant pack) wired exactly right; "+
	"without a GPU to test on in the session that wrote this backend it was left out; use %q",
	KernelCuDNN, ErrUnimplemented, KernelNVRTC)

// attentionKernel resolves Options.AttentionKernel to the implementation used.
func (o Options) attentionKernel() (string, error) {
	switch o.AttentionKernel {
	case "", KernelNVRTC:
		return KernelNVRTC, nil
	case KernelCuDNN:
		return "", errCuDNNUnimplemented
	default:
		return "", fmt.Errorf("cuda: unknown attention kernel %q (known: %q, %q, \"\")",
			o.AttentionKernel, KernelCuDNN, KernelNVRTC)
	}
}

// validate checks the fields that need no device.
func (o Options) validate() error {
	if o.Device < 0 {
		return fmt.Errorf("cuda: Options.Device %d is negative", o.Device)
	}
	if o.Ranks < 0 {
		return fmt.Errorf("cuda: Options.Ranks %d is negative", o.Ranks)
	}
	_, err := o.attentionKernel()
	return err
}
