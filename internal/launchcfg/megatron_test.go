package launchcfg

import (
	"errors"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/job"
)

// base is a small valid Megatron-LM launch: a 4-layer GPT on 16 GPUs.
const base = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 4096 --micro-batch-size 1 --vocab-size 32000 --bf16"

func importLine(t *testing.T, extra string, o Options) (*Import, error) {
	t.Helper()
	if o.GPU == "" {
		o.GPU = "H100-SXM"
	}
	if o.GPUs == 0 {
		o.GPUs = 16
	}
	return Megatron(strings.Fields(base+" "+extra), o)
}

// TestMegatronErrors: every bad argument is an error that names it and
// says what is allowed, all of an import's problems at once, each bad
// input (badinput).
func TestMegatronErrors(t *testing.T) {
	for _, c := range []struct {
		name, args string
		want       []string
	}{
		{"unknown", "--frobnicate 3", []string{"--frobnicate: unknown argument", "--ignore-unknown"}},
		{"underscores", "--num_query_groups 8", []string{"--num_query_groups: unknown argument", "did you mean --num-query-groups?"}},
		{"refused", "--cpu-offloading-num-layers 4", []string{"--cpu-offloading-num-layers 4: refused: activation offloading to the host is not modelled"}},
		{"refused family", "--mamba-num-heads 8", []string{"--mamba-num-heads 8: refused: Mamba"}},
		{"not an integer", "--tensor-model-parallel-size two", []string{"--tensor-model-parallel-size two: must be an integer in [1, 64]"}},
		{"missing value", "--pipeline-model-parallel-size", []string{"--pipeline-model-parallel-size: needs a value"}},
		{"flag with a value", "--sequence-parallel=yes", []string{"--sequence-parallel yes: is a flag"}},
		{"choice", "--recompute-granularity most", []string{"--recompute-granularity most: must be one of full, selective"}},
		{"stray word", "--bf16 oops", []string{`"oops": not an argument`}},
		{"groups without GQA", "--num-query-groups 4", []string{"--num-query-groups without --group-query-attention", "trains multi-head attention"}},
		{"full without method", "--recompute-granularity full", []string{"--recompute-granularity full needs --recompute-method uniform or block"}},
		{"tp and heads", "--num-attention-heads 12 --kv-channels 64 --tensor-model-parallel-size 8", []string{"parallel.tp = 8: must divide model.query_heads (12) (from --tensor-model-parallel-size)"}},
		{"gpus and layout", "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4", []string{"16 GPUs do not divide into tp 8 × pp 4 × cp 1 = 32"}},
		{"global batch", "--global-batch-size 10", []string{"--global-batch-size 10: must be a multiple of micro batch 1 × 16 data-parallel replicas"}},
		{"cp does not divide", "--context-parallel-size 3 --tensor-model-parallel-size 1", []string{"16 GPUs do not divide", "--context-parallel-size"}},
		{"cp 8 accepted", "--context-parallel-size 8 --micro-batch-size 1 --seq-length 4096 --global-batch-size 2 --tensor-model-parallel-size 2", []string{}},
		{"moe freq int", "--num-experts 8 --moe-router-topk 2 --moe-layer-freq 2 --ffn-hidden-size 4096", []string{"--moe-layer-freq 2 puts MoE on layers 0, 2, 4", "([0]*1+[1])*2"}},
		{"moe freq pattern", "--num-experts 8 --moe-router-topk 2 --moe-layer-freq [1,0,1,1] --ffn-hidden-size 4096", []string{"--moe-layer-freq: dcpsim models MoE layers as some dense layers first"}},
		{"moe without experts", "--moe-router-topk 2", []string{"--moe-router-topk: needs --num-experts"}},
		{"layout total", "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Et|ttL", []string{"parallel.pipeline_layout", "sums to 3 layers", "(from --pipeline-model-parallel-layout)"}},
		{"layout letter", "--pipeline-model-parallel-layout Ex", []string{"--pipeline-model-parallel-layout Ex: layer 'x'"}},
		{"account flags", "--pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split", []string{"the 5 layers with the embedding and loss counted must split evenly over pp·vpp = 4"}},
		{"vpp and layout", "--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 --num-virtual-stages-per-pipeline-rank 2", []string{"Megatron-LM takes at most one of them"}},
		{"two activations", "--swiglu --squared-relu", []string{"--swiglu and --squared-relu: choose one activation"}},
		{"fp32", "--fp8-format hybrid --bf16=", []string{"--bf16: is a flag: it takes no value"}},
		{"dispatcher flex", "--num-experts 8 --moe-router-topk 2 --moe-token-dispatcher-type flex", []string{"--moe-token-dispatcher-type flex needs --moe-flex-dispatcher-backend"}},
		{"per-layer cp types", "--context-parallel-size 2 --cp-comm-type p2p a2a p2p a2a", []string{"one communication type per layer is not modelled"}},
		{"attention backend", "--attention-backend unfused", []string{"--attention-backend unfused: must be flash, fused or auto"}},
		{"optimizer", "--optimizer muon", []string{"--optimizer muon: must be one of adam, adamw, hybridadam", "not priced"}},
		{"two problems", "--frobnicate --tensor-model-parallel-size x", []string{"2 problems", "--frobnicate", "--tensor-model-parallel-size x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := importLine(t, c.args, Options{})
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("want it accepted: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s: want an error", c.args)
			}
			if !errors.Is(err, badinput.Err) {
				t.Errorf("%v: not marked bad input", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestMegatronRequired: what the arguments must say, named.
func TestMegatronRequired(t *testing.T) {
	_, err := Megatron([]string{"--bf16"}, Options{GPU: "H100-SXM", GPUs: 8})
	for _, w := range []string{"--num-layers is required", "--hidden-size is required", "--num-attention-heads is required", "--seq-length is required"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
	_, err = Megatron(strings.Fields(strings.ReplaceAll(base, "--bf16", "")), Options{GPU: "H100-SXM", GPUs: 8})
	if err == nil || !strings.Contains(err.Error(), "neither --bf16 nor --fp16: Megatron-LM then trains in FP32") {
		t.Errorf("FP32: %v", err)
	}
	_, err = Megatron(strings.Fields(strings.ReplaceAll(base, "--vocab-size 32000", "")), Options{GPU: "H100-SXM", GPUs: 8})
	if err == nil || !strings.Contains(err.Error(), "the vocabulary is unknown: give --vocab-size") {
		t.Errorf("vocab: %v", err)
	}
	if _, err := importLine(t, "--context-parallel-size 3 --seq-length 6144", Options{GPUs: 48}); err == nil || !strings.Contains(err.Error(), "--context-parallel-size 3: dcpsim's static CP runs power-of-two degrees") {
		t.Errorf("cp 3: %v", err)
	}
	if _, err := Megatron(strings.Fields(base), Options{GPU: "H100-SXM"}); err == nil || !strings.Contains(err.Error(), "the GPU count is required") {
		t.Errorf("gpus: %v", err)
	}
}

// TestIgnoreUnknown: unknown arguments are listed, in the scenario too.
func TestIgnoreUnknown(t *testing.T) {
	im, err := importLine(t, "--frobnicate 3 4 --wibble", Options{IgnoreUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	var unknown []string
	for _, u := range im.Uses {
		if u.Class == Unknown {
			unknown = append(unknown, u.Arg+" "+u.Value)
		}
	}
	if strings.Join(unknown, ",") != "--frobnicate 3 4,--wibble " {
		t.Errorf("unknown %q", unknown)
	}
	sc := im.Scenario(ScenarioOptions{Name: "x"})
	if !strings.Contains(sc, "# unknown, ignored (--ignore-unknown) (2):\n#   --frobnicate 3 4\n#   --wibble\n") {
		t.Errorf("the scenario does not list them:\n%s", sc)
	}
}

// TestEveryArgumentAccounted: each argument of a launch line is in Uses
// with its class, and the scenario's comments list every one.
func TestEveryArgumentAccounted(t *testing.T) {
	im, err := importLine(t, "--lr 1e-4 --save /ckpt --log-interval 1 --use-flash-attn --fp8-param-gather", Options{})
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]Class{}
	for _, u := range im.Uses {
		classes[u.Arg] = u.Class
	}
	for arg, want := range map[string]Class{"--num-layers": Mapped, "--lr": NoEffect, "--save": NoEffect, "--log-interval": NoEffect,
		"--use-flash-attn": Mapped, "--fp8-param-gather": Mapped, "--bf16": Mapped} {
		if got, ok := classes[arg]; !ok || got != want {
			t.Errorf("%s: class %v (listed %v), want %v", arg, got, ok, want)
		}
	}
	if len(im.Uses) != len(strings.Fields(base))-6+5 {
		t.Errorf("%d uses for the %d arguments", len(im.Uses), len(strings.Fields(base))-6+5)
	}
	sc := im.Scenario(ScenarioOptions{Name: "x"})
	for _, u := range im.Uses {
		if !strings.Contains(sc, u.Arg) {
			t.Errorf("the scenario's comments do not list %s", u.Arg)
		}
	}
	if !strings.Contains(strings.Join(im.Assumed, "\n"), "--fp8-param-gather approximated") {
		t.Errorf("the approximation is not listed: %q", im.Assumed)
	}
}

// TestMegatronDefaults: Megatron-LM's defaults where arguments are absent,
// each stated.
func TestMegatronDefaults(t *testing.T) {
	im, err := importLine(t, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, p := im.Job.Model, im.Job.Parallel
	want := []struct {
		what string
		ok   bool
	}{
		{"GELU", m.Activation == job.GELU},
		{"ffn 4h", m.DenseFFN == 4096},
		{"MHA, head dim h/a", m.Attention == job.MHA && m.HeadDimQK == 64},
		{"learned positions, tied", m.LearnedPositions && m.TiedEmbeddings},
		{"tp pp cp 1", p.TP == 1 && p.PP == 1 && im.CP == 1},
		{"all-reduce, FP32 gradients", p.GradSync == job.GradAllReduce && p.GradReduceFP32},
		{"global batch mbs·dp", im.GlobalBatch == 16},
		{"vocab padded to 128", m.Vocab == 32000},
	}
	for _, w := range want {
		if !w.ok {
			t.Errorf("want %s: %+v %+v", w.what, m, p)
		}
	}
	assumed := strings.Join(im.Assumed, "\n")
	for _, w := range []string{"--ffn-hidden-size 4096", "GELU activation", "learned absolute position embeddings", "gradients all-reduced", "--global-batch-size 16"} {
		if !strings.Contains(assumed, w) {
			t.Errorf("assumed %q lacks %q", assumed, w)
		}
	}
	im, err = importLine(t, "--swiglu --tensor-model-parallel-size 4 --vocab-size 50257", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if im.Job.Model.DenseFFN != 2688 || im.Job.Model.Vocab != 50688 {
		t.Errorf("swiglu ffn %d (want int(4h·2/3/64)·64 = 2688), vocab %d (want 50257 padded to 512: 50688)", im.Job.Model.DenseFFN, im.Job.Model.Vocab)
	}
}

// TestMoEPatterns: --moe-layer-freq's forms into dense_layers and
// moe_layer_step.
func TestMoEPatterns(t *testing.T) {
	for _, c := range []struct {
		freq        string
		dense, step int
		ok          bool
	}{
		{"1", 0, 1, true},
		{"[0]*1+[1]*3", 1, 1, true},
		{"([0]*3+[1]*1)", 3, 1, true},
		{"[0,1]*2", 0, 2, true},
		{"([0,0,1])*1+[0]", 1, 2, true}, // [0,0,1,0]: one dense layer, then MoE every 2nd
		{"[1,0,0,0]", 0, 0, false},
		{"[0,0,0,0]", 0, 0, false},
		{"[0,1,1,0]", 0, 0, false},
	} {
		im, err := importLine(t, "--num-experts 8 --moe-router-topk 2 --ffn-hidden-size 4096 --moe-layer-freq "+c.freq, Options{})
		if (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok %v", c.freq, err, c.ok)
			continue
		}
		if c.ok && (im.Job.Model.DenseLayers != c.dense || max(im.Job.Model.MoELayerStep, 1) != c.step) {
			t.Errorf("%s: dense %d step %d, want %d %d", c.freq, im.Job.Model.DenseLayers, im.Job.Model.MoELayerStep, c.dense, c.step)
		}
	}
}

// TestPipelineLayouts: the ways Megatron-LM spells a pipeline split give
// the layers of each virtual stage.
func TestPipelineLayouts(t *testing.T) {
	for _, c := range []struct {
		args   string
		vpp    int
		layout string
		first  int
	}{
		{"--pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1", 2, "", 0},
		{"--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2", 2, "", 0},
		{"--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout E|t*2|t|tL", 2, "0,2,1,1", 0},
		{"--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout (Ett|)*1,ttL", 1, "", 0},
		{"--pipeline-model-parallel-size 2 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split", 1, "", 0}, // 2,2: even
		{"--pipeline-model-parallel-size 3 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split --num-layers 7", 1, "2,3,2", 0},
		{"--pipeline-model-parallel-size 3 --decoder-first-pipeline-num-layers 2", 1, "", 2},
	} {
		im, err := importLine(t, c.args, Options{GPUs: 48})
		if err != nil {
			t.Errorf("%s: %v", c.args, err)
			continue
		}
		p := im.Job.Parallel
		if p.VPP != c.vpp || p.PipelineLayout != c.layout || p.FirstStageLayers != c.first {
			t.Errorf("%s: vpp %d layout %q first %d, want %d %q %d", c.args, p.VPP, p.PipelineLayout, p.FirstStageLayers, c.vpp, c.layout, c.first)
		}
	}
}

// TestLayoutStrings: Megatron-Core's layout language, and its bounds.
func TestLayoutStrings(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // decoder layers per stage, or the error
	}{
		{"Ettt|(tt|)*2,m|L", "3 2 2 0 0"},
		{"E|t*3|tmL", "0 3 1"},
		{"(t|)*3", "1 1 1 0"},
		{"t*0|t", "0 1"},
		{"(t|", "an unclosed '('"},
		{"(t)", "must be followed by *n"},
		{"((t)*2)*2", "no other group"},
		{"*3", "a '*' without a layer"},
		{"(t)*99999999", "a repetition *n needs a count"},
		{"(tttttttt)*5000", "more than"},
		{"tx", "layer 'x'"},
	} {
		stages, err := parseLayoutString(c.in)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			parts := make([]string, len(stages))
			for i, s := range stages {
				parts[i] = itoa(s.decoder)
			}
			got = strings.Join(parts, " ")
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// TestHybridContextParallel: Megatron-Core's dynamic CP imports as the
// mcore policy at its per-rank budget, without pipeline parallelism as
// Megatron-LM requires.
func TestHybridContextParallel(t *testing.T) {
	im, err := importLine(t, "--hybrid-context-parallel --max-seqlen-per-dp-cp-rank 2048 --global-batch-size 32", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if im.Policy != "mcore" || im.Job.Parallel.BudgetTokens != 2048 {
		t.Errorf("policy %s budget %d, want mcore at 2048", im.Policy, im.Job.Parallel.BudgetTokens)
	}
	if sc := im.Scenario(ScenarioOptions{Name: "x"}); !strings.Contains(sc, `policies = ["mcore"]`) || strings.Contains(sc, "[run.options.static]") {
		t.Errorf("scenario:\n%s", sc)
	}
	for args, want := range map[string]string{
		"--hybrid-context-parallel --max-seqlen-per-dp-cp-rank 2048 --pipeline-model-parallel-size 2": "dynamic CP without pipeline parallelism only",
		"--hybrid-context-parallel": "--hybrid-context-parallel needs --max-seqlen-per-dp-cp-rank",
	} {
		if _, err := importLine(t, args, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
