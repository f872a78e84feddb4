package results

import (
	"fmt"
	"math"
	"slices"
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

// TestSearchTargetAnswer: each cluster size's best ranked row (the first
// in rank order on a tie), its days and cost, and the fewest GPUs that
// make the target; -1 when none does.
func TestSearchTargetAnswer(t *testing.T) {
	ranked := []SearchRow{
		{Rank: 1, GPUs: 64, Policy: "hydra", SearchFigures: SearchFigures{TokensPerDay: 40e9}},
		{Rank: 2, GPUs: 32, Policy: "hydra", SearchFigures: SearchFigures{TokensPerDay: 20e9}},
		{Rank: 3, GPUs: 64, Policy: "mcore", SearchFigures: SearchFigures{TokensPerDay: 30e9}},
		{Rank: 4, GPUs: 32, Policy: "mcore", SearchFigures: SearchFigures{TokensPerDay: 20e9}},
		{Rank: 5, GPUs: 16, Policy: "static", SearchFigures: SearchFigures{TokensPerDay: 5e9}},
	}
	best := BestPerSize(ranked)
	var got []string
	for _, r := range best {
		got = append(got, fmt.Sprintf("%d %s", r.GPUs, r.Policy))
	}
	if want := []string{"16 static", "32 hydra", "64 hydra"}; !slices.Equal(got, want) {
		t.Fatalf("BestPerSize: %v, want %v", got, want)
	}
	for _, tc := range []struct {
		tokens, days float64
		answer       int
	}{{1e12, 100, 1}, {1e11, 100, 0}, {1e12, 30, 2}, {1e13, 30, -1}} {
		sizes, answer := (&SearchTarget{Tokens: tc.tokens, Days: tc.days}).Answer(ranked, 2)
		if answer != tc.answer || len(sizes) != 3 {
			t.Errorf("%g tokens in %g days: answer %d of %d sizes, want %d of 3", tc.tokens, tc.days, answer, len(sizes), tc.answer)
			continue
		}
		a := sizes[1] // 32 GPUs at 20e9 a day
		if days := tc.tokens / 20e9; a.Days != days || a.Dollars != days*24*32*2 || a.MakesIt != (20e9 >= tc.tokens/tc.days) {
			t.Errorf("%g tokens in %g days: at 32 GPUs %+v", tc.tokens, tc.days, a)
		}
	}
}
