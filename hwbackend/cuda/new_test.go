package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/hwbackend"
)

// TestNewWithoutDevice: on a machine without a GPU (and in the build without
// the cuda tag anywhere) New fails with an error wrapping ErrNoDevice that
// says why: the missing build tag, or the library or CUDA call that failed.
func TestNewWithoutDevice(t *testing.T) {
	b, err := New(Options{})
	if err == nil {
		_ = b.Close()
		t.Skip("a GPU is present; TestGPU covers this machine")
	}
	if !errors.Is(err, hwbackend.ErrNoDevice) {
		t.Fatalf("New: %v, want an error wrapping hwbackend.ErrNoDevice", err)
	}
	msg := err.Error()
	if builtWithCUDA {
		// Names the library that failed to load (libcudart.so.12 on a machine
		// without CUDA) or the CUDA call that found no device.
		if !strings.Contains(msg, ".so") && !strings.Contains(msg, "cuInit") && !strings.Contains(msg, "cudaGetDeviceCount") &&
			!strings.Contains(msg, "no GPU") {
			t.Errorf("New: %q names neither a library nor a CUDA call", msg)
		}
	} else if !strings.Contains(msg, "-tags cuda") {
		t.Errorf("New: %q does not say the binary lacks the cuda tag", msg)
	}
	t.Logf("New: %v", err)
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts    Options
		kernel  string
		wantErr error // nil: valid
		anyErr  bool
	}{
		{opts: Options{}, kernel: KernelNVRTC},
		{opts: Options{AttentionKernel: "nvrtc", Ranks: 8, Device: 1}, kernel: KernelNVRTC},
		{opts: Options{AttentionKernel: "cudnn"}, wantErr: ErrUnimplemented},
		{opts: Options{AttentionKernel: "flash3"}, anyErr: true},
		{opts: Options{Device: -1}, anyErr: true},
		{opts: Options{Ranks: -2}, anyErr: true},
	} {
		err := tc.opts.validate()
		switch {
		case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
			t.Errorf("%+v: validate = %v, want %v", tc.opts, err, tc.wantErr)
		case tc.anyErr && err == nil:
			t.Errorf("%+v: validate = nil, want an error", tc.opts)
		case tc.wantErr == nil && !tc.anyErr && err != nil:
			t.Errorf("%+v: validate = %v", tc.opts, err)
		}
		if k, err := tc.opts.attentionKernel(); err == nil && tc.kernel != "" && k != tc.kernel {
			t.Errorf("%+v: kernel %q, want %q", tc.opts, k, tc.kernel)
		}
	}
	// The cuDNN path says why it is missing instead of pretending.
	_, err := Options{AttentionKernel: KernelCuDNN}.attentionKernel()
	if err == nil || !strings.Contains(err.Error(), "graph") {
		t.Errorf("cudnn: %v, want the reason it is not implemented", err)
	}
	if builtWithCUDA {
		if _, err := New(Options{AttentionKernel: KernelCuDNN}); !errors.Is(err, ErrUnimplemented) {
			t.Errorf("New(cudnn) = %v, want ErrUnimplemented", err)
		}
	}
}
