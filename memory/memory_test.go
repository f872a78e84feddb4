package memory

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
)

// relClose reports whether got is within rel of want (relative to |want|, or
// absolute when want is 0).
func relClose(got, want, rel float64) bool {
	if want == 0 {
		return math.Abs(got) <= rel
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// gptModel is Megatron-LM's GPT (MHA, GELU, f = 4h, learned positions).
func gptModel(tb testing.TB, h, a, layers, vocab, ctx int) job.Model {
	tb.Helper()
	m, err := job.GPT("gpt-test", h, 4*h, a, layers, vocab, ctx)
	if err != nil {
		tb.Fatalf("job.GPT(h=%d, a=%d, L=%d): %v", h, a, layers, err)
	}
	return m
}

// gptJob is a job of model on tp·pp GPUs (no data parallelism).
func gptJob(mod job.Model, tp, pp, vpp int, sp bool, rc job.RecomputeGranularity) job.Job {
	return job.Job{
		Model:   mod,
		Cluster: job.Cluster{GPU: "H100-SXM", GPUs: tp * pp, GPUsPerNode: max(tp, 8)},
		Parallel: job.Parallel{
			TP: tp, PP: pp, VPP: vpp, EP: 1, BudgetTokens: 1 << 16,
			SequenceParallel: sp, Recompute: rc,
		},
		ContextTokens: mod.MaxContextTokens,
	}
}

func mustNew(tb testing.TB, j job.Job, k compute.AttentionKernel) *Model {
	tb.Helper()
	m, err := New(j, k)
	if err != nil {
		tb.Fatalf("New(%v, %v): %v", j, k, err)
	}
	return m
}

// TestLayerBytesKorthikantiTable2 checks LayerBytes of a Megatron GPT layer
// (softmax kernel, dropout on) against the rows of Korthikanti et al. 2022
// Table 2, per token and divided by h: bytes per layer = sbh·row, and a
// sequence of length s with no CP has s scores per token.
func TestLayerBytesKorthikantiTable2(t *testing.T) {
	shapes := []struct{ h, a, s, tp int }{
		{6144, 64, 2048, 8},   // Korthikanti's 22B
		{12288, 96, 2048, 8},  // 175B
		{20480, 128, 2048, 8}, // 530B
		{1024, 16, 512, 2},
		{4096, 32, 4096, 4},
		{2048, 16, 8192, 1},
	}
	type row struct {
		name string
		sp   bool
		rc   job.RecomputeGranularity
		want func(h, a, s, t float64) float64
	}
	rows := []row{
		{"TP baseline", false, job.RecomputeNone, func(h, a, s, t float64) float64 { return 10 + 24/t + 5*a*s/(h*t) }},
		{"TP+SP", true, job.RecomputeNone, func(h, a, s, t float64) float64 { return 34/t + 5*a*s/(h*t) }},
		{"TP+selective", false, job.RecomputeSelective, func(h, a, s, t float64) float64 { return 10 + 24/t }},
		{"TP+SP+selective", true, job.RecomputeSelective, func(h, a, s, t float64) float64 { return 34 / t }},
		{"full (no SP)", false, job.RecomputeFull, func(h, a, s, t float64) float64 { return 2 }},
		// Not a Table 2 row: dcpsim splits full recompute's kept layer input
		// over TP under SP (the package doc: "replicated without SP").
		{"full + SP (dcpsim)", true, job.RecomputeFull, func(h, a, s, t float64) float64 { return 2 / t }},
		// The empty Recompute means none.
		{"TP baseline, Recompute \"\"", false, "", func(h, a, s, t float64) float64 { return 10 + 24/t + 5*a*s/(h*t) }},
	}
	for _, sh := range shapes {
		mod := gptModel(t, sh.h, sh.a, 4, 51200, sh.s)
		h, a, s, tp := float64(sh.h), float64(sh.a), float64(sh.s), float64(sh.tp)
		for _, r := range rows {
			m := mustNew(t, gptJob(mod, sh.tp, 1, 1, r.sp, r.rc), compute.MegatronSoftmax)
			for l := range mod.Layers {
				tok, sc := m.LayerBytes(l, m.Job().Parallel.RecomputeMode())
				got := (tok + sc*s) / h
				want := r.want(h, a, s, tp)
				if !relClose(got, want, 1e-12) {
					t.Errorf("h=%d a=%d s=%d t=%d %s layer %d: (perToken %g + perScore %g · s)/h = %.10g, Table 2 gives %.10g",
						sh.h, sh.a, sh.s, sh.tp, r.name, l, tok, sc, got, want)
				}
			}
		}
		// No parallelism: t = 1, where SP changes nothing.
		for _, sp := range []bool{false, true} {
			m := mustNew(t, gptJob(mod, 1, 1, 1, sp, job.RecomputeNone), compute.MegatronSoftmax)
			tok, sc := m.LayerBytes(0, job.RecomputeNone)
			got, want := (tok+sc*s)/h, 34+5*a*s/h
			if !relClose(got, want, 1e-12) {
				t.Errorf("h=%d a=%d s=%d no parallelism (sp=%v): %.10g, Table 2 gives 34 + 5as/h = %.10g", sh.h, sh.a, sh.s, sp, got, want)
			}
		}
		// The score term alone is 5a/t per score (softmax output 2, dropout
		// mask 1, dropout output 2 per head), and nothing per score under
		// selective or full recompute.
		m := mustNew(t, gptJob(mod, sh.tp, 1, 1, false, job.RecomputeNone), compute.MegatronSoftmax)
		if _, sc := m.LayerBytes(0, job.RecomputeNone); !relClose(sc, 5*a/tp, 1e-12) {
			t.Errorf("h=%d a=%d t=%d: perScore = %g, want 5a/t = %g", sh.h, sh.a, sh.tp, sc, 5*a/tp)
		}
		for _, rc := range []job.RecomputeGranularity{job.RecomputeSelective, job.RecomputeFull} {
			if _, sc := m.LayerBytes(0, rc); sc != 0 {
				t.Errorf("h=%d a=%d t=%d %s: perScore = %g, want 0", sh.h, sh.a, sh.tp, rc, sc)
			}
		}
	}
}

// TestLayerBytesFlashGPT checks the same GPT layer under FlashAttention, which
// trains without dropout and keeps a 4-byte log-sum-exp per head instead of
// the scores: per token 8h replicated (two norm inputs, QKV and FFN inputs),
// 24h/t split (Q, K, V, output-projection input 8h; GELU 16h) and 4a/t.
func TestLayerBytesFlashGPT(t *testing.T) {
	for _, sh := range []struct{ h, a, tp int }{{6144, 64, 8}, {1024, 16, 2}, {2048, 16, 1}} {
		mod := gptModel(t, sh.h, sh.a, 2, 51200, 2048)
		h, a, tp := float64(sh.h), float64(sh.a), float64(sh.tp)
		cases := []struct {
			sp   bool
			rc   job.RecomputeGranularity
			want float64
		}{
			{false, job.RecomputeNone, 8*h + 24*h/tp + 4*a/tp},
			{true, job.RecomputeNone, 32*h/tp + 4*a/tp},
			{false, job.RecomputeSelective, 8*h + 24*h/tp},
			{true, job.RecomputeSelective, 32 * h / tp},
			{false, job.RecomputeFull, 2 * h},
			{true, job.RecomputeFull, 2 * h / tp},
		}
		for _, c := range cases {
			m := mustNew(t, gptJob(mod, sh.tp, 1, 1, c.sp, c.rc), compute.FlashAttention)
			tok, sc := m.LayerBytes(1, c.rc)
			if !relClose(tok, c.want, 1e-12) || sc != 0 {
				t.Errorf("flash h=%d a=%d t=%d sp=%v %s: LayerBytes = (%g, %g), want (%g, 0)",
					sh.h, sh.a, sh.tp, c.sp, c.rc, tok, sc, c.want)
			}
		}
	}
}

// tinyMoE is a 2-layer model small enough to count by hand: layer 0 dense
// SwiGLU, layer 1 MoE (4 routed experts top-2, 1 shared), MHA, untied head.
func tinyMoE() job.Model {
	return job.Model{
		Name: "tiny-moe", Layers: 2, DenseLayers: 1, Hidden: 8, Attention: job.MHA,
		QueryHeads: 2, KVHeads: 2, HeadDimQK: 4, HeadDimV: 4,
		DenseFFN: 16, RoutedExperts: 4, TopK: 2, SharedExperts: 1,
		ExpertFFN: 6, SharedExpertFFN: 6, Vocab: 32, MaxContextTokens: 64,
	}
}

func tinyMoEJob(sync job.GradSync) job.Job {
	return job.Job{
		Model:         tinyMoE(),
		Cluster:       job.Cluster{GPU: "H100-SXM", GPUs: 16, GPUsPerNode: 8},
		Parallel:      job.Parallel{TP: 2, PP: 2, VPP: 1, EP: 2, BudgetTokens: 64, GradSync: sync},
		ContextTokens: 64,
	}
}

// TestStatesByHand counts tinyMoE's parameters by hand. Per layer: attention
// q, k, v, o 4·(8·2·4) = 256, two norms 2·8 = 16. Layer 0: dense SwiGLU
// 3·8·16 = 384, total 656. Layer 1: router 8·4 = 32, routed experts
// 4·3·8·6 = 576, shared 3·8·6 = 144, total 1024 of which 576 expert.
// Embedding 32·8 = 256, output norm + head 8 + 256 = 264. tp2 pp2 ep2 on 16
// GPUs: G = 16/(2·2) = 4.
//
//	stage 0: dense (656 + 256)/2 = 456, expert 0; weights 912, grads 1824,
//	         optimizer 12·456/4 = 1368 (all-reduce 12·456 = 5472)
//	stage 1: dense (448 + 264)/2 = 356, expert 576/(2·2) = 144; weights
//	         1000, grads 2000, optimizer 12·(356/4 + 144·2/4) = 1932
//	         (all-reduce 12·500 = 6000)
func TestStatesByHand(t *testing.T) {
	j := tinyMoEJob("")
	if err := j.Validate(); err != nil {
		t.Fatalf("tiny job invalid: %v", err)
	}
	mod := j.Model
	if got := []float64{mod.LayerParams(0), mod.LayerParams(1), mod.LayerExpertParams(1), mod.EmbeddingParams(), mod.OutputParams()}; got[0] != 656 || got[1] != 1024 || got[2] != 576 || got[3] != 256 || got[4] != 264 {
		t.Fatalf("tiny model's parameter counts = %v, hand count [656 1024 576 256 264]", got)
	}
	want := map[job.GradSync][]States{
		job.GradReduceScatter: {
			{DenseParams: 456, ExpertParams: 0, WeightBytes: 912, GradientBytes: 1824, OptimizerBytes: 1368},
			{DenseParams: 356, ExpertParams: 144, WeightBytes: 1000, GradientBytes: 2000, OptimizerBytes: 1932},
		},
		job.GradAllReduce: {
			{DenseParams: 456, ExpertParams: 0, WeightBytes: 912, GradientBytes: 1824, OptimizerBytes: 5472},
			{DenseParams: 356, ExpertParams: 144, WeightBytes: 1000, GradientBytes: 2000, OptimizerBytes: 6000},
		},
	}
	for _, sync := range []job.GradSync{"", job.GradReduceScatter, job.GradAllReduce} {
		m := mustNew(t, tinyMoEJob(sync), compute.FlashAttention)
		ws := want[tinyMoEJob(sync).Parallel.GradSyncMode()]
		if m.Stages() != 2 {
			t.Fatalf("%q: Stages() = %d, want 2", sync, m.Stages())
		}
		for s, w := range ws {
			if got := m.States(s); got != w {
				t.Errorf("grad sync %q stage %d: States = %+v, hand count %+v", sync, s, got, w)
			}
			if got, w := m.States(s).Bytes(), w.WeightBytes+w.GradientBytes+w.OptimizerBytes; got != w {
				t.Errorf("grad sync %q stage %d: Bytes() = %g, want %g", sync, s, got, w)
			}
		}
		// Stage 1 holds the most in both modes.
		if b, s := m.MaxStates(); s != 1 || b != ws[1].WeightBytes+ws[1].GradientBytes+ws[1].OptimizerBytes {
			t.Errorf("grad sync %q: MaxStates = (%g, %d), want (%g, 1)", sync, b, s, ws[1].Bytes())
		}
	}
}

// TestStatesFromParams checks States against job.Model's parameter methods for
// presets and GPT models over several layouts: embedding on stage 0, output on
// the last stage, dense over tp, routed experts over tp·ep, 2 + 4 bytes per
// parameter, and 12/G (dense) or 12·ep/G (experts) of optimizer per parameter
// under reduce-scatter, 12 under all-reduce.
func TestStatesFromParams(t *testing.T) {
	type layout struct {
		model          string // preset name, or "" for a GPT
		tp, pp, ep     int
		gpus           int
		first, lastLay int
	}
	gpt := gptModel(t, 4096, 32, 32, 51200, 4096)
	layouts := []layout{
		{job.ModelDeepSeekV2Lite, 1, 3, 8, 3 * 64, 0, 0},
		{job.ModelDeepSeekV2Lite, 2, 1, 4, 2 * 16, 0, 0},
		{job.ModelQwen3MoE30B, 4, 4, 8, 4 * 4 * 16, 0, 0},
		{job.ModelDeepSeekV3, 1, 16, 64, 2048, 1, 0}, // 1 + 4·15
		{job.ModelDeepSeekV3, 1, 8, 32, 2048, 5, 0},  // 5 + 8·7
		{job.ModelLlama3With70B, 8, 4, 1, 8 * 4 * 4, 0, 0},
		{"", 8, 4, 1, 8 * 4 * 2, 0, 0},
		{"", 2, 1, 1, 2, 0, 0},
	}
	for _, ly := range layouts {
		mod := gpt
		if ly.model != "" {
			var err error
			if mod, err = job.LookupModel(ly.model); err != nil {
				t.Fatal(err)
			}
		}
		for _, sync := range []job.GradSync{job.GradReduceScatter, job.GradAllReduce} {
			j := job.Job{
				Model:   mod,
				Cluster: job.Cluster{GPU: "H100-SXM", GPUs: ly.gpus, GPUsPerNode: 8},
				Parallel: job.Parallel{TP: ly.tp, PP: ly.pp, VPP: 1, EP: ly.ep, BudgetTokens: 4096,
					FirstStageLayers: ly.first, LastStageLayers: ly.lastLay, GradSync: sync},
				ContextTokens: 4096,
			}
			m := mustNew(t, j, compute.FlashAttention)
			stages, err := j.StageLayers()
			if err != nil {
				t.Fatal(err)
			}
			tp, ep, g := float64(ly.tp), float64(ly.ep), float64(ly.gpus/(ly.tp*ly.pp))
			l0 := 0
			for s, n := range stages {
				var dense, expert float64
				for l := l0; l < l0+n; l++ {
					expert += mod.LayerExpertParams(l)
					dense += mod.LayerParams(l) - mod.LayerExpertParams(l)
				}
				l0 += n
				if s == 0 {
					dense += mod.EmbeddingParams()
				}
				if s == len(stages)-1 {
					dense += mod.OutputParams()
				}
				dense /= tp
				expert /= tp * ep
				opt := 12 * (dense + expert)
				if sync == job.GradReduceScatter {
					opt = 12 * (dense/g + expert*ep/g)
				}
				got := m.States(s)
				want := States{DenseParams: dense, ExpertParams: expert,
					WeightBytes: 2 * (dense + expert), GradientBytes: 4 * (dense + expert), OptimizerBytes: opt}
				if !relClose(got.DenseParams, want.DenseParams, 1e-12) || !relClose(got.ExpertParams, want.ExpertParams, 1e-12) ||
					!relClose(got.WeightBytes, want.WeightBytes, 1e-12) || !relClose(got.GradientBytes, want.GradientBytes, 1e-12) ||
					!relClose(got.OptimizerBytes, want.OptimizerBytes, 1e-12) {
					t.Errorf("%s %s stage %d/%d: States = %+v, want %+v", mod.Name, j, s, len(stages), got, want)
				}
			}
			if l0 != mod.Layers {
				t.Errorf("%s: stages hold %d layers, want %d", mod.Name, l0, mod.Layers)
			}
		}
	}
}

// TestLayerBytesMoEByHand counts tinyMoE's activations per token by hand at
// tp2 without SP under FlashAttention (no dropout):
//
//	attention: norm input + QKV input 2·8 + 2·8 = 32 (replicated);
//	           Q, K, V, output 2·(2+2)·4 + 2·2·4 + 2·2·4 = 64, /2 = 32;
//	           log-sum-exp 4·2/2 = 4
//	layer 0 FFN: 32 replicated + SwiGLU 6·16/2 = 48      -> 148
//	layer 1 FFN: 32 + router 4·4 + k·4h 2·32 = 112 replicated,
//	             (2·6·6 + 6·6)/2 = 54 split              -> 234
//
// With SP the replicated parts halve: 148 -> 16+32+4+16+48 = 116, 234 ->
// 16+32+4+56+54 = 162.
func TestLayerBytesMoEByHand(t *testing.T) {
	cases := []struct {
		sp     bool
		rc     job.RecomputeGranularity
		l0, l1 float64
	}{
		{false, job.RecomputeNone, 148, 234},
		{true, job.RecomputeNone, 116, 162},
		{false, job.RecomputeSelective, 144, 230},
		{true, job.RecomputeSelective, 112, 158},
		{false, job.RecomputeFull, 16, 16},
		{true, job.RecomputeFull, 8, 8},
	}
	for _, c := range cases {
		j := tinyMoEJob("")
		j.Parallel.SequenceParallel = c.sp
		j.Parallel.Recompute = c.rc
		m := mustNew(t, j, compute.FlashAttention)
		for l, want := range []float64{c.l0, c.l1} {
			if tok, sc := m.LayerBytes(l, c.rc); tok != want || sc != 0 {
				t.Errorf("tiny MoE sp=%v %s layer %d: LayerBytes = (%g, %g), hand count (%g, 0)", c.sp, c.rc, l, tok, sc, want)
			}
		}
	}
}

// presetLayouts returns, for a preset, the (pp, vpp) pairs to try: pp = 1 and
// the smallest pp in [2, 8] dividing the layers, with vpp 2 where each stage
// has an even number of layers.
func presetLayouts(mod job.Model) [][2]int {
	out := [][2]int{{1, 1}}
	for pp := 2; pp <= 8; pp++ {
		if mod.Layers%pp == 0 {
			out = append(out, [2]int{pp, 1})
			if (mod.Layers/pp)%2 == 0 {
				out = append(out, [2]int{pp, 2})
			}
			break
		}
	}
	return out
}

// TestRecomputeOrderingPresets checks, for every preset and every chunk, that
// full < selective <= none per token; that for the softmax kernel selective
// drops exactly the score term (5·n_h/t per score and layer) and nothing per
// token, and for FlashAttention exactly the log-sum-exp (4·n_h/t per token and
// layer) with no score term at all; and the backward transients.
func TestRecomputeOrderingPresets(t *testing.T) {
	names := job.ModelNames()
	if len(names) == 0 {
		t.Fatal("job.ModelNames() is empty")
	}
	for _, name := range names {
		mod, err := job.LookupModel(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ppv := range presetLayouts(mod) {
			for _, tp := range []int{1, 2, 8} {
				for _, sp := range []bool{false, true} {
					for _, k := range []compute.AttentionKernel{compute.FlashAttention, compute.MegatronSoftmax} {
						build := func(rc job.RecomputeGranularity) *Model {
							return mustNew(t, gptJob(mod, tp, ppv[0], ppv[1], sp, rc), k)
						}
						none, sel, full := build(job.RecomputeNone), build(job.RecomputeSelective), build(job.RecomputeFull)
						nh, ttp := float64(mod.QueryHeads), float64(tp)
						stages, _ := none.Job().StageLayers()
						for s := range none.Stages() {
							v := ppv[1]
							for c := range v {
								cn, cs, cf := none.Chunk(s, c), sel.Chunk(s, c), full.Chunk(s, c)
								layers := float64(stages[s] / v) // stages divide evenly here
								tag := func() string {
									return name + " " + none.Job().String() + " sp=" + map[bool]string{false: "false", true: "true"}[sp] + " " + k.String()
								}
								if !(cf.PerToken < cs.PerToken && cs.PerToken <= cn.PerToken) {
									t.Errorf("%s chunk (%d,%d): per token full %g, selective %g, none %g: want full < selective <= none",
										tag(), s, c, cf.PerToken, cs.PerToken, cn.PerToken)
								}
								if cf.PerScore != 0 || cs.PerScore != 0 {
									t.Errorf("%s chunk (%d,%d): perScore full %g, selective %g, want 0", tag(), s, c, cf.PerScore, cs.PerScore)
								}
								switch k {
								case compute.MegatronSoftmax:
									if cs.PerToken != cn.PerToken {
										t.Errorf("%s chunk (%d,%d): selective changes per token %g -> %g, want only the score term removed",
											tag(), s, c, cn.PerToken, cs.PerToken)
									}
									if want := layers * 5 * nh / ttp; !relClose(cn.PerScore, want, 1e-12) {
										t.Errorf("%s chunk (%d,%d): none perScore %g, want layers·5·n_h/t = %g", tag(), s, c, cn.PerScore, want)
									}
									// Selective's backward rebuilds one layer's scores.
									if want := 5 * nh / ttp; !relClose(cs.BackwardPerScore, want, 1e-12) || cs.BackwardPerToken != 0 {
										t.Errorf("%s chunk (%d,%d): selective backward (%g, %g), want (0, %g)",
											tag(), s, c, cs.BackwardPerToken, cs.BackwardPerScore, want)
									}
								case compute.FlashAttention:
									if cn.PerScore != 0 {
										t.Errorf("%s chunk (%d,%d): FlashAttention perScore %g, want 0", tag(), s, c, cn.PerScore)
									}
									if want := layers * 4 * nh / ttp; !relClose(cn.PerToken-cs.PerToken, want, 1e-9) {
										t.Errorf("%s chunk (%d,%d): selective saves %g per token, want layers·4·n_h/t = %g",
											tag(), s, c, cn.PerToken-cs.PerToken, want)
									}
									if want := 4 * nh / ttp; !relClose(cs.BackwardPerToken, want, 1e-12) || cs.BackwardPerScore != 0 {
										t.Errorf("%s chunk (%d,%d): selective backward (%g, %g), want (%g, 0)",
											tag(), s, c, cs.BackwardPerToken, cs.BackwardPerScore, want)
									}
								}
								// Full's backward rebuilds the biggest whole layer of the chunk.
								var maxTok, maxSc float64
								lo := none.first[s] + c*stages[s]/v
								for l := lo; l < lo+stages[s]/v; l++ {
									tok, sc := none.LayerBytes(l, job.RecomputeNone)
									maxTok, maxSc = max(maxTok, tok), max(maxSc, sc)
								}
								if cf.BackwardPerToken != maxTok || cf.BackwardPerScore != maxSc {
									t.Errorf("%s chunk (%d,%d): full backward (%g, %g), want the largest layer (%g, %g)",
										tag(), s, c, cf.BackwardPerToken, cf.BackwardPerScore, maxTok, maxSc)
								}
								if cn.BackwardPerToken != 0 || cn.BackwardPerScore != 0 {
									t.Errorf("%s chunk (%d,%d): no recompute but backward transient (%g, %g)",
										tag(), s, c, cn.BackwardPerToken, cn.BackwardPerScore)
								}
								// Full keeps 2h per layer, over t only with SP, plus
								// the embedding and output extras.
								rep := 2 * float64(mod.Hidden)
								if sp {
									rep /= ttp
								}
								extras := cn.PerToken - sumLayers(none, s, c, job.RecomputeNone)
								if want := layers*rep + extras; !relClose(cf.PerToken, want, 1e-12) {
									t.Errorf("%s chunk (%d,%d): full per token %g, want layers·2h%s + extras %g = %g",
										tag(), s, c, cf.PerToken, map[bool]string{false: "", true: "/t"}[sp], extras, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// sumLayers is Σ LayerBytes(l, rc).perToken over chunk c of stage s.
func sumLayers(m *Model, s, c int, rc job.RecomputeGranularity) float64 {
	v := max(m.Job().Parallel.VPP, 1)
	n := m.layers[s]
	var sum float64
	for l := m.first[s] + c*n/v; l < m.first[s]+(c+1)*n/v; l++ {
		tok, _ := m.LayerBytes(l, rc)
		sum += tok
	}
	return sum
}

// TestChunkSums checks that the chunks of all stages together hold every
// layer once plus the embedding (8 bytes of token ids, the dropout mask h, or
// h/t under SP, with dropout) and the output layer (4h/t + 4V/t) once, and
// that a chunk that is neither first nor last holds only its layers.
func TestChunkSums(t *testing.T) {
	type cfg struct {
		mod     job.Model
		pp, vpp int
		first   int // FirstStageLayers
	}
	gpt := gptModel(t, 1024, 16, 16, 51200, 4096)
	v2l, err := job.LookupModel(job.ModelDeepSeekV2Lite)
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []cfg
	for _, pp := range []int{1, 2, 4} {
		for _, vpp := range []int{1, 2} {
			cfgs = append(cfgs, cfg{gpt, pp, vpp, 0})
		}
	}
	cfgs = append(cfgs,
		cfg{gptModel(t, 1024, 16, 10, 51200, 4096), 2, 2, 0}, // 5 layers per stage over 2 chunks: 2 + 3
		cfg{gptModel(t, 1024, 16, 10, 51200, 4096), 2, 2, 4}, // stages 4 and 6
		cfg{v2l, 1, 1, 0}, cfg{v2l, 3, 1, 0}, cfg{v2l, 3, 3, 0}, // MoE with a dense first layer
	)
	for _, c := range cfgs {
		for _, tp := range []int{1, 2, 8} {
			for _, sp := range []bool{false, true} {
				for _, rc := range []job.RecomputeGranularity{job.RecomputeNone, job.RecomputeSelective, job.RecomputeFull} {
					for _, k := range []compute.AttentionKernel{compute.FlashAttention, compute.MegatronSoftmax} {
						j := gptJob(c.mod, tp, c.pp, c.vpp, sp, rc)
						j.Parallel.FirstStageLayers = c.first
						m := mustNew(t, j, k)
						if m.Stages() != c.pp {
							t.Fatalf("%s: Stages() = %d, want %d", j, m.Stages(), c.pp)
						}
						h, ttp, vocab := float64(c.mod.Hidden), float64(tp), float64(c.mod.Vocab)
						var layerTok, layerSc float64
						for l := range c.mod.Layers {
							tok, sc := m.LayerBytes(l, rc)
							layerTok += tok
							layerSc += sc
						}
						drop := 0.0
						if k == compute.MegatronSoftmax {
							drop = h
							if sp {
								drop = h / ttp
							}
						}
						wantTok := layerTok + 8 + drop + 4*h/ttp + 4*vocab/ttp
						var gotTok, gotSc float64
						for s := range m.Stages() {
							for ci := range c.vpp {
								ch := m.Chunk(s, ci)
								gotTok += ch.PerToken
								gotSc += ch.PerScore
								firstChunk := s == 0 && ci == 0
								lastChunk := s == c.pp-1 && ci == c.vpp-1
								if !firstChunk && !lastChunk {
									if own := sumLayers(m, s, ci, rc); ch.PerToken != own {
										t.Errorf("%s %s sp=%v %s chunk (%d,%d): per token %g, its layers alone %g",
											j, k, sp, rc, s, ci, ch.PerToken, own)
									}
								}
							}
						}
						if !relClose(gotTok, wantTok, 1e-12) || !relClose(gotSc, layerSc, 1e-12) {
							t.Errorf("%s %s sp=%v %s: Σ chunks = (%g, %g) per (token, score), want Σ layers + 8 + %g + 4h/t + 4V/t = (%g, %g)",
								j, k, sp, rc, gotTok, gotSc, drop, wantTok, layerSc)
						}
						// GPT's layers are uniform: a middle chunk of n layers holds n·LayerBytes.
						if c.mod.Name == gpt.Name && c.pp*c.vpp >= 3 {
							s, ci := 0, 1
							if c.vpp == 1 {
								s, ci = 1, 0
							}
							tok, _ := m.LayerBytes(0, rc)
							n := float64(c.mod.Layers / (c.pp * c.vpp))
							if c.first == 0 && c.mod.Layers%(c.pp*c.vpp) == 0 {
								if got := m.Chunk(s, ci).PerToken; !relClose(got, n*tok, 1e-12) {
									t.Errorf("%s %s sp=%v %s chunk (%d,%d): per token %g, want %g layers × %g = %g",
										j, k, sp, rc, s, ci, got, n, tok, n*tok)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestNewErrors checks that New refuses a stage with fewer layers than vpp
// chunks, and layers that do not split over the stages, and accepts the edge.
func TestNewErrors(t *testing.T) {
	cases := []struct {
		name         string
		layers       int
		pp, vpp, fst int
		wantErr      bool
	}{
		{"2 layers per stage, vpp 3", 4, 2, 3, 0, true},
		{"1 layer per stage, vpp 2", 4, 4, 2, 0, true},
		{"first stage 1 layer, vpp 2", 5, 2, 2, 1, true},
		{"3 layers per stage, vpp 4", 9, 3, 4, 0, true},
		{"layers do not split over pp", 5, 2, 1, 0, true},
		{"pp above layers", 2, 4, 1, 0, true},
		{"pp 0", 4, 0, 1, 0, true},
		{"vpp equals stage layers", 4, 2, 2, 0, false},
		{"1 layer per chunk", 12, 4, 3, 0, false},
		{"vpp 0 read as 1", 4, 2, 0, 0, false},
	}
	for _, c := range cases {
		mod := gptModel(t, 256, 4, c.layers, 1024, 1024)
		j := gptJob(mod, 1, max(c.pp, 1), c.vpp, false, job.RecomputeNone)
		j.Parallel.PP = c.pp
		j.Parallel.FirstStageLayers = c.fst
		m, err := New(j, compute.FlashAttention)
		if (err != nil) != c.wantErr {
			t.Errorf("%s (L=%d pp=%d vpp=%d first=%d): New error = %v, want error %v", c.name, c.layers, c.pp, c.vpp, c.fst, err, c.wantErr)
			continue
		}
		if err == nil && m.Stages() != c.pp {
			t.Errorf("%s: Stages() = %d, want %d", c.name, m.Stages(), c.pp)
		}
		if err != nil && m != nil {
			t.Errorf("%s: New returned a model with its error", c.name)
		}
	}
}

// TestChunkByHand sums tinyMoE with a wide dense FFN (f = 160, so layer 0
// keeps more than the MoE layer 1) on one stage at tp2 without SP, under
// FlashAttention. Layer 0 keeps 32 + 32 + 4 + 32 + 6·160/2 = 580 per token,
// layer 1 234 (TestLayerBytesMoEByHand), the embedding 8 (token ids, no
// dropout) and the output layer 4·8/2 + 4·32/2 = 80.
//
//	none:      580 + 234 + 88 = 902, no backward transient
//	selective: 576 + 230 + 88 = 894, backward rebuilds one LSE, 4
//	full:      2·(2·8) + 88 = 120, backward rebuilds the largest layer, 580
func TestChunkByHand(t *testing.T) {
	cases := []struct {
		rc            job.RecomputeGranularity
		kept, backTok float64
	}{
		{job.RecomputeNone, 902, 0},
		{job.RecomputeSelective, 894, 4},
		{job.RecomputeFull, 120, 580},
	}
	for _, c := range cases {
		j := tinyMoEJob("")
		j.Model.DenseFFN = 160
		j.Cluster.GPUs = 4
		j.Parallel.PP = 1
		j.Parallel.Recompute = c.rc
		if err := j.Validate(); err != nil {
			t.Fatalf("%s: %v", c.rc, err)
		}
		ch := mustNew(t, j, compute.FlashAttention).Chunk(0, 0)
		want := Chunk{PerToken: c.kept, BackwardPerToken: c.backTok}
		if ch != want {
			t.Errorf("%s: Chunk(0, 0) = %+v, hand count %+v", c.rc, ch, want)
		}
		if got := ch.Kept(100, 1e4); got != 100*c.kept {
			t.Errorf("%s: Kept(100 tokens, 1e4 scores) = %g, want %g", c.rc, got, 100*c.kept)
		}
		if got := ch.Backward(100, 1e4); got != 100*c.backTok {
			t.Errorf("%s: Backward(100 tokens, 1e4 scores) = %g, want %g", c.rc, got, 100*c.backTok)
		}
	}
}

// TestActivationBytesCostmodelTable: research/costmodel.md §7.2's worked table
// (BF16, FlashAttention, no dropout, no TP, nothing recomputed): the per-layer
// KiB of an MoE model's MoE layer (its last) and the whole model's MiB per
// token (the layers alone), to the table's printed precision (±1%); and single
// layers pinned to the byte, derived by hand from the same terms.
func TestActivationBytesCostmodelTable(t *testing.T) {
	const kib, mib = 1024.0, 1024.0 * 1024
	layerBytes := func(name string, layer int) (float64, float64) {
		t.Helper()
		m, err := job.LookupModel(name)
		if err != nil {
			t.Fatal(err)
		}
		j := job.Job{Model: m, Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 1}}
		mm, err := New(j, compute.FlashAttention)
		if err != nil {
			t.Fatal(err)
		}
		one, _ := mm.LayerBytes(layer, job.RecomputeNone)
		var whole float64
		for l := range m.Layers {
			b, _ := mm.LayerBytes(l, job.RecomputeNone)
			whole += b
		}
		return one, whole
	}
	for _, tt := range []struct {
		name               string
		layerKiB, wholeMiB float64
	}{
		{job.ModelLlama3With8B, 136.1, 4.25},
		{job.ModelLlama3With70B, 268.2, 20.96},
		{job.ModelQwen3MoE30B, 134.6, 6.31},
		{job.ModelQwen3MoE235B, 266.8, 24.49},
		{job.ModelHy3, 278.0, 21.59},
		{job.ModelDeepSeekV3, 557.6, 32.56},
	} {
		m, _ := job.LookupModel(tt.name)
		one, whole := layerBytes(tt.name, m.Layers-1)
		if math.Abs(one/kib/tt.layerKiB-1) > 0.01 || math.Abs(whole/mib/tt.wholeMiB-1) > 0.01 {
			t.Errorf("%s: layer %.2f KiB (§7.2 %.1f), whole model %.3f MiB (§7.2 %.2f)", tt.name, one/kib, tt.layerKiB, whole/mib, tt.wholeMiB)
		}
	}
	for _, c := range []struct {
		name  string
		layer int
		want  float64
	}{
		// attention 2·4096·2 + 2·32·128 + 2·8·128·2 + 2·32·128 + 4·32 = 36992,
		// SwiGLU MLP 2·4096·2 + 6·14336 = 102400.
		{job.ModelLlama3With8B, 0, 36992 + 102400},
		// attention 4·7168 + (4·1536 + 2·576 + 2·512) + (4·128·192 + 2·128·128)
		// + 2·128·128 + 4·128 = 201344; dense FFN 4·7168 + 6·18432 = 139264.
		{job.ModelDeepSeekV3, 0, 201344 + 139264},
		// MoE FFN 4·7168 + 4·256 + 8·(2·7168 + 6·2048 + 2·7168) + 6·2048 = 369664.
		{job.ModelDeepSeekV3, 3, 201344 + 369664},
		// no q_lora: 4·2048 + (2·576 + 2·512) + (4·16·192 + 2·16·128) + 2·16·128 + 4·16
		// = 30912; MoE FFN 4·2048 + 4·64 + 6·(2·2048 + 6·1408 + 2·2048) + 2·6·1408 = 125184.
		{job.ModelDeepSeekV2Lite, 1, 30912 + 125184},
	} {
		if got, _ := layerBytes(c.name, c.layer); got != c.want {
			t.Errorf("%s layer %d: %.0f bytes/token, want %.0f", c.name, c.layer, got, c.want)
		}
	}
}
