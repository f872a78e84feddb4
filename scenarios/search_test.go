package scenarios

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/job"
)

func TestStageSplit(t *testing.T) {
	cases := []struct {
		layers, pp, vpp int
		first, last     int
		err             string
	}{
		{layers: 32, pp: 4, vpp: 1},                      // even
		{layers: 32, pp: 4, vpp: 2},                      // even, in chunks
		{layers: 94, pp: 8, vpp: 1, first: 11, last: 11}, // Qwen3-235B: 6×12 in the middle
		{layers: 94, pp: 8, vpp: 2, first: 10, last: 12}, // every stage even: 11 chunks left
		{layers: 94, pp: 16, vpp: 1, first: 5, last: 5},  // 14×6 = 84 in the middle
		{layers: 61, pp: 16, vpp: 1, first: 2, last: 3},  // DeepSeek-V3: 14×4 in the middle
		{layers: 61, pp: 8, vpp: 1, first: 6, last: 7},   // 6×8 = 48, 13 left
		{layers: 61, pp: 2, vpp: 1, first: 30, last: 31}, // two stages, the first lighter
		{layers: 94, pp: 4, vpp: 1, first: 23, last: 23}, // 2×24 = 48
		{layers: 94, pp: 32, vpp: 1, first: 2, last: 2},  // 30×3 = 90
		{layers: 95, pp: 2, vpp: 1, first: 47, last: 48}, // odd over two
		{layers: 7, pp: 3, vpp: 1, first: 2, last: 2},    // the larger middle wins a tie (3 vs 2+3)
		{layers: 10, pp: 3, vpp: 2, first: 2, last: 4},   // 4 in the middle, 3 chunks left
		{layers: 88, pp: 8, vpp: 4, first: 8, last: 8},   // 11 per stage is no multiple of 4: 6×12
		{layers: 5, pp: 4, vpp: 1, first: 1, last: 2},    // a last stage above the middle when it must
		{layers: 65, pp: 16, vpp: 1, first: 4, last: 5},  // 14×4 = 56, 9 left
		{layers: 63, pp: 16, vpp: 1, first: 3, last: 4},  // 14×4 = 56, 7 left
		{layers: 3, pp: 2, vpp: 1, first: 1, last: 2},
		{layers: 1, pp: 1, vpp: 1},
		{layers: 61, pp: 4, vpp: 2, err: "no split"},    // an odd count never splits in twos
		{layers: 94, pp: 8, vpp: 4, err: "no split"},    // 94 is no multiple of 4
		{layers: 61, pp: 1, vpp: 2, err: "must divide"}, // one stage
		{layers: 8, pp: 4, vpp: 4, err: "cannot fill"},  // too few layers
		{layers: 0, pp: 1, vpp: 1, err: "cannot fill"},
		{layers: 64, pp: 0, vpp: 1, err: "cannot fill"},
		{layers: 64, pp: 16, vpp: 0, err: "cannot fill"},
	}
	for _, c := range cases {
		f, l, err := StageSplit(c.layers, c.pp, c.vpp)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("StageSplit(%d, %d, %d) = %d, %d, %v; want an error with %q", c.layers, c.pp, c.vpp, f, l, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("StageSplit(%d, %d, %d): %v", c.layers, c.pp, c.vpp, err)
			continue
		}
		if f != c.first || l != c.last {
			t.Errorf("StageSplit(%d, %d, %d) = %d, %d; want %d, %d", c.layers, c.pp, c.vpp, f, l, c.first, c.last)
		}
		// The split must be one job.StageLayers accepts, with vpp dividing
		// every stage.
		j := job.Job{Model: job.Model{Layers: c.layers}, Parallel: job.Parallel{PP: c.pp, VPP: c.vpp, FirstStageLayers: f, LastStageLayers: l}}
		stages, err := j.StageLayers()
		if err != nil {
			t.Errorf("StageSplit(%d, %d, %d) = %d, %d: StageLayers: %v", c.layers, c.pp, c.vpp, f, l, err)
			continue
		}
		sum, most := 0, 0
		for _, n := range stages {
			sum += n
			most = max(most, n)
			if n%c.vpp != 0 || n < 1 {
				t.Errorf("StageSplit(%d, %d, %d): stage of %d layers", c.layers, c.pp, c.vpp, n)
			}
		}
		if sum != c.layers || most > (c.layers+c.pp-1)/c.pp+c.vpp {
			t.Errorf("StageSplit(%d, %d, %d): stages %v", c.layers, c.pp, c.vpp, stages)
		}
	}
}

// searchBase is a small valid scenario with a [search] appended by tests.
const searchBase = `name = "s"
[cluster]
gpu = "H800"
gpus = 64
[model]
preset = "qwen3-30b-a3b"
[parallel]
tp = 1
pp = 2
ep = 8
budget_tokens = 16384
[workload]
preset = "long-256k"
context_tokens = 131072
batch_tokens_per_gpu = 8192
[run]
iterations = 4
warmup_iterations = 1
policies = ["hydra", "static"]
`

func TestSearchCandidates(t *testing.T) {
	sc, err := Parse([]byte(searchBase+`[search]
gpus = [64, 128]
tp = [1, 2, 3]
pp = {from = 2, to = 8, factor = 2}
budget_tokens = ["auto", 16384]
recompute = ["none", "full"]
policies = ["hydra", "mcore"]
top = 2
`), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	cands, err := sc.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * 3 * 3 * 2 * 2 * 2; len(cands) != want {
		t.Fatalf("%d candidates, want %d", len(cands), want)
	}
	if sc.Search.Top != 2 || sc.Search.Eta != DefaultSearchEta || sc.Search.Margin != DefaultSearchMargin {
		t.Errorf("rules %+v", sc.Search)
	}
	// The fixed order: policies fastest, then recompute, budget, ... gpus slowest.
	c0, c1, c2 := cands[0], cands[1], cands[2]
	if c0.Policy != "hydra" || c1.Policy != "mcore" || c2.Scenario.Job.Parallel.RecomputeMode() != job.RecomputeFull {
		t.Errorf("order: %s, %s, %s", c0.Name, c1.Name, c2.Name)
	}
	if last := cands[len(cands)-1]; last.Scenario.Job.Cluster.GPUs != 128 || last.Policy != "mcore" {
		t.Errorf("last candidate %s", last.Name)
	}
	seen := map[string]bool{}
	invalid, valid := 0, 0
	for i, c := range cands {
		if c.ID != i || seen[c.Name] {
			t.Errorf("candidate %d: id %d name %s (repeated: %v)", i, c.ID, c.Name, seen[c.Name])
		}
		seen[c.Name] = true
		if got := c.Scenario.Run.Policies; c.Problem == "" && (len(got) != 1 || got[0] != c.Policy) {
			t.Errorf("%s: policies %v", c.Name, got)
		}
		tp := c.Scenario.Job.Parallel.TP
		switch {
		case tp == 3:
			invalid++
			if c.Problem == "" || !strings.Contains(c.Problem, "parallel.tp = 3") || c.OutOfMemory {
				t.Errorf("%s: problem %q, want tp = 3 refused", c.Name, c.Problem)
			}
		case c.Problem != "":
			// Too small a pool for ep 8 or the context: refused with the key.
			if !strings.Contains(c.Problem, "parallel.ep = 8") && !strings.Contains(c.Problem, "workload.context_tokens") {
				t.Errorf("%s: unexpected problem %q", c.Name, c.Problem)
			}
		default:
			valid++
			if c.Scenario.Job.Parallel.BudgetAuto && c.Scenario.Job.Parallel.BudgetTokens < 1 {
				t.Errorf("%s: auto budget not resolved", c.Name)
			}
			if want := c.Scenario.Job.Cluster.GPUs * 8192; c.Scenario.Workload.BatchTokens != int64(want) {
				t.Errorf("%s: batch %d, want %d", c.Name, c.Scenario.Workload.BatchTokens, want)
			}
		}
	}
	if invalid != len(cands)/3 || valid < len(cands)/3 {
		t.Errorf("%d invalid for tp = 3, want %d; %d valid", invalid, len(cands)/3, valid)
	}
}

func TestSearchCandidatesMemory(t *testing.T) {
	// Qwen3-30B's experts all on each GPU (ep = 1) of 64 at pp 2 cannot
	// fit; over ep = 8 they do.
	sc, err := Parse([]byte(searchBase+`[search]
pp = [2]
ep = [1, 8]
`), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	cands, err := sc.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		ep1 := c.Scenario.Job.Parallel.EP == 1
		if c.OutOfMemory != ep1 || ep1 != strings.Contains(c.Problem, "model states of pipeline stage 0") {
			t.Errorf("%s: out of memory %v, problem %q", c.Name, c.OutOfMemory, c.Problem)
		}
	}
	big := strings.Replace(searchBase, `preset = "qwen3-30b-a3b"`, `preset = "deepseek-v3"`, 1)
	big = strings.Replace(big, "pp = 2\nep = 8", "pp = 61\nep = 16", 1)
	big = strings.Replace(big, "gpus = 64", "gpus = 1952", 1)
	sc, err = Parse([]byte(big+`[search]
pp = [2, 61]
budget_tokens = ["auto"]
`), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	cands, err = sc.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	oom := 0
	for _, c := range cands {
		if c.OutOfMemory {
			oom++
			if c.Scenario.Job.Parallel.PP != 2 || !strings.Contains(c.Problem, "model states") {
				t.Errorf("%s: out of memory with %q", c.Name, c.Problem)
			}
		}
	}
	// DeepSeek-V3 at pp 2 on 1,952 H800s: 30 layers of experts over ep 16
	// per GPU cannot fit; at pp 61 they do.
	if oom != 2 || len(cands) != 4 {
		t.Errorf("%d of %d candidates out of memory, want the 2 at pp = 2", oom, len(cands))
	}
}

func TestSearchTableErrors(t *testing.T) {
	cases := []struct{ table, want string }{
		{"tp = [1, 1]", "search.tp: values must be distinct"},
		{"tp = [0]", "search.tp: value 0 must be in [1, 64]"},
		{`tp = "x"`, "search.tp: x: want a list of integers or a range"},
		{"pp = {from = 1, to = 8}", "exactly one of step or factor"},
		{"pp = {from = 1, to = 8, factor = 1}", "factor = 1: must be in [2, 1073741824]"},
		// Issue 41 class 4: steps and factors near 2^62-2^63 are refused
		// as given, never reported with wrapped values.
		{"tp = {from = 1, to = 8, step = 9223372036854775807}", "search.tp: range step = 9223372036854775807: must be in [1, 1073741824]"},
		{"tp = {from = 4, to = 8, factor = 4611686018427387904}", "search.tp: range factor = 4611686018427387904: must be in [2, 1073741824]"},
		{"pp = {from = 3, to = 8, factor = 6148914691236517206}", "search.pp: range factor = 6148914691236517206"},
		{"pp = {from = 1, to = 8, step = -5}", "search.pp: range step = -5: must be in [1, 1073741824]"},
		{"pp = {from = 1, to = 8, stride = 2}", `range key "stride"`},
		{"pp = {from = 1, to = 100000, step = 1}", "more than 1024 values"},
		{`budget_tokens = ["big"]`, `budget_tokens = "big"`},
		{`budget_tokens = [0]`, "search.budget_tokens: value 0 must be in"},
		{`recompute = ["most"]`, `search.recompute: "most" must be`},
		{`policies = ["nope"]`, `search.policies: unknown policy "nope"`},
		{`gpu = ["Z80"]`, `search.gpu: "Z80" has no calibration profile`},
		{`pool_gpus = [["H800"]]`, "search.pool_gpus: only for a mixed cluster"},
		{"top = 0", "search.top = 0"},
		{"eta = 1", "search.eta = 1"},
		{"margin = 2.0", "search.margin = 2"},
		{"tpp = [1]", "search.tpp: unknown key; allowed in [search]"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(searchBase+"[search]\n"+c.table+"\n"), "s.toml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("[search] %s: got %v, want %q", c.table, err, c.want)
		}
	}
	_, err := Parse([]byte(searchBase+"[sweep]\ngpus = [64]\n[search]\ntp = [1]\n"), "s.toml")
	if err == nil || !strings.Contains(err.Error(), "[search] and [sweep] cannot be in one scenario") {
		t.Errorf("search with sweep: %v", err)
	}
}

func TestSearchCandidatesBound(t *testing.T) {
	src := searchBase + "[search]\ngpus = {from = 1, to = 1048576, factor = 2}\ntp = {from = 1, to = 64, step = 1}\npp = {from = 1, to = 256, step = 1}\n"
	sc, err := Parse([]byte(src), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Candidates(); err == nil || !strings.Contains(err.Error(), "more than 200000 candidates") {
		t.Errorf("huge space: %v", err)
	}
}

// TestAutoBudgetHoldsContext checks that an automatic budget too small for
// the context is refused when the scenario is read, not when planning.
func TestAutoBudgetHoldsContext(t *testing.T) {
	src := strings.NewReplacer("gpus = 64", "gpus = 32", "tp = 1", "tp = 2", "pp = 2", "pp = 4", "ep = 8", "ep = 1",
		"budget_tokens = 16384", `budget_tokens = "auto"`, "context_tokens = 131072", "context_tokens = 65536").Replace(searchBase)
	_, err := Parse([]byte(src), "s.toml")
	if err == nil || !strings.Contains(err.Error(), `workload.context_tokens = 65536: must be <= G*B = 4*`) || !strings.Contains(err.Error(), `budget_tokens = "auto" resolved to`) {
		t.Errorf("got %v", err)
	}
}

// TestSearchPoolKinds checks pool_gpus on a mixed cluster: each entry names
// every pool's kind, and the groups are the clusters' labels.
func TestSearchPoolKinds(t *testing.T) {
	src := strings.Replace(searchBase, "gpu = \"H800\"\ngpus = 64", `pools = [{gpu = "H100-SXM", gpus = 32}, {gpu = "A100-80G", gpus = 32}]`, 1) +
		"[search]\npool_gpus = [[\"H100-SXM\", \"A100-80G\"], [\"H800\", \"H20\"]]\n"
	sc, err := Parse([]byte(src), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	cands, err := sc.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 4 {
		t.Fatalf("%d candidates, want 2 kinds × 2 policies", len(cands))
	}
	for i, want := range []string{"32×H100-SXM + 32×A100-80G/hydra", "32×H100-SXM + 32×A100-80G/static", "32×H800 + 32×H20/hydra", "32×H800 + 32×H20/static"} {
		if cands[i].Group != want {
			t.Errorf("candidate %d: group %q, want %q", i, cands[i].Group, want)
		}
	}
	if got := cands[2].Scenario.Job.Cluster.Pools[1].GPU; got != "H20" || sc.Job.Cluster.Pools[1].GPU != "A100-80G" {
		t.Errorf("pool kinds: candidate %q, base %q (the base must stay)", got, sc.Job.Cluster.Pools[1].GPU)
	}
	for _, bad := range []string{`pool_gpus = [["H800"]]`, `gpus = [64]`, `gpu = ["H800"]`} {
		if _, err := Parse([]byte(strings.Replace(src, `pool_gpus = [["H100-SXM", "A100-80G"], ["H800", "H20"]]`, bad, 1)), "s.toml"); err == nil {
			t.Errorf("%s on a mixed cluster: accepted", bad)
		}
	}
}

// TestSearchPolicySpace checks [search.policy.NAME]: that policy takes only
// the layouts inside its subsets, the others every layout.
func TestSearchPolicySpace(t *testing.T) {
	src := searchBase + "[search]\ntp = [1, 2]\nbudget_tokens = [\"auto\", 16384]\n[search.policy.static]\ntp = [1]\nbudget_tokens = [16384]\n"
	sc, err := Parse([]byte(src), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	cands, err := sc.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, c := range cands {
		n[c.Policy]++
		p := c.Scenario.Job.Parallel
		if c.Policy == "static" && (p.TP != 1 || p.BudgetAuto) {
			t.Errorf("static at %s", c.Name)
		}
	}
	if n["hydra"] != 4 || n["static"] != 1 {
		t.Errorf("candidates per policy %v, want hydra 4, static 1", n)
	}
	for bad, want := range map[string]string{
		"[search.policy.static]\ntp = [4]\n":   "search.policy.static.tp: 4 is not in search.tp",
		"[search.policy.mcore]\ntp = [1]\n":    `"mcore" is not among the search's policies`,
		"[search.policy.static]\ntpx = [1]\n":  "search.policy.static.tpx: unknown key",
		"[search.policy.static]\ntp = \"x\"\n": "search.policy.static.tp: x",
	} {
		_, err := Parse([]byte(searchBase+"[search]\ntp = [1, 2]\n"+bad), "s.toml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
}

// TestSearchPrecision: the precision axis doubles the layouts, names the FP8
// ones with an -fp8 suffix (BF16 names unchanged), sets the job's precision,
// and an FP8 layout on a GPU without FP8 tensor cores is a candidate with its
// problem, not dropped.
func TestSearchPrecision(t *testing.T) {
	sc, err := Parse([]byte(searchBase+`[search]
gpu = ["H800", "A100-80G"]
precision = ["bf16", "fp8"]
policies = ["hydra"]
`), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sc.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4 {
		t.Fatalf("%d candidates, want 2 kinds × 2 precisions", len(cs))
	}
	for _, c := range cs {
		fp8 := c.Scenario.Job.Parallel.FP8()
		if strings.HasSuffix(c.Name, "-fp8/hydra") != fp8 {
			t.Errorf("%s: FP8 %v", c.Name, fp8)
		}
		a100 := c.Scenario.Job.Cluster.GPU == "A100-80G"
		if wantProblem := a100 && fp8; (c.Problem != "") != wantProblem || (wantProblem && !strings.Contains(c.Problem, "no FP8 tensor cores")) {
			t.Errorf("%s: problem %q", c.Name, c.Problem)
		}
	}
	if _, err := Parse([]byte(searchBase+"[search]\nprecision = [\"fp16\"]\n"), "s.toml"); err == nil || !strings.Contains(err.Error(), `search.precision: "fp16" must be "bf16" or "fp8"`) {
		t.Errorf("bad precision: %v", err)
	}
}

// TestSearchPresets checks the spaces of the shipped searches: their
// layouts and candidates as their headers count them, FlexSP restricted to
// its subspace, and the invalid layouts only those the headers explain.
func TestSearchPresets(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		layouts, candidates  int
		flexsp               int
		flexspGPUs           []int
		invalidProblemPhrase string
	}{
		{"search-h800-4k", 648, 3294, 54, []int{1024, 2048, 4096}, ""},
		{"search-h800-16k", 576, 2904, 24, []int{4096}, "must divide the HDP pool"},
	} {
		sc, err := Preset(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := sc.Candidates()
		if err != nil {
			t.Fatal(err)
		}
		layouts := map[string]bool{}
		flexsp := 0
		for _, c := range cs {
			layouts[strings.TrimSuffix(c.Name, "/"+c.Policy)] = true
			if c.Policy == "flexsp" {
				flexsp++
				if g := c.Scenario.Job.Cluster.GPUs; !slices.Contains(tc.flexspGPUs, g) || c.Scenario.Job.Parallel.TP != 1 || !c.Scenario.Job.Parallel.BudgetAuto {
					t.Errorf("%s: %s outside FlexSP's subspace", tc.name, c.Name)
				}
			}
			if tc.invalidProblemPhrase != "" && c.Problem != "" && !c.OutOfMemory && !strings.Contains(c.Problem, tc.invalidProblemPhrase) {
				t.Errorf("%s: %s invalid for a reason the header does not give: %s", tc.name, c.Name, c.Problem)
			}
		}
		if len(layouts) != tc.layouts || len(cs) != tc.candidates || flexsp != tc.flexsp {
			t.Errorf("%s: %d layouts, %d candidates, %d of FlexSP; want %d, %d, %d", tc.name, len(layouts), len(cs), flexsp, tc.layouts, tc.candidates, tc.flexsp)
		}
	}
}

// TestBaseLayoutUnevenSplit: a base layout whose pp does not divide the
// layers gets the first and last stages a search derives for it, with a
// note; one that sets them, or that no split fits, keeps what it says.
func TestBaseLayoutUnevenSplit(t *testing.T) {
	src, err := os.ReadFile("testdata/bad/uneven-layers.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "vpp = 2\n", "", 1) // pp 4 over 27 layers: 6 + 7 + 7 + 7
	sc, err := Parse([]byte(text), "uneven.toml")
	if err != nil {
		t.Fatal(err)
	}
	f, l, _ := StageSplit(27, 4, 1)
	if p := sc.Job.Parallel; p.FirstStageLayers != f || p.LastStageLayers != l || f+l == 0 || len(sc.Notes) != 1 || !strings.Contains(sc.Notes[0], "derived") {
		t.Errorf("split %d+%d, notes %q; want %d+%d and a note", p.FirstStageLayers, p.LastStageLayers, sc.Notes, f, l)
	}
	set := strings.Replace(text, "pp = 4\n", "pp = 4\nfirst_stage_layers = 3\n", 1) // 3 + 8 + 8 + 8
	if sc, err := Parse([]byte(set), "set.toml"); err != nil || sc.Job.Parallel.FirstStageLayers != 3 || len(sc.Notes) != 0 {
		t.Errorf("an explicit first stage: %v, notes %q", err, sc.Notes)
	}
}
