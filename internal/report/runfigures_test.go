package report

import (
	"bytes"
	"flag"
	"github.com/dcpsim/dcpsim/results"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/dcpsim/dcpsim/sched"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testSummary is a run of two policies, plus a failed third that every figure
// must leave out.
func testSummary() *results.Summary {
	return &results.Summary{
		Scenario: "figtest", Iterations: 4, WarmupIterations: 1,
		Policies: []results.PolicySummary{
			{
				Policy: "hydra", Iterations: 3, StepSecondsMean: 10, TokensPerDay: 123.4e9,
				DegreeShares: []sched.DegreeShare{{Degree: 1, Share: 0.5}, {Degree: 2, Share: 0.25}, {Degree: 8, Share: 0.25}},
				MBSeconds:    []float64{0.01, 0.02, 0.02, 0.5, 1.0}, Measures: results.Measures{ComputeShare: 0.7, ExposedCommShare: 0.1, PPBubbleShare: 0.1, DPBubbleShare: 0.05, PlannerStallShare: 0.02, SyncShare: 0.03},
			},
			{
				Policy: "mcore", Iterations: 3, StepSecondsMean: 12, TokensPerDay: 98.7e9,
				DegreeShares: []sched.DegreeShare{{Degree: 4, Share: 1}},
				MBSeconds:    []float64{0.2, 0.3, 0.3, 0.4}, Measures: results.Measures{ComputeShare: 0.6, ExposedCommShare: 0.2, PPBubbleShare: 0.1, DPBubbleShare: 0.05, SyncShare: 0.05},
			},
			{Policy: "broken/policy", Error: "boom"},
		}, Layout: results.Layout{GPUs: 16, Model: "m"},
	}
}

func testRows() []results.IterationRow {
	var rows []results.IterationRow
	for _, pol := range []string{"hydra", "mcore", "broken/policy"} {
		for it := range 4 {
			rows = append(rows, results.IterationRow{Policy: pol, Iteration: it, Warmup: it == 0, StepSeconds: 10 + float64(it)})
		}
	}
	return rows
}

func TestWriteRunFigures(t *testing.T) {
	full := func() (*results.Summary, []results.IterationRow, []results.Timeline) {
		return testSummary(), testRows(), []results.Timeline{testTimeline("hydra"), testTimeline("mcore"), testTimeline("broken/policy")}
	}
	all := []string{"breakdown", "cp-degrees", "mb-time", "step-time", "throughput", "timeline-hydra", "timeline-mcore"}
	for _, tc := range []struct {
		name   string
		modify func(s *results.Summary, rows *[]results.IterationRow, tls *[]results.Timeline)
		want   []string
	}{
		{"all", func(*results.Summary, *[]results.IterationRow, *[]results.Timeline) {}, all},
		{"no rows, no timelines", func(s *results.Summary, rows *[]results.IterationRow, tls *[]results.Timeline) {
			*rows, *tls = nil, nil
		},
			[]string{"breakdown", "cp-degrees", "mb-time", "throughput"}},
		{"no MB times or degrees", func(s *results.Summary, rows *[]results.IterationRow, tls *[]results.Timeline) {
			for i := range s.Policies {
				s.Policies[i].MBSeconds, s.Policies[i].DegreeShares = nil, nil
			}
		}, []string{"breakdown", "step-time", "throughput", "timeline-hydra", "timeline-mcore"}},
		{"empty timeline skipped", func(s *results.Summary, rows *[]results.IterationRow, tls *[]results.Timeline) {
			(*tls)[1] = results.Timeline{Policy: "mcore"}
		}, []string{"breakdown", "cp-degrees", "mb-time", "step-time", "throughput", "timeline-hydra"}},
		{"two timelines of a policy, odd name", func(s *results.Summary, rows *[]results.IterationRow, tls *[]results.Timeline) {
			a, b := testTimeline("a b/c"), testTimeline("a b/c")
			b.Iteration = 3
			*tls = []results.Timeline{a, b}
		}, []string{"breakdown", "cp-degrees", "mb-time", "step-time", "throughput", "timeline-a-b-c-it2", "timeline-a-b-c-it3"}},
		{"non-finite values drawn as zero or left out", func(s *results.Summary, rows *[]results.IterationRow, tls *[]results.Timeline) {
			s.Policies[0].TokensPerDay, s.Policies[1].ComputeShare = math.NaN(), math.Inf(1)
			s.Policies[0].MBSeconds = []float64{math.NaN()}
			(*rows)[1].StepSeconds = math.NaN()
		}, all},
		{"every policy failed", func(s *results.Summary, rows *[]results.IterationRow, tls *[]results.Timeline) {
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
func goldenSummary() *results.Summary {
	return &results.Summary{Scenario: "golden", Policies: []results.PolicySummary{
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

func TestCPDegreeBins(t *testing.T) {
	for _, tc := range []struct {
		name    string
		degrees []int
		labels  []string
		binned  bool
	}{
		{"powers of two drawn one by one", []int{8, 1, 2, 8, 32}, []string{"1", "2", "8", "32"}, false},
		{"idle slots stay unbinned", []int{0, 4, 16}, []string{"0", "4", "16"}, false},
		{"any integer binned", []int{1, 2, 3, 5, 6, 32}, []string{"1", "2", "3-4", "5-8", "9-16", "17-32"}, true},
		{"binned from the lowest range", []int{3, 12}, []string{"3-4", "5-8", "9-16"}, true},
		{"idle first when binned", []int{7, 0, 1}, []string{"0", "1", "2", "3-4", "5-8"}, true},
		{"more than 12 powers of two", []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096},
			[]string{"1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", "65-128", "129-256", "257-512", "513-1024", "1025-2048", "2049-4096"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := cpDegreeBins(tc.degrees)
			if !slices.Equal(b.labels, tc.labels) || b.binned != tc.binned {
				t.Errorf("labels %q binned %v, want %q binned %v", b.labels, b.binned, tc.labels, tc.binned)
			}
			// Each degree falls in the group whose label covers it.
			for _, d := range tc.degrees {
				lo, hi := d, d
				l := b.labels[b.of(d)]
				if a, z, ok := strings.Cut(l, "-"); ok {
					lo, _ = strconv.Atoi(a)
					hi, _ = strconv.Atoi(z)
				} else {
					lo, _ = strconv.Atoi(l)
					hi = lo
				}
				if d < lo || d > hi {
					t.Errorf("degree %d in group %q", d, l)
				}
			}
		})
	}
}

// TestCPDegreesManyDegrees: ByteScale-like degrees (every integer up to 700)
// over six policies give a figure of bounded width whose binned shares sum to
// each policy's total.
func TestCPDegreesManyDegrees(t *testing.T) {
	s := &results.Summary{Scenario: "many"}
	for p := range 6 {
		ps := results.PolicySummary{Policy: "p" + strconv.Itoa(p)}
		n := 100 + 120*p
		for d := range n {
			ps.DegreeShares = append(ps.DegreeShares, sched.DegreeShare{Degree: d + 1, Share: float64(d%5+1) / float64(3*n)})
		}
		s.Policies = append(s.Policies, ps)
	}
	f, err := cpDegreesFigure(s)
	if err != nil || f == nil {
		t.Fatalf("cpDegreesFigure: %v, %v", f, err)
	}
	if f.w > cpDegreesMaxW {
		t.Errorf("plot %.1f in wide, want at most %.1f", f.w/vg.Inch, cpDegreesMaxW/vg.Inch)
	}
	dir := t.TempDir()
	if err := writeFigure(filepath.Join(dir, "cp-degrees.png"), *f, "png"); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(filepath.Join(dir, "cp-degrees.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cfg, err := png.DecodeConfig(r)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width > 1600 {
		t.Errorf("PNG %d px wide, want at most 1600 (12 in of plot and a legend at 96 dpi)", cfg.Width)
	}
	var degrees []int
	for _, ps := range s.Policies {
		for _, d := range ps.DegreeShares {
			degrees = append(degrees, d.Degree)
		}
	}
	bins := cpDegreeBins(degrees)
	if !bins.binned || len(bins.labels) != 11 {
		t.Errorf("groups %q, want the 11 power-of-two ranges up to 1024", bins.labels)
	}
	for _, ps := range s.Policies {
		var total, binned float64
		for _, d := range ps.DegreeShares {
			total += 100 * d.Share
		}
		for _, v := range bins.values(ps.DegreeShares) {
			binned += v
		}
		if math.Abs(binned-total) > 1e-9*total {
			t.Errorf("%s: binned shares sum to %g%%, unbinned to %g%%", ps.Policy, binned, total)
		}
	}
}
