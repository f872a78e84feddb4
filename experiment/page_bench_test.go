package experiment

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/results"
	"github.com/dcpsim/dcpsim/scenarios"
)

// BenchmarkRunPage measures what a run's page (index.html) costs beside
// the run: each loop simulates the default scenario as dcpsim run does
// (with its timelines), writes its results folder (figures, traces and the
// page), and writes the page alone once more. It reports each part's time
// and the page's as a share of the run's (simulation and folder: what
// dcpsim run spends) and of the simulation alone.
func BenchmarkRunPage(b *testing.B) {
	sc, err := scenarios.Preset(scenarios.DefaultPreset)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var simNs, filesNs, pageNs time.Duration
	n := 0
	for b.Loop() {
		dir := b.TempDir()
		t0 := time.Now()
		out, err := Run(sc, Options{Timelines: true})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		files, err := WriteRun(ctx, filepath.Join(dir, "run"), sc, out, report.Figures{})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := report.WritePage(dir, &results.Page{Title: out.Summary.Scenario, Files: files,
			Run: &results.RunPage{Summary: &out.Summary, Rows: out.Rows, Timelines: out.Timelines}}); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		simNs, filesNs, pageNs = simNs+t1.Sub(t0), filesNs+t2.Sub(t1), pageNs+t3.Sub(t2)
		n++
	}
	per := func(d time.Duration) float64 { return float64(d) / 1e6 / float64(n) }
	b.ReportMetric(per(simNs), "sim-ms/op")
	b.ReportMetric(per(filesNs), "folder-ms/op")
	b.ReportMetric(per(pageNs), "page-ms/op")
	b.ReportMetric(100*float64(pageNs)/float64(simNs+filesNs), "page-%-of-run")
	b.ReportMetric(100*float64(pageNs)/float64(simNs), "page-%-of-sim")
}
