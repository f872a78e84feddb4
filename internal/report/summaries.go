package report

import (
	"github.com/dcpsim/dcpsim/results"
	"path/filepath"
)

// summaryPaths lists every summary.json the report reads under dir, in order.
func summaryPaths(dir string) []string {
	var ps []string
	for _, rs := range reproductionScenarios {
		ps = append(ps, filepath.Join(dir, rs[0], "summary.json"))
	}
	for _, n := range heteroRuns {
		ps = append(ps, filepath.Join(dir, n, "summary.json"))
	}
	for _, n := range memoryRuns {
		ps = append(ps, filepath.Join(dir, n, "summary.json"))
	}
	return ps
}

// checkSummaries reads every summary.json the report reads under dir and
// returns the first error (a missing one is no error).
func checkSummaries(dir string) error {
	for _, p := range summaryPaths(dir) {
		if _, err := results.ReadSummary(p); err != nil {
			return err
		}
	}
	return nil
}
