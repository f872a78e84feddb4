package job

import (
	"strings"
	"testing"
)

func mixedJob(pools ...Pool) Job {
	m, _ := LookupModel(ModelLlama3With8B)
	gpus := 0
	for _, p := range pools {
		gpus += p.GPUs
	}
	return Job{Model: m, Cluster: Cluster{GPUs: gpus, GPUsPerNode: 8, Pools: pools},
		Parallel: Parallel{TP: 1, PP: 2, VPP: 1, EP: 1, BudgetTokens: 8192}, ContextTokens: 8192}
}

// TestPoolsValidate: what the pools form refuses, by key.
func TestPoolsValidate(t *testing.T) {
	ok := mixedJob(Pool{GPU: "H100-SXM", GPUs: 32}, Pool{GPU: "A100-80G", GPUs: 16})
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid mixed job: %v", err)
	}
	if got := ok.KindRanks(); got[0] != 16 || got[1] != 8 || ok.PoolRanks() != 24 {
		t.Errorf("kind ranks %v, G %d", got, ok.PoolRanks())
	}
	for _, c := range []struct {
		name string
		edit func(*Job)
		want string
	}{
		{"both forms", func(j *Job) { j.Cluster.GPU = "H100-SXM" }, "cluster.pools = 2: give either"},
		{"no node filling", func(j *Job) { j.Cluster.Pools[1].GPUs, j.Cluster.GPUs = 8, 40 }, "cluster.pools[1].gpus = 8: must be a multiple of pp·gpus_per_node = 2·8 = 16"},
		{"sum", func(j *Job) { j.Cluster.GPUs = 64 }, "cluster.gpus = 64: must equal the pools' GPUs (48)"},
		{"no gpu", func(j *Job) { j.Cluster.Pools[0].GPU = "" }, `cluster.pools[0].gpu = "": must name a GPU profile`},
		{"budget", func(j *Job) { j.Cluster.Pools[1].BudgetTokens = -1 }, "cluster.pools[1].budget_tokens = -1"},
		{"too many", func(j *Job) {
			for range MaxPools {
				j.Cluster.Pools = append(j.Cluster.Pools, Pool{GPU: "H20", GPUs: 16})
			}
		}, "must list at most 8 pools"},
	} {
		j := mixedJob(Pool{GPU: "H100-SXM", GPUs: 32}, Pool{GPU: "A100-80G", GPUs: 16})
		c.edit(&j)
		if err := j.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestKindBudgetTokens: the first pool's budget is parallel.budget_tokens,
// another kind's scales with its HBM left after states and reserve (or is
// its own), and a kind with no room is an error naming its pool.
func TestKindBudgetTokens(t *testing.T) {
	j := mixedJob(Pool{GPU: "H100-SXM", GPUs: 32}, Pool{GPU: "H200", GPUs: 16}, Pool{GPU: "x", GPUs: 16, BudgetTokens: 1234})
	states := j.StateBytesPerGPU()
	if states < 15e9 || states > 40e9 {
		t.Fatalf("Llama-3-8B states per GPU %.1f GB: want 15-40", states/1e9)
	}
	b, err := j.KindBudgetTokens([]float64{80e9, 141e9, 1e9})
	want := int(8192 * (141e9 - states - ReserveBytes) / (80e9 - states - ReserveBytes))
	if err != nil || b[0] != 8192 || b[1] != want || b[2] != 1234 {
		t.Errorf("budgets %v, %v; want [8192 %d 1234]", b, err, want)
	}
	if _, err := j.KindBudgetTokens([]float64{80e9, 20e9, 1e9}); err == nil || !strings.Contains(err.Error(), "cluster.pools[1].gpu") {
		t.Errorf("a 20 GB kind: %v, want an error naming cluster.pools[1]", err)
	}
	one := mixedJob()
	one.Cluster = Cluster{GPU: "H20", GPUs: 16, GPUsPerNode: 8}
	if b, err := one.KindBudgetTokens(nil); err != nil || len(b) != 1 || b[0] != 8192 {
		t.Errorf("one kind: %v, %v", b, err)
	}
}
