package results

import (
	"math"
	"testing"
)

// TestSearchTies: tokens per day scale as 1/step, so the interval of a
// step of 2 ± 0.5 s at 100 tokens/day is [80, 133.3]; rows tie when their
// intervals overlap, a row without an interval ties nothing, and a step
// interval reaching zero has no upper bound.
func TestSearchTies(t *testing.T) {
	row := func(tpd, step, ci float64) SearchRow {
		return SearchRow{SearchFigures: SearchFigures{TokensPerDay: tpd, StepSecondsMean: step}, StepSecondsCI95: ci}
	}
	lo, hi := row(100, 2, 0.5).TokensPerDayInterval()
	if math.Abs(lo-80) > 1e-9 || math.Abs(hi-400.0/3) > 1e-9 {
		t.Errorf("interval [%g, %g], want [80, 133.33]", lo, hi)
	}
	if _, hi := row(100, 2, 2).TokensPerDayInterval(); !math.IsInf(hi, 1) {
		t.Errorf("a step interval reaching 0: upper %g, want +Inf", hi)
	}
	for _, tc := range []struct {
		a, b SearchRow
		tie  bool
	}{
		{row(100, 2, 0.5), row(90, 2, 0.1), true},  // [80, 133] and [85.7, 94.7]
		{row(100, 2, 0.1), row(80, 2, 0.1), false}, // [95.2, 105.3] and [76.2, 84.2]
		{row(100, 2, 0), row(100, 1, 0), true},     // equal points
		{row(100, 2, 0.1), SearchRow{}, false},     // no figures
	} {
		if got := tc.a.TiesWith(tc.b); got != tc.tie || tc.b.TiesWith(tc.a) != tc.tie {
			t.Errorf("%+v ties %+v: %v, want %v (both ways)", tc.a.SearchFigures, tc.b.SearchFigures, got, tc.tie)
		}
	}
}
