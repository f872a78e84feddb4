package report

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testSummary is a run of two policies, plus a failed third that every figure
// must leave out.
func testSummary() *Summary {
	return &Summary{
		Scenario: "figtest", Iterations: 4, WarmupIterations: 1,
		Policies: []PolicySummary{
			{
				Policy: "hydra", Iterations: 3, StepSecondsMean: 10, TokensPerDay: 123.4e9,
				DegreeShares: []sched.DegreeShare{{Degree: 1, Share: 0.5}, {Degree: 2, Share: 0.25}, {Degree: 8, Share: 0.25}},
				MBSeconds:    []float64{0.01, 0.02, 0.02, 0.5, 1.0}, Measures: Measures{ComputeShare: 0.7, ExposedCommShare: 0.1, PPBubbleShare: 0.1, DPBubbleShare: 0.05, PlannerStallShare: 0.02, SyncShare: 0.03},
			},
			{
				Policy: "mcore", Iterations: 3, StepSecondsMean: 12, TokensPerDay: 98.7e9,
				DegreeShares: []sched.DegreeShare{{Degree: 4, Share: 1}},
				MBSeconds:    []float64{0.2, 0.3, 0.3, 0.4}, Measures: Measures{ComputeShare: 0.6, ExposedCommShare: 0.2, PPBubbleShare: 0.1, DPBubbleShare: 0.05, SyncShare: 0.05},
			},
			{Policy: "broken/policy", Error: "boom"},
		}, Layout: Layout{GPUs: 16, Model: "m"},
	}
}

func testRows() []IterationRow {
	var rows []IterationRow
	for _, pol := range []string{"hydra", "mcore", "broken/policy"} {
		for it := range 4 {
			rows = append(rows, IterationRow{Policy: pol, Iteration: it, Warmup: it == 0, StepSeconds: 10 + float64(it)})
		}
	}
	return rows
}

func TestWriteRunFigures(t *testing.T) {
	full := func() (*Summary, []IterationRow, []Timeline) {
		return testSummary(), testRows(), []Timeline{testTimeline("hydra"), testTimeline("mcore"), testTimeline("broken/policy")}
	}
	all := []string{"breakdown", "cp-degrees", "mb-time", "step-time", "throughput", "timeline-hydra", "timeline-mcore"}
	for _, tc := range []struct {
		name   string
		modify func(s *Summary, rows *[]IterationRow, tls *[]Timeline)
		want   []string
	}{
		{"all", func(*Summary, *[]IterationRow, *[]Timeline) {}, all},
		{"no rows, no timelines", func(s *Summary, rows *[]IterationRow, tls *[]Timeline) { *rows, *tls = nil, nil },
			[]string{"breakdown", "cp-degrees", "mb-time", "throughput"}},
		{"no MB times or degrees", func(s *Summary, rows *[]IterationRow, tls *[]Timeline) {
			for i := range s.Policies {
				s.Policies[i].MBSeconds, s.Policies[i].DegreeShares = nil, nil
			}
		}, []string{"breakdown", "step-time", "throughput", "timeline-hydra", "timeline-mcore"}},
		{"empty timeline skipped", func(s *Summary, rows *[]IterationRow, tls *[]Timeline) {
			(*tls)[1] = Timeline{Policy: "mcore"}
		}, []string{"breakdown", "cp-degrees", "mb-time", "step-time", "throughput", "timeline-hydra"}},
		{"two timelines of a policy, odd name", func(s *Summary, rows *[]IterationRow, tls *[]Timeline) {
			a, b := testTimeline("a b/c"), testTimeline("a b/c")
			b.Iteration = 3
			*tls = []Timeline{a, b}
		}, []string{"breakdown", "cp-degrees", "mb-time", "step-time", "throughput", "timeline-a-b-c-it2", "timeline-a-b-c-it3"}},
		{"non-finite values drawn as zero or left out", func(s *Summary, rows *[]IterationRow, tls *[]Timeline) {
			s.Policies[0].TokensPerDay, s.Policies[1].ComputeShare = math.NaN(), math.Inf(1)
			s.Policies[0].MBSeconds = []float64{math.NaN()}
			(*rows)[1].StepSeconds = math.NaN()
		}, all},
		{"every policy failed", func(s *Summary, rows *[]IterationRow, tls *[]Timeline) {
			for i := range s.Policies {
				s.Policies[i].Error = "x"
			}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, rows, tls := full()
			tc.modify(s, &rows, &tls)
			dir := t.TempDir()
			got, err := WriteRunFigures(dir, s, rows, tls)
			if err != nil {
				t.Fatal(err)
			}
			checkFigureFiles(t, dir, got, figureFiles(tc.want...))
		})
	}
	if _, err := WriteRunFigures(t.TempDir(), nil, nil, nil); err == nil {
		t.Error("WriteRunFigures(nil summary) succeeded, want an error")
	}
	if _, err := WriteRunFigures(filepath.Join(t.TempDir(), "missing"), testSummary(), nil, nil); err == nil {
		t.Error("WriteRunFigures into a missing folder succeeded, want an error")
	}
}

// goldenSummary is a fixed two-policy summary for the golden throughput SVG.
func goldenSummary() *Summary {
	return &Summary{Scenario: "golden", Policies: []PolicySummary{
		{Policy: "hydra", TokensPerDay: 150.25e9},
		{Policy: "static", TokensPerDay: 42.5e9},
	}}
}

func TestThroughputGolden(t *testing.T) {
	render := func() []byte {
		t.Helper()
		f, err := throughputFigure(goldenSummary())
		if err != nil || f == nil {
			t.Fatalf("throughputFigure: %v, %v", f, err)
		}
		path := filepath.Join(t.TempDir(), "throughput.svg")
		if err := writeFigure(path, *f, "svg"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	got := render()
	if again := render(); !bytes.Equal(got, again) {
		t.Fatal("the throughput SVG differs between two renderings")
	}
	golden := filepath.Join("testdata", "throughput.golden.svg")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./report/ -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("throughput SVG differs from %s (%d bytes, want %d); if the change is intended, regenerate with go test ./report/ -run Golden -update", golden, len(got), len(want))
	}
}
