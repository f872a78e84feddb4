package main

import (
	"io"

	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/scenarios"
)

const memoryUsage = `  dcpsim memory [--scenario S | S] [--json]

  Per-GPU memory of a scenario (an embedded name or a .toml file), stage by stage
  and GPU kind by kind: the model states (BF16 weights, FP32 gradients, Adam's
  states), the activations at the kind's budget B in the worst case (every rank
  holding B tokens in every microbatch, the pipeline full), the reserve, the total
  against the kind's HBM and the headroom, in GiB, then the verdict (fits, or OUT OF
  MEMORY on the stage with the least headroom) and the sources. dcpsim run reports
  the simulated peak of each policy's plans. --json prints the same as one object:
  scenario, model, layout (tp, pp, vpp, ep, pool_ranks), recompute, budget_tokens,
  budget_auto, rows (stage, kind, layers, budget_tokens, weights_bytes,
  gradients_bytes, optimizer_bytes, activation_bytes, reserve_bytes, total_bytes,
  hbm_bytes, headroom_bytes, fits), worst_row and fits. Exit 0 whether it fits or
  not (the verdict is the answer); 2 for a bad scenario, among them one whose model
  states and reserve do not fit at all.`

func memoryCommand() command {
	return command{
		name:    "memory",
		summary: "per-GPU memory of a scenario by stage and GPU kind: states, activations at B, reserve, HBM",
		usage:   memoryUsage,
		run:     runMemory,
	}
}

func runMemory(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("memory", memoryUsage, stderr)
	scenarioArg := scenarioFlag(fs)
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if pos, err = withScenarioFlag(*scenarioArg, pos); err != nil {
		return err
	}
	if len(pos) != 1 {
		return badInput("memory takes one scenario (name or file), got %d arguments %q", len(pos), pos)
	}
	sc, err := scenarios.Resolve(pos[0])
	if err != nil {
		return err
	}
	r, err := report.NewMemoryReport(sc)
	if err != nil {
		return err
	}
	if *asJSON {
		return report.WriteMemoryJSON(stdout, r)
	}
	return report.WriteMemoryTable(stdout, r)
}
