package report

import (
	"github.com/dcpsim/dcpsim/results"
	"slices"
	"testing"
)

// testTimeline is 2 stages × 2 ranks of a few forward and backward ops, a grad
// sync and an optimizer step, after a planner stall.
func testTimeline(policy string) results.Timeline {
	tl := results.Timeline{Policy: policy, Iteration: 2, IterationNanos: 10e9, PlannerStallNanos: 0.5e9, Stages: 2, Ranks: []int{0, 3}}
	for _, r := range tl.Ranks {
		for st := range 2 {
			off := int64(st) * 1e9
			tl.Slices = append(tl.Slices,
				results.Slice{Stage: st, Rank: r, Kind: results.Forward, MB: 0, StartNanos: 1e9 + off, EndNanos: 2e9 + off},
				results.Slice{Stage: st, Rank: r, Kind: results.Forward, MB: 1, StartNanos: 2e9 + off, EndNanos: 3e9 + off},
				results.Slice{Stage: st, Rank: r, Kind: results.Backward, MB: 0, StartNanos: 5e9 - off, EndNanos: 7e9 - off},
				results.Slice{Stage: st, Rank: r, Kind: results.GradSync, MB: -1, StartNanos: 8e9, EndNanos: 9e9},
				results.Slice{Stage: st, Rank: r, Kind: results.Optimizer, MB: -1, StartNanos: 9e9, EndNanos: 10e9},
			)
		}
	}
	return tl
}

func TestTimelineGanttRange(t *testing.T) {
	tl := testTimeline("hydra")
	// An op that runs past the iteration's end and one on a rank not listed.
	tl.Slices = append(tl.Slices,
		results.Slice{Stage: 1, Rank: 3, Kind: results.Backward, StartNanos: 9.5e9, EndNanos: 12e9},
		results.Slice{Stage: 0, Rank: 7, Kind: results.Forward, StartNanos: 0.5e9, EndNanos: 0.6e9},
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
	if want := []results.SliceKind{results.Forward, results.Backward, results.GradSync, results.Optimizer, results.PlannerStall}; !slices.Equal(kinds, want) {
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

// bigTimeline is pp stages × 3 ranks × mbs microbatches of forward and
// backward ops: 6·pp·mbs slices.
func bigTimeline(pp, mbs int) results.Timeline {
	tl := results.Timeline{Policy: "hydra", IterationNanos: 1, Stages: pp, Ranks: []int{0, 5, 9}}
	for st := range pp {
		for _, r := range tl.Ranks {
			t := int64(st) * 50e6
			for mb := range mbs {
				d := int64(20e6 + (mb%7)*5e6)
				tl.Slices = append(tl.Slices,
					results.Slice{Stage: st, Rank: r, Kind: results.Forward, MB: mb, StartNanos: t, EndNanos: t + d},
					results.Slice{Stage: st, Rank: r, Kind: results.Backward, MB: mb, StartNanos: t + d, EndNanos: t + 3*d})
				t += 3 * d
			}
			tl.IterationNanos = max(tl.IterationNanos, t)
		}
	}
	return tl
}

// BenchmarkTimelineFigure draws a 9600-slice timeline as PNG and SVG.
func BenchmarkTimelineFigure(b *testing.B) {
	s := &results.Summary{Policies: []results.PolicySummary{{Policy: "hydra"}}}
	tls := []results.Timeline{bigTimeline(8, 200)}
	dir := b.TempDir()
	for b.Loop() {
		if _, err := WriteRunFigures(dir, s, nil, tls); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTimelineFiguresShareAxis: the timelines of one run share one time axis,
// to the end of the longest, and their rank labels give the ranks' roles.
func TestTimelineFiguresShareAxis(t *testing.T) {
	short, long, late := testTimeline("hydra"), testTimeline("mcore"), testTimeline("static")
	short.IterationNanos = 4e9
	long.IterationNanos = 25e9
	late.Slices = append(late.Slices, results.Slice{Stage: 1, Rank: 3, Kind: results.Optimizer, StartNanos: 10e9, EndNanos: 30e9}) // past its iteration
	short.RankRoles = map[int]string{3: "busiest"}
	long.RankRoles = map[int]string{0: "idlest", 3: "busiest"}
	s := &results.Summary{Policies: []results.PolicySummary{{Policy: "hydra"}, {Policy: "mcore"}, {Policy: "static"}}}
	for _, tc := range []struct {
		name     string
		tls      []results.Timeline
		axisMax  float64
		wantRank map[int]string // the label of stage 0's track of each rank
	}{
		{"longest iteration", []results.Timeline{short, long}, 25, map[int]string{0: "stage 0, rank 0", 3: "stage 0, rank 3 (busiest)"}},
		{"a slice past the iteration", []results.Timeline{short, late}, 30, nil},
		{"one timeline", []results.Timeline{short}, 10, nil}, // its slices end at 10 s, after its 4 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			figs, err := timelineFigures(s, tc.tls)
			if err != nil {
				t.Fatal(err)
			}
			if len(figs) != len(tc.tls) {
				t.Fatalf("%d figures, want %d", len(figs), len(tc.tls))
			}
			for _, f := range figs {
				if f.p.X.Min != 0 || f.p.X.Max != tc.axisMax {
					t.Errorf("%s: time axis [%g, %g] s, want [0, %g]", f.name, f.p.X.Min, f.p.X.Max, tc.axisMax)
				}
			}
			labels := map[string]bool{}
			for _, tk := range figs[0].p.Y.Tick.Marker.Ticks(0, 0) {
				labels[tk.Label] = true
			}
			for _, want := range tc.wantRank {
				if !labels[want] {
					t.Errorf("%s: no track labelled %q among %v", figs[0].name, want, labels)
				}
			}
		})
	}
	figs, err := timelineFigures(s, []results.Timeline{short, long})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range figs[1].p.Y.Tick.Marker.Ticks(0, 0) {
		got = append(got, tk.Label)
	}
	want := []string{"stage 0, rank 0 (idlest)", "stage 0, rank 3 (busiest)", "stage 1, rank 0 (idlest)", "stage 1, rank 3 (busiest)"}
	if !slices.Equal(got, want) {
		t.Errorf("mcore's track labels %q, want %q", got, want)
	}
}
