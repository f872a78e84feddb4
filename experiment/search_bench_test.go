package experiment

import (
	"context"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/results"
	"testing"

	"github.com/dcpsim/dcpsim/scenarios"
)

// BenchmarkSearchPreset runs the search presets end to end (expanding and
// checking their candidates, every rung, the files and figures) and reports
// the candidates settled per second and the share each rule settled
// (docs/performance.md): out of memory or invalid before any simulation,
// pruned by the bound, pruned by halving, and finished (ok). Minutes each on
// 2 cores: run it with -benchtime 1x, one preset at a time
// (-bench 'SearchPreset/search-h800-4k$').
func BenchmarkSearchPreset(b *testing.B) {
	for _, name := range []string{"search-h800-4k", "search-h800-16k"} {
		b.Run(name, func(b *testing.B) {
			sc, err := scenarios.Preset(name)
			if err != nil {
				b.Fatal(err)
			}
			var res *SearchResult
			for b.Loop() {
				res, err = Search(context.Background(), sc, SearchOptions{Dir: b.TempDir(), Jobs: 2, Figures: report.Figures{}})
				if err != nil {
					b.Fatal(err)
				}
			}
			n := float64(len(res.File.Candidates))
			c := res.File.Counts
			b.ReportMetric(n*float64(b.N)/b.Elapsed().Seconds(), "candidates/s")
			b.ReportMetric(100*float64(c[results.SearchOutOfMemory]+c[results.SearchInvalid])/n, "%memory+invalid")
			b.ReportMetric(100*float64(c[results.SearchPrunedBound])/n, "%bound")
			b.ReportMetric(100*float64(c[results.SearchPrunedHalving])/n, "%halving")
			b.ReportMetric(100*float64(c[results.SearchOK])/n, "%ok")
			b.ReportMetric(float64(res.SimulatedIterations), "iterations")
		})
	}
}
