package report

import (
	"github.com/dcpsim/dcpsim/results"
	"math"
	"slices"
	"strconv"
	"testing"

	"gonum.org/v1/plot/vg"
)

// sweepPoint is a sweep point of hydra and mcore at gpus GPUs and hydra cap
// hcap (0: closed form, C* = 4).
func sweepPoint(i, gpus, hcap int) results.SweepPoint {
	pol := func(name string, scale float64) results.PolicySummary {
		return results.PolicySummary{
			Policy: name, StepSecondsMean: scale * (10 + float64(hcap)), TokensPerDay: float64(gpus) * 1e9 / scale,
			ChosenOptions: map[string]float64{"cap": 4}, Measures: results.Measures{PlannerModeledSeconds: scale * 1e-3 * float64(gpus)},
		}
	}
	return results.SweepPoint{
		Index: i, GPUs: gpus, Model: "m",
		Axes:    []results.Axis{{Key: "gpus", Value: strconv.Itoa(gpus)}, {Key: "hydra.cap", Value: strconv.Itoa(hcap)}},
		Summary: results.Summary{Policies: []results.PolicySummary{pol("hydra", 1), pol("mcore", 1.2), {Policy: "x", Error: "failed"}}, Layout: results.Layout{GPUs: gpus}},
	}
}

func TestWriteSweepFigures(t *testing.T) {
	grid := func(gpus, caps []int) []results.SweepPoint {
		var pts []results.SweepPoint
		for _, g := range gpus {
			for _, c := range caps {
				pts = append(pts, sweepPoint(len(pts), g, c))
			}
		}
		return pts
	}
	for _, tc := range []struct {
		name string
		pts  []results.SweepPoint
		want []string
	}{
		{"gpus and caps", grid([]int{8, 16, 32}, []int{0, 2, 4, 8}), []string{"sweep-hydra-cap", "sweep-planner", "sweep-throughput"}},
		{"gpus only", grid([]int{8, 64}, []int{0}), []string{"sweep-planner", "sweep-throughput"}},
		{"caps only", grid([]int{16}, []int{1, 2, 4, 8, 16}), []string{"sweep-hydra-cap"}},
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

// TestMostCommon: the most frequent value, the least of them on a tie, 0 for
// none.
func TestMostCommon(t *testing.T) {
	if got := mostCommon([]int{8, 4, 8, 4, 2}); got != 4 {
		t.Errorf("mostCommon = %d, want 4 (the least of the most frequent)", got)
	}
	if got := mostCommon(nil); got != 0 {
		t.Errorf("mostCommon(nil) = %d, want 0", got)
	}
}

// axesPoint is a sweep point of hydra, mcore and a failed policy at the given
// variant (model "m-" + variant), GPUs and context length, on the axes named.
func axesPoint(i int, variant string, gpus, ctx int, keys ...string) results.SweepPoint {
	pol := func(name string, scale float64) results.PolicySummary {
		return results.PolicySummary{Policy: name, StepSecondsMean: scale * float64(ctx) / 1e4, TokensPerDay: float64(gpus) * 1e9 / scale / float64(ctx>>17+1),
			PeakMemoryMaxBytes: scale * float64(ctx) * 1e5, HBMBytes: 80e9}
	}
	pt := results.SweepPoint{Index: i, GPUs: gpus, Model: "m-" + variant, ContextTokens: ctx,
		Summary: results.Summary{Policies: []results.PolicySummary{pol("hydra", 1), pol("mcore", 1.3), {Policy: "x", Error: "failed"}}, Layout: results.Layout{GPUs: gpus}}}
	for _, k := range keys {
		v := map[string]string{"variant": variant, "gpus": strconv.Itoa(gpus), "context_tokens": strconv.Itoa(ctx)}[k]
		pt.Axes = append(pt.Axes, results.Axis{Key: k, Value: v})
	}
	return pt
}

// TestWriteSweepFiguresAxes: variant sweeps draw grouped bars, context sweeps
// lines over the context length, beside the figures over GPUs.
func TestWriteSweepFiguresAxes(t *testing.T) {
	grid := func(variants []string, gpus, ctxs []int, keys ...string) []results.SweepPoint {
		var pts []results.SweepPoint
		for _, v := range variants {
			for _, g := range gpus {
				for _, c := range ctxs {
					pts = append(pts, axesPoint(len(pts), v, g, c, keys...))
				}
			}
		}
		return pts
	}
	two := []string{"small", "large"}
	for _, tc := range []struct {
		name string
		pts  []results.SweepPoint
		want []string
	}{
		{"variants only", grid(two, []int{64}, []int{131072}, "variant"), []string{"sweep-variants"}},
		{"one variant", grid(two[:1], []int{64}, []int{131072, 262144}, "variant", "context_tokens"), []string{"sweep-context", "sweep-memory"}},
		{"contexts only", grid([]string{""}, []int{64}, []int{131072, 262144, 786432}, "context_tokens"), []string{"sweep-context", "sweep-memory"}},
		{"variants and contexts", grid(two, []int{64}, []int{131072, 262144, 524288, 786432}, "variant", "context_tokens"),
			[]string{"sweep-context", "sweep-memory", "sweep-variants"}},
		{"variants and gpus", grid(two, []int{8192, 16384, 32768}, []int{8192}, "variant", "gpus"),
			[]string{"sweep-memory", "sweep-throughput", "sweep-variants"}},
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

// TestSweepVariantsGroups: the groups are the variants split by the other
// swept axes, each bar the mean of its points, the figure of bounded width.
func TestSweepVariantsGroups(t *testing.T) {
	var pts []results.SweepPoint
	for _, v := range []string{"a", "b", "c"} {
		for _, g := range []int{8, 16, 32, 64, 128, 256} {
			pts = append(pts, axesPoint(len(pts), v, g, 8192, "variant", "gpus"))
		}
	}
	f, err := sweepVariantsFigure(pts, sweepPolicyColors(pts))
	if err != nil || f == nil {
		t.Fatalf("sweepVariantsFigure: %v, %v", f, err)
	}
	if f.w > sweepVariantsMaxW {
		t.Errorf("plot %.1f in wide, want at most %.1f", f.w/vg.Inch, sweepVariantsMaxW/vg.Inch)
	}
	bars := sweepVariantBars(pts, sweepPolicyColors(pts))
	if len(bars.labels) != len(pts) || bars.labels[0] != "a\n8 GPUs" || bars.splits != 1 {
		t.Fatalf("groups %q (%d splits), want 3 variants × 6 GPU counts from \"a\\n8 GPUs\"", bars.labels, bars.splits)
	}
	if !slices.Equal(bars.policies, []string{"hydra", "mcore"}) {
		t.Fatalf("policies %q, want hydra and mcore (the failed policy left out)", bars.policies)
	}
	for j, pol := range bars.policies {
		for i, v := range bars.values[pol] {
			if want := pts[i].Summary.Policies[j].TokensPerDay / 1e9; v != want {
				t.Errorf("bar %d of %s = %g, want %g", i, pol, v, want)
			}
		}
	}
	// Option axes are averaged: two caps of hydra at each point give one bar,
	// the mean of the two.
	var capped []results.SweepPoint
	for i, pt := range pts[:6] {
		for k, c := range []string{"2", "4"} {
			q := pt
			q.Index = 2*i + k
			q.Axes = append(slices.Clone(pt.Axes), results.Axis{Key: "hydra.cap", Value: c})
			q.Summary.Policies = slices.Clone(pt.Summary.Policies)
			q.Summary.Policies[0].TokensPerDay *= float64(k + 1)
			capped = append(capped, q)
		}
	}
	capped = append(capped, pts[6:]...)
	avg := sweepVariantBars(capped, sweepPolicyColors(capped))
	if len(avg.labels) != len(pts) {
		t.Fatalf("%d groups with a cap axis, want %d", len(avg.labels), len(pts))
	}
	if got, want := avg.values["hydra"][0], 1.5*pts[0].Summary.Policies[0].TokensPerDay/1e9; math.Abs(got-want) > 1e-12*want {
		t.Errorf("hydra's bar over two caps = %g, want their mean %g", got, want)
	}
}

func TestFormatTokens(t *testing.T) {
	for n, want := range map[int]string{131072: "128K", 786432: "768K", 1 << 20: "1M", 3 << 20: "3M", 1000: "1000", 0: "0"} {
		if got := formatTokens(n); got != want {
			t.Errorf("formatTokens(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestWriteSweepTimingFigures: the measured planner times get their own
// figure, drawn from timings.json's values, not from the summaries' modelled
// times; none with one GPU count.
func TestWriteSweepTimingFigures(t *testing.T) {
	pts := []results.SweepPoint{sweepPoint(0, 8, 0), sweepPoint(1, 64, 0)}
	timings := &results.SweepTimings{}
	for _, p := range pts {
		var pt []results.PolicyTimings
		for _, ps := range p.Summary.Policies {
			pt = append(pt, results.PolicyTimings{Policy: ps.Policy, PlannerGoSecondsMean: 7e-3 * float64(p.GPUs)})
		}
		timings.Points = append(timings.Points, results.PointTiming{Index: p.Index, Timings: results.Timings{Policies: pt}})
	}
	dir := t.TempDir()
	got, err := WriteSweepTimingFigures(dir, pts, timings)
	if err != nil {
		t.Fatal(err)
	}
	checkFigureFiles(t, dir, got, figureFiles("sweep-planner-go"))
	if pts[0].Summary.Policies[0].PlannerModeledSeconds == 7e-3*8 {
		t.Error("the figure's values leaked into the caller's summaries")
	}
	got, err = WriteSweepTimingFigures(t.TempDir(), pts[:1], timings)
	if err != nil || len(got) != 0 {
		t.Errorf("one GPU count: %v, %v; want no figure", got, err)
	}
}
