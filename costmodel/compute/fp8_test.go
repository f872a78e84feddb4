package compute

import (
	"github.com/dcpsim/dcpsim/calib"
	"math"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/job"
)

// TestFP8LayerOps: under FP8 training every GEMM but the router's is priced
// by FP8GEMMSeconds, OpFP8Cast moves 4 bytes per element of each FP8 GEMM's
// input (forward) and output gradient (backward) with one kernel per GEMM and
// pass, the memory-bound ops and the LM head stay as in BF16, and the layer
// launches one more kernel per FP8 GEMM each pass.
func TestFP8LayerOps(t *testing.T) {
	h800, err := calib.LookupProfile("H800")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range job.ModelNames() {
		for _, tp := range []int{1, 2} {
			bf := presetJob(t, name, tp)
			bf.Cluster.GPU = "H800"
			f8 := bf
			f8.Parallel.Precision = job.PrecisionFP8
			cb, c8 := newCompute(t, h800, bf), newCompute(t, h800, f8)
			for _, layer := range []int{0, bf.Model.Layers - 1} {
				const tokens = 6000
				ob, o8 := cb.LayerOps(layer, tokens), c8.LayerOps(layer, tokens)
				if len(o8) != len(ob)+1 || o8[len(o8)-2].Name != OpFP8Cast {
					t.Fatalf("%s tp%d layer %d: FP8 ops %v, want the BF16 ones with %s before %s", name, tp, layer, opNames(o8), OpFP8Cast, OpLaunch)
				}
				var castF, castB float64
				gemms, unfused := 0, 0
				for i, o := range ob[:len(ob)-1] {
					q := o8[i]
					switch {
					case o.Kind == OpKindGEMM && o.Name == OpRouter:
						if q != o {
							t.Errorf("%s: router changed under FP8: %+v, want %+v", name, q, o)
						}
					case o.Kind == OpKindGEMM:
						gemms++
						want := c8.FP8GEMMSeconds(o.Shape)
						if !near(q.FwdSeconds, want, 1e-12) || !near(q.BwdSeconds, 2*want, 1e-12) {
							t.Errorf("%s %s: FP8 %v/%v, want %v/%v", name, o.Name, q.FwdSeconds, q.BwdSeconds, want, 2*want)
						}
						g := o.Shape
						if o.Name == OpOProj { // the only input no producer casts (fusedInputCast)
							castF += FP8CastBytesPerElement * g.M * g.K * g.Count
							unfused++
						}
						castB += FP8CastBytesPerElement * g.M * g.N * g.Count
					default:
						if q != o {
							t.Errorf("%s %s: changed under FP8", name, o.Name)
						}
					}
				}
				cast := o8[len(o8)-2]
				if !near(cast.FwdBytes, castF, 1e-12) || !near(cast.BwdBytes, castB, 1e-12) || cast.FwdKernels != unfused || cast.BwdKernels != gemms {
					t.Errorf("%s layer %d: cast %v/%v bytes, %d/%d kernels; want %v/%v, %d/%d", name, layer, cast.FwdBytes, cast.BwdBytes, cast.FwdKernels, cast.BwdKernels, castF, castB, unfused, gemms)
				}
				lb, l8 := ob[len(ob)-1], o8[len(o8)-1]
				if l8.FwdKernels != lb.FwdKernels+unfused || l8.BwdKernels != lb.BwdKernels+gemms {
					t.Errorf("%s layer %d: FP8 kernels %d/%d, want BF16's %d/%d + %d/%d", name, layer, l8.FwdKernels, l8.BwdKernels, lb.FwdKernels, lb.BwdKernels, unfused, gemms)
				}
				// At 6,000 tokens the FP8 GEMMs beat BF16's, casts and all.
				gb, _ := OpsSeconds(ob, OpKindGEMM)
				g8, _ := OpsSeconds(o8, OpKindGEMM)
				if !(g8 < gb) {
					t.Errorf("%s layer %d: FP8 GEMMs %v s, not faster than BF16's %v s", name, layer, g8, gb)
				}
			}
			hb, h8 := cb.HeadOps(6000), c8.HeadOps(6000)
			if len(hb) != len(h8) || hb[1] != h8[1] {
				t.Errorf("%s: the LM head changed under FP8: %+v, want %+v", name, h8, hb)
			}
		}
	}
}

// TestFP8GEMMSecondsAnalytic: a compute-bound FP8 GEMM takes
// 2mnk/(peak_fp8·sustained·η_fp8(x)); a memory-bound one takes its FP8
// bytes at the memory-bound bandwidth; a profile without FP8 prices it at
// +Inf.
func TestFP8GEMMSecondsAnalytic(t *testing.T) {
	h800, _ := calib.LookupProfile("H800")
	c := &Compute{Profile: h800}
	g := GEMMShape{M: 8192, N: 8192, K: 8192, Count: 2}
	want := 2 * 2 * 8192.0 * 8192 * 8192 / (h800.PeakFP8FLOPs.Value * h800.SustainedEfficiency.Value * h800.GEMMFP8.At(8192))
	if got := c.FP8GEMMSeconds(g); !near(got, want, 1e-12) {
		t.Errorf("8192³ × 2: %v s, want %v", got, want)
	}
	// On a part with a tenth of the HBM bandwidth a 64-row GEMM is bound by
	// its FP8 bytes: (m·k + k·n) one byte each, the BF16 output two.
	slow := *h800
	slow.HBMBytesPerSecond.Value /= 10
	thin := GEMMShape{M: 64, N: 16384, K: 16384, Count: 1}
	wantThin := (64*16384 + 16384*16384 + 2*64*16384) / (slow.HBMBytesPerSecond.Value * slow.MemoryBoundEfficiency.Value)
	if got := (&Compute{Profile: &slow}).FP8GEMMSeconds(thin); !near(got, wantThin, 1e-12) {
		t.Errorf("64 rows at a tenth of the bandwidth: %v s, want the bytes' %v", got, wantThin)
	}
	a100, _ := calib.LookupProfile("A100-80G")
	if got := (&Compute{Profile: a100}).FP8GEMMSeconds(g); !math.IsInf(got, 1) {
		t.Errorf("A100: %v, want +Inf", got)
	}
}

// TestFP8NeedsFP8Cores: NewCompute refuses FP8 training on a profile without
// FP8, naming the key and the profiles that have it.
func TestFP8NeedsFP8Cores(t *testing.T) {
	a100, _ := calib.LookupProfile("A100-80G")
	j := presetJob(t, job.ModelLlama3With8B, 1)
	j.Parallel.Precision = job.PrecisionFP8
	_, err := NewCompute(a100, j)
	if err == nil || !strings.Contains(err.Error(), `parallel.precision = "fp8"`) || !strings.Contains(err.Error(), "H800") {
		t.Errorf("A100 FP8: %v", err)
	}
}
