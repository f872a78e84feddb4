// Package policies assembles the registry of every implemented DCP policy. It is
// the one place that imports them all; the CLI asks it for a policy by name.
package policies

import (
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sched/mcore"
	"github.com/dcpsim/dcpsim/sched/static"
)

// Registry returns a registry holding every implemented policy.
func Registry() *sched.Registry {
	r := sched.NewRegistry()
	r.Register(hydra.Name, "HyDra: load-driven degrees from the closed-form cap C*, piggyback packing with heaps", hydra.New)
	r.Register(hydra.ScanName, "HyDra with the plain linear-scan placement (reference; identical plans)", hydra.NewScan)
	r.Register(mcore.Name, "Megatron-Core dynamic CP (dev next_hdp_group_packing_aware): memory-driven degrees, exact", mcore.New)
	r.Register(static.Name, "static CP at the smallest degree whose cp·B holds the context, Megatron dp_balanced packing", static.New)
	return r
}
