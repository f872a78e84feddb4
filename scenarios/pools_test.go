package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/memory"
)

const mixedSrc = `name = "mixed"
[cluster]
gpus_per_node = 8
pools = [{gpu = "H100-SXM", gpus = 32}, {gpu = "H20", gpus = 16, budget_tokens = 6000}, {gpu = "A100-80G", gpus = 16}]
[model]
preset = "llama-3-8b"
[parallel]
tp = 1
pp = 2
budget_tokens = 8192
[workload]
preset = "long-32k"
context_tokens = 32768
batch_tokens = 524288
[run]
policies = ["hydra", "hexiseq"]
`

// TestMixedPools: the pools form gives the cluster its kinds in the order
// written, the GPU count their sum, each kind's HDP ranks per stage, each
// kind's budget (its own, or parallel.budget_tokens scaled by the HBM left
// for activations), and one profile per kind.
func TestMixedPools(t *testing.T) {
	sc, err := Parse([]byte(mixedSrc), "mixed.toml")
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Job.Cluster
	if !c.Mixed() || c.GPUs != 64 || c.GPU != "" || c.Label() != "32×H100-SXM + 16×H20 + 16×A100-80G" {
		t.Fatalf("cluster %+v, label %q", c, c.Label())
	}
	if got := sc.Job.KindRanks(); !slices.Equal(got, []int{16, 8, 8}) {
		t.Errorf("ranks per stage %v, want [16 8 8]", got)
	}
	b, err := sc.KindBudgetTokens()
	if err != nil || b[0] != 8192 || b[1] != 6000 || b[2] != 8192 {
		t.Errorf("budgets %v, %v: want the first pool's 8192, H20's own 6000, the A100's 8192 (the same 80 GB)", b, err)
	}
	profs, err := sc.Profiles()
	if err != nil || len(profs) != 3 || profs[1].Name != "H20" {
		t.Errorf("profiles %v, %v", profs, err)
	}
}

// TestMixedPoolBudgetScales: a kind with more HBM gets a larger budget,
// scaled by the room left after the model states and the reserve.
func TestMixedPoolBudgetScales(t *testing.T) {
	src := strings.Replace(mixedSrc, `{gpu = "H20", gpus = 16, budget_tokens = 6000}`, `{gpu = "H200", gpus = 16}`, 1)
	sc, err := Parse([]byte(src), "mixed.toml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sc.KindBudgetTokens()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := memory.New(sc.Job, compute.FlashAttention)
	if err != nil {
		t.Fatal(err)
	}
	states, _ := mem.MaxStates()
	want := int(8192 * (141e9 - states - memory.ReserveBytes) / (80e9 - states - memory.ReserveBytes))
	if b[1] != want || b[1] <= 8192 {
		t.Errorf("H200 budget %d, want %d (states %.1f GB)", b[1], want, states/1e9)
	}
}

// TestMixedPoolErrors: what the pools form refuses, each at its file:line.
func TestMixedPoolErrors(t *testing.T) {
	for _, c := range []struct {
		name, old, new string
		want           []string
	}{
		{"sweep over gpus", "[run]", "[sweep]\ngpus = [32, 64]\n[run]", []string{"sweep.gpus: a mixed cluster"}},
		{"costs profile", "[run]", "[costs]\nprofile = \"x.toml\"\n[run]", []string{"costs.profile: replaces the profile of cluster.gpu"}},
		{"pp not filling nodes", "pp = 2", "pp = 4", []string{"cluster.pools[1].gpus = 16", "multiple of pp·gpus_per_node = 4·8 = 32"}},
		{"gpus given too", "gpus_per_node = 8", "gpus_per_node = 8\ngpus = 64", []string{"mixed.toml:5: cluster.pools: give either"}},
		{"empty pools", `pools = [{gpu = "H100-SXM", gpus = 32}, {gpu = "H20", gpus = 16, budget_tokens = 6000}, {gpu = "A100-80G", gpus = 16}]`, "pools = []", []string{"cluster.pools: must list at least one pool"}},
	} {
		src := strings.Replace(mixedSrc, c.old, c.new, 1)
		_, err := Parse([]byte(src), "mixed.toml")
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("%s: error %v, want *Error", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", c.name, err, w)
			}
		}
	}
}

// TestFlopEquivalentPair: the what-if pair differs only in its cluster, and
// the two clusters' BF16 peaks are within 3% of each other.
func TestFlopEquivalentPair(t *testing.T) {
	mixed, err := Preset("hexiseq-flop-mixed")
	if err != nil {
		t.Fatal(err)
	}
	one, err := Preset("hexiseq-flop-h100")
	if err != nil {
		t.Fatal(err)
	}
	peak := func(sc *Scenario) float64 {
		profs, err := sc.Profiles()
		if err != nil {
			t.Fatal(err)
		}
		var p float64
		for i, k := range sc.Job.Cluster.Kinds() {
			p += float64(k.GPUs) * profs[i].PeakBF16FLOPs.Value
		}
		return p
	}
	if r := peak(mixed) / peak(one); r < 0.97 || r > 1.03 {
		t.Errorf("peak ratio mixed/one-kind = %.3f, want within 3%%", r)
	}
	if mixed.Job.Model.Name != one.Job.Model.Name || mixed.Job.Parallel != one.Job.Parallel || mixed.Workload.BatchTokens != one.Workload.BatchTokens ||
		mixed.Job.ContextTokens != one.Job.ContextTokens || !slices.Equal(mixed.Run.Policies, one.Run.Policies) {
		t.Error("the pair differs beyond its cluster")
	}
}
