package main

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"

	"github.com/dcpsim/dcpsim/scenarios"
)

// checkBestAs checks search's --best-as: a launch-line format, for an
// unsharded search printing its tables.
func checkBestAs(format string, asJSON bool, shard string) error {
	switch {
	case format == "":
		return nil
	case format != "megatron":
		return badInput("--best-as %q: the one format is megatron", format)
	case asJSON:
		return badInput("--best-as with --json: the JSON lines are read by programs; print the launch line without --json")
	case shard != "0/1":
		return badInput("--best-as with --shard: a shard has no overall best; merge the shards, then dcpsim export megatron the winner's layout")
	}
	return nil
}

// printBestAs prints the best candidate of a search as Megatron-LM
// arguments: its scenario rebuilt from the search space by ID.
func printBestAs(w io.Writer, sc *scenarios.Scenario, rows []results.SearchRow) error {
	ranked := results.RankedSearchRows(rows)
	if len(ranked) == 0 {
		return fmt.Errorf("--best-as megatron: no candidate ran on every iteration, so none is best")
	}
	best := ranked[0]
	cands, err := sc.Candidates()
	if err != nil {
		return err
	}
	if best.ID < 0 || best.ID >= len(cands) || cands[best.ID].Scenario == nil {
		return fmt.Errorf("--best-as megatron: candidate %d is not in the search space", best.ID)
	}
	c := cands[best.ID]
	cs := *c.Scenario
	if cs.Job.Parallel.BudgetTokens == 0 {
		cs.Job.Parallel.BudgetTokens = best.BudgetTokens // an automatic budget, as the search resolved it
	}
	text, err := exportScenario(&cs, c.Name, c.Policy)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nthe best candidate (%s) as Megatron-LM arguments:\n%s", c.Name, text)
	return nil
}
