//go:build cuda && cgo

package cuda

import (
	"errors"
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/hwbackend"
)

// openGPU opens the backend or skips, with New's reason, where there is no GPU.
func openGPU(t *testing.T) *backend {
	t.Helper()
	b, err := New(Options{})
	if errors.Is(err, hwbackend.ErrNoDevice) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Log(b.Name())
	return b.(*backend)
}

// TestGPUAttentionNumerics runs the NVRTC kernels once on the GPU and checks
// O, the LSE and dQ, dK, dV against a float64 reference on the host.
func TestGPUAttentionNumerics(t *testing.T) {
	b := openGPU(t)
	for _, s := range []hwbackend.AttentionShape{
		{Batch: 1, SeqTokens: 150, Heads: 2, KVHeads: 1, HeadDimQK: 64, HeadDimV: 64},
		{Batch: 2, SeqTokens: 100, Heads: 2, KVHeads: 2, HeadDimQK: 128, HeadDimV: 128},
		{Batch: 1, SeqTokens: 90, Heads: 2, KVHeads: 1, HeadDimQK: 192, HeadDimV: 128},
		{Batch: 1, SeqTokens: 70, Heads: 1, KVHeads: 1, HeadDimQK: 192, HeadDimV: 192},
	} {
		got, err := b.attentionRun(s)
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		want := referenceAttention(s, got)
		lseErr := 0.0
		for i := range want.lse {
			lseErr = max(lseErr, math.Abs(float64(got.lse[i])-want.lse[i]))
		}
		errs := map[string]float64{
			"O": relErr(want.o, got.o), "dQ": relErr(want.dq, got.dq),
			"dK": relErr(want.dk, got.dk), "dV": relErr(want.dv, got.dv),
		}
		t.Logf("%+v: LSE abs %.2e, relative O %.2e dQ %.2e dK %.2e dV %.2e",
			s, lseErr, errs["O"], errs["dQ"], errs["dK"], errs["dV"])
		if lseErr > 5e-3 || errs["O"] > 0.03 || errs["dQ"] > 0.06 || errs["dK"] > 0.06 || errs["dV"] > 0.06 {
			t.Errorf("%+v: outside tolerance", s)
		}
	}
}

// TestGPUTimings calls every Backend method once on small shapes.
func TestGPUTimings(t *testing.T) {
	b := openGPU(t)
	check := func(what string, tm hwbackend.Timing, err error) {
		t.Helper()
		if errors.Is(err, hwbackend.ErrNoDevice) {
			t.Logf("%s: skipped: %v", what, err)
			return
		}
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if !(tm.Seconds > 0) || tm.Repeats != 3 || tm.Warmups != 1 {
			t.Errorf("%s: %+v", what, tm)
		}
		t.Logf("%s: %.3g ms", what, tm.Seconds*1e3)
	}
	tm, err := b.GEMM(hwbackend.GEMMShape{M: 4096, N: 4096, K: 4096}, 1, 3)
	check("gemm 4096³", tm, err)
	if err == nil {
		t.Logf("gemm 4096³: %.0f TFLOP/s", 2*math.Pow(4096, 3)/tm.Seconds/1e12)
	}
	s := hwbackend.AttentionShape{Batch: 1, SeqTokens: 8192, Heads: 16, KVHeads: 16, HeadDimQK: 128, HeadDimV: 128}
	causalFlops := 4 * float64(s.Batch*s.Heads) * float64(s.SeqTokens) * float64(s.SeqTokens) / 2 * float64(s.HeadDimQK)
	tm, err = b.AttentionForward(s, 1, 3)
	check("attention forward 8K", tm, err)
	if err == nil {
		t.Logf("attention forward 8K: %.0f TFLOP/s", causalFlops/tm.Seconds/1e12)
	}
	tm, err = b.AttentionBackward(s, 1, 3)
	check("attention backward 8K", tm, err)
	if err == nil {
		t.Logf("attention backward 8K: %.0f TFLOP/s", 2.5*causalFlops/tm.Seconds/1e12)
	}
	tm, err = b.SendRecv(b.ranks, 64<<20, 1, 3)
	check("send/recv 64 MiB", tm, err)
	tm, err = b.AllToAll(b.ranks, 64<<20, 1, 3)
	check("all-to-all 64 MiB", tm, err)
}

type referenceTensors struct {
	o, lse, dq, dk, dv []float64
}

func bf16ToFloat(x uint16) float64 { return float64(math.Float32frombits(uint32(x) << 16)) }

// referenceAttention computes causal attention and its gradients in float64
// from the BF16 inputs the GPU used; the LSE is in log2 units, as the kernel
// stores it.
func referenceAttention(s hwbackend.AttentionShape, in attentionTensors) referenceTensors {
	B, S, H, HKV, DQK, DV := s.Batch, s.SeqTokens, s.Heads, s.KVHeads, s.HeadDimQK, s.HeadDimV
	r := referenceTensors{
		o: make([]float64, B*S*H*DV), lse: make([]float64, B*H*S),
		dq: make([]float64, B*S*H*DQK), dk: make([]float64, B*S*HKV*DQK), dv: make([]float64, B*S*HKV*DV),
	}
	scale := 1 / math.Sqrt(float64(DQK))
	p, ds := make([]float64, S), make([]float64, S)
	for b := range B {
		for h := range H {
			hk := h / (H / HKV)
			qAt := func(i, d int) float64 { return bf16ToFloat(in.q[((b*S+i)*H+h)*DQK+d]) }
			kAt := func(j, d int) float64 { return bf16ToFloat(in.k[((b*S+j)*HKV+hk)*DQK+d]) }
			vAt := func(j, d int) float64 { return bf16ToFloat(in.v[((b*S+j)*HKV+hk)*DV+d]) }
			doAt := func(i, d int) float64 { return bf16ToFloat(in.dout[((b*S+i)*H+h)*DV+d]) }
			for i := range S {
				m := math.Inf(-1)
				for j := 0; j <= i; j++ {
					var dot float64
					for d := range DQK {
						dot += qAt(i, d) * kAt(j, d)
					}
					p[j] = dot * scale
					m = max(m, p[j])
				}
				var l float64
				for j := 0; j <= i; j++ {
					p[j] = math.Exp(p[j] - m)
					l += p[j]
				}
				r.lse[(b*H+h)*S+i] = (m + math.Log(l)) * math.Log2E
				o := r.o[((b*S+i)*H+h)*DV:][:DV]
				for j := 0; j <= i; j++ {
					p[j] /= l
					for d := range DV {
						o[d] += p[j] * vAt(j, d)
					}
				}
				var di float64
				for d := range DV {
					di += o[d] * doAt(i, d)
				}
				for j := 0; j <= i; j++ {
					var dp float64
					for d := range DV {
						dp += doAt(i, d) * vAt(j, d)
					}
					ds[j] = p[j] * (dp - di) * scale
					for d := range DQK {
						r.dq[((b*S+i)*H+h)*DQK+d] += ds[j] * kAt(j, d)
						r.dk[((b*S+j)*HKV+hk)*DQK+d] += ds[j] * qAt(i, d)
					}
					for d := range DV {
						r.dv[((b*S+j)*HKV+hk)*DV+d] += p[j] * doAt(i, d)
					}
				}
			}
		}
	}
	return r
}

// relErr is max |got - want| / max |want| over BF16 values got.
func relErr(want []float64, got []uint16) float64 {
	var num, den float64
	for i := range want {
		num = max(num, math.Abs(bf16ToFloat(got[i])-want[i]))
		den = max(den, math.Abs(want[i]))
	}
	return num / max(den, 1e-12)
}
