package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"github.com/dcpsim/dcpsim/results"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testComparison is a run comparison with a row of every status: a
// significant slowdown, a change within the noise, a row without an
// interval, one policy on one side each, one failed, and a policy name a
// hostile summary could hold.
func testComparison() *results.Comparison {
	return &results.Comparison{
		Kind:   "run",
		A:      results.ComparedFolder{Path: "runs/a", Scenario: "tiny", Hash: strings.Repeat("a", 64), Seed: 1, Revision: strings.Repeat("1", 40) + "+modified"},
		B:      results.ComparedFolder{Path: "runs/b", Scenario: "tiny", Hash: strings.Repeat("b", 64), Seed: 2},
		Method: results.CompareMethod, ConfidenceLevel: results.CompareConfidence,
		Differences: []results.Difference{{Key: "scenario_sha256", A: strings.Repeat("a", 64), B: strings.Repeat("b", 64)}, {Key: "seed", A: "1", B: "2"}, {Key: "vcs_revision", A: "abc", B: ""}},
		Rows: []results.ComparisonRow{
			{Policy: "hydra", Status: results.CompareCompared, IterationsA: 15, IterationsB: 15, StepSecondsMeanA: 1.2, StepSecondsMeanB: 1.8,
				DiffSeconds: 0.6, ChangePct: 50, CIDefined: true, CILowPct: 30.5, CIHighPct: 69.5, Test: results.CompareTestWelch, DF: 20, Significant: true,
				TokensPerDayA: 9.7e9, TokensPerDayB: 6.4e9, PPBubbleShareA: 0.467, PPBubbleShareB: 0.58, DPBubbleShareA: 0.06, DPBubbleShareB: 0.093,
				PeakMemoryMaxBytesA: 36e9, PeakMemoryMaxBytesB: 35.8e9},
			{Policy: "mcore", Status: results.CompareCompared, IterationsA: 15, IterationsB: 15, StepSecondsMeanA: 1.8, StepSecondsMeanB: 1.75,
				ChangePct: -2.78, CIDefined: true, CILowPct: -17.5, CIHighPct: 12, Test: results.CompareTestWelch, DF: 27},
			{Policy: "one", Status: results.CompareCompared, IterationsA: 1, IterationsB: 1, StepSecondsMeanA: 1, StepSecondsMeanB: 2, ChangePct: 100,
				Note: "1 and 1 measured iterations: an interval needs at least 2 on each side"},
			{Policy: "static", Status: results.CompareOnlyInA, Note: "not in B", IterationsA: 15},
			{Policy: "bytescale", Status: results.CompareFailedInB, Note: "iteration 0: plan: boom"},
			{Policy: "evil\x1b[2J\tname", Status: results.CompareOnlyInB, Note: "not in A"},
		},
	}
}

// TestWriteComparisonTable: the header lines, what differs (hashes and
// revisions shortened, empty values named), one aligned row per compared
// policy with its change and interval, the others listed below with their
// status, control characters quoted, and the method in the footer.
func TestWriteComparisonTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteComparisonTable(&b, testComparison()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"compare runs of tiny\n",
		"  A = runs/a (seed 1, sha256 aaaaaaaaaaaa, dcpsim 111111111111+modified)\n",
		"  B = runs/b (seed 2, sha256 bbbbbbbbbbbb)\n",
		"differs: scenario_sha256 (the scenario text or a policy option) aaaaaaaaaaaa → bbbbbbbbbbbb; seed 1 → 2; vcs_revision abc → (none)\n",
		"policy  iterations A/B  step mean A (s)  step mean B (s)  change (%)",
		"hydra           15/15           1.2000           1.8000      +50.00  [+30.50, +69.50]  welch          yes           9.70 → 6.40          46.7 → 58.0            6.0 → 9.3",
		"-2.78  [-17.50, +12.00]  welch           no",
		"+100.00             [n/a]                  no",
		"static: only in A: not in B\n",
		"bytescale: failed in B: iteration 0: plan: boom\n",
		`"evil\x1b[2J\tname": only in B: not in A` + "\n",
		"one: 1 and 1 measured iterations",
		"\nwelch: the batches differ",
		"significant when the interval excludes 0 (dcpsim help compare)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("a control character reached the table:\n%q", out)
	}

	// Paired rows name the paired test in the footer, not Welch's.
	pc := testComparison()
	pc.Rows = pc.Rows[:1]
	pc.Rows[0].Test = results.CompareTestPaired
	b.Reset()
	if err := WriteComparisonTable(&b, pc); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "\npaired: both sides simulated the same batches") || strings.Contains(out, "welch:") {
		t.Errorf("a paired table's footer:\n%s", out)
	}

	// A sweep with nothing compared, of two scenarios (--force).
	c := &results.Comparison{Kind: "sweep", A: results.ComparedFolder{Path: "a", Scenario: "x", Points: 2}, B: results.ComparedFolder{Path: "b", Scenario: "y", Points: 1},
		Rows: []results.ComparisonRow{{Point: "p0000-gpus-8", Axes: "gpus=8", Policy: "hydra", Status: results.CompareOnlyInA, Note: "the point is not in B"}}}
	b.Reset()
	if err := WriteComparisonTable(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"compare sweeps of different scenarios (--force): x and y\n", "  A = a (scenario x, seed 0, sha256 , 2 points)\n",
		"differs: nothing", "point  policy", "(no policy ran on both sides)\n", "gpus=8 hydra: only in A: the point is not in B\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("sweep table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestRegressions: only significant compared rows slower by more than the
// threshold.
func TestRegressions(t *testing.T) {
	c := testComparison()
	for _, tc := range []struct {
		pct  float64
		want []string
	}{{0, []string{"hydra"}}, {49.9, []string{"hydra"}}, {50, nil}, {1000, nil}} {
		var got []string
		for _, r := range c.Regressions(tc.pct) {
			got = append(got, r.Policy)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("regressions beyond %g%%: %v, want %v", tc.pct, got, tc.want)
		}
	}
	if got := c.Rows[0].FormatChange(); got != "+50.00% [+30.50, +69.50]" {
		t.Errorf("FormatChange %q", got)
	}
	if got := c.Rows[3].FormatChange(); got != "n/a" {
		t.Errorf("FormatChange of a row not compared %q", got)
	}
}

// TestWriteComparison: the four files, each atomically (no temporary left);
// compare.json decodes back to c; compare.csv has a row per row with the
// fields' json names; the figure is a PNG, and its SVG the same bytes on a
// rewrite; a sweep of many rows and a comparison with nothing compared are
// drawn too.
func TestWriteComparison(t *testing.T) {
	dir := t.TempDir()
	c := testComparison()
	files, err := WriteComparison(dir, c)
	if err != nil || !slices.Equal(files, results.CompareFiles) {
		t.Fatalf("files %v (%v), want %v", files, err, results.CompareFiles)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(results.CompareFiles) {
		t.Errorf("%d entries in the folder, want %d (a temporary file left?)", len(entries), len(results.CompareFiles))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "compare.json"))
	var back results.Comparison
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(&back)
	first, _ := json.Marshal(c)
	if !bytes.Equal(first, again) {
		t.Errorf("compare.json does not decode to the comparison:\n%s\n%s", first, again)
	}
	f, _ := os.Open(filepath.Join(dir, "compare.csv"))
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	head, _ := results.CSVHeader[results.ComparisonRow]()
	if err != nil || len(recs) != len(c.Rows)+1 || !slices.Equal(recs[0], head) || !slices.Contains(head, "ci_low_pct") {
		t.Errorf("compare.csv: %v, %d records, header %v", err, len(recs), recs[0])
	}
	pf, _ := os.Open(filepath.Join(dir, "compare.png"))
	if _, err := png.Decode(pf); err != nil {
		t.Errorf("compare.png: %v", err)
	}
	pf.Close()
	svg, _ := os.ReadFile(filepath.Join(dir, "compare.svg"))
	if _, err := WriteComparison(dir, c); err != nil {
		t.Fatal(err)
	}
	if svg2, _ := os.ReadFile(filepath.Join(dir, "compare.svg")); !bytes.Equal(svg, svg2) {
		t.Error("compare.svg differs on a rewrite")
	}

	many := &results.Comparison{Kind: "sweep", A: results.ComparedFolder{Scenario: "s"}, B: results.ComparedFolder{Scenario: "s"}}
	for i := range 2*compareMaxLabels + 1 {
		many.Rows = append(many.Rows, results.ComparisonRow{Point: "p", Axes: "gpus=" + strings.Repeat("9", i%5+1), Policy: []string{"hydra", "mcore"}[i%2],
			Status: results.CompareCompared, ChangePct: float64(i%7) - 3, CIDefined: i%3 != 0, CILowPct: float64(i%7) - 5, CIHighPct: float64(i%7) - 1, Significant: i%7 > 4})
	}
	for _, cc := range []*results.Comparison{many, {Kind: "run"}} {
		d := t.TempDir()
		if files, err := WriteComparison(d, cc); err != nil || !slices.Equal(files, results.CompareFiles) {
			t.Errorf("%d rows: %v %v", len(cc.Rows), files, err)
		}
	}
	if _, err := WriteComparison(filepath.Join(dir, "missing"), c); err == nil {
		t.Error("a folder that does not exist: no error")
	}
}
