package main

import (
	"encoding/json"
	"flag"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/workload"
)

const workloadUsage = `  dcpsim workload stats [--scenario S] [--iterations N] [--seed N] [--json] [--plot F.png|F.svg]
  dcpsim workload stats --file LENGTHS [--format lengths|jsonl] [--field NAME]
                        [--batch-tokens N --context N [--order resample|sequential]] [--json] [--plot F]

  Statistics of the sequence lengths in a scenario's batches (default scenario:
  ` + scenarios.DefaultPreset + `), or of a length file: count, percentiles, the fraction of sequences
  above 2K/8K/32K/128K with their share of tokens and of attention work (Σ s²),
  and per batch Σ s and Σ s². S is an embedded scenario name or a .toml file.`

func workloadCommand() command {
	return command{
		name:     "workload",
		summary:  "sequence-length statistics of a scenario's batches or a length file",
		usage:    workloadUsage,
		run:      runWorkload,
		helpArgs: []string{"stats", "-h"},
	}
}

func runWorkload(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "stats" {
		return badInput("usage:\n%s", workloadUsage)
	}
	fs := newFlagSet("workload stats", workloadUsage, stderr)
	scenario := fs.String("scenario", "", "embedded scenario name or .toml file (default "+scenarios.DefaultPreset+")")
	file := fs.String("file", "", "length file: one integer per line, CSV with a length column, or JSONL")
	format := fs.String("format", "", "length file format: lengths or jsonl (default: by extension)")
	field := fs.String("field", "length", "JSONL field holding the length")
	iterations := fs.Int("iterations", 0, "batches to sample (default: the scenario's run.iterations)")
	seed := fs.Int64("seed", -1, "override the scenario's seed (>= 0)")
	batchTokens := fs.Int64("batch-tokens", 0, "with --file: also sample batches of this many tokens")
	context := fs.Int("context", 0, "with --file and --batch-tokens: the context length (longer sequences are split)")
	order := fs.String("order", "resample", "with --file and --batch-tokens: resample or sequential")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	plotPath := fs.String("plot", "", "also draw the length CDF to this .png or .svg file")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput("unexpected arguments %q", fs.Args())
	}
	if *scenario != "" && *file != "" {
		return badInput("--scenario and --file are exclusive")
	}
	if ext := strings.ToLower(filepath.Ext(*plotPath)); *plotPath != "" && ext != ".png" && ext != ".svg" {
		return badInput("--plot = %q: the file must end in .png or .svg", *plotPath)
	}
	if *plotPath != "" {
		if err := checkOutFile("--plot", *plotPath); err != nil {
			return err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["iterations"] && (*iterations < 1 || *iterations > scenarios.MaxIterations) {
		return badInput("--iterations = %d: must be in [1, %d]", *iterations, scenarios.MaxIterations)
	}
	if set["seed"] && *seed < 0 {
		return badInput("--seed = %d: must be >= 0", *seed)
	}
	if set["batch-tokens"] && *batchTokens < 1 {
		return badInput("--batch-tokens = %d: must be >= 1", *batchTokens)
	}
	if *batchTokens > workload.MaxTargetTokens {
		return badInput("--batch-tokens = %d: must be in [1, %d]", *batchTokens, int64(workload.MaxTargetTokens))
	}
	if set["context"] && (*context < 1 || *context > workload.MaxContextTokens) {
		return badInput("--context = %d: must be in [1, %d]", *context, workload.MaxContextTokens)
	}
	// Flags that would be silently ignored are refused.
	for _, name := range []string{"format", "field", "batch-tokens", "context", "order"} {
		if set[name] && *file == "" {
			return badInput("--%s goes with --file", name)
		}
	}
	for _, name := range []string{"context", "order", "iterations", "seed"} {
		if set[name] && *file != "" && !set["batch-tokens"] {
			return badInput("--%s goes with --batch-tokens: without it the file's lengths are summarized whole", name)
		}
	}

	req := experiment.WorkloadRequest{Iterations: *iterations}
	if *file != "" {
		lengths, err := readLengthFile(*file, *format, *field)
		if err != nil {
			return err
		}
		req.File, req.Lengths = *file, lengths
		if *batchTokens > 0 {
			if *context <= 0 {
				return badInput("--context: required with --batch-tokens, in [1, %d]", workload.MaxContextTokens)
			}
			ord, err := workload.ParseListOrder(*order)
			if err != nil {
				return badInput("--order = %q: must be resample or sequential", *order)
			}
			if err := checkSequencesPerBatch(lengths, *batchTokens, *context); err != nil {
				return err
			}
			req.BatchTokens, req.ContextTokens, req.Order, req.Seed = *batchTokens, *context, ord, uint64(max(*seed, 0))
		}
	} else {
		sc, err := resolveScenario(*scenario)
		if err != nil {
			return err
		}
		if *seed >= 0 {
			sc.Run.Seed = uint64(*seed)
		}
		req.Scenario = sc
	}
	rep, acc, err := experiment.WorkloadStats(req)
	if err != nil {
		return err
	}
	if *plotPath != "" {
		if acc.Len() > maxPlotSequences {
			return badInput("--plot: the figure would draw %d sequences: more than %d (the limit of a length figure; use fewer --iterations)", acc.Len(), maxPlotSequences)
		}
		p, err := report.LengthCDF(acc.Lengths(), "sequence lengths: "+rep.Source)
		if err != nil {
			return err
		}
		if err := report.SavePlot(p, *plotPath, 16*vg.Centimeter, 10*vg.Centimeter); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return report.WriteWorkloadStats(stdout, rep)
}

func readLengthFile(path, format, field string) ([]int, error) {
	lengths, err := scenarios.ReadLengths(path, format, field)
	if err != nil {
		return nil, badInput("--file: %v", err)
	}
	return lengths, nil
}

// maxPlotSequences bounds the lengths --plot draws: the figure needs them all
// (8 bytes each, twice), while the statistics stream.
const maxPlotSequences = 1 << 24

// checkSequencesPerBatch refuses --batch-tokens that would put more than
// scenarios.MaxSequencesPerBatch sequences in a batch on average, at the
// file's mean length after splitting at the context (a batch is held whole).
func checkSequencesPerBatch(lengths []int, batchTokens int64, context int) error {
	var tokens, pieces float64
	for _, l := range lengths {
		tokens += float64(l)
		pieces += float64((l + context - 1) / context)
	}
	mean := tokens / pieces
	if n := float64(batchTokens) / mean; n > scenarios.MaxSequencesPerBatch {
		return badInput("--batch-tokens = %d: expected %.3g sequences per batch at the file's mean length of %.0f tokens (split at --context %d); must be <= %d",
			batchTokens, n, mean, context, scenarios.MaxSequencesPerBatch)
	}
	return nil
}
