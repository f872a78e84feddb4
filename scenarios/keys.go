package scenarios

import (
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dcpsim/dcpsim/job"
)

// allowedKeys lists the keys of each table, for suggestions on unknown keys.
var allowedKeys = map[string][]string{
	"":                       {"name", "description", "cluster", "model", "parallel", "workload", "run", "sweep", "search", "costs"},
	"costs":                  {"profile", "cp_exec", "cp_overlap", "planner_stall", "ulysses_across_nodes"},
	"cluster":                {"gpu", "gpus", "gpus_per_node", "pools", "nics_per_node", "nodes_per_leaf", "spine_oversubscription"},
	"cluster.pools":          {"gpu", "gpus", "budget_tokens"},
	"parallel":               {"tp", "pp", "vpp", "ep", "budget_tokens", "first_stage_layers", "last_stage_layers", "sequence_parallel", "recompute", "recompute_layers", "grad_sync", "precision"},
	"workload":               {"preset", "component", "file", "format", "field", "order", "context_tokens", "batch_tokens", "batch_tokens_per_gpu", "overlong"},
	"workload.component":     {"kind", "weight", "median_tokens", "sigma", "alpha", "min_tokens", "max_tokens", "tokens", "cdf"},
	"run":                    {"iterations", "warmup_iterations", "seed", "policies", "options", "dollars_per_gpu_hour", "external"},
	"run.external.*":         {"command", "options", "timeout_seconds"},
	"sweep":                  {"gpus", "context_tokens", "budget_tokens", "options", "policies", "variant"},
	"search":                 {"gpus", "gpu", "pool_gpus", "tp", "pp", "vpp", "ep", "budget_tokens", "recompute", "precision", "policies", "top", "eta", "margin", "policy"},
	"search.policy":          {"gpus", "tp", "pp", "vpp", "ep", "budget_tokens", "recompute"},
	"sweep.variant":          {"name", "model", "parallel", "cluster", "options"},
	"sweep.variant.cluster":  {"nics_per_node", "nodes_per_leaf", "spine_oversubscription"},
	"sweep.variant.parallel": {"tp", "pp", "vpp", "ep", "budget_tokens", "first_stage_layers", "last_stage_layers", "sequence_parallel", "recompute", "recompute_layers", "grad_sync", "precision"},
	"model":                  modelKeys(),
}

// modelKeys lists the TOML keys of [model] (preset plus every job.Model field).
func modelKeys() []string {
	keys := []string{"preset"}
	keys = append(keys, job.ModelKeys()...)
	return keys
}

// suggest returns ", allowed here: ..." for an unknown key.
func suggest(k toml.Key) string {
	table := strings.Join(k[:len(k)-1], ".")
	if len(k) == 4 && k[0] == "run" && k[1] == "external" {
		table = "run.external.*"
	}
	allowed, ok := allowedKeys[table]
	if !ok || len(allowed) == 0 {
		return ""
	}
	if table == "" {
		return "; allowed at the top level: " + strings.Join(allowed, ", ")
	}
	return "; allowed in [" + table + "]: " + strings.Join(allowed, ", ")
}
