package report

import (
	"strings"
	"testing"
)

// ownPoint is a sweep point with the given axes running policies at the
// given tokens per day.
func ownPoint(axes []Axis, tokensPerDay map[string]float64) SweepPoint {
	pt := SweepPoint{Axes: axes}
	for _, name := range []string{"static", "bytescale"} {
		if v, ok := tokensPerDay[name]; ok {
			pt.Summary.Policies = append(pt.Summary.Policies, PolicySummary{Policy: name, TokensPerDay: v, StepSecondsMean: 1 / v})
		}
	}
	return pt
}

// TestOwnPaperRatios: each ratio is read at its systems' own points, the
// target is ±20% of the paper's, and the order check counts the pairs
// reversed.
func TestOwnPaperRatios(t *testing.T) {
	ax := func(bal, off string) []Axis {
		return []Axis{{Key: "bytescale.balance", Value: bal}, {Key: "bytescale.offload", Value: off}}
	}
	r := &ownResults{points: []SweepPoint{
		ownPoint(ax("false", "false"), map[string]float64{"static": 10, "bytescale": 17}), // 1.7: within 20% of 1.59
		ownPoint(ax("false", "true"), map[string]float64{"static": 10, "bytescale": 12}),  // 1.2: misses 2.01, below 1.7
		ownPoint(ax("true", "false"), map[string]float64{"static": 10, "bytescale": 30}),
		ownPoint(ax("true", "true"), map[string]float64{"static": 10, "bytescale": 40}), // 4.0: within 20% of 3.69
	}}
	p := ownPapers[0]
	rows := p.rows(r)
	want := []float64{1.7, 1.2, 4.0, 3.0}
	for i, row := range rows {
		if !row.ok || row.ratio != want[i] {
			t.Errorf("%s: ratio %v (ok %v), want %v", row.r.Of.Label, row.ratio, row.ok, want[i])
		}
	}
	order := ownOrder(rows)
	if !strings.Contains(order, "1 of the 3 pairs the paper orders reversed") {
		t.Errorf("order: %s", order)
	}
	var b strings.Builder
	writeOwnPapers(&b, t.TempDir()) // no results: each comparison says what is missing
	if got := strings.Count(b.String(), "Missing: "); got != len(ownPapers) {
		t.Errorf("%d comparisons missing of %d:\n%s", got, len(ownPapers), b.String())
	}
}
