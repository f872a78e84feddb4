package workload

import (
	"encoding/json"
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

func TestBatchStats(t *testing.T) {
	// Σ s = 6180, Σ s² = 26012130 (as in TestSummarize).
	b := Batch{Iteration: 7, Lengths: []int{40, 3, 1000, 1, 20, 5000, 2, 100, 4, 10}}
	want := BatchStats{Iteration: 7, Sequences: 10, Tokens: 6180, SumSquares: 26012130, MaxTokens: 5000,
		AttentionWeightedMeanTokens: 26012130.0 / 6180}
	if got := b.Stats(); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
	if got := (Batch{Iteration: 3}).Stats(); got != (BatchStats{Iteration: 3}) {
		t.Errorf("empty batch: Stats = %+v, want zeros but the iteration", got)
	}
	// Exact Σ s² beyond int64, like Summarize.
	if got := (Batch{Lengths: []int{1 << 31, 1 << 31, 1 << 31, 1 << 31, 1}}).Stats(); got.SumSquares != math.Ldexp(1, 64)+1 {
		t.Errorf("SumSquares = %v, want 2⁶⁴+1", got.SumSquares)
	}
}

// TestBatchStatsSampled: a sampled batch's stats agree with its Tokens and with
// Summarize, and name the JSON fields `workload stats --json` prints.
func TestBatchStatsSampled(t *testing.T) {
	d, err := Preset("long-32k")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSampler(d, BatchSpec{TargetTokens: 1 << 20, ContextTokens: 32768, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		b := s.Batch(k)
		st, sum := b.Stats(), Summarize(b.Lengths, nil)
		if st.Iteration != k || st.Tokens != b.Tokens() || st.Tokens != 1<<20 || st.Sequences != len(b.Lengths) ||
			st.SumSquares != sum.SumSquares || st.MaxTokens != sum.MaxTokens || st.AttentionWeightedMeanTokens != sum.SumSquares/float64(sum.Tokens) {
			t.Errorf("batch %d: Stats %+v disagree with Summarize %+v", k, st, sum)
		}
	}
	data, err := json.Marshal(BatchStats{})
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"iteration":0,"sequences":0,"tokens":0,"sum_squares":0,"max_tokens":0,"attention_weighted_mean_tokens":0}`
	if string(data) != wantJSON {
		t.Errorf("JSON %s, want %s", data, wantJSON)
	}
}

func TestPaperShape(t *testing.T) {
	// 90 sequences of 100 tokens, 9 of 4096 and 1 of 2²⁰: 90% at most 2K, 1%
	// above 32K, a span of 10486×.
	lengths := make([]int, 0, 100)
	for range 90 {
		lengths = append(lengths, 100)
	}
	for range 9 {
		lengths = append(lengths, 4096)
	}
	lengths = append(lengths, 1<<20)
	got, ok := Summarize(lengths, DefaultThresholds()).PaperShape()
	want := PaperShape{AtMost2K: 0.9, AtMost2KOK: true, Above32K: 0.01, Above32KOK: false, Span: 10485.76, SpanOK: true}
	if !ok || got != want {
		t.Errorf("PaperShape = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := Summarize(nil, DefaultThresholds()).PaperShape(); ok {
		t.Error("no sequences, yet a shape")
	}
	if _, ok := Summarize(lengths, []int{2048}).PaperShape(); ok {
		t.Error("no 32K threshold, yet a shape")
	}
	// A batch of the long-256k preset has the paper's ≤2K and >32K shares.
	d, err := Preset("long-256k")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSampler(d, BatchSpec{TargetTokens: 1 << 24, ContextTokens: 1 << 18, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sh, ok := Summarize(s.Batch(0).Lengths, DefaultThresholds()).PaperShape(); !ok || !sh.AtMost2KOK || !sh.Above32KOK {
		t.Errorf("long-256k: %+v, want the paper's ≤2K and >32K shares", sh)
	}
}
