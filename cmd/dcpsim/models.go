package main

import (
	"io"

	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/job"
)

const modelsUsage = `  dcpsim models          the model presets with their derived per-token quantities
  dcpsim models NAME     one preset: architecture, source and every derived quantity`

func modelsCommand() command {
	return command{
		name:    "models",
		summary: "model presets and their derived quantities (params, FLOPs, CP/MoE bytes, activations)",
		usage:   modelsUsage,
		run:     runModels,
	}
}

func runModels(args []string, stdout, _ io.Writer) error {
	switch len(args) {
	case 0:
		return report.WriteModelList(stdout)
	case 1:
		m, err := job.LookupModel(args[0])
		if err != nil {
			return badInput("%v", err)
		}
		return report.WriteModel(stdout, m)
	}
	return badInput("models takes at most one preset name, got %q", args)
}
