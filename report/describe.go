package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/scenarios"
)

// WriteScenarioList prints the embedded scenarios, one row each.
func WriteScenarioList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tGPUS\tMODEL\tLAYOUT\tCONTEXT\tBATCH TOKENS\tPOLICIES")
	for _, n := range scenarios.PresetNames() {
		sc, err := scenarios.Preset(n)
		if err != nil {
			return fmt.Errorf("embedded scenario %s is invalid: %w", n, err)
		}
		j := sc.Job
		gpus := fmt.Sprintf("%d×%s", j.Cluster.GPUs, j.Cluster.GPU)
		if j.Cluster.Mixed() {
			gpus = strings.ReplaceAll(j.Cluster.Label(), " ", "")
		}
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

// WriteScenario prints a scenario's resolved settings (and its sweep points).
func WriteScenario(w io.Writer, sc *scenarios.Scenario) error {
	j := sc.Job
	m := j.Model
	stages, _ := j.StageLayers()
	fmt.Fprintf(w, "scenario     %s (%s)\n", sc.Name, sc.File)
	fmt.Fprintf(w, "             %s\n", sc.Description)
	if j.Cluster.Mixed() {
		fmt.Fprintf(w, "cluster      %d GPUs: %s, %d per node (%d nodes), ranks pool by pool\n", j.Cluster.GPUs, j.Cluster.Label(), j.Cluster.GPUsPerNode, j.Nodes())
	} else {
		fmt.Fprintf(w, "cluster      %d × %s, %d per node (%d nodes)\n", j.Cluster.GPUs, j.Cluster.GPU, j.Cluster.GPUsPerNode, j.Nodes())
	}
	fmt.Fprintf(w, "model        %s: %d layers (%d dense), hidden %d, %s %d/%d heads, %.1fB total / %.1fB active params\n",
		m.Name, m.Layers, m.DenseLayers, m.Hidden, strings.ToUpper(string(m.Attention)), m.QueryHeads, m.KVHeads,
		m.TotalParams()/1e9, m.ActiveParams()/1e9)
	fmt.Fprintf(w, "parallel     tp%d pp%d vpp%d ep%d, stage layers %v\n", j.Parallel.TP, j.Parallel.PP, j.Parallel.VPP, j.Parallel.EP, stages)
	fmt.Fprintf(w, "HDP pool     G = %d ranks per stage, %d EP groups, budget B = %d tokens/rank, G·B = %d\n",
		j.PoolRanks(), j.EPGroups(), j.Parallel.BudgetTokens, j.PoolCapacityTokens())
	mem, err := NewMemoryReport(sc)
	if err != nil {
		return err
	}
	for i, l := range MemoryLines(mem) {
		label := "memory"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-12s %s\n", label, l)
	}
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
