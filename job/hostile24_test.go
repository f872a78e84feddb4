package job

import (
	"strings"
	"testing"
)

// TestHostile24Job: issue 24's messages of the job's validation (items 19,
// 20): a pool budget too small for the context is refused with its minimum,
// an explicit pool budget of 0 has a checker for the parser, G·B is never
// printed overflowed, and stage overrides past the model's layers say so.
func TestHostile24Job(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Job)
		want []string
		not  []string
	}{
		{"pool budget 1", func(j *Job) { j.Cluster.Pools[1].BudgetTokens = 1 },
			[]string{"cluster.pools[1].budget_tokens = 1: must be >= ⌈context_tokens / G⌉ = ⌈8192 / 24⌉ = 342"}, nil},
		{"pool budget 341", func(j *Job) { j.Cluster.Pools[1].BudgetTokens = 341 },
			[]string{"cluster.pools[1].budget_tokens = 341: must be >= ", "= 342"}, nil},
		{"budget 1e18", func(j *Job) { j.Parallel.BudgetTokens = 1e18 },
			[]string{"parallel.budget_tokens = 1000000000000000000: must be in [1, 16777216]"}, []string{"G*B", "-"}},
		{"first_stage_layers 1000", func(j *Job) { j.Parallel.FirstStageLayers = 1000 },
			[]string{"parallel.first_stage_layers = 1000: the stage overrides exceed the layers", "model.layers (32)"}, []string{"-9"}},
		{"last_stage_layers 31 of 32 at pp 3", func(j *Job) {
			j.Cluster.Pools[0].GPUs, j.Cluster.Pools[1].GPUs, j.Cluster.GPUs, j.Parallel.PP = 48, 48, 96, 3
			j.Parallel.LastStageLayers = 31
		}, []string{"parallel.last_stage_layers = 31: the stage overrides exceed the layers", "(at most 30)"}, nil},
		{"both huge", func(j *Job) { j.Parallel.FirstStageLayers, j.Parallel.LastStageLayers = 1<<62, 1<<62 },
			[]string{"the stage overrides exceed the layers"}, []string{"-"}},
	} {
		j := mixedJob(Pool{GPU: "H100-SXM", GPUs: 32}, Pool{GPU: "A100-80G", GPUs: 16})
		c.edit(&j)
		err := j.Validate()
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nwant %q", c.name, err, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(err.Error(), n) {
				t.Errorf("%s: %v\nholds %q", c.name, err, n)
			}
		}
	}
	// The smallest budget that holds the context is accepted.
	j := mixedJob(Pool{GPU: "H100-SXM", GPUs: 32}, Pool{GPU: "A100-80G", GPUs: 16, BudgetTokens: 342})
	if err := j.Validate(); err != nil {
		t.Errorf("pool budget 342: %v", err)
	}
	if err := CheckPoolBudget(1, 0); err == nil || !strings.Contains(err.Error(), "cluster.pools[1].budget_tokens = 0: must be in [1, 16777216]") {
		t.Errorf("CheckPoolBudget(1, 0) = %v", err)
	}
}
