package report

import (
	"bytes"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// searchRow is an ok candidate of policy at gpus GPUs with pipeline depth pp
// (which names its layout) and tokens/day tpd (billions).
func searchRow(id int, policy string, gpus, pp int, tpd float64) results.SearchRow {
	return results.SearchRow{
		ID: id, Group: policy, GPUs: gpus, GPU: "H100", Model: "m", TP: 1, PP: pp, VPP: 1, EP: 1,
		BudgetTokens: 4096, Recompute: "none", Policy: policy, Status: results.SearchOK, Rung: 1, Iterations: 4,
		SearchFigures: results.SearchFigures{StepSecondsMean: 1, TokensPerDay: tpd * 1e9, DollarsPer1TTokens: 1e5 / tpd,
			PeakMemoryBytes: float64(70-3*pp) * (1 << 30), HBMBytes: 80 << 30},
	}
}

// searchRows are ok candidates of hydra, mcore and flexsp at each of gpus,
// with a few rows that are not ok among them.
func searchRows(gpus ...int) []results.SearchRow {
	var rows []results.SearchRow
	for _, g := range gpus {
		scale := float64(g) / 64
		for k, pol := range []string{"hydra", "mcore", "flexsp"} {
			for pp := 1; pp <= 4; pp++ {
				rows = append(rows, searchRow(len(rows), pol, g, pp, scale*(10.3-1.1*float64(k)-math.Abs(float64(pp)-2.5))))
			}
		}
		oom := searchRow(len(rows), "mcore", g, 8, 0)
		oom.Status, oom.Reason = results.SearchOutOfMemory, "states do not fit"
		rows = append(rows, oom)
	}
	return rows
}

// prunedRows are rows that are not ok but carry figures that would change
// every figure if drawn: a new policy first in ID order, more tokens/day than
// any ok row at the largest of gpus, less memory and a smaller HBM.
func prunedRows(gpus ...int) []results.SearchRow {
	top := slices.Max(gpus)
	var rows []results.SearchRow
	for i, st := range []string{results.SearchPrunedBound, results.SearchPrunedHalving, results.SearchFailed, results.SearchInvalid, results.SearchSkipped} {
		pol := "hydra"
		if i == 0 {
			pol = "ghost"
		}
		r := searchRow(-1-i, pol, top, 16+i, 1e3)
		r.Status, r.Reason = st, "pruned"
		r.PeakMemoryBytes, r.HBMBytes = 1<<30, 40<<30
		rows = append(rows, r)
	}
	nan := searchRow(1000, "hydra", top, 32, math.NaN())
	return append(rows, nan)
}

// writeSearch writes the search figures of rows into a new folder and returns
// the names written and each file's bytes.
func writeSearch(t *testing.T, rows []results.SearchRow, want []string) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	got, err := WriteSearchFigures(dir, rows)
	if err != nil {
		t.Fatal(err)
	}
	checkFigureFiles(t, dir, got, want)
	files := map[string][]byte{}
	for _, name := range got {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

// sameFiles reports the files of a and b that differ.
func sameFiles(t *testing.T, a, b map[string][]byte, what string) {
	t.Helper()
	for name, ba := range a {
		if !bytes.Equal(ba, b[name]) {
			t.Errorf("%s: %s differs (%d bytes, want %d)", what, name, len(b[name]), len(ba))
		}
	}
}

// TestWriteSearchFigures: both figures at one and at three GPU counts, the
// same bytes on a rewrite and with rows that are not ok added; none without
// ok rows.
func TestWriteSearchFigures(t *testing.T) {
	want := figureFiles("search-best", "search-pareto")
	for _, tc := range []struct {
		name string
		gpus []int
	}{
		{"one gpu count", []int{64}},
		{"three gpu counts", []int{16, 64, 256}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := searchRows(tc.gpus...)
			first := writeSearch(t, rows, want)
			sameFiles(t, first, writeSearch(t, rows, want), "rewritten")

			// Rows that are not ok, in any order, change nothing.
			more := append(prunedRows(tc.gpus...), rows...)
			slices.Reverse(more)
			sameFiles(t, first, writeSearch(t, more, want), "with rows that are not ok")

			// The comparisons above can fail: one ok row more changes both
			// figures.
			changed := append(slices.Clone(rows), searchRow(len(rows), "hydra", slices.Max(tc.gpus), 6, 500))
			other := writeSearch(t, changed, want)
			for name, b := range first {
				if bytes.Equal(b, other[name]) {
					t.Errorf("%s is the same with a new best candidate", name)
				}
			}
		})
	}
	t.Run("no ok rows", func(t *testing.T) {
		for _, rows := range [][]results.SearchRow{nil, prunedRows(16, 64)} {
			writeSearch(t, rows, nil)
		}
	})
}

// TestSearchFigureText: the titles say which Pareto figure was drawn, and the
// best-layout bars are each policy's best at the largest GPU count, best on
// top.
func TestSearchFigureText(t *testing.T) {
	svg := func(files map[string][]byte, name string) string { return string(files[name+".svg"]) }
	want := figureFiles("search-best", "search-pareto")

	one := writeSearch(t, searchRows(64), want)
	if s := svg(one, "search-pareto"); !strings.Contains(s, "peak memory per GPU (GiB)") || !strings.Contains(s, "HBM (80.0 GiB)") {
		t.Errorf("search-pareto at one GPU count is not tokens/day vs peak memory with the HBM")
	}

	rows := searchRows(16, 64, 256)
	// More tokens/day than any other row, but at a smaller GPU count.
	rows = append(rows, searchRow(len(rows), "mcore", 64, 7, 900))
	three := writeSearch(t, rows, want)
	if s := svg(three, "search-pareto"); !strings.Contains(s, "GPUs (log scale)") || !strings.Contains(s, "Pareto front (best at each GPU count)") {
		t.Errorf("search-pareto at three GPU counts is not tokens/day vs GPUs with the front")
	}
	best := svg(three, "search-best")
	if !strings.Contains(best, "at each cluster size searched") {
		t.Errorf("search-best does not say it shows every cluster size")
	}
	// At 256 GPUs (the top group) each policy is best at pp 2 and pp 3 (a
	// tie, the first wins), with tokens/day 4×(9.8-1.1k): flexsp's bar
	// lowest, hydra's on top.
	var heights []float64
	for _, lbl := range []string{"30.4", "34.8", "39.2"} {
		heights = append(heights, svgTextHeight(t, best, lbl))
	}
	if !slices.IsSorted(heights) || heights[0] == heights[2] {
		t.Errorf("value labels 30.4, 34.8, 39.2 at heights %v, want ascending (best on top)", heights)
	}
	if h := svgTextHeight(t, best, "hydra · 256"); h < heights[1] {
		t.Errorf("hydra's name at height %g, below mcore's bar at %g", h, heights[1])
	}
	if h16, h256 := svgTextHeight(t, best, "hydra · 16"), svgTextHeight(t, best, "hydra · 256"); h16 >= h256 {
		t.Errorf("the 16-GPU group at height %g, not below the 256-GPU group's %g", h16, h256)
	}
	for _, size := range []string{"16", "64", "256"} {
		if n := strings.Count(best, " · "+size+"</text>"); n != 3 {
			t.Errorf("search-best has %d bars at %s GPUs, want one per policy (3)", n, size)
		}
	}
	// mcore's best at 64 GPUs is the row at pp 7 (the most tokens/day of
	// all); pp 3 ties pp 2 everywhere and loses.
	if l := searchRow(0, "", 0, 7, 0).Layout(); !strings.Contains(best, l) {
		t.Errorf("search-best lacks %q, mcore's best at 64 GPUs", l)
	}
	if l := searchRow(0, "", 0, 3, 0).Layout(); strings.Contains(best, l) {
		t.Errorf("search-best labels %q, a layout that is no policy's best", l)
	}
}

// svgTextHeight is the height above the bottom of the SVG figure svg of its
// text label (the first such).
func svgTextHeight(t *testing.T, svg, label string) float64 {
	t.Helper()
	m := regexp.MustCompile(`<text x="[^"]*" y="([^"]*)"[^>]*>` + regexp.QuoteMeta(label) + `</text>`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no text %q in the SVG", label)
	}
	y, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	// The text is drawn flipped (scale(1, -1)): y is minus the height.
	return -y
}

func TestParetoFront(t *testing.T) {
	for _, tc := range []struct {
		name string
		pts  plotter.XYs
		want []int
	}{
		{"none", nil, nil},
		{"one", plotter.XYs{{X: 1, Y: 1}}, []int{0}},
		// 1 and 4 are dominated by 2, 5 duplicates 3 (the first is kept).
		{"table", plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 3}, {X: 2, Y: 2}, {X: 3, Y: 5}, {X: 1.5, Y: 4}, {X: 3, Y: 5}, {X: 0.5, Y: 0.5}}, []int{6, 0, 2, 3}},
		{"same memory", plotter.XYs{{X: 1, Y: 2}, {X: 3, Y: 2}, {X: 2, Y: 2}}, []int{1}},
		{"same throughput", plotter.XYs{{X: 1, Y: 3}, {X: 1, Y: 2}, {X: 1, Y: 4}}, []int{1}},
		{"one dominates", plotter.XYs{{X: 1, Y: 5}, {X: 4, Y: 1}, {X: 2, Y: 3}}, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := paretoFront(tc.pts); !slices.Equal(got, tc.want) {
				t.Errorf("paretoFront = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBestPerSize(t *testing.T) {
	rows := []results.SearchRow{
		searchRow(0, "a", 64, 1, 5),
		searchRow(1, "a", 16, 1, 3),
		searchRow(2, "b", 64, 2, 7),
		searchRow(3, "b", 16, 2, 3), // a tie: the first is the best
		searchRow(4, "a", 256, 1, 1),
	}
	var got []int
	for _, r := range results.BestPerSize(rows) {
		got = append(got, r.ID)
	}
	if want := []int{1, 2, 4}; !slices.Equal(got, want) {
		t.Errorf("BestPerSize = %v, want IDs %v", got, want)
	}
	if got := results.BestPerSize(nil); len(got) != 0 {
		t.Errorf("BestPerSize(nil) = %v, want none", got)
	}
}
