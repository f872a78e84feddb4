package job

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestGPTParamsMatchNarayananEq2: Megatron-LM's GPT as GPT builds it has the
// parameters of Narayanan et al. SC'21 Eq. 2, P = 12·l·h²·(1 + 13/(12h) +
// (V + s)/(12·l·h)), within 0.05% (the LayerNorm and bias terms left out), for
// every model of their Table 1, whose Params column (billions, one decimal)
// it reproduces to its rounding.
func TestGPTParamsMatchNarayananEq2(t *testing.T) {
	for _, r := range []struct {
		heads, hidden, layers int
		billions              float64
	}{
		{24, 2304, 24, 1.7}, {32, 3072, 30, 3.6}, {32, 4096, 36, 7.5}, {48, 6144, 40, 18.4},
		{64, 8192, 48, 39.1}, {80, 10240, 60, 76.1}, {96, 12288, 80, 145.6}, {128, 16384, 96, 310.1},
		{128, 20480, 105, 529.6}, {160, 25600, 128, 1008.0},
	} {
		m, err := GPT("gpt", r.hidden, 4*r.hidden, r.heads, r.layers, 51200, 2048)
		if err != nil {
			t.Fatal(err)
		}
		l, h := float64(r.layers), float64(r.hidden)
		eq2 := 12 * l * h * h * (1 + 13/(12*h) + (51200+2048)/(12*l*h))
		if got := m.TotalParams(); !near(got, eq2, 0.05) {
			t.Errorf("h %d: TotalParams %.6g, Eq. 2 %.6g", r.hidden, got, eq2)
		}
		if got := m.TotalParams() / 1e9; math.Abs(got-r.billions) > 0.06 {
			t.Errorf("h %d: %.2fB parameters, Table 1 says %.1fB", r.hidden, got, r.billions)
		}
		if m.TotalParams() != m.ActiveParams() {
			t.Errorf("h %d: a dense model's active parameters differ from its total", r.hidden)
		}
	}
}

// TestGELUAndLearnedPositions: GELU has two h×f matrices (SwiGLU three) and
// keeps 4·f activation bytes per token (2·f with activation recompute);
// learned positions add MaxContextTokens·h embedding parameters.
func TestGELUAndLearnedPositions(t *testing.T) {
	m, err := GPT("g", 1024, 4096, 16, 2, 1000, 512)
	if err != nil {
		t.Fatal(err)
	}
	s := m
	s.Activation, s.LearnedPositions = SwiGLU, false
	if got, want := m.LayerParams(0)-s.LayerParams(0), -1024.0*4096; got != want {
		t.Errorf("GELU - SwiGLU layer params = %v, want %v", got, want)
	}
	if got, want := m.EmbeddingParams()-s.EmbeddingParams(), 512.0*1024; got != want {
		t.Errorf("learned positions add %v embedding params, want %v", got, want)
	}
	if got, want := m.LinearTrainFLOPsPerToken(), 6*(2*(4*1024.0*1024+2*1024*4096)+1000*1024); got != want {
		t.Errorf("LinearTrainFLOPsPerToken = %v, want %v", got, want)
	}
}

func TestGPTAndParallelRejects(t *testing.T) {
	if _, err := GPT("g", 1000, 4000, 16, 2, 1000, 512); err == nil || !strings.Contains(err.Error(), "model.query_heads = 16: must divide model.hidden (1000)") {
		t.Errorf("GPT with hidden %% heads != 0: %v", err)
	}
	base, err := GPT("g", 1024, 4096, 16, 2, 1000, 512)
	if err != nil {
		t.Fatal(err)
	}
	moe := mustModel(t, ModelQwen3MoE30B)
	moe.MoELayerStep = 49 // Qwen3-30B-A3B has 48 layers, all MoE
	mla := mustModel(t, ModelDeepSeekV3)
	mla.LearnedPositions = true
	bad := base
	bad.Activation = "relu"
	for _, tc := range []struct {
		m    Model
		want string
	}{
		{moe, `model.moe_layer_step = 49: must be at most the 48 layers after dense_layers`},
		{mla, "model.learned_positions = true: must be false for MLA"},
		{bad, `model.activation = "relu": must be one of ["swiglu" "geglu" "gelu" "squared-relu"]`},
	} {
		if err := tc.m.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate = %v, want %q", err, tc.want)
		}
	}
	j := Job{Model: base, Cluster: Cluster{GPU: "A100-80G", GPUs: 8, GPUsPerNode: 8},
		Parallel: Parallel{TP: 8, PP: 1, VPP: 1, EP: 1, BudgetTokens: 512}, ContextTokens: 512}
	if err := j.Validate(); err != nil {
		t.Fatalf("valid job: %v", err)
	}
	if j.Parallel.RecomputeMode() != RecomputeNone || j.Parallel.GradSyncMode() != GradReduceScatter {
		t.Errorf("defaults: recompute %q, grad sync %q", j.Parallel.RecomputeMode(), j.Parallel.GradSyncMode())
	}
	j.Parallel.Recompute, j.Parallel.GradSync = "some", "ring"
	fields, _ := FieldErrors(j.Validate())
	var keys []string
	for _, f := range fields {
		keys = append(keys, f.Key)
	}
	if strings.Join(keys, ",") != "parallel.recompute,parallel.grad_sync" {
		t.Errorf("bad recompute and grad_sync: errors on %q", keys)
	}
	var fe *FieldError
	if !errors.As(j.Validate(), &fe) || !strings.Contains(fe.Rule, `"none", "selective" or "full"`) {
		t.Errorf("recompute rule: %v", fe)
	}
}
