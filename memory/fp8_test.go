package memory

import (
	"testing"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
)

// TestFP8ByHand: under FP8 training tinyMoE keeps its FP8 GEMMs' inputs at
// one byte an element. Per token, without SP: layer 0 saves the QKV input
// h = 8, the output projection's input n_h·d_v/t = 4, the first FFN GEMM's
// input h = 8 and the down projection's input f/t = 8, 28 bytes of 148;
// layer 1 saves 8 + 4 + 8, the routed copies' inputs k·h = 16 and the expert
// and shared down inputs (k·f_e + f_s)/t = 9, 45 of 234. SP halves the
// replicated ones (20 and 29 saved). Full recompute keeps only the layer
// input, as in BF16. The states add the FP8 weight copies, 2 bytes per layer
// parameter per GPU: stage 0 656/2·2 = 656, stage 1 (448/2 + 576/4)·2 = 736.
func TestFP8ByHand(t *testing.T) {
	cases := []struct {
		sp     bool
		rc     job.RecomputeGranularity
		l0, l1 float64
	}{
		{false, job.RecomputeNone, 148 - 28, 234 - 45},
		{true, job.RecomputeNone, 116 - 20, 162 - 29},
		{false, job.RecomputeSelective, 144 - 28, 230 - 45},
		{true, job.RecomputeSelective, 112 - 20, 158 - 29},
		{false, job.RecomputeFull, 16, 16},
		{true, job.RecomputeFull, 8, 8},
	}
	for _, c := range cases {
		j := tinyMoEJob("")
		j.Parallel.SequenceParallel = c.sp
		j.Parallel.Recompute = c.rc
		j.Parallel.Precision = job.PrecisionFP8
		m := mustNew(t, j, compute.FlashAttention)
		for l, want := range []float64{c.l0, c.l1} {
			if tok, sc := m.LayerBytes(l, c.rc); tok != want || sc != 0 {
				t.Errorf("FP8 tiny MoE sp=%v %s layer %d: LayerBytes = (%g, %g), hand count (%g, 0)", c.sp, c.rc, l, tok, sc, want)
			}
		}
	}
	j := tinyMoEJob("")
	bf := mustNew(t, j, compute.FlashAttention)
	j.Parallel.Precision = job.PrecisionFP8
	f8 := mustNew(t, j, compute.FlashAttention)
	for s, want := range []float64{656, 736} {
		got, base := f8.States(s), bf.States(s)
		if got.FP8WeightBytes != want || base.FP8WeightBytes != 0 {
			t.Errorf("stage %d: FP8 weight bytes %g (BF16 %g), hand count %g (0)", s, got.FP8WeightBytes, base.FP8WeightBytes, want)
		}
		if got.Bytes() != base.Bytes()+want {
			t.Errorf("stage %d: FP8 states %g, want BF16's %g + %g", s, got.Bytes(), base.Bytes(), want)
		}
	}
}
