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
