package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/scenarios"
)

const scenariosUsage = `  dcpsim scenarios [list]             list the embedded scenarios
  dcpsim scenarios show [--source] S  show scenario S (an embedded name or a .toml file)
  dcpsim scenarios check FILE...      validate scenario files; exit 2 if any is bad`

func scenariosCommand() command {
	return command{
		name:    "scenarios",
		summary: "list, show or check scenario files",
		usage:   scenariosUsage,
		run:     runScenarios,
	}
}

func runScenarios(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "list" {
		if len(args) > 1 {
			return badInput("scenarios list takes no arguments, got %q", args[1:])
		}
		return listScenarios(stdout)
	}
	switch args[0] {
	case "show":
		fs := newFlagSet("scenarios show", scenariosUsage, stderr)
		source := fs.Bool("source", false, "print the TOML text instead of the resolved settings")
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return badInput("scenarios show takes one scenario (name or file), got %d arguments", fs.NArg())
		}
		return showScenario(stdout, fs.Arg(0), *source)
	case "check":
		if len(args) < 2 {
			return badInput("scenarios check needs at least one file")
		}
		var bad []error
		for _, f := range args[1:] {
			sc, err := scenarios.Resolve(f)
			if err != nil {
				fmt.Fprintln(stderr, err)
				bad = append(bad, err)
				continue
			}
			pts, _ := sc.Points()
			fmt.Fprintf(stdout, "ok   %s (%s, %d point(s))\n", f, sc.Name, len(pts))
		}
		if len(bad) > 0 {
			return badInput("%d of %d scenario(s) invalid", len(bad), len(args)-1)
		}
		return nil
	}
	return badInput("unknown scenarios subcommand %q (list, show, check)", args[0])
}

// resolveScenario loads an embedded scenario or a file; empty means the default.
func resolveScenario(arg string) (*scenarios.Scenario, error) {
	if arg == "" {
		arg = scenarios.DefaultPreset
	}
	return scenarios.Resolve(arg)
}

func listScenarios(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tGPUS\tMODEL\tLAYOUT\tCONTEXT\tBATCH TOKENS\tPOLICIES")
	for _, n := range scenarios.PresetNames() {
		sc, err := scenarios.Preset(n)
		if err != nil {
			return fmt.Errorf("embedded scenario %s is invalid: %w", n, err)
		}
		j := sc.Job
		gpus := fmt.Sprintf("%d×%s", j.Cluster.GPUs, j.Cluster.GPU)
		if sc.Sweep != nil && len(sc.Sweep.GPUs) > 0 {
			gpus = fmt.Sprintf("%s..%d", gpus, sc.Sweep.GPUs[len(sc.Sweep.GPUs)-1])
		}
		model := j.Model.Name
		if sc.Sweep != nil {
			for _, v := range sc.Sweep.Variants {
				if v.Model != "" && v.Model != model && !strings.Contains(model, v.Model) {
					model += "," + v.Model
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\ttp%d pp%d vpp%d ep%d B=%d\t%d\t%s\t%s\n", n, gpus, model,
			j.Parallel.TP, j.Parallel.PP, j.Parallel.VPP, j.Parallel.EP, j.Parallel.BudgetTokens,
			j.ContextTokens, batchTokensText(sc), strings.Join(sc.Run.Policies, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nshow one with: dcpsim scenarios show NAME (--source for its TOML and assumptions)")
	return nil
}

func batchTokensText(sc *scenarios.Scenario) string {
	if sc.Workload.BatchTokensPerGPU > 0 {
		return fmt.Sprintf("%d/GPU", sc.Workload.BatchTokensPerGPU)
	}
	return fmt.Sprint(sc.Workload.BatchTokens)
}

func showScenario(w io.Writer, arg string, source bool) error {
	sc, err := scenarios.Resolve(arg)
	if err != nil {
		return err
	}
	if source {
		var scErr *scenarios.Error
		data, err := scenarios.PresetSource(arg)
		if errors.As(err, &scErr) {
			return badInput("--source is for embedded scenarios; read the file %s directly", arg)
		}
		_, err = w.Write(data)
		return err
	}
	j := sc.Job
	m := j.Model
	stages, _ := j.StageLayers()
	fmt.Fprintf(w, "scenario     %s (%s)\n", sc.Name, sc.File)
	fmt.Fprintf(w, "             %s\n", sc.Description)
	fmt.Fprintf(w, "cluster      %d × %s, %d per node (%d nodes)\n", j.Cluster.GPUs, j.Cluster.GPU, j.Cluster.GPUsPerNode, j.Nodes())
	fmt.Fprintf(w, "model        %s: %d layers (%d dense), hidden %d, %s %d/%d heads, %.1fB total / %.1fB active params\n",
		m.Name, m.Layers, m.DenseLayers, m.Hidden, strings.ToUpper(string(m.Attention)), m.QueryHeads, m.KVHeads,
		m.TotalParams()/1e9, m.ActiveParams()/1e9)
	fmt.Fprintf(w, "parallel     tp%d pp%d vpp%d ep%d, stage layers %v\n", j.Parallel.TP, j.Parallel.PP, j.Parallel.VPP, j.Parallel.EP, stages)
	fmt.Fprintf(w, "HDP pool     G = %d ranks per stage, %d EP groups, budget B = %d tokens/rank, G·B = %d\n",
		j.PoolRanks(), j.EPGroups(), j.Parallel.BudgetTokens, j.PoolCapacityTokens())
	wl := sc.Workload
	src := wl.Preset
	switch {
	case wl.File != "":
		src = fmt.Sprintf("file %s (%s, order %s)", sc.LengthFilePath(), wl.Format, wl.Order)
	case src == "":
		src = wl.Distribution.String()
	}
	fmt.Fprintf(w, "workload     %s; context %d tokens (%s longer ones); %d tokens per batch\n", src, wl.ContextTokens, wl.Overlong, wl.BatchTokens)
	fmt.Fprintf(w, "run          %d iterations (%d warm-up), seed %d, policies %s\n", sc.Run.Iterations, sc.Run.WarmupIterations, sc.Run.Seed, strings.Join(sc.Run.Policies, ", "))
	if sc.Sweep != nil {
		pts, err := sc.Points()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "sweep        %d points\n", len(pts))
		for _, p := range pts {
			fmt.Fprintf(w, "  %-40s %s, %d tokens/batch\n", p.Name, p.Scenario.Job.String(), p.Scenario.Workload.BatchTokens)
		}
	}
	return nil
}
