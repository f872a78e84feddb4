package compute

import (
	"github.com/dcpsim/dcpsim/calib"
	"math"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/job"
)

// flat returns a copy of the named profile with constant efficiencies (Half = 0),
// the same at every head dimension.
func flat(t *testing.T, name string, gemm, attn float64) *calib.Profile {
	t.Helper()
	p, err := calib.LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	p.GEMM = calib.Curve{Max: calib.Const{Value: gemm, Source: "test"}, Half: calib.Const{Value: 0, Source: "test"}}
	p.AttentionFwd = calib.Curve{Max: calib.Const{Value: attn, Source: "test"}, Half: calib.Const{Value: 0, Source: "test"}}
	p.AttentionBwd, p.AttentionFwdD256, p.AttentionBwdD256 = p.AttentionFwd, p.AttentionFwd, p.AttentionFwd
	return p
}

// hy3Job is Hy3 with tp1 pp8 ep8 on gpus GPUs of the named kind, 8 per node.
func hy3Job(t *testing.T, gpu string, gpus int) job.Job {
	t.Helper()
	m, err := job.LookupModel(job.ModelHy3)
	if err != nil {
		t.Fatal(err)
	}
	return job.Job{
		Model:         m,
		Cluster:       job.Cluster{GPU: gpu, GPUs: gpus, GPUsPerNode: 8},
		Parallel:      job.Parallel{TP: 1, PP: 8, VPP: 1, EP: 8, BudgetTokens: 8192},
		ContextTokens: 262144,
	}
}

func newCompute(t *testing.T, p *calib.Profile, j job.Job) *Compute {
	t.Helper()
	c, err := NewCompute(p, j)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func near(got, want, rel float64) bool { return math.Abs(got/want-1) <= rel }

// TestWorkedExampleHy3H20 pins costmodel.md §4.8: Hy3 on H20 with η_gemm 0.90 and
// η_attn 0.80, one MoE layer, one CP group of P ranks holding one document of L
// tokens (L/P tokens per rank), compute fwd+bwd per layer per rank. §4.8's GEMM
// column spreads the LM head over the 80 layers (121 GFLOPs/token, §2.3), so the
// check adds LMHead/80; without it the GEMM times are 2–3% lower.
func TestWorkedExampleHy3H20(t *testing.T) {
	c := newCompute(t, flat(t, "H20", 0.90, 0.80), hy3Job(t, "H20", 512))
	const layer = 1 // an MoE layer
	for _, tc := range []struct {
		docTokens, p            int
		totalMs, gemmMs, attnMs float64 // 0: not given in §4.8
	}{
		{4096, 8, 6.8, 5.8, 1.0},
		{4096, 16, 3.4, 0, 0},
		{32768, 8, 112, 47, 65},
		{32768, 16, 56, 0, 0},
		{131072, 8, 1226, 0, 0},
	} {
		tokens := tc.docTokens / tc.p
		pieces := []Piece{{tc.docTokens, tc.p, KernelBlockTokens(tc.docTokens, tc.p)}}
		s := c.RankLayerSeconds(layer, tokens, pieces)
		lmHead := (c.LMHeadFwdSeconds(tokens) + c.LMHeadBwdSeconds(tokens)) / float64(c.Job.Model.Layers)
		gemmMs := 1e3 * (s.GEMMFwd + s.GEMMBwd + lmHead)
		attnMs := 1e3 * (s.AttentionFwd + s.AttentionBwd)
		t.Logf("L=%d P=%d: GEMM %.2f ms (+LM head share; %.2f without), attention %.2f ms, total %.1f ms",
			tc.docTokens, tc.p, gemmMs, 1e3*(s.GEMMFwd+s.GEMMBwd), attnMs, gemmMs+attnMs)
		if !near(gemmMs+attnMs, tc.totalMs, 0.02) {
			t.Errorf("L=%d P=%d: total %.2f ms, §4.8 says %.1f", tc.docTokens, tc.p, gemmMs+attnMs, tc.totalMs)
		}
		if tc.gemmMs > 0 && (!near(gemmMs, tc.gemmMs, 0.02) || !near(attnMs, tc.attnMs, 0.02)) {
			t.Errorf("L=%d P=%d: GEMM %.2f + attention %.2f ms, §4.8 says %.1f + %.1f", tc.docTokens, tc.p, gemmMs, attnMs, tc.gemmMs, tc.attnMs)
		}
		if math.Abs(s.GEMMBwd-2*s.GEMMFwd) > 1e-15 || !near(s.AttentionBwd, 2.5*s.AttentionFwd, 1e-12) {
			t.Errorf("bwd/fwd: GEMM %v, attention %v; want 2 and 2.5", s.GEMMBwd/s.GEMMFwd, s.AttentionBwd/s.AttentionFwd)
		}
	}
}

// TestComputeFormulas pins the formulas on exact numbers and their scaling.
func TestComputeFormulas(t *testing.T) {
	p := flat(t, "H20", 0.5, 0.5)
	c := newCompute(t, p, hy3Job(t, "H20", 512))
	m := c.Job.Model
	peak := p.PeakBF16FLOPs.Value

	// GEMM: 2·T·N_active_linear at 50% of peak.
	if got, want := c.GEMMFwdSeconds(5, 1000), 2*1000*m.LayerActiveLinearParams(5)/(0.5*peak); !near(got, want, 1e-12) {
		t.Errorf("GEMMFwdSeconds = %v, want %v", got, want)
	}
	if got, want := c.GEMMFwdSeconds(0, 1000), 2*1000*(4096*18432+3*4096*13312.0)/(0.5*peak); !near(got, want, 1e-12) {
		t.Errorf("dense layer GEMMFwdSeconds = %v, want %v", got, want)
	}
	// LM head: 2·T·h·V.
	if got, want := c.LMHeadFwdSeconds(1000), 2*1000*4096*120832.0/(0.5*peak); !near(got, want, 1e-12) {
		t.Errorf("LMHeadFwdSeconds = %v, want %v", got, want)
	}
	// Attention: c·s²/k, c = 64·256.
	if got, want := c.AttentionFwdSeconds(8192, 4, 2048), 16384*8192.0*8192/4/(0.5*peak); !near(got, want, 1e-12) {
		t.Errorf("AttentionFwdSeconds = %v, want %v", got, want)
	}
	if c.AttentionFwdSeconds(0, 1, 0) != 0 || c.GEMMFwdSeconds(3, 0) != 0 {
		t.Error("no work should take no time")
	}
	// Optimizer: 28 bytes per parameter at 4 TB/s × the memory-bound efficiency.
	if got, want := c.OptimizerStepSeconds(1e9), 28e9/(4e12*p.MemoryBoundEfficiency.Value); !near(got, want, 1e-12) {
		t.Errorf("OptimizerStepSeconds(1e9) = %v, want %v", got, want)
	}

	// TP (with sequence parallelism) halves every per-GPU time.
	j2 := hy3Job(t, "H20", 512)
	j2.Parallel.TP, j2.Parallel.SequenceParallel = 2, true
	c2 := newCompute(t, p, j2)
	if !near(c2.GEMMFwdSeconds(5, 1000), c.GEMMFwdSeconds(5, 1000)/2, 1e-12) ||
		!near(c2.AttentionBwdSeconds(8192, 2, 4096), c.AttentionBwdSeconds(8192, 2, 4096)/2, 1e-12) {
		t.Error("tp = 2 does not halve the per-GPU times")
	}

	// With real curves: a shorter kernel block is slower; more EP feeds each
	// expert GEMM more rows and is faster; attention at degree 2k is half of k at
	// the same block.
	h20, _ := calib.LookupProfile("H20")
	cr := newCompute(t, h20, hy3Job(t, "H20", 512))
	if cr.AttentionFwdSeconds(32768, 8, 4096) <= cr.AttentionFwdSeconds(32768, 8, 32768) {
		t.Error("a ring block of 4K is not slower than Ulysses' 32K")
	}
	if !near(cr.AttentionFwdSeconds(32768, 16, 4096), cr.AttentionFwdSeconds(32768, 8, 4096)/2, 1e-12) {
		t.Error("twice the CP degree at the same block is not half the time")
	}
	if got := cr.ExpertTokens(4096); got != 4096*8*8/192.0 {
		t.Errorf("ExpertTokens(4096) = %v, want tokens·k·ep/E = %v", got, 4096*8*8/192.0)
	}
	j16 := hy3Job(t, "H20", 512)
	j16.Parallel.EP = 16
	if newCompute(t, h20, j16).GEMMFwdSeconds(5, 4096) >= cr.GEMMFwdSeconds(5, 4096) {
		t.Error("ep 16 is not faster than ep 8 for the expert GEMMs")
	}

	// MLA: the backward is 2.6× the forward (DeepSeek-V3, equal curves).
	dsv3, _ := job.LookupModel(job.ModelDeepSeekV3)
	jd := job.Job{Model: dsv3, Cluster: job.Cluster{GPU: "H800", GPUs: 2048, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 64, BudgetTokens: 4096}, ContextTokens: 4096}
	cd := newCompute(t, flat(t, "H800", 0.5, 0.5), jd)
	if r := cd.AttentionBwdSeconds(4096, 1, 4096) / cd.AttentionFwdSeconds(4096, 1, 4096); !near(r, 2.6, 1e-12) {
		t.Errorf("MLA bwd/fwd = %v, want 2.6", r)
	}
}

// TestRankStageSeconds: a stage is the sum of its layers, plus the head (final
// norm, LM head, loss) on the last stage; dense and MoE layers are priced apart.
func TestRankStageSeconds(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	j := hy3Job(t, "H20", 512)
	j.Parallel.FirstStageLayers, j.Parallel.LastStageLayers = 11, 9 // the other 6 stages get 10 each
	c := newCompute(t, h20, j)
	pieces := []Piece{{16384, 4, 4096}, {2048, 1, 2048}, {1024, 1, 1024}}
	tokens := 16384/4 + 2048 + 1024
	for _, stage := range []int{0, 3, 7} {
		first, n := c.StageLayers(stage)
		var want LayerSeconds
		for l := first; l < first+n; l++ {
			want = want.Add(c.RankLayerSeconds(l, tokens, pieces))
		}
		if stage == 7 {
			want = want.Add(opsLayerSeconds(c.HeadOps(tokens)))
			if f, _ := OpsSeconds(c.HeadOps(tokens), OpKindGEMM); f != c.LMHeadFwdSeconds(tokens) {
				t.Errorf("the head's GEMM %v is not LMHeadFwdSeconds %v", f, c.LMHeadFwdSeconds(tokens))
			}
		}
		got := c.RankStageSeconds(stage, tokens, pieces)
		if !near(got.TotalSeconds(), want.TotalSeconds(), 1e-12) || !near(got.GEMMFwd, want.GEMMFwd, 1e-12) ||
			!near(got.MemoryBwd, want.MemoryBwd, 1e-12) || !near(got.LaunchFwd, want.LaunchFwd, 1e-12) ||
			!near(got.AttentionBwd, want.AttentionBwd, 1e-12) {
			t.Errorf("stage %d (layers %d..%d): %+v, want %+v", stage, first, first+n-1, got, want)
		}
	}
	if f, n := c.StageLayers(0); f != 0 || n != 11 {
		t.Errorf("StageLayers(0) = %d, %d", f, n)
	}
}

// TestOverheadWorked pins θ, c and θ/c on a hand-computed example: Hy3 on 8,192
// GPUs, tp1 pp8 ep8, 10 layers per stage, peak 1e15 FLOP/s, η_attn 0.5 flat,
// launch 10 µs, intra α = 10 µs + 2 µs/hop, inter α = 50 µs + 1 µs/hop, inter
// send/recv 30 µs, CP degree 4.
//
//	stage     1 (10 MoE layers; stage 0 has the dense layer)
//	launch    10 µs · (23 + 34) · 10            = 5.7 ms    (Hy3 MoE layer kernels, LayerKernels)
//	MoE       10 · 4 · (10 + 7·2) µs            = 0.96 ms   (ep 8 in a node)
//	p2p       2 · 30 µs                         = 0.06 ms   (1024 GPUs per stage ≥ a node)
//	CP        10 · 4 · (10 + 3·2) µs            = 0.64 ms   (degree 4 in a node)
//	θ                                          = 7.36 ms
//	c         10 · 16384 · (1/0.5 + 2.5/0.5) / 1e15 = 1.14688e-9 s/token²
//	θ/c                                        = 6.4174e6 tokens² ≈ 2533²
func TestOverheadWorked(t *testing.T) {
	p := flat(t, "H800", 0.5, 0.5)
	p.PeakBF16FLOPs.Value = 1e15
	p.SustainedEfficiency = calib.Const{} // the worked numbers take the peak as is
	p.KernelLaunchSeconds.Value = 10e-6
	p.IntraBaseLatencySeconds.Value, p.IntraHopLatencySeconds.Value = 10e-6, 2e-6
	p.InterBaseLatencySeconds.Value, p.InterHopLatencySeconds.Value = 50e-6, 1e-6
	p.InterP2PLatencySeconds.Value = 30e-6
	c := newCompute(t, p, hy3Job(t, "H800", 8192))
	o := c.Overhead(4, 8192)
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"launch", o.LaunchSeconds, 5.7e-3},
		{"MoE", o.MoECollectiveSeconds, 0.96e-3},
		{"p2p", o.PipelineP2PSeconds, 0.06e-3},
		{"CP", o.CPCollectiveSeconds, 0.64e-3},
		{"θ", o.ThetaSeconds, 7.36e-3},
		{"c", o.CSecondsPerSquareToken, 1.14688e-9},
		{"θ/c", o.RatioSquareTokens, 7.36e-3 / 1.14688e-9},
	} {
		if !near(f.got, f.want, 1e-9) {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
	if o.Stage != 1 || o.Layers != 10 || o.MoELayers != 10 {
		t.Errorf("priced stage %d (%d layers, %d MoE), want stage 1 (10, 10)", o.Stage, o.Layers, o.MoELayers)
	}
	if r := c.OverheadRatio(4, 8192); r != o.RatioSquareTokens {
		t.Errorf("OverheadRatio = %v, Overhead says %v", r, o.RatioSquareTokens)
	}
	// CP degree 16 leaves the node: inter-node latency; pp 1 has no p2p.
	if o16 := c.Overhead(16, 8192); !near(o16.CPCollectiveSeconds, 10*4*(50e-6+15e-6), 1e-12) {
		t.Errorf("CP 16 = %v", o16.CPCollectiveSeconds)
	}
	j1 := hy3Job(t, "H800", 64)
	j1.Parallel.PP = 1
	if o1 := newCompute(t, p, j1).Overhead(1, 8192); o1.PipelineP2PSeconds != 0 || o1.CPCollectiveSeconds != 0 || o1.Layers != 80 {
		t.Errorf("pp 1, no CP: %+v", o1)
	}
}

// TestOverheadRealistic logs θ/c of the embedded profiles for the hy3-8k layout
// and checks it lies between 512² and 16K² tokens² (the CLI's assumed default is
// 2^24 = 4096²).
func TestOverheadRealistic(t *testing.T) {
	for _, gpu := range []string{"H800", "H20", "B200"} {
		p, err := calib.LookupProfile(gpu)
		if err != nil {
			t.Fatal(err)
		}
		o := newCompute(t, p, hy3Job(t, gpu, 8192)).Overhead(1, 8192)
		t.Logf("%s: θ = %.2f ms (launch %.2f, MoE %.2f, p2p %.2f), c = %.3g s/token², θ/c = %.3g tokens² = (%.0f)²",
			gpu, 1e3*o.ThetaSeconds, 1e3*o.LaunchSeconds, 1e3*o.MoECollectiveSeconds, 1e3*o.PipelineP2PSeconds,
			o.CSecondsPerSquareToken, o.RatioSquareTokens, math.Sqrt(o.RatioSquareTokens))
		if o.RatioSquareTokens < 1<<18 || o.RatioSquareTokens > 1<<28 {
			t.Errorf("%s: θ/c = %.3g tokens², outside [512², 16K²]", gpu, o.RatioSquareTokens)
		}
	}
}

func TestNewComputeErrors(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	j := hy3Job(t, "H20", 512)
	if _, err := NewCompute(nil, j); err == nil {
		t.Error("nil profile accepted")
	}
	bad := *h20
	bad.PeakBF16FLOPs.Source = ""
	if _, err := NewCompute(&bad, j); err == nil || !strings.Contains(err.Error(), "peak_bf16_flops.source") {
		t.Errorf("invalid profile: %v", err)
	}
	j.Parallel.EP = 7
	if _, err := NewCompute(h20, j); err == nil || !strings.Contains(err.Error(), "parallel.ep = 7") {
		t.Errorf("ep 7: %v", err)
	}
	j = hy3Job(t, "H20", 512)
	j.Parallel.PP = 3
	if _, err := NewCompute(h20, j); err == nil || !strings.Contains(err.Error(), "parallel.pp") {
		t.Errorf("pp 3 of 80 layers: %v", err)
	}
}

// TestAttentionEfficiencyByHeadDim: the attention efficiency is the head-dim-128
// curve at d_qk <= 128, the head-dim-256 curve at d_qk >= 256, and linear in
// d_qk between (MLA's 192: halfway), forward and backward; DeepSeek-V3's
// attention on an H100 therefore runs a little faster at long blocks than a
// head-dim-128 model's would (FA3's head dim 256 is 4-5% faster from 4K).
func TestAttentionEfficiencyByHeadDim(t *testing.T) {
	h100, _ := calib.LookupProfile("H100-SXM")
	for _, tc := range []struct {
		dqk  int
		w256 float64
	}{{64, 0}, {128, 0}, {160, 0.25}, {192, 0.5}, {256, 1}, {320, 1}} {
		m, _ := job.LookupModel(job.ModelLlama3With8B)
		m.HeadDimQK, m.HeadDimV = tc.dqk, tc.dqk
		c := newCompute(t, h100, job.Job{Model: m, Cluster: job.Cluster{GPU: "H100-SXM", GPUs: 8, GPUsPerNode: 8},
			Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 1, BudgetTokens: 8192}, ContextTokens: 8192})
		for _, x := range []float64{512, 4096, 16384} {
			for _, bwd := range []bool{false, true} {
				lo, hi := h100.AttentionFwd, h100.AttentionFwdD256
				if bwd {
					lo, hi = h100.AttentionBwd, h100.AttentionBwdD256
				}
				want := (1-tc.w256)*lo.At(x) + tc.w256*hi.At(x)
				if got := c.AttentionEfficiency(bwd, x); !near(got, want, 1e-12) {
					t.Errorf("d_qk %d, x %g, bwd %v: η = %v, want %v", tc.dqk, x, bwd, got, want)
				}
			}
		}
	}
	dsv3, _ := job.LookupModel(job.ModelDeepSeekV3)
	c := newCompute(t, h100, job.Job{Model: dsv3, Cluster: job.Cluster{GPU: "H100-SXM", GPUs: 64, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 64, BudgetTokens: 8192}, ContextTokens: 8192})
	if r := c.AttentionEfficiency(false, 8192) / h100.AttentionFwd.At(8192); r < 1.01 || r > 1.04 {
		t.Errorf("MLA (d_qk 192) at 8K runs at %.3f× the head-dim-128 efficiency, want 1.01-1.04", r)
	}
}
