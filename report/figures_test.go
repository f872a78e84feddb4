package report

import (
	"bytes"
	"flag"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testSummary is a run of two policies, plus a failed third that every figure
// must leave out.
func testSummary() *Summary {
	return &Summary{
		Scenario: "figtest", GPUs: 16, Model: "m", Iterations: 4, WarmupIterations: 1,
		Policies: []PolicySummary{
			{
				Policy: "hydra", Iterations: 3, StepSecondsMean: 10, TokensPerDay: 123.4e9,
				ComputeShare: 0.7, ExposedCommShare: 0.1, PPBubbleShare: 0.1, DPBubbleShare: 0.05, PlannerStallShare: 0.02, SyncShare: 0.03,
				DegreeShares: []DegreeShare{{1, 0.5}, {2, 0.25}, {8, 0.25}},
				MBSeconds:    []float64{0.01, 0.02, 0.02, 0.5, 1.0},
			},
			{
				Policy: "mcore", Iterations: 3, StepSecondsMean: 12, TokensPerDay: 98.7e9,
				ComputeShare: 0.6, ExposedCommShare: 0.2, PPBubbleShare: 0.1, DPBubbleShare: 0.05, SyncShare: 0.05,
				DegreeShares: []DegreeShare{{4, 1}},
				MBSeconds:    []float64{0.2, 0.3, 0.3, 0.4},
			},
			{Policy: "broken/policy", Error: "boom"},
		},
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

// testTimeline is 2 stages × 2 ranks of a few forward and backward ops, a grad
// sync and an optimizer step, after a planner stall.
func testTimeline(policy string) Timeline {
	tl := Timeline{Policy: policy, Iteration: 2, IterationNanos: 10e9, PlannerStallNanos: 0.5e9, Stages: 2, Ranks: []int{0, 3}}
	for _, r := range tl.Ranks {
		for st := range 2 {
			off := int64(st) * 1e9
			tl.Slices = append(tl.Slices,
				Slice{Stage: st, Rank: r, Kind: Forward, MB: 0, StartNanos: 1e9 + off, EndNanos: 2e9 + off},
				Slice{Stage: st, Rank: r, Kind: Forward, MB: 1, StartNanos: 2e9 + off, EndNanos: 3e9 + off},
				Slice{Stage: st, Rank: r, Kind: Backward, MB: 0, StartNanos: 5e9 - off, EndNanos: 7e9 - off},
				Slice{Stage: st, Rank: r, Kind: GradSync, MB: -1, StartNanos: 8e9, EndNanos: 9e9},
				Slice{Stage: st, Rank: r, Kind: Optimizer, MB: -1, StartNanos: 9e9, EndNanos: 10e9},
			)
		}
	}
	return tl
}

// figureFiles are NAME.png and NAME.svg of each name, sorted.
func figureFiles(names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n+".png", n+".svg")
	}
	slices.Sort(out)
	return out
}

// checkFigureFiles checks that got is want, that dir holds exactly those files,
// none empty, and that the PNGs decode.
func checkFigureFiles(t *testing.T, dir string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var inDir []string
	for _, e := range entries {
		inDir = append(inDir, e.Name())
	}
	if !slices.Equal(inDir, want) {
		t.Errorf("folder holds %q, want %q", inDir, want)
	}
	for _, name := range got {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", name)
		}
		switch filepath.Ext(name) {
		case ".png":
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case ".svg":
			if !bytes.Contains(b, []byte("<svg")) {
				t.Errorf("%s holds no <svg element", name)
			}
		}
	}
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

// sweepPoint is a sweep point of hydra and mcore at gpus GPUs and hydra cap
// hcap (0: closed form, C* = 4).
func sweepPoint(i, gpus, hcap int) SweepPoint {
	pol := func(name string, scale float64) PolicySummary {
		return PolicySummary{
			Policy: name, StepSecondsMean: scale * (10 + float64(hcap)), TokensPerDay: float64(gpus) * 1e9 / scale,
			PlannerModeledSeconds: scale * 1e-3 * float64(gpus), PlannerGoSeconds: scale * 1e-4 * float64(gpus),
		}
	}
	return SweepPoint{
		Index: i, GPUs: gpus, Model: "m", HydraCap: hcap, HydraClosedFormCap: 4,
		Axes:    []Axis{{"gpus", strconv.Itoa(gpus)}, {"hydra.cap", strconv.Itoa(hcap)}},
		Summary: Summary{GPUs: gpus, Policies: []PolicySummary{pol("hydra", 1), pol("mcore", 1.2), {Policy: "x", Error: "failed"}}},
	}
}

func TestWriteSweepFigures(t *testing.T) {
	grid := func(gpus, caps []int) []SweepPoint {
		var pts []SweepPoint
		for _, g := range gpus {
			for _, c := range caps {
				pts = append(pts, sweepPoint(len(pts), g, c))
			}
		}
		return pts
	}
	for _, tc := range []struct {
		name string
		pts  []SweepPoint
		want []string
	}{
		{"gpus and caps", grid([]int{8, 16, 32}, []int{0, 2, 4, 8}), []string{"sweep-cap", "sweep-planner", "sweep-throughput"}},
		{"gpus only", grid([]int{8, 64}, []int{0}), []string{"sweep-planner", "sweep-throughput"}},
		{"caps only", grid([]int{16}, []int{1, 2, 4, 8, 16}), []string{"sweep-cap"}},
		{"one point", grid([]int{16}, []int{2}), nil},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			got, err := WriteSweepFigures(dir, tc.pts)
			if err != nil {
				t.Fatal(err)
			}
			checkFigureFiles(t, dir, got, figureFiles(tc.want...))
		})
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

func TestTimelineGanttRange(t *testing.T) {
	tl := testTimeline("hydra")
	// An op that runs past the iteration's end and one on a rank not listed.
	tl.Slices = append(tl.Slices,
		Slice{Stage: 1, Rank: 3, Kind: Backward, StartNanos: 9.5e9, EndNanos: 12e9},
		Slice{Stage: 0, Rank: 7, Kind: Forward, StartNanos: 0.5e9, EndNanos: 0.6e9},
	)
	g, tracks, kinds := timelineGantt(tl, palette[0])
	if len(tracks) != 6 {
		t.Fatalf("%d tracks, want 6 (2 stages × ranks 0, 3, 7)", len(tracks))
	}
	// Tracks top down, one unit apart, with half a unit more between stages.
	wantTracks := []timelineTrack{{0, 0, 5.5}, {0, 3, 4.5}, {0, 7, 3.5}, {1, 0, 2}, {1, 3, 1}, {1, 7, 0}}
	if !slices.Equal(tracks, wantTracks) {
		t.Errorf("tracks %v, want %v", tracks, wantTracks)
	}
	if want := []SliceKind{Forward, Backward, GradSync, Optimizer, PlannerStall}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	// The planner stall is drawn on every track, then one bar per slice.
	if want := len(tracks) + len(tl.Slices); len(g.Bars) != want {
		t.Fatalf("%d bars, want %d", len(g.Bars), want)
	}
	xmin, xmax, ymin, ymax := g.DataRange()
	for _, sl := range tl.Slices {
		if x0, x1 := float64(sl.StartNanos)/1e9, float64(sl.EndNanos)/1e9; x0 < xmin || x1 > xmax {
			t.Errorf("slice %+v [%g, %g] s outside the x range [%g, %g]", sl, x0, x1, xmin, xmax)
		}
	}
	for _, b := range g.Bars {
		if b.Y0 < ymin || b.Y1 > ymax || b.X0 < xmin || b.X1 > xmax {
			t.Errorf("bar %+v outside the range x [%g, %g], y [%g, %g]", b, xmin, xmax, ymin, ymax)
		}
	}
	if xmin != 0 || xmax != 12 || ymin != -0.5 || ymax != 6 {
		t.Errorf("range x [%g, %g] y [%g, %g], want x [0, 12] y [-0.5, 6]", xmin, xmax, ymin, ymax)
	}
	// Each slice's bar is on its track.
	for i, sl := range tl.Slices {
		b := g.Bars[len(tracks)+i]
		j := slices.IndexFunc(tracks, func(tr timelineTrack) bool { return tr.Stage == sl.Stage && tr.Rank == sl.Rank })
		if j < 0 || (b.Y0+b.Y1)/2 != tracks[j].Y {
			t.Errorf("slice %+v drawn at y %g, want its track's", sl, (b.Y0+b.Y1)/2)
		}
	}
}

// TestSafeName: names derived from scenarios and policies stay inside their
// parent folder and within [a-z0-9._-].
func TestSafeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hydra", "hydra"},
		{"mcore-v1.2_x", "mcore-v1.2_x"},
		{"testbed-256k", "testbed-256k"},
		{"../../etc", "etc"},
		{"A/B C", "a-b-c"},
		{"..", "unnamed"},
		{"", "unnamed"},
		{"é", "unnamed"},
		{"weak-scaling/hy3/gpus=8192", "weak-scaling-hy3-gpus-8192"},
		{".hidden", "hidden"},
	} {
		if got := SafeName(tc.in); got != tc.want {
			t.Errorf("SafeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEcdfPoints(t *testing.T) {
	pts := ecdfPoints([]float64{3, 1, 2, 2, -1}, true)
	want := []struct{ x, y float64 }{{1, 0}, {1, 0.25}, {2, 0.75}, {3, 1}}
	if len(pts) != len(want) {
		t.Fatalf("points %v, want %v", pts, want)
	}
	for i, w := range want {
		if pts[i].X != w.x || pts[i].Y != w.y {
			t.Errorf("point %d = %v, want %v", i, pts[i], w)
		}
	}
	big := make([]float64, 100000)
	for i := range big {
		big[i] = float64(i)
	}
	if pts := ecdfPoints(big, false); len(pts) > 2100 || pts[len(pts)-1].Y != 1 {
		t.Errorf("%d points ending at %v, want at most ~2000 ending at 1", len(pts), pts[len(pts)-1])
	}
}

func TestMostCommonAndTicks(t *testing.T) {
	if got := mostCommon([]int{8, 4, 8, 4, 2}); got != 4 {
		t.Errorf("mostCommon = %d, want 4 (the least of the most frequent)", got)
	}
	if got := mostCommon(nil); got != 0 {
		t.Errorf("mostCommon(nil) = %d, want 0", got)
	}
	labelled := 0
	for _, tk := range logTicks.Ticks(0.002, 0.005) {
		if tk.Label != "" {
			labelled++
		}
	}
	if labelled < 2 {
		t.Errorf("logTicks(0.002, 0.005) labels %d ticks, want at least 2", labelled)
	}
	var got []float64
	var labels []string
	for _, tk := range pow2Ticks.Ticks(0, 4) {
		got = append(got, tk.Value)
		labels = append(labels, tk.Label)
	}
	if want := []float64{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("pow2Ticks(0, 4) at %v, want %v", got, want)
	}
	if want := []string{"1", "2", "4", "8", "16"}; !slices.Equal(labels, want) {
		t.Errorf("pow2Ticks(0, 4) labelled %q, want %q", labels, want)
	}
}

// bigTimeline is pp stages × 3 ranks × mbs microbatches of forward and
// backward ops: 6·pp·mbs slices.
func bigTimeline(pp, mbs int) Timeline {
	tl := Timeline{Policy: "hydra", IterationNanos: 1, Stages: pp, Ranks: []int{0, 5, 9}}
	for st := range pp {
		for _, r := range tl.Ranks {
			t := int64(st) * 50e6
			for mb := range mbs {
				d := int64(20e6 + (mb%7)*5e6)
				tl.Slices = append(tl.Slices,
					Slice{Stage: st, Rank: r, Kind: Forward, MB: mb, StartNanos: t, EndNanos: t + d},
					Slice{Stage: st, Rank: r, Kind: Backward, MB: mb, StartNanos: t + d, EndNanos: t + 3*d})
				t += 3 * d
			}
			tl.IterationNanos = max(tl.IterationNanos, t)
		}
	}
	return tl
}

// BenchmarkTimelineFigure draws a 9600-slice timeline as PNG and SVG.
func BenchmarkTimelineFigure(b *testing.B) {
	s := &Summary{Policies: []PolicySummary{{Policy: "hydra"}}}
	tls := []Timeline{bigTimeline(8, 200)}
	dir := b.TempDir()
	for b.Loop() {
		if _, err := WriteRunFigures(dir, s, nil, tls); err != nil {
			b.Fatal(err)
		}
	}
}
