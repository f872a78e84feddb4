package experiment

import (
	"context"
	"testing"

	"github.com/dcpsim/dcpsim/report"
	"github.com/dcpsim/dcpsim/scenarios"
)

// BenchmarkSearchPreset runs the search-h800-4k preset end to end (expanding
// and checking its 3,294 candidates, every rung, the files and figures) and
// reports the candidates settled per second and the share each rule settled
// (docs/performance.md, "Search"): out of memory or invalid before any
// simulation, pruned by the bound, pruned by halving, and finished (ok).
// About two minutes on 2 cores: run it with -benchtime 1x.
func BenchmarkSearchPreset(b *testing.B) {
	sc, err := scenarios.Preset("search-h800-4k")
	if err != nil {
		b.Fatal(err)
	}
	var res *SearchResult
	for b.Loop() {
		res, err = Search(context.Background(), sc, SearchOptions{Dir: b.TempDir(), Jobs: 2, Figures: true})
		if err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(res.File.Candidates))
	c := res.File.Counts
	b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
	b.ReportMetric(100*float64(c[report.SearchOutOfMemory]+c[report.SearchInvalid])/n, "%memory+invalid")
	b.ReportMetric(100*float64(c[report.SearchPrunedBound])/n, "%bound")
	b.ReportMetric(100*float64(c[report.SearchPrunedHalving])/n, "%halving")
	b.ReportMetric(100*float64(c[report.SearchOK])/n, "%ok")
	b.ReportMetric(float64(res.SimulatedIterations), "iterations")
}
