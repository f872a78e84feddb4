package main

import (
	"flag"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"io"
	"os"
	"strings"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched/policies"
)

const runUsage = `  dcpsim run [--scenario S | S] [--policy P] [--out DIR] [--no-files] [--wide]
             [--trace-ranks R,R,...] [--dollars-per-gpu-hour X] [--allow-exec]
             [--iterations N] [--seed S]
  dcpsim run --batches FILE.jsonl --policy P --costs load [--out FILE]

  Scenario mode (S: an embedded scenario name or a .toml file; default ` + scenarios.DefaultPreset + `):
  run every policy of the scenario (or only --policy P) on the same batches for the
  scenario's iterations: plan each batch (HyDra's θ/c from the scenario's GPU
  profile), put the planner's modelled stall at the head of the iteration, price the
  plan with the cost model (costmodel: calib compute, sim/network CP, MoE, P2P and
  gradient-sync communication, each policy's CP execution), time it with the engine
  (sim/step) and print one row per policy, means over the iterations after the
  warm-up (the main columns; --wide prints all 20 and what each means). Then
  write DIR (default runs/<scenario>/): summary.json, iterations.csv, figures
  (PNG and SVG), trace-<policy>.json for ui.perfetto.dev (ranks: --trace-ranks,
  default rank 0 and stage 0's busiest and idlest ranks), index.html (the page
  to open: every table, figure and timeline; dcpsim serve), and manifest.json
  last, all into a temporary sibling folder that then replaces DIR whole; what
  DIR holds beside the files its manifest lists (a NOTES.md, the
  scenario file) is kept. DIR must be new, empty or an earlier results folder
  (with a dcpsim manifest.json), else exit 2. Ctrl-C (or SIGTERM, SIGHUP) exits 1
  ("interrupted") leaving DIR as it was. --no-files prints the table only.

  --allow-exec starts the programs the scenario names (the command of a
  [run.external.NAME] policy): a scenario file can name any program, so
  without this flag a scenario that names one is refused (exit 2, the
  programs listed) before anything runs; with it each program is printed on
  stderr before it starts.

  --batches: plan every batch of FILE with policy P and simulate one training
  iteration of the plan across the pipeline (sim/step): sync domains of CP groups
  and EP blocks, Megatron's interleaved 1F1B, the gradient sync after each stage's
  last backward. Input lines as for dcpsim plan --batches (decoded as strictly, with
  the same bounds; blank lines are skipped): {"ranks": G, "budget_tokens": B,
  "lengths": [...]} plus optional "overhead_ratio", "context_tokens", "pp", "vpp"
  (0 or absent: 1) and "ep" (default 1; must divide ranks).

  --costs load: a rank's forward time for one chunk of a microbatch is its load
  (Σ s²/k over its sequences) × 1e-12 s / (pp·vpp), backward twice that; the rest
  (communication, GEMM, gradient sync, optimizer, planning) is free. One JSON line per
  batch line: {"iteration_seconds", "pp_bubble", "dp_bubble" (fractions of the
  iteration), "mb_seconds" (each MB's forward+backward time through one stage, max
  over ranks), "microbatch_count"}. Deterministic; used by external checks.`

func runCommand() command {
	return command{
		name:    "run",
		summary: "simulate a scenario's policies with the cost model, or --batches in load mode",
		usage:   runUsage + "\n\n" + policyList(),
		run:     runRun,
	}
}

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", runUsage+"\n\n"+policyList(), stderr)
	policy := fs.String("policy", "", "policy name: "+strings.Join(policies.Names(), ", ")+" (required with --batches)")
	batches := fs.String("batches", "", "JSONL file of batches (as for plan --batches); '-' for stdin")
	costs := fs.String("costs", "load", "--batches cost mode: load (the only one for --batches)")
	out := fs.String("out", "", "scenario mode: results folder (default runs/<scenario>); --batches: write the JSON lines to this file")
	scenario := fs.String("scenario", "", "embedded scenario name or .toml file (default "+scenarios.DefaultPreset+"); exclusive with --batches")
	noFiles := fs.Bool("no-files", false, "scenario mode: print the table only, write no results folder")
	traceRanks := fs.String("trace-ranks", "", "scenario mode: HDP ranks drawn in timelines and traces, e.g. 0,17 or 0-7 (default: rank 0, stage 0's busiest and idlest)")
	dollars := fs.Float64("dollars-per-gpu-hour", 0, "scenario mode: price of a GPU-hour for $ per 1T tokens (default: the scenario's run.dollars_per_gpu_hour, 2)")
	wide := fs.Bool("wide", false, "scenario mode: print every column of the table and what each means")
	exec := fs.Bool("allow-exec", false, "scenario mode: start the programs the scenario names ([run.external.NAME] command); without it such a scenario is refused")
	iterations := fs.Int("iterations", 0, "scenario mode: run this many iterations instead of [run] iterations (the warm-up capped below it)")
	seed := fs.Uint64("seed", 0, "scenario mode: sample the batches with this seed instead of [run] seed")
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
		f := scenarioFlags{arg: arg, policy: *policy, out: *out, noFiles: *noFiles, traceRanks: ranks, dollars: *dollars, allowExec: *exec, wide: *wide}
		if set["iterations"] {
			f.iterations = iterations
		}
		if set["seed"] {
			f.seed = seed
		}
		return runScenario(f, stdout, stderr)
	case set["no-files"] || set["trace-ranks"] || set["dollars-per-gpu-hour"] || set["allow-exec"] || set["iterations"] || set["seed"] || set["wide"]:
		return badInput("--no-files, --trace-ranks, --dollars-per-gpu-hour, --allow-exec, --iterations, --seed and --wide go with the scenario mode, not --batches")
	case *scenario != "":
		return badInput("--batches and --scenario are exclusive")
	case *costs != "load":
		return badInput("--costs %q: --batches lines name no model or GPU, so only --costs load applies; the cost model runs in scenario mode", *costs)
	case *policy == "":
		return badInput("--policy is required (one of %s)", strings.Join(policies.Names(), ", "))
	}
	p, err := experiment.NewPolicy(*policy)
	if err != nil {
		return err
	}
	return withBatches(*batches, *out, stdout, func(r io.Reader, w io.Writer) error {
		return experiment.RunBatches(r, *batches, w, p)
	})
}

// withBatches opens the --batches input (a file, or '-' for stdin) and the
// output (stdout, or out written atomically) for do. out is checked before
// anything is read (a folder, a FIFO, a device node, a missing folder or the
// input itself: exit 2); a signal (Ctrl-C, SIGTERM, SIGHUP) while writing out
// stops do and removes the temporary file (exit 1, "interrupted"): the
// handler is installed before anything is created.
func withBatches(file, out string, stdout io.Writer, do func(r io.Reader, w io.Writer) error) error {
	var r io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return badInput("--batches: %v", err)
		}
		defer f.Close()
		r = f
	}
	if out == "" {
		return do(r, stdout)
	}
	ctx, stop := interruptContext()
	defer stop()
	if err := checkOutFile("--out", out); err != nil {
		return err
	}
	if err := checkNotInput("--out", out, "--batches", file); err != nil {
		return err
	}
	err := safeio.WriteFileAtomic(out, func(w io.Writer) error {
		return untilDone(ctx, func() error { return do(ctxReader{ctx, r}, ctxWriter{ctx, w}) })
	})
	return interrupted(ctx, err)
}
