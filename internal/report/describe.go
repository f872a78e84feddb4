package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
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
	if sc.Search != nil {
		return writeSearchSpace(w, sc)
	}
	return nil
}

// writeSearchSpace prints a [search]'s axes and its candidates by status
// before any simulation.
func writeSearchSpace(w io.Writer, sc *scenarios.Scenario) error {
	cands, err := sc.Candidates()
	if err != nil {
		return err
	}
	var invalid, oom int
	for _, c := range cands {
		switch {
		case c.OutOfMemory:
			oom++
		case c.Problem != "":
			invalid++
		}
	}
	sr := sc.Search
	fmt.Fprintf(w, "search       %d candidates (layouts × policies): %d invalid, %d out of memory before any simulation (dcpsim search)\n",
		len(cands), invalid, oom)
	axis := func(name string, v any, empty bool) {
		if !empty {
			fmt.Fprintf(w, "  %-10s %v\n", name, v)
		}
	}
	axis("gpus", sr.GPUs, len(sr.GPUs) == 0)
	axis("gpu", sr.GPU, len(sr.GPU) == 0)
	axis("pool_gpus", sr.PoolGPUs, len(sr.PoolGPUs) == 0)
	axis("tp", sr.TP, len(sr.TP) == 0)
	axis("pp", sr.PP, len(sr.PP) == 0)
	axis("vpp", sr.VPP, len(sr.VPP) == 0)
	axis("ep", sr.EP, len(sr.EP) == 0)
	axis("budget", sr.Budgets, len(sr.Budgets) == 0)
	axis("recompute", sr.Recompute, len(sr.Recompute) == 0)
	axis("precision", sr.Precision, len(sr.Precision) == 0)
	axis("policies", sr.Policies, len(sr.Policies) == 0)
	for _, name := range slices.Sorted(maps.Keys(sr.PolicySpaces)) {
		ps := sr.PolicySpaces[name]
		var parts []string
		add := func(key string, v any, n int) {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%s %v", key, v))
			}
		}
		add("gpus", ps.GPUs, len(ps.GPUs))
		add("tp", ps.TP, len(ps.TP))
		add("pp", ps.PP, len(ps.PP))
		add("vpp", ps.VPP, len(ps.VPP))
		add("ep", ps.EP, len(ps.EP))
		add("budget", ps.Budgets, len(ps.Budgets))
		add("recompute", ps.Recompute, len(ps.Recompute))
		fmt.Fprintf(w, "  %-10s only %s\n", name, strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "  halving    top %d, eta %d, margin %g\n", sr.Top, sr.Eta, sr.Margin)
	return nil
}
