package main

import (
	"encoding/json"
	"flag"
	"io"
	"strings"

	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/sim/step"
)

const runUsage = `  dcpsim run [--scenario S | S] [--policy P] [--out DIR] [--no-files]
             [--trace-ranks R,R,...] [--dollars-per-gpu-hour X]
  dcpsim run --batches FILE.jsonl --policy P --costs load [--out FILE]

  Scenario mode (S: an embedded scenario name or a .toml file; default ` + scenarios.DefaultPreset + `):
  run every policy of the scenario (or only --policy P) on the same batches for the
  scenario's iterations: plan each batch (HyDra's θ/c from the scenario's GPU
  profile), put the planner's modelled stall at the head of the iteration, simulate
  it with the cost model (sim/step.ModelCosts: calib compute, sim/network CP, MoE,
  P2P and gradient-sync communication, each policy's CP execution) and print one row
  per policy, means over the iterations after the warm-up. Then write DIR (default
  results/<scenario>/): summary.json, iterations.csv, figures (PNG and SVG),
  trace-<policy>.json for ui.perfetto.dev (ranks: --trace-ranks, default rank 0 and
  stage 0's busiest and idlest ranks), and manifest.json last. --no-files prints the
  table only.

  --batches: plan every batch of FILE with policy P and simulate one training
  iteration of the plan across the pipeline (sim/step): sync domains of CP groups
  and EP blocks, Megatron's interleaved 1F1B, the gradient sync after each stage's
  last backward. Input lines as for dcpsim plan --batches: {"ranks": G,
  "budget_tokens": B, "lengths": [...]} plus optional "overhead_ratio",
  "context_tokens", "pp", "vpp" (default 1) and "ep" (default 1; must divide ranks).

  --costs load: a rank's forward time for one chunk of a microbatch is its load
  (Σ s²/k over its sequences) × 1e-12 s / (pp·vpp), backward twice that; the rest
  (communication, GEMM, gradient sync, optimizer, planning) is free. One JSON line per
  input line: {"iteration_seconds", "pp_bubble", "dp_bubble" (fractions of the
  iteration), "mb_seconds" (each MB's forward+backward time through one stage, max
  over ranks), "microbatch_count"}. Deterministic; used by external checks.`

func runCommand() command {
	return command{
		name:    "run",
		summary: "simulate a scenario's policies with the cost model, or --batches in load mode",
		usage:   runUsage,
		run:     runRun,
	}
}

// runLine is one output line of run --batches. The first four fields are an
// external contract: keep their names and meaning.
type runLine struct {
	IterationSeconds float64   `json:"iteration_seconds"`
	PPBubble         float64   `json:"pp_bubble"`
	DPBubble         float64   `json:"dp_bubble"`
	MBSeconds        []float64 `json:"mb_seconds"`
	MicrobatchCount  int       `json:"microbatch_count"`
}

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", runUsage, stderr)
	policy := fs.String("policy", "", "policy name (required): "+strings.Join(policies.Registry().Names(), ", "))
	batches := fs.String("batches", "", "JSONL file of batches (as for plan --batches); '-' for stdin")
	costs := fs.String("costs", "load", "--batches cost mode: load (the only one for --batches)")
	out := fs.String("out", "", "scenario mode: results folder (default results/<scenario>); --batches: write the JSON lines to this file")
	scenario := fs.String("scenario", "", "embedded scenario name or .toml file (default "+scenarios.DefaultPreset+"); exclusive with --batches")
	noFiles := fs.Bool("no-files", false, "scenario mode: print the table only, write no results folder")
	traceRanks := fs.String("trace-ranks", "", "scenario mode: HDP ranks drawn in timelines and traces, e.g. 0,17 (default: rank 0, stage 0's busiest and idlest)")
	dollars := fs.Float64("dollars-per-gpu-hour", 0, "scenario mode: price of a GPU-hour for $ per 1T tokens (default: the scenario's run.dollars_per_gpu_hour, 2)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case len(pos) > 1 || (len(pos) == 1 && (*scenario != "" || *batches != "")):
		return badInput("unexpected arguments %q (name one scenario, by --scenario or as the argument)", pos)
	case *batches == "" && set["costs"]:
		return badInput("--costs goes with --batches (the scenario mode always uses the cost model)")
	case *batches == "":
		arg := *scenario
		if len(pos) == 1 {
			arg = pos[0]
		}
		ranks, err := parseRanks(*traceRanks)
		if err != nil {
			return err
		}
		if set["dollars-per-gpu-hour"] && !(*dollars > 0 && *dollars <= 1e4) {
			return badInput("--dollars-per-gpu-hour %v: must be in (0, 10000]", *dollars)
		}
		return runScenario(scenarioFlags{arg: arg, policy: *policy, out: *out, noFiles: *noFiles, traceRanks: ranks, dollars: *dollars},
			stdout, stderr)
	case set["no-files"] || set["trace-ranks"] || set["dollars-per-gpu-hour"]:
		return badInput("--no-files, --trace-ranks and --dollars-per-gpu-hour go with the scenario mode, not --batches")
	case *scenario != "":
		return badInput("--batches and --scenario are exclusive")
	case *costs != "load":
		return badInput("--costs %q: only --costs load is implemented; the cost-model mode arrives with the engine", *costs)
	case *policy == "":
		return badInput("--policy is required (one of %s)", strings.Join(policies.Registry().Names(), ", "))
	}
	p, err := policies.Registry().New(*policy, nil)
	if err != nil {
		return badInput("%v", err)
	}
	return eachBatchLine(*batches, *out, stdout, func(line []byte) ([]byte, error) { return runLoadLine(p, line) })
}

// runLoadLine plans one --batches line and simulates it in load mode.
func runLoadLine(p sched.Policy, line []byte) ([]byte, error) {
	b, in, plan, err := planBatchLine(p, line, -1)
	if err != nil {
		return nil, err
	}
	ep := max(b.EP, 1)
	if b.EP < 0 || in.PoolRanks%ep != 0 {
		return nil, badInput("ep = %d: must be >= 1 and divide ranks = %d (EP groups are aligned blocks of ep ranks)", b.EP, in.PoolRanks)
	}
	res, err := step.Simulate(plan, in.PP, in.VPP, ep, step.LoadCosts{Lengths: b.Lengths, PP: in.PP, VPP: in.VPP})
	if err != nil {
		return nil, badInputError{err}
	}
	return json.Marshal(runLine{IterationSeconds: res.IterationSeconds(), PPBubble: res.PPBubble, DPBubble: res.DPBubble,
		MBSeconds: res.MBSeconds, MicrobatchCount: len(plan.Microbatches)})
}
