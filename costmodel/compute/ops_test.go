package compute

import (
	"github.com/dcpsim/dcpsim/calib"
	"math"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/job"
)

// presetJob is the named preset on 64 H20 GPUs at tp with sequence
// parallelism, pp 1, ep 8 for MoE models (1 for dense).
func presetJob(t *testing.T, name string, tp int) job.Job {
	t.Helper()
	m, err := job.LookupModel(name)
	if err != nil {
		t.Fatal(err)
	}
	ep := 1
	if m.RoutedExperts > 0 {
		ep = 8
	}
	return job.Job{Model: m, Cluster: job.Cluster{GPU: "H20", GPUs: 64, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: tp, PP: 1, VPP: 1, EP: ep, BudgetTokens: 8192, SequenceParallel: true}, ContextTokens: 8192}
}

func opNames(ops []Op) []string {
	var n []string
	for _, o := range ops {
		n = append(n, o.Name)
	}
	return n
}

// TestLayerOpsNames pins each model kind's op list, in forward order.
func TestLayerOpsNames(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	moeTail := []string{OpPostAttentionNorm, OpRouter, OpRouterTopK, OpPermute, OpExpertGateUp, OpExpertSwiGLU, OpExpertDown, OpUnpermute}
	shared := []string{OpSharedGateUp, OpSharedSwiGLU, OpSharedDown}
	end := []string{OpFFNResidual, OpLaunch}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	mlaNoQ := []string{OpInputNorm, OpQProj, OpKVDown, OpKVNorm, OpKVUp, OpRoPE, OpConcat}
	mlaQ := []string{OpInputNorm, OpQDown, OpQNorm, OpQUp, OpKVDown, OpKVNorm, OpKVUp, OpRoPE, OpConcat}
	gqaNorm := []string{OpInputNorm, OpQProj, OpKProj, OpVProj, OpQKNorm, OpRoPE}
	gqa := []string{OpInputNorm, OpQProj, OpKProj, OpVProj, OpRoPE}
	out := []string{OpOProj, OpAttentionResidual}
	dense := []string{OpPostAttentionNorm, OpGateUp, OpSwiGLU, OpDown}
	for _, tc := range []struct {
		model string
		gated bool
		layer int
		want  []string
	}{
		{job.ModelDeepSeekV2Lite, false, 0, cat(mlaNoQ, out, dense, end)},
		{job.ModelDeepSeekV2Lite, false, 1, cat(mlaNoQ, out, moeTail, shared, end)},
		{job.ModelDeepSeekV2Lite, true, 1, cat(mlaNoQ, []string{OpGate, OpGateMul}, out, moeTail, shared, end)},
		{job.ModelDeepSeekV3, false, 3, cat(mlaQ, out, moeTail, shared, end)},
		{job.ModelHy3, false, 1, cat(gqaNorm, out, moeTail, shared, end)},
		{job.ModelQwen3MoE30B, false, 0, cat(gqaNorm, out, moeTail, end)},
		{job.ModelLlama3With8B, false, 0, cat(gqa, out, dense, end)},
	} {
		j := presetJob(t, tc.model, 1)
		j.Model.GatedAttention = tc.gated
		got := opNames(newCompute(t, h20, j).LayerOps(tc.layer, 4096))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s (gated %v) layer %d: ops %v, want %v", tc.model, tc.gated, tc.layer, got, tc.want)
		}
	}
}

// TestLayerOpsConsistent: for every preset (gated too), layer kind and a TP of
// 1 and 2: GEMMFwdSeconds and GEMMBwdSeconds are the GEMM ops' sums and the
// backward is twice the forward; LayerOpsSeconds and RankLayerSeconds add up
// the ops; the GEMMs do 2·T·LayerActiveLinearParams FLOPs over the rank (1/TP
// per GPU), so pricing by shape keeps the model's FLOPs; every op has
// non-negative times and kernels, and no time without work.
func TestLayerOpsConsistent(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	for _, name := range job.ModelNames() {
		for _, gated := range []bool{false, true} {
			for _, tp := range []int{1, 2} {
				j := presetJob(t, name, tp)
				j.Model.GatedAttention = gated
				c := newCompute(t, h20, j)
				for _, layer := range []int{0, j.Model.Layers - 1} {
					const tokens = 3000
					ops := c.LayerOps(layer, tokens)
					gf, gb := OpsSeconds(ops, OpKindGEMM)
					if !near(c.GEMMFwdSeconds(layer, tokens), gf, 1e-12) || !near(c.GEMMBwdSeconds(layer, tokens), gb, 1e-12) || !near(gb, 2*gf, 1e-12) {
						t.Errorf("%s tp%d layer %d: GEMM fwd/bwd %v/%v, ops %v/%v", name, tp, layer, c.GEMMFwdSeconds(layer, tokens), c.GEMMBwdSeconds(layer, tokens), gf, gb)
					}
					af, ab := OpsSeconds(ops)
					lf, lb := c.LayerOpsSeconds(layer, tokens)
					rs := c.RankLayerSeconds(layer, tokens, nil)
					if lf != af || lb != ab || !near(rs.FwdSeconds(), af, 1e-12) || !near(rs.BwdSeconds(), ab, 1e-12) ||
						!near(rs.GEMMFwd, gf, 1e-12) {
						t.Errorf("%s tp%d layer %d: sums disagree: ops %v/%v, LayerOpsSeconds %v/%v, RankLayerSeconds %+v", name, tp, layer, af, ab, lf, lb, rs)
					}
					var flops float64
					for _, o := range ops {
						flops += o.Shape.FLOPs()
						if o.FwdSeconds < 0 || o.BwdSeconds < 0 || o.FwdKernels < 1 || o.BwdKernels < 1 {
							t.Errorf("%s layer %d: op %+v", name, layer, o)
						}
						if (o.Kind == OpKindGEMM) != (o.Shape.FLOPs() > 0) || (o.Kind == OpKindMemory) != (o.FwdBytes > 0) {
							t.Errorf("%s layer %d: op %s of kind %v has FLOPs %v, bytes %v", name, layer, o.Name, o.Kind, o.Shape.FLOPs(), o.FwdBytes)
						}
					}
					if want := 2 * tokens * j.Model.LayerActiveLinearParams(layer) / float64(tp); !near(flops, want, 1e-9) {
						t.Errorf("%s tp%d gated %v layer %d: GEMM FLOPs per GPU %g, want 2·T·N_lin/tp = %g", name, tp, gated, layer, flops, want)
					}
				}
				for _, o := range c.LayerOps(j.Model.Layers-1, 0) {
					if o.Kind != OpKindLaunch && (o.FwdSeconds != 0 || o.BwdSeconds != 0) {
						t.Errorf("%s: op %s takes time for no tokens", name, o.Name)
					}
				}
			}
		}
	}
}

// TestLayerKernels pins the kernels each model kind launches per layer,
// forward and backward, core attention's (1 and 3) included, and OpLaunch's
// time: KernelLaunchSeconds for each.
func TestLayerKernels(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	for _, tc := range []struct {
		model          string
		layer          int
		fwd, bwd       int
		gatedF, gatedB int
	}{
		{job.ModelDeepSeekV2Lite, 0, 16, 24, 18, 27}, // MLA, dense
		{job.ModelDeepSeekV2Lite, 1, 23, 34, 25, 37}, // MLA, MoE with shared experts
		{job.ModelDeepSeekV3, 3, 25, 37, 27, 40},     // MLA with q_lora, MoE with a shared expert
		{job.ModelHy3, 1, 23, 34, 25, 37},            // GQA with q/k norm, MoE with a shared expert
		{job.ModelQwen3MoE235B, 0, 20, 29, 22, 32},   // GQA with q/k norm, MoE without shared experts
		{job.ModelLlama3With70B, 0, 14, 22, 16, 25},  // GQA, dense
	} {
		for _, gated := range []bool{false, true} {
			j := presetJob(t, tc.model, 1)
			j.Model.GatedAttention = gated
			c := newCompute(t, h20, j)
			f, b := c.LayerKernels(tc.layer)
			wf, wb := tc.fwd, tc.bwd
			if gated {
				wf, wb = tc.gatedF, tc.gatedB
			}
			if f != wf || b != wb {
				t.Errorf("%s layer %d gated %v: %d forward, %d backward kernels, want %d, %d", tc.model, tc.layer, gated, f, b, wf, wb)
			}
			ops := c.LayerOps(tc.layer, 100)
			l := ops[len(ops)-1]
			if l.Name != OpLaunch || l.Kind != OpKindLaunch || !near(l.FwdSeconds, float64(f)*5e-6, 1e-12) || !near(l.BwdSeconds, float64(b)*5e-6, 1e-12) {
				t.Errorf("%s: launch op %+v", tc.model, l)
			}
		}
	}
}

// TestMemoryOpBytes pins the byte counts of the memory-bound ops on
// DeepSeek-V2-Lite (h 2048, 16 heads, d_qk 192 = 128 + 64, d_v 128, kv_lora 512,
// 64 experts top-6, f_e 1408, 2 shared) at tp 2 and their time at the H20's
// achieved bandwidth.
func TestMemoryOpBytes(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	c := newCompute(t, h20, presetJob(t, job.ModelDeepSeekV2Lite, 2))
	const tokens = 1000
	ts := 500.0 // the GPU's sequence-parallel share
	bw := 4e12 * h20.MemoryBoundEfficiency.Value
	want := map[string][2]float64{
		OpInputNorm:         {4 * 2048 * ts, 6 * 2048 * ts},
		OpKVNorm:            {4 * 512 * ts, 6 * 512 * ts},
		OpRoPE:              {4 * (16*64 + 64) * ts, 4 * (16*64 + 64) * ts},
		OpConcat:            {2 * (3*16*192 + 16*128 + 64) * ts, 2 * (3*16*192 + 16*128 + 64) * ts},
		OpAttentionResidual: {6 * 2048 * ts, 6 * 2048 * ts},
		OpRouterTopK:        {(8*64 + 8*6) * ts, (8*64 + 8*6) * ts},
		OpPermute:           {4 * 6 * 2048 * ts, 4 * 6 * 2048 * ts},
		OpExpertSwiGLU:      {6 * 704 * 6 * tokens, 10 * 704 * 6 * tokens},
		OpUnpermute:         {(2*6*2048 + 2*2048 + 4*6) * ts, (4*6*2048 + 2*2048) * ts},
		OpSharedSwiGLU:      {6 * 1408 * tokens, 10 * 1408 * tokens},
	}
	seen := 0
	for _, o := range c.LayerOps(1, tokens) {
		w, ok := want[o.Name]
		if !ok {
			continue
		}
		seen++
		if !near(o.FwdBytes, w[0], 1e-12) || !near(o.BwdBytes, w[1], 1e-12) {
			t.Errorf("%s: bytes %v / %v, want %v / %v", o.Name, o.FwdBytes, o.BwdBytes, w[0], w[1])
		}
		if !near(o.FwdSeconds, w[0]/bw, 1e-12) || !near(o.BwdSeconds, w[1]/bw, 1e-12) {
			t.Errorf("%s: seconds %v / %v, want bytes / %g B/s", o.Name, o.FwdSeconds, o.BwdSeconds, bw)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d ops", seen, len(want))
	}
	head := c.HeadOps(tokens)
	if got := opNames(head); !slices.Equal(got, []string{OpFinalNorm, OpLMHead, OpCrossEntropy, OpLaunch}) {
		t.Fatalf("head ops %v", got)
	}
	if ce := head[2]; !near(ce.FwdBytes, 6*102400/2*tokens, 1e-12) || ce.BwdBytes != ce.FwdBytes {
		t.Errorf("cross entropy bytes %v / %v", ce.FwdBytes, ce.BwdBytes)
	}
	if g := head[1].Shape; g.M != tokens || g.N != 102400/2 || g.K != 2048 || g.Count != 1 {
		t.Errorf("lm_head shape %+v", g)
	}
}

// TestGEMMByShape: a GEMM is priced at its own shape, so a fine-grained
// expert's GEMM (few rows, a thin n or k) runs at a lower efficiency than the
// dense layer's of the same model; a GEMM of very few rows is bound by the
// bytes it moves.
func TestGEMMByShape(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	c := newCompute(t, h20, presetJob(t, job.ModelDeepSeekV2Lite, 1))
	rate := func(o Op) float64 { return o.Shape.FLOPs() / o.FwdSeconds }
	var dense, expert Op
	for _, o := range c.LayerOps(0, 4096) {
		if o.Name == OpGateUp {
			dense = o
		}
	}
	for _, o := range c.LayerOps(1, 4096) {
		if o.Name == OpExpertGateUp {
			expert = o
		}
	}
	if expert.Shape.M != c.ExpertTokens(4096) || expert.Shape.Count != 8 || expert.Shape.N != 2816 || expert.Shape.K != 2048 {
		t.Fatalf("expert gate_up shape %+v, want 8 × (%v, 2816, 2048)", expert.Shape, c.ExpertTokens(4096))
	}
	if rate(expert) >= rate(dense) {
		t.Errorf("expert GEMM at %.3g FLOP/s, dense at %.3g: the expert's smaller shape should run slower", rate(expert), rate(dense))
	}
	want := 2 * 4096 * 21888 * 2048.0 / (148e12 * h20.GEMM.At(calib.GEMMEffectiveSize(4096, 21888, 2048)))
	if !near(dense.FwdSeconds, want, 1e-12) {
		t.Errorf("dense gate_up %v s, want %v", dense.FwdSeconds, want)
	}
	// One row at a flat 90%: its 2·(k + k·n + n) bytes take longer than its
	// 2·n·k FLOPs, and the roofline takes the bytes. (With the fitted curve its
	// efficiency at GEMMEffectiveSize ≈ 3 is far lower still.)
	cf := newCompute(t, flat(t, "H20", 0.9, 0.8), presetJob(t, job.ModelDeepSeekV2Lite, 1))
	g := GEMMShape{M: 1, N: 4096, K: 4096, Count: 3}
	if got, want := cf.GEMMSeconds(g), 3*2*(4096+4096*4096+4096.0)/(4e12*h20.MemoryBoundEfficiency.Value); !near(got, want, 1e-12) {
		t.Errorf("GEMMSeconds(1 row) = %v, want the memory bound %v", got, want)
	}
	if c.GEMMSeconds(g) < cf.GEMMSeconds(g) {
		t.Errorf("the fitted curve prices one row below the memory bound")
	}
	if c.GEMMSeconds(GEMMShape{M: 0, N: 1, K: 1, Count: 1}) != 0 || c.MemorySeconds(0) != 0 {
		t.Error("no work takes time")
	}
}

// TestAllToAllWindow: the window is the layer's AllToAllWindowOps: MLA's
// key/value path, RoPE and concatenation, the gate when gated; only RoPE (and
// the gate) for GQA.
func TestAllToAllWindow(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	for _, tc := range []struct {
		model string
		gated bool
		want  []string
	}{
		{job.ModelDeepSeekV2Lite, true, []string{OpKVDown, OpKVNorm, OpKVUp, OpRoPE, OpConcat, OpGate}},
		{job.ModelDeepSeekV2Lite, false, []string{OpKVDown, OpKVNorm, OpKVUp, OpRoPE, OpConcat}},
		{job.ModelHy3, false, []string{OpRoPE}},
	} {
		j := presetJob(t, tc.model, 1)
		j.Model.GatedAttention = tc.gated
		c := newCompute(t, h20, j)
		var names []string
		var f, b float64
		for _, o := range c.LayerOps(1, 2048) {
			if slices.Contains(tc.want, o.Name) {
				names = append(names, o.Name)
				f += o.FwdSeconds
				b += o.BwdSeconds
			}
		}
		gf, gb := c.AllToAllWindowSeconds(1, 2048)
		if !slices.Equal(names, tc.want) || math.Abs(gf-f) > 1e-15 || math.Abs(gb-b) > 1e-15 || !(gf > 0) {
			t.Errorf("%s gated %v: window ops %v (%v/%v s), AllToAllWindowSeconds %v/%v", tc.model, tc.gated, names, f, b, gf, gb)
		}
	}
}

// TestAppendOps: AppendLayerOps and AppendHeadOps after other ops give the
// same ops as LayerOps and HeadOps (OpLaunch counting only the kernels
// appended), leave dst's ops alone, and reuse dst's storage when it has room.
func TestAppendOps(t *testing.T) {
	h20, _ := calib.LookupProfile("H20")
	for _, tc := range []struct {
		model  string
		layer  int
		tokens int
	}{
		{job.ModelDeepSeekV2Lite, 0, 100},
		{job.ModelDeepSeekV3, 3, 8192},
		{job.ModelLlama3With70B, 0, 4096},
	} {
		c := newCompute(t, h20, presetJob(t, tc.model, 1))
		head := c.HeadOps(tc.tokens)
		buf := make([]Op, 0, 64)
		buf = c.AppendHeadOps(buf, tc.tokens)
		buf = c.AppendLayerOps(buf, tc.layer, tc.tokens)
		if want := c.LayerOps(tc.layer, tc.tokens); !slices.Equal(buf[:len(head)], head) || !slices.Equal(buf[len(head):], want) {
			t.Errorf("%s layer %d: appended ops differ from LayerOps and HeadOps", tc.model, tc.layer)
		}
		if again := c.AppendLayerOps(buf[:0], tc.layer, tc.tokens); &again[0] != &buf[0] {
			t.Errorf("%s: AppendLayerOps did not reuse dst's storage", tc.model)
		}
	}
}
