// Package hwbackend measures operator costs on real hardware for calibration:
// a small Backend interface, the CPU backend (real kernels in Go, timed with the
// wall clock) and sweep definitions sized to a time budget. The CUDA backend lives
// in hwbackend/cuda behind the `cuda` build tag. This package is at the edge of
// dcpsim: it reads the clock; the simulator core never imports it.
package hwbackend

import "errors"

// ErrNoDevice is returned by a backend that has no device to run on (the CUDA
// backend built without the cuda tag, or on a machine without a GPU).
var ErrNoDevice = errors.New("hwbackend: no device")

// Timing is the result of timing one operation: the median over Repeats timed
// runs, after Warmups untimed ones.
type Timing struct {
	// Seconds is the median time of one run.
	Seconds float64
	// Repeats and Warmups count the timed and untimed runs.
	Repeats, Warmups int
}

// AttentionShape is one causal attention call: Batch sequences of SeqTokens
// tokens, Heads query heads (KVHeads key/value heads) of HeadDimQK / HeadDimV.
type AttentionShape struct {
	Batch, SeqTokens, Heads, KVHeads, HeadDimQK, HeadDimV int
}

// GEMMShape is one matrix product C[M×N] = A[M×K]·B[K×N] in BF16 (FP32 on CPU).
type GEMMShape struct {
	M, N, K int
}

// Backend times operators on one machine. Each method runs warmups untimed runs
// and repeats timed ones and returns the median.
type Backend interface {
	// Name identifies the backend and device, e.g. "cpu (2 cores)" or "cuda H200".
	Name() string
	// AttentionForward times a causal attention forward pass.
	AttentionForward(s AttentionShape, warmups, repeats int) (Timing, error)
	// AttentionBackward times a causal attention backward pass.
	AttentionBackward(s AttentionShape, warmups, repeats int) (Timing, error)
	// GEMM times one matrix product.
	GEMM(s GEMMShape, warmups, repeats int) (Timing, error)
	// AllToAll times an all-to-all of bytesPerRank bytes per rank among ranks
	// ranks (goroutines sharing memory on CPU, GPUs of one node on CUDA).
	AllToAll(ranks int, bytesPerRank int64, warmups, repeats int) (Timing, error)
	// SendRecv times one ring step: every rank sends bytes to its successor and
	// receives the same from its predecessor.
	SendRecv(ranks int, bytes int64, warmups, repeats int) (Timing, error)
	// Close releases the backend's resources.
	Close() error
}
