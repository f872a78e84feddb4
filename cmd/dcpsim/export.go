package main

import (
	"io"

	"github.com/dcpsim/dcpsim/internal/launchcfg"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/sched/static"
)

func runExport(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "megatron" && !isHelpFlag(args[0])) {
		return badInput("dcpsim export takes a format, megatron (dcpsim help export)")
	}
	if !isHelpFlag(args[0]) {
		args = args[1:]
	}
	fs := newFlagSet("export megatron", exportUsage, stderr)
	policy := fs.String("policy", "", "the scenario's policy to export (default: its first)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInput("dcpsim export megatron takes one scenario (name or .toml file), got %d arguments", len(pos))
	}
	sc, err := resolveScenario(pos[0])
	if err != nil {
		return err
	}
	pol := *policy
	if pol == "" {
		pol = sc.Run.Policies[0]
	}
	known := false
	for _, p := range sc.Run.Policies {
		known = known || p == pol
	}
	if !known {
		return badInput("--policy %q: scenario %s runs %q", pol, sc.Name, sc.Run.Policies)
	}
	text, err := exportScenario(sc, sc.Name, pol)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, text)
	return err
}

// exportScenario writes a scenario's job, run by one of its policies, as
// Megatron-LM arguments (launchcfg.Export).
func exportScenario(sc *scenarios.Scenario, name, policy string) (string, error) {
	if sc.Job.Cluster.Mixed() {
		return "", badInput("scenario %s: a mixed cluster (cluster.pools) has no Megatron-LM launch line: Megatron-LM runs one GPU kind", name)
	}
	d, err := policies.Lookup(policy)
	if err != nil {
		return "", badInput("policy %q: an external policy has no Megatron-LM equivalent", policy)
	}
	var p sched.Policy
	cp := 0
	if policy == static.Name {
		if o, ok := sc.Run.Options[policy].(*static.Options); ok {
			cp = o.Degree
			if p, err = static.New(*o); err != nil {
				return "", badInput("policy static: %w", err)
			}
		}
	}
	exec, _ := sc.CPExecFor(d, p)
	text, err := launchcfg.Export(launchcfg.ExportJob{Name: name, Job: sc.Job, Policy: policy, CP: cp, Static: policy == static.Name,
		CPExec: exec.String(), BatchTokens: sc.Workload.BatchTokens})
	if err != nil {
		return "", badInput("%w", err)
	}
	return text, nil
}
