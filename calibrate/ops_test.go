package calibrate

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
)

// TestPriceOps: the memory-bound price is bytes over the HBM rate times its
// efficiency; a GEMM's FLOPs are 2mnk; attention's backward FLOPs are the
// forward's times (3·d_qk + 2·d_v)/(d_qk + d_v); FP8 on a GPU without FP8
// tensor cores is refused.
func TestPriceOps(t *testing.T) {
	h100, err := calib.LookupProfile("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	m := PriceMemoryBound(h100, 1e9)
	if want := 1e9 / (h100.HBMBytesPerSecond.Value * h100.MemoryBoundEfficiency.Value); math.Abs(m.Seconds/want-1) > 1e-12 {
		t.Errorf("memory-bound: %g s, want %g", m.Seconds, want)
	}
	g, err := PriceGEMM(h100, 4096, 1024, 512, true)
	if err != nil || g.FLOPs != 2*4096*1024*512 || g.Precision != "fp8" {
		t.Errorf("fp8 GEMM: %+v, %v", g, err)
	}
	a := PriceAttention(h100, 8192, 32, 192, 128)
	if want := a.FwdFLOPs * (3*192 + 2*128) / (192 + 128); math.Abs(a.BwdFLOPs/want-1) > 1e-12 || !(a.BwdSeconds > a.FwdSeconds) {
		t.Errorf("attention: %+v", a)
	}
	a100, err := calib.LookupProfile("A100-80G")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PriceGEMM(a100, 64, 64, 64, true); err == nil {
		t.Error("FP8 GEMM priced on an A100")
	}
}
