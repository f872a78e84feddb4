package workload

import (
	"math"
	"reflect"
	"testing"
)

func TestSummarize(t *testing.T) {
	// Σ = 1+2+3+4+10+20+40+100+1000+5000 = 6180; Σ s² = 1+4+9+16+100+400+1600+10000+10⁶+25·10⁶.
	lengths := []int{40, 3, 1000, 1, 20, 5000, 2, 100, 4, 10}
	got := Summarize(lengths, []int{10, 1000, 0, 5000})
	want := Summary{
		Sequences: 10, Tokens: 6180, MinTokens: 1, MaxTokens: 5000, MeanTokens: 618,
		SumSquares: 26012130,
		// Empirical quantile: the smallest s with at least ⌈10·P⌉ lengths <= s.
		Percentiles: []Percentile{{0.5, 10}, {0.9, 1000}, {0.95, 5000}, {0.99, 5000}, {0.999, 5000}},
		Above: []Threshold{
			{Tokens: 10, SequenceFraction: 0.5, TokenShare: 6160.0 / 6180, SquareShare: 26012000.0 / 26012130},
			{Tokens: 1000, SequenceFraction: 0.1, TokenShare: 5000.0 / 6180, SquareShare: 25e6 / 26012130},
			{Tokens: 0, SequenceFraction: 1, TokenShare: 1, SquareShare: 1},
			{Tokens: 5000},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Summarize =\n%+v\nwant\n%+v", got, want)
	}
	if e := Summarize(nil, DefaultThresholds()); e.Sequences != 0 || e.Percentiles != nil || len(e.Above) != 4 || e.Above[3].Tokens != 131072 {
		t.Errorf("Summarize(nil) = %+v", e)
	}
}

func TestSummarizeExactSquares(t *testing.T) {
	// 2³¹ squared is 2⁶²; four of them overflow int64 but not the accumulator.
	s := Summarize([]int{1 << 31, 1 << 31, 1 << 31, 1 << 31, 1}, nil)
	if want := math.Ldexp(1, 64) + 1; s.SumSquares != want {
		t.Errorf("SumSquares = %v, want %v", s.SumSquares, want)
	}
}

func TestDefaultThresholdsFresh(t *testing.T) {
	a := DefaultThresholds()
	a[0] = 1
	if DefaultThresholds()[0] != 2048 {
		t.Error("DefaultThresholds shares its slice")
	}
}
