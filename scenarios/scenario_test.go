package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sched/mcore"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/sched/static"
	"github.com/dcpsim/dcpsim/workload"
)

// TestPresetsParse checks every embedded scenario and the numbers its header
// derives from the paper.
func TestPresetsParse(t *testing.T) {
	want := map[string]struct {
		gpus, pool, epGroups int
		batchTokens          int64
		points               int
	}{
		"testbed-32k":     {512, 128, 16, 4194304, 1},
		"testbed-256k":    {512, 128, 16, 4194304, 1},
		"production-256k": {2048, 512, 64, 33554432, 1},
		// What-ifs: the cap sweep, the node-local Ulysses, the earlier stand-in model.
		"production-256k-cap":          {2048, 512, 64, 33554432, 5},
		"production-256k-fabric":       {2048, 512, 64, 33554432, 5},
		"testbed-256k-v2-lite":         {512, 128, 16, 4194304, 1},
		"production-256k-node-ulysses": {2048, 512, 64, 33554432, 1},
		"hy3-8k":                       {8192, 1024, 128, 134217728, 1},
		"weak-scaling":                 {8192, 1024, 128, 134217728, 8},
		// The layout searches (their [search] spaces are checked by TestSearchPresets).
		"search-h800-4k":  {4096, 512, 32, 33554432, 1},
		"search-h800-16k": {16384, 1024, 16, 134217728, 1},
		// Mixed GPU kinds (HexiSeq review): G = gpus/tp, one EP group per rank.
		"hexiseq-h100-a100":  {64, 64, 64, 1048576, 1},
		"hexiseq-contexts":   {64, 64, 64, 1572864, 6},
		"hexiseq-four-kinds": {128, 128, 128, 2097152, 3},
		"hetero-long-256k":   {64, 64, 64, 2097152, 1},
		"hexiseq-flop-mixed": {80, 80, 80, 1572864, 1},
		"hexiseq-flop-h100":  {48, 48, 48, 1572864, 1},
		// The baselines' own papers (issue 29): ByteScale's ablation (tp2: G = 512,
		// its balance × offload points), WLB-LLM 7B-128K, FlexSP GPT-7B 384K.
		"bytescale-paper": {1024, 512, 512, 33554432, 8},
		// ByteScale's Fig. 21: the offload ratio swept at 64K.
		"bytescale-offload-64k": {64, 32, 32, 2097152, 5},
		"wlbllm-paper":          {64, 2, 2, 524288, 5},
		"flexsp-paper":          {64, 64, 64, 797696, 4},
	}
	names := PresetNames()
	if len(names) != len(want) {
		t.Errorf("PresetNames() = %v, want the %d presets", names, len(want))
	}
	for _, n := range names {
		sc, err := Preset(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		w, ok := want[n]
		if !ok {
			t.Errorf("unexpected preset %s", n)
			continue
		}
		if sc.Name != n {
			t.Errorf("%s: name = %q, want the file name", n, sc.Name)
		}
		if got := sc.Job.Cluster.GPUs; got != w.gpus {
			t.Errorf("%s: gpus = %d, want %d", n, got, w.gpus)
		}
		if got := sc.Job.PoolRanks(); got != w.pool {
			t.Errorf("%s: G = %d, want %d", n, got, w.pool)
		}
		if got := sc.Job.EPGroups(); got != w.epGroups {
			t.Errorf("%s: EP groups = %d, want %d", n, got, w.epGroups)
		}
		if got := sc.Workload.BatchTokens; got != w.batchTokens {
			t.Errorf("%s: batch tokens = %d, want %d", n, got, w.batchTokens)
		}
		pts, err := sc.Points()
		if err != nil || len(pts) != w.points {
			t.Errorf("%s: Points() = %d points, %v; want %d", n, len(pts), err, w.points)
		}
		src, _ := PresetSource(n)
		if !strings.HasPrefix(string(src), "# "+n+": ") {
			t.Errorf("%s: the file must open with a header comment naming it and its source", n)
		}
	}
}

// TestPaperTokensPerIteration checks the derivation in the testbed headers:
// tokens/day × step time / 86400 s lands within 1% of the chosen batch.
func TestPaperTokensPerIteration(t *testing.T) {
	for _, c := range []struct {
		preset       string
		tokensPerDay float64 // hydra-paper.txt §6.2, §6.3 (HyDra)
		stepSeconds  float64
	}{
		{"testbed-32k", 46.8e9, 7.7},
		{"testbed-256k", 25.8e9, 14.1},
		{"production-256k", 182.7e9, 15.9},
	} {
		sc, err := Preset(c.preset)
		if err != nil {
			t.Fatal(err)
		}
		derived := c.tokensPerDay * c.stepSeconds / 86400
		if rel := derived/float64(sc.Workload.BatchTokens) - 1; rel < -0.01 || rel > 0.01 {
			t.Errorf("%s: paper implies %.4g tokens/iteration, scenario has %d (%.1f%% off)", c.preset, derived, sc.Workload.BatchTokens, 100*rel)
		}
	}
}

func TestWeakScalingPoints(t *testing.T) {
	sc, err := Preset("weak-scaling")
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sc.Points()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name       string
		model      string
		pp, ep, g  int
		batch      int64
		stageCount []int
	}{
		{"weak-scaling/hy3/gpus=8192", "hy3", 8, 8, 1024, 134217728, nil},
		{"weak-scaling/hy3/gpus=40960", "hy3", 8, 8, 5120, 671088640, nil},
		{"weak-scaling/deepseek-v3/gpus=8192", "deepseek-v3", 16, 64, 512, 134217728, []int{3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2}},
		{"weak-scaling/deepseek-v3/gpus=40960", "deepseek-v3", 16, 64, 2560, 671088640, nil},
	}
	byName := map[string]Point{}
	for _, p := range pts {
		byName[p.Name] = p
	}
	for _, w := range want {
		p, ok := byName[w.name]
		if !ok {
			t.Errorf("missing point %s", w.name)
			continue
		}
		j := p.Scenario.Job
		if j.Model.Name != w.model || j.Parallel.PP != w.pp || j.Parallel.EP != w.ep || j.PoolRanks() != w.g || p.Scenario.Workload.BatchTokens != w.batch {
			t.Errorf("%s: model %s pp%d ep%d G=%d batch %d; want %s pp%d ep%d G=%d batch %d", w.name,
				j.Model.Name, j.Parallel.PP, j.Parallel.EP, j.PoolRanks(), p.Scenario.Workload.BatchTokens,
				w.model, w.pp, w.ep, w.g, w.batch)
		}
		if w.stageCount != nil {
			got, err := j.StageLayers()
			if err != nil || !slices.Equal(got, w.stageCount) {
				t.Errorf("%s: StageLayers() = %v, %v; want %v", w.name, got, err, w.stageCount)
			}
		}
	}
	// The base scenario is not mutated by expansion.
	if sc.Job.Model.Name != "hy3" || sc.Job.Cluster.GPUs != 8192 {
		t.Errorf("Points mutated the base scenario: %s", sc.Job)
	}
}

// TestBadScenarios is the table of malformed scenarios: each must fail with an
// *Error whose text names the file and line, the key, and what is allowed.
func TestBadScenarios(t *testing.T) {
	cases := []struct {
		file string
		want []string // substrings, in any order; the first is the location
	}{
		{"bad-cp-exec", []string{":31:", `costs.cp_exec.mcore = "rng"`, "ulysses-ring", "costs.cp_overlap.wlb", "not in run.policies"}},
		{"unknown-top-key", []string{":29:", "run.colour: unknown key", "allowed in [run]"}},
		{"unknown-table", []string{":31:", "cost: unknown key", "allowed at the top level", "costs"}},
		{"unknown-cluster-key", []string{":9:", "cluster.nic_gbps: unknown key", "gpus_per_node"}},
		{"fabric-nics-not-dividing", []string{":9:", "cluster.nics_per_node = 3", "divide cluster.gpus_per_node (8)"}},
		{"fabric-oversubscription-below-one", []string{":9:", "cluster.spine_oversubscription = 0.5", "[1, 64]"}},
		{"sweep-variant-fabric-key", []string{":32:", "sweep.variant.cluster.nic_gbps: unknown key", "nics_per_node"}},
		{"unknown-model-key", []string{":12:", "model.layer: unknown key", "layers"}},
		{"unknown-parallel-key", []string{":17:", "parallel.cp: unknown key", "budget_tokens"}},
		{"unknown-run-key", []string{":28:", "run.repeats: unknown key", "warmup_iterations"}},
		{"typo-table", []string{":25:", "rnu: unknown key", "run.policies: required"}},
		{"pp-zero", []string{":15:", "parallel.pp = 0", "[1, 256]"}},
		{"pp-not-dividing-gpus", []string{":7:", "cluster.gpus = 66", "multiple of tp*pp"}},
		{"ep-not-dividing-pool", []string{":16:", "parallel.ep = 6", "G = gpus/(tp*pp) = 16"}},
		{"ep-exceeds-pool", []string{":16:", "parallel.ep = 32", "HDP pool"}},
		{"ep-not-dividing-experts", []string{":16:", "parallel.ep = 24", "model.routed_experts (64)"}},
		{"tp-too-big-for-node", []string{":14:", "parallel.tp = 16", "cluster.gpus_per_node (8)"}},
		{"vpp-not-dividing-stage", []string{":17:", "parallel.vpp = 4", "must divide the layers of every stage"}},
		{"uneven-layers", []string{":15:", "parallel.pp = 4", "split evenly"}},
		{"budget-negative", []string{":17:", "parallel.budget_tokens = -1", "[1, 16777216]"}},
		{"budget-not-auto", []string{":17:", `budget_tokens = "lots"`, `[1, 16777216] or "auto"`}},
		{"recompute-layers-not-full", []string{":19:", "parallel.recompute_layers = 2", `needs recompute = "full"`}},
		{"states-do-not-fit", []string{":6:", `cluster.gpu = "H800"`, "model states of pipeline stage 0 need 1489.8 GiB", "short by 1424.6 GiB"}},
		{"bad-recompute", []string{":18:", `parallel.recompute = "partial"`, `"none", "selective" or "full"`, ":19:", `parallel.grad_sync = "ring"`, `"reduce-scatter", "all-reduce", "fsdp" or "fsdp-reshard"`}},
		{"external-bad", []string{":32:", `"hydra" is a built-in policy`, ":36:", "run.external.mine.command: required", ":37:", "timeout_seconds = 7200: must be in (0, 3600]"}},
		{"external-nan-option", []string{":34:", "run.external.mine.options.deep.x = NaN: must be a finite number (the options are sent as JSON)"}},
		{"external-unknown-key", []string{":32:", `"mine" is an external policy: its options go in [run.external.mine] options`, ":37:", "run.external.mine.timeout: unknown key", "command, options, timeout_seconds"}},
		{"bad-precision", []string{":19:", `parallel.precision = "fp16"`, `"bf16", "fp8" or "mxfp8"`}},
		{"fp8-without-fp8-cores", []string{":19:", `parallel.precision = "fp8"`, "A100-80G has no FP8 tensor cores", `train it in "bf16"`}},
		{"context-too-big-for-pool", []string{":22:", "workload.context_tokens = 32768", "G*B = 8*1024 = 8192"}},
		{"too-many-gpus", []string{":7:", "cluster.gpus = 2000000", "[1, 1048576]"}},
		{"batch-too-large", []string{":23:", "workload.batch_tokens = 20000000000", "[1, 2147483648]"}},
		{"unknown-policy", []string{":28:", `unknown policy "megatron"`, "hydra"}},
		{"duplicate-policy", []string{":28:", `"hydra" listed twice`}},
		{"no-policies", []string{":28:", "run.policies: required", "non-empty"}},
		{"warmup-too-large", []string{":27:", "run.warmup_iterations = 4", "[0, run.iterations-1 = 3]"}},
		{"iterations-huge", []string{":26:", "run.iterations = 1000000", "[1, 10000]"}},
		{"unknown-model-preset", []string{":11:", `model.preset = "gpt-5"`, "deepseek-v3"}},
		{"unknown-workload-preset", []string{":21:", `workload.preset = "long-1m"`, "long-256k"}},
		{"unknown-gpu", []string{":6:", `cluster.gpu = "H2O"`, "H800"}},
		{"wrong-type", []string{":15:", "parallel.pp", "integer"}},
		{"syntax-error", []string{":7:", "cluster.gpus", "expected value"}},
		{"missing-context", []string{":20:", "workload.context_tokens: required", "[1, 33554432]"}},
		{"two-length-sources", []string{":20:", "exactly one of preset", "got 2"}},
		{"both-batch-sizes", []string{":24:", "batch_tokens or batch_tokens_per_gpu, not both"}},
		{"bad-overlong", []string{":24:", `workload.overlong = "truncate"`, `"split" or "drop"`}},
		{"bad-name", []string{":2:", `name = "Small Scenario!"`, "[a-z0-9._-]{1,64}"}},
		{"dot-name", []string{":2:", `name = ".."`, "at least one letter or digit"}},
		{"negative-seed", []string{":27:", "run.seed = -7", ">= 0"}},
		{"bad-component", []string{":29:", "workload.component[0]", "sigma = -1", "> 0"}},
		{"bad-component-kind", []string{":29:", `kind = "gamma"`, `"lognormal", "pareto" or "empirical"`}},
		{"model-kv-heads", []string{":12:", "model.kv_heads = 3", "query_heads (32)"}},
		{"options-for-unlisted-policy", []string{":30:", "[run.options.static]", "not in run.policies or sweep.policies"}},
		{"sweep-bad-gpus", []string{":31:", "sweep.gpus: value 0", "[1, 1048576]"}},
		{"sweep-point-invalid", []string{":30:", "sweep point small/gpus=100", "cluster.gpus = 100"}},
		{"bad-planner-stall", []string{":31:", `costs.planner_stall = "sometimes"`, `"modeled" or "none"`}},
		{"bad-dollars", []string{":29:", "run.dollars_per_gpu_hour = -2", "(0, 10000]"}},
		{"sweep-unknown-policy", []string{":32:", `sweep.policies: unknown policy "megatron"`, `sweep.options.hydra.bogus: unknown option for policy "hydra" (allowed: cap)`}},
		{"sweep-bad-option", []string{":34:", "[sweep.options.hydra]: policy hydra: cap = 48: must be 0 (closed-form C*) or a power of two", "at sweep point small/gpus=64/hydra.cap=48"}},
		{"options-unknown-key", []string{":33:", `run.options.hydra.bogus: unknown option for policy "hydra" (allowed: cap)`}},
		{"options-bad-value", []string{":31:", "[run.options.mcore]: policy mcore: min_cp_size = 3: must be a power of two"}},
		{"too-many-microbatches", []string{":23:", "workload.batch_tokens = 2147483648: needs at least 32768 microbatches per iteration at G·B = 65536", "must be <= 1024"}},
		{"options-wrong-type", []string{":32:", "run.options.hydra.cap: incompatible types"}},
		{"sweep-unknown-variant-key", []string{":35:", "sweep.variant.parallel.pipeline: unknown key", "first_stage_layers"}},
		{"pools-both-forms", []string{":7:", "cluster.pools: give either cluster.gpu and cluster.gpus", "not both"}},
		{"pools-unknown-gpu", []string{":8:", `cluster.pools[1].gpu = "A100-40G": no calibration profile`, "A100-80G"}},
		{"pools-unknown-key", []string{":6:", "cluster.pools.nic_gbps: unknown key", "gpu, gpus, budget_tokens"}},
		{"pools-partial-node", []string{":9:", "cluster.pools[1].gpus = 12", "multiple of pp·gpus_per_node = 1·8 = 8"}},
		{"pools-zero-gpus", []string{":12:", "cluster.pools[1].gpus = 0: must be in [1, 1048576]", ":13: cluster.pools[1].budget_tokens = -5"}},
	}
	files, _ := filepath.Glob("testdata/bad/*.toml")
	if len(files) != len(cases) {
		t.Errorf("testdata/bad has %d files, the table %d: keep them in step", len(files), len(cases))
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", c.file+".toml")
			sc, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %s, want an error", path, sc.Name)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not *scenarios.Error: %v", err, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, path+c.want[0]) {
				t.Errorf("error does not start at %s%s:\n%s", path, c.want[0], msg)
			}
			for _, w := range c.want[1:] {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

func TestGoodScenario(t *testing.T) {
	sc, err := Load("testdata/good.toml")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Job.PoolRanks() != 16 || sc.Run.Seed != 7 || sc.Run.Iterations != 4 || sc.Job.Parallel.VPP != 1 {
		t.Errorf("unexpected resolution: %s seed %d iterations %d", sc.Job, sc.Run.Seed, sc.Run.Iterations)
	}
	if sc.Workload.Overlong != workload.Split || sc.Workload.Order != workload.Resample {
		t.Errorf("defaults: overlong %v order %v", sc.Workload.Overlong, sc.Workload.Order)
	}
}

// TestModelOverride checks that [model] keys override the preset and nothing else.
func TestModelOverride(t *testing.T) {
	src := strings.Replace(readGood(t), `preset = "deepseek-v2-lite"`, "preset = \"deepseek-v2-lite\"\nvocab = 32000\nname = \"v2-lite-32k-vocab\"", 1)
	sc, err := Parse([]byte(src), "override.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := sc.Job.Model
	if m.Vocab != 32000 || m.Name != "v2-lite-32k-vocab" || m.Layers != 27 || m.KVLoRARank != 512 {
		t.Errorf("override gave vocab %d name %q layers %d kv_lora %d", m.Vocab, m.Name, m.Layers, m.KVLoRARank)
	}
}

func TestComponentsAndFile(t *testing.T) {
	dir := t.TempDir()
	base := readGood(t)
	mixture := strings.Replace(base, "preset = \"long-32k\"\n", "", 1) + `
[[workload.component]]
kind = "lognormal"
weight = 3
median_tokens = 500
sigma = 1.0
min_tokens = 16
max_tokens = 32768

[[workload.component]]
kind = "empirical"
weight = 1
tokens = [1024, 8192, 32768]
cdf = [0.0, 0.5, 1.0]
`
	sc, err := Parse([]byte(mixture), filepath.Join(dir, "mix.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sc.Workload.Distribution.(workload.Mixture); !ok {
		t.Fatalf("distribution %T, want a Mixture", sc.Workload.Distribution)
	}
	s, err := sc.NewSampler()
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Batch(0); b.Tokens() != sc.Workload.BatchTokens {
		t.Errorf("batch holds %d tokens, want %d", b.Tokens(), sc.Workload.BatchTokens)
	}

	// A length file next to the scenario, resolved relative to it.
	if err := os.WriteFile(filepath.Join(dir, "lens.jsonl"), []byte("{\"n\": 100}\n{\"n\": 40000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withFile := strings.Replace(base, `preset = "long-32k"`, "file = \"lens.jsonl\"\nfield = \"n\"\norder = \"sequential\"", 1)
	sc, err = Parse([]byte(withFile), filepath.Join(dir, "file.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Workload.Format != "jsonl" || sc.LengthFilePath() != filepath.Join(dir, "lens.jsonl") {
		t.Errorf("format %q path %q", sc.Workload.Format, sc.LengthFilePath())
	}
	s, err = sc.NewSampler()
	if err != nil {
		t.Fatal(err)
	}
	b := s.Batch(0)
	for _, l := range b.Lengths {
		if l > sc.Workload.ContextTokens {
			t.Errorf("piece of %d tokens exceeds the context %d", l, sc.Workload.ContextTokens)
		}
	}

	// A broken length file is reported with its name and line.
	if err := os.WriteFile(filepath.Join(dir, "lens.jsonl"), []byte("{\"n\": 100}\n{\"n\": -5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.NewSampler(); err == nil || !regexp.MustCompile(`lens\.jsonl:2\b`).MatchString(err.Error()) {
		t.Errorf("bad length file: error %v, want one naming lens.jsonl:2", err)
	}
	// A missing one names the key.
	sc.Workload.File = "nope.txt"
	if _, err := sc.NewSampler(); err == nil || !strings.Contains(err.Error(), "workload.file") {
		t.Errorf("missing length file: error %v, want one naming workload.file", err)
	}
}

// TestDecodeOptions: per-policy options are decoded strictly and validated
// when the scenario is parsed; a policy without a table gets its defaults.
func TestDecodeOptions(t *testing.T) {
	src := readGood(t) + "\n[run.options.hydra]\ncap = 64\n"
	sc, err := Parse([]byte(src), "opts.toml")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := sc.Run.Options["hydra"].(*hydra.Options); !ok || o.Cap != 64 {
		t.Errorf("hydra options %#v, want cap 64", sc.Run.Options["hydra"])
	}
	if o, ok := sc.Run.Options["mcore"].(*mcore.Options); !ok || *o != mcore.DefaultOptions() {
		t.Errorf("mcore options %#v, want the defaults", sc.Run.Options["mcore"])
	}
	_, err = Parse([]byte(src+"engine = \"ulysses-ring\"\n"), "opts.toml")
	if err == nil || !strings.Contains(err.Error(), "opts.toml:32: run.options.hydra.engine: unknown option for policy \"hydra\" (allowed: cap)") {
		t.Errorf("unknown option: %v", err)
	}
}

func TestResolve(t *testing.T) {
	if _, err := Resolve("testbed-32k"); err != nil {
		t.Errorf("Resolve(preset): %v", err)
	}
	if _, err := Resolve("testdata/good.toml"); err != nil {
		t.Errorf("Resolve(file): %v", err)
	}
	_, err := Resolve("no-such-preset")
	if err == nil || !strings.Contains(err.Error(), "testbed-256k") {
		t.Errorf("Resolve(unknown) = %v, want the known names listed", err)
	}
	_, err = Resolve("testdata/missing.toml")
	var se *Error
	if !errors.As(err, &se) {
		t.Errorf("Resolve(missing file) = %v, want *Error", err)
	}
}

func TestKeyLines(t *testing.T) {
	src := `# c
top = 1
[a]
b = 2
"c.d" = 3
e.f = 4
arr = [
  1,
  2,
]
s = """
x = 1
"""
[[g.h]]
i = 5
[[g.h]]
i = 6
inline = { j = 7 }
`
	lines := keyLines(src)
	for key, want := range map[string]int{"top": 2, "a": 3, "a.b": 4, "a.c.d": 5, "a.e.f": 6, "a.arr": 7, "a.s": 11, "g.h": 14, "g.h.i": 15, "g.h.inline": 18} {
		if got := lines[key]; got != want {
			t.Errorf("line of %s = %d, want %d", key, got, want)
		}
	}
	if _, ok := lines["a.x"]; ok {
		t.Errorf("a key inside a multi-line string was recorded")
	}
	if got := lineOf(lines, "g.h.inline.j"); got != 18 {
		t.Errorf("lineOf(inline key) = %d, want 18 (the inline table's line)", got)
	}
}

func readGood(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/good.toml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzParse feeds arbitrary text to the parser: it must never panic, and whatever
// it accepts must be a consistent job whose sweep expands.
func FuzzParse(f *testing.F) {
	for _, n := range PresetNames() {
		src, _ := PresetSource(n)
		f.Add(src)
	}
	files, _ := filepath.Glob("testdata/bad/*.toml")
	for _, p := range append(files, "testdata/good.toml") {
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data, "fuzz.toml")
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || len(se.Problems) == 0 {
				t.Fatalf("error %T without problems: %v", err, err)
			}
			return
		}
		if err := sc.Job.Validate(); err != nil {
			t.Fatalf("accepted an invalid job: %v", err)
		}
		if _, err := sc.Points(); err != nil {
			t.Fatalf("accepted a sweep that does not expand: %v", err)
		}
	})
}

// TestCostsProfile: [costs] profile names a calibration file read relative to
// the scenario; without it the embedded profile of cluster.gpu is used.
func TestCostsProfile(t *testing.T) {
	sc, err := Load("testdata/good.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sc.Profile()
	if err != nil || p.Name != "H20" {
		t.Fatalf("embedded profile: %v, %v", p, err)
	}
	dir := t.TempDir()
	var buf strings.Builder
	if err := p.WriteTOML(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine.toml"), []byte(strings.Replace(buf.String(), `name = "H20"`, `name = "mine"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	src := readGood(t) + "\n[costs]\nprofile = \"mine.toml\"\n"
	sc, err = Parse([]byte(src), filepath.Join(dir, "s.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = sc.Profile(); err != nil || p.Name != "mine" {
		t.Errorf("file profile: %v, %v", p, err)
	}
	sc.ProfileFile = "missing.toml"
	if _, err := sc.Profile(); err == nil || !strings.Contains(err.Error(), "s.toml:31: costs.profile = \"missing.toml\"") {
		t.Errorf("missing profile file: error %v", err)
	}
}

// TestFileSizeLimits: a scenario file or a [costs] profile file past its
// safeio limit is refused once that much is read, naming the file and the
// limit (scenarios check /dev/zero read 10 GB in 30 s).
func TestFileSizeLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte(strings.Repeat("#\n", safeio.MaxScenarioBytes/2+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{big, "/dev/zero"} {
		_, err := Resolve(f)
		var se *Error
		if !errors.As(err, &se) || !strings.Contains(err.Error(), f+": file too large: more than 1048576 bytes") {
			t.Errorf("Load(%s): %v", f, err)
		}
	}
	// The profile is read when the scenario is parsed (its HBM decides
	// what fits).
	_, err := Parse([]byte(readGood(t)+"\n[costs]\nprofile = \"big.toml\"\n"), filepath.Join(dir, "s.toml"))
	if err == nil || !strings.Contains(err.Error(), `costs.profile = "big.toml": `+big+": file too large: more than 1048576 bytes") {
		t.Errorf("big profile: %v", err)
	}
}

// TestCPExecOverride: [costs] cp_exec / cp_overlap override a policy's CP
// execution for what-if studies; absent, the policy's own is kept.
func TestCPExecOverride(t *testing.T) {
	src := readGood(t) + "\n[costs]\ncp_exec.mcore = \"ring\"\ncp_overlap.hydra = false\n"
	sc, err := Parse([]byte(src), "what-if.toml")
	if err != nil {
		t.Fatal(err)
	}
	mc, _ := policies.Lookup("mcore")
	hy, _ := policies.Lookup("hydra")
	if e, o := sc.CPExecFor(mc, nil); e != sched.Ring || o {
		t.Errorf("mcore: %v %v, want ring, exposed", e, o)
	}
	if e, o := sc.CPExecFor(hy, nil); e != sched.UlyssesRing || o {
		t.Errorf("hydra: %v %v, want ulysses-ring, not overlapped", e, o)
	}
}

// TestWhatIfPresets: the production what-ifs differ from production-256k in
// exactly the key they are about.
func TestWhatIfPresets(t *testing.T) {
	base, _ := Preset("production-256k")
	node, _ := Preset("production-256k-node-ulysses")
	capSweep, _ := Preset("production-256k-cap")
	if !base.UlyssesAcrossNodes || node.UlyssesAcrossNodes || !reflect.DeepEqual(node.Job.Cluster, base.Job.Cluster) || node.Job.Parallel != base.Job.Parallel {
		t.Errorf("node-ulysses: across %v (base %v), same job %v", node.UlyssesAcrossNodes, base.UlyssesAcrossNodes, node.Job.Parallel == base.Job.Parallel)
	}
	pts, err := capSweep.Points()
	if err != nil {
		t.Fatal(err)
	}
	var caps []int
	for _, p := range pts {
		caps = append(caps, p.Scenario.Run.Options["hydra"].(*hydra.Options).Cap)
		if len(p.Scenario.Run.Policies) != 1 || p.Scenario.Run.Policies[0] != "hydra" {
			t.Errorf("%s: policies %v, want [hydra]", p.Name, p.Scenario.Run.Policies)
		}
	}
	if !slices.Equal(caps, []int{32, 64, 128, 256, 512}) {
		t.Errorf("caps %v", caps)
	}
}

// TestOptionAxes: sweep.options.<policy>.<key> axes expand after the budget
// axis, by policy then key, the last fastest; each point decodes its own
// options and leaves the base scenario's untouched.
func TestOptionAxes(t *testing.T) {
	src := readGood(t) + "\n[run.options.mcore]\nstall_model = \"megatron-dev\"\n" +
		"\n[sweep]\ngpus = [64]\n\n[sweep.options.mcore]\nmin_cp_size = [1, 2]\n\n[sweep.options.hydra]\ncap = [0, 64]\n"
	sc, err := Parse([]byte(src), "axes.toml")
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sc.Points()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pts {
		names = append(names, strings.TrimPrefix(p.Name, "small/"))
	}
	want := []string{"gpus=64/hydra.cap=0/mcore.min_cp_size=1", "gpus=64/hydra.cap=0/mcore.min_cp_size=2",
		"gpus=64/hydra.cap=64/mcore.min_cp_size=1", "gpus=64/hydra.cap=64/mcore.min_cp_size=2"}
	if !slices.Equal(names, want) {
		t.Fatalf("points %v, want %v", names, want)
	}
	last := pts[3].Scenario.Run.Options
	if last["hydra"].(*hydra.Options).Cap != 64 || *last["mcore"].(*mcore.Options) != (mcore.Options{MinCPSize: 2, StallModel: "megatron-dev"}) {
		t.Errorf("point 3 options %+v %+v", last["hydra"], last["mcore"])
	}
	if sc.Run.Options["hydra"].(*hydra.Options).Cap != 0 || sc.Run.Options["mcore"].(*mcore.Options).MinCPSize != 1 {
		t.Errorf("base options changed: %+v %+v", sc.Run.Options["hydra"], sc.Run.Options["mcore"])
	}
	if len(sc.Sweep.Options) != 2 || sc.Sweep.Options[0].Name() != "hydra.cap" {
		t.Errorf("axes %+v", sc.Sweep.Options)
	}
	// A policy only sweep.policies names may have options too.
	src = readGood(t) + "\n[run.options.static]\ndegree = 8\n\n[sweep]\npolicies = [\"static\"]\n"
	if sc, err = Parse([]byte(src), "only-swept.toml"); err != nil {
		t.Fatal(err)
	}
	pts, _ = sc.Points()
	if len(pts) != 1 || pts[0].Scenario.Run.Options["static"].(*static.Options).Degree != 8 {
		t.Errorf("static point options: %+v", pts)
	}
}

// TestVariantOptions: a variant's [sweep.variant.options.<policy>] apply to
// its points only, over [run.options]; an unknown option is refused.
func TestVariantOptions(t *testing.T) {
	src := readGood(t) + "\n[run.options.mcore]\nmin_cp_size = 2\n\n[sweep]\ngpus = [64]\n\n[[sweep.variant]]\nname = \"a\"\n" +
		"\n[[sweep.variant]]\nname = \"b\"\n[sweep.variant.options.mcore]\nstall_model = \"megatron-dev\"\n"
	sc, err := Parse([]byte(src), "variants.toml")
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sc.Points()
	if err != nil {
		t.Fatal(err)
	}
	a, b := pts[0].Scenario.Run.Options["mcore"].(*mcore.Options), pts[1].Scenario.Run.Options["mcore"].(*mcore.Options)
	if *a != (mcore.Options{MinCPSize: 2, StallModel: "pool-scan"}) || *b != (mcore.Options{MinCPSize: 2, StallModel: "megatron-dev"}) {
		t.Errorf("variant a %+v, b %+v", a, b)
	}
	_, err = Parse([]byte(strings.Replace(src, "stall_model", "stall", 1)), "variants.toml")
	if err == nil || !strings.Contains(err.Error(), `sweep.variant[1].options.mcore.stall: unknown option for policy "mcore"`) {
		t.Errorf("unknown variant option: %v", err)
	}
}

func TestReadLengths(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "l.csv"), []byte("10\n20\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "l.jsonl"), []byte(`{"n": 5}`+"\n"), 0o644)
	if l, err := ReadLengths(filepath.Join(dir, "l.csv"), "", ""); err != nil || !slices.Equal(l, []int{10, 20}) {
		t.Errorf("csv: %v %v", l, err)
	}
	if l, err := ReadLengths(filepath.Join(dir, "l.jsonl"), "", "n"); err != nil || !slices.Equal(l, []int{5}) {
		t.Errorf("jsonl by extension: %v %v", l, err)
	}
	if _, err := ReadLengths(filepath.Join(dir, "l.csv"), "parquet", ""); err == nil || !strings.Contains(err.Error(), `format = "parquet"`) {
		t.Errorf("bad format: %v", err)
	}
}

// TestParallelTrainingSettings: sequence_parallel defaults to true (the layout
// the cost model assumed before it was a setting), recompute to none and
// grad_sync to the distributed optimizer's reduce-scatter; each can be set.
func TestParallelTrainingSettings(t *testing.T) {
	sc, err := Preset("testbed-32k")
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Job.Parallel
	if !p.SequenceParallel || p.RecomputeMode() != job.RecomputeNone || p.GradSyncMode() != job.GradReduceScatter {
		t.Errorf("defaults: sequence_parallel %v, recompute %q, grad_sync %q", p.SequenceParallel, p.RecomputeMode(), p.GradSyncMode())
	}
	// DeepSeek-V2-Lite: without the distributed optimizer paper-mla's
	// states would not fit an H20.
	src, err := PresetSource("testbed-256k-v2-lite")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "[parallel]\n", "[parallel]\nsequence_parallel = false\nrecompute = \"full\"\ngrad_sync = \"all-reduce\"\n", 1)
	sc, err = Parse([]byte(text), "set.toml")
	if err != nil {
		t.Fatal(err)
	}
	if p := sc.Job.Parallel; p.SequenceParallel || p.Recompute != job.RecomputeFull || p.GradSync != job.GradAllReduce {
		t.Errorf("set: %+v", p)
	}
}
