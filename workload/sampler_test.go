package workload

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

func long256K(t testing.TB) Distribution {
	d, err := Preset("long-256k")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustSampler(t testing.TB, d Distribution, spec BatchSpec) *Sampler {
	t.Helper()
	s, err := NewSampler(d, spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBatchDeterministic(t *testing.T) {
	spec := BatchSpec{TargetTokens: 1 << 20, ContextTokens: 131072, Overlong: Split, Seed: 42}
	s := mustSampler(t, long256K(t), spec)
	const iters = 12
	want := make([]Batch, iters)
	for k := range want {
		want[k] = s.Batch(k)
	}
	// Another sampler, iterations in reverse order.
	s2 := mustSampler(t, long256K(t), spec)
	for k := iters - 1; k >= 0; k-- {
		if got := s2.Batch(k); got.Iteration != k || !slices.Equal(got.Lengths, want[k].Lengths) {
			t.Fatalf("Batch(%d) differs when called in reverse order", k)
		}
	}
	// Concurrent goroutines under several GOMAXPROCS settings.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 8} {
		runtime.GOMAXPROCS(procs)
		var wg sync.WaitGroup
		got := make([][]Batch, 4)
		for g := range got {
			wg.Go(func() {
				for i := range iters {
					k := (i*5 + g) % iters // a different order per goroutine
					got[g] = append(got[g], s.Batch(k))
				}
			})
		}
		wg.Wait()
		for _, bs := range got {
			for _, b := range bs {
				if !slices.Equal(b.Lengths, want[b.Iteration].Lengths) {
					t.Fatalf("GOMAXPROCS=%d: concurrent Batch(%d) differs", procs, b.Iteration)
				}
			}
		}
	}
	// Different iterations and seeds differ.
	for k := 1; k < iters; k++ {
		if slices.Equal(want[k].Lengths, want[k-1].Lengths) {
			t.Errorf("Batch(%d) == Batch(%d)", k, k-1)
		}
	}
	spec.Seed++
	if other := mustSampler(t, long256K(t), spec).Batch(0); slices.Equal(other.Lengths, want[0].Lengths) {
		t.Error("seeds 42 and 43 give the same Batch(0)")
	}
}

func TestBatchFill(t *testing.T) {
	for _, over := range []Overlong{Split, Drop} {
		for _, ctx := range []int{4096, 32768, 262144} {
			for _, target := range []int64{1, 1000, 1 << 20, 4 << 20} {
				spec := BatchSpec{TargetTokens: target, ContextTokens: ctx, Overlong: over, Seed: 9}
				s := mustSampler(t, long256K(t), spec)
				for k := range 3 {
					b := s.Batch(k)
					if b.Tokens() != target {
						t.Fatalf("%v ctx %d target %d: Batch(%d).Tokens() = %d", over, ctx, target, k, b.Tokens())
					}
					for i, l := range b.Lengths {
						if l < 1 || l > ctx {
							t.Fatalf("%v ctx %d: Lengths[%d] = %d outside [1, %d]", over, ctx, i, l, ctx)
						}
					}
				}
			}
		}
	}
}

// TestSplitAndDrop follows one drawn sequence longer than the context through Split and
// Drop: a list sampler over a single length makes the draws predictable.
func TestSplitAndDrop(t *testing.T) {
	spec := BatchSpec{TargetTokens: 25, ContextTokens: 4, Overlong: Split}
	s, err := NewListSampler([]int{10}, Resample, spec)
	if err != nil {
		t.Fatal(err)
	}
	// 10 = 4+4+2, twice, then 4 of the third copy = 25 tokens.
	if got, want := s.Batch(0).Lengths, []int{4, 4, 2, 4, 4, 2, 4, 1}; !slices.Equal(got, want) {
		t.Errorf("split: %v, want %v", got, want)
	}
	spec.Overlong = Drop
	if _, err := NewListSampler([]int{10, 12}, Resample, spec); err == nil || !strings.Contains(err.Error(), "shortest, 10, exceeds ContextTokens = 4") {
		t.Errorf("drop of every length: error %v", err)
	}
	s, err = NewListSampler([]int{10, 3, 12}, Resample, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Batch(0).Lengths, []int{3, 3, 3, 3, 3, 3, 3, 3, 1}; !slices.Equal(got, want) {
		t.Errorf("drop: %v, want %v", got, want)
	}
	// Drop on a distribution: nothing above the context survives, and the pieces are whole
	// sequences except the last.
	d := long256K(t)
	b := mustSampler(t, d, BatchSpec{TargetTokens: 1 << 22, ContextTokens: 2048, Overlong: Drop, Seed: 1}).Batch(0)
	if slices.Max(b.Lengths) > 2048 || b.Tokens() != 1<<22 {
		t.Errorf("drop at 2048: max %d, tokens %d", slices.Max(b.Lengths), b.Tokens())
	}
	// Split at 2048 keeps the long ones as 2048-token pieces: many more of them.
	b2 := mustSampler(t, d, BatchSpec{TargetTokens: 1 << 22, ContextTokens: 2048, Overlong: Split, Seed: 1}).Batch(0)
	full := func(ls []int) int {
		return len(slices.DeleteFunc(slices.Clone(ls), func(l int) bool { return l != 2048 }))
	}
	if full(b2.Lengths) <= 2*full(b.Lengths) {
		t.Errorf("split made %d pieces of 2048, drop kept %d sequences of 2048", full(b2.Lengths), full(b.Lengths))
	}
	// A distribution that never fits the context under Drop is refused.
	tail := TruncatedPareto{LowTokens: 2048, HighTokens: 262144, Alpha: 0.8}
	if _, err := NewSampler(tail, BatchSpec{TargetTokens: 100, ContextTokens: 1024, Overlong: Drop}); err == nil ||
		!strings.Contains(err.Error(), "P(L <= ContextTokens = 1024) = 0") {
		t.Errorf("drop with no fitting length: error %v", err)
	}
}

func TestSequential(t *testing.T) {
	lengths := []int{100, 200, 300}
	spec := BatchSpec{TargetTokens: 250, ContextTokens: 1000, Overlong: Split}
	s, err := NewListSampler(lengths, Sequential, spec)
	if err != nil {
		t.Fatal(err)
	}
	// The stream 100|200|300|100|200|300|... cut every 250 tokens; period 600.
	want := [][]int{
		{100, 150},     // [0, 250)
		{50, 200},      // [250, 500): rest of the 200, then 200 of the 300
		{100, 100, 50}, // [500, 750): rest of the 300, the 100, 50 of the 200
		{150, 100},     // [750, 1000)
		{200, 50},      // [1000, 1250)
	}
	for k, w := range want {
		if got := s.Batch(k).Lengths; !slices.Equal(got, w) {
			t.Errorf("Batch(%d) = %v, want %v", k, got, w)
		}
	}
	// Period 600 = 12·250/5: batch k+12 equals batch k; huge iterations do not overflow.
	for _, k := range []int{0, 3, 1 << 40, 1<<62 + 7} {
		if got, w := s.Batch(k+12).Lengths, s.Batch(k).Lengths; !slices.Equal(got, w) {
			t.Errorf("Batch(%d) = %v, Batch(%d) = %v; want equal", k+12, got, k, w)
		}
	}
	// Split at 128 cuts the 200 at 128 and the 300 at 128 and 256, from each sequence's start.
	spec.ContextTokens = 128
	s, _ = NewListSampler(lengths, Sequential, spec)
	if got, w := s.Batch(0).Lengths, []int{100, 128, 22}; !slices.Equal(got, w) {
		t.Errorf("split Batch(0) = %v, want %v", got, w)
	}
	if got, w := s.Batch(1).Lengths, []int{50, 128, 72}; !slices.Equal(got, w) {
		t.Errorf("split Batch(1) = %v, want %v", got, w)
	}
	// Drop removes the 300 from the stream: 100|200|100|200...
	spec.ContextTokens, spec.Overlong = 250, Drop
	s, _ = NewListSampler(lengths, Sequential, spec)
	if got, w := s.Batch(1).Lengths, []int{50, 100, 100}; !slices.Equal(got, w) {
		t.Errorf("drop Batch(1) = %v, want %v", got, w)
	}
}

func TestListResampleUsesTheList(t *testing.T) {
	lengths := []int{5, 7, 11}
	s, err := NewListSampler(lengths, Resample, BatchSpec{TargetTokens: 10000, ContextTokens: 100, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	b := s.Batch(0)
	seen := map[int]int{}
	for _, l := range b.Lengths[:len(b.Lengths)-1] {
		seen[l]++
	}
	for _, l := range lengths {
		if seen[l] < 200 {
			t.Errorf("length %d drawn %d times in %d draws", l, seen[l], len(b.Lengths))
		}
	}
	if len(seen) != 3 || b.Tokens() != 10000 {
		t.Errorf("drew lengths %v, tokens %d", seen, b.Tokens())
	}
	if slices.Equal(b.Lengths, s.Batch(1).Lengths) {
		t.Error("resample: Batch(0) == Batch(1)")
	}
}

func TestSpecErrors(t *testing.T) {
	d := long256K(t)
	for _, tc := range []struct {
		spec BatchSpec
		want string
	}{
		{BatchSpec{TargetTokens: 0, ContextTokens: 1}, "BatchSpec.TargetTokens = 0 out of range (allowed: [1, 10000000000])"},
		{BatchSpec{TargetTokens: 1e10 + 1, ContextTokens: 1}, "BatchSpec.TargetTokens = 10000000001"},
		{BatchSpec{TargetTokens: 1, ContextTokens: 0}, "BatchSpec.ContextTokens = 0 out of range (allowed: [1, 1073741824])"},
		{BatchSpec{TargetTokens: 1, ContextTokens: 1<<30 + 1}, "BatchSpec.ContextTokens = 1073741825"},
		{BatchSpec{TargetTokens: 1, ContextTokens: 1, Overlong: 7}, "BatchSpec.Overlong = 7 (allowed: split, drop)"},
	} {
		if _, err := NewSampler(d, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSampler(%+v) error = %v, want %q", tc.spec, err, tc.want)
		}
		if _, err := NewListSampler([]int{1}, Resample, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewListSampler(%+v) error = %v, want %q", tc.spec, err, tc.want)
		}
	}
	ok := BatchSpec{TargetTokens: 1, ContextTokens: 1}
	if _, err := NewSampler(nil, ok); err == nil {
		t.Error("nil distribution accepted")
	}
	if _, err := NewSampler(LogNormal{}, ok); err == nil || !strings.Contains(err.Error(), "MedianTokens = 0") {
		t.Errorf("invalid distribution: error %v", err)
	}
	if _, err := NewListSampler(nil, Resample, ok); err == nil {
		t.Error("empty list accepted")
	}
	if _, err := NewListSampler([]int{3, 0}, Sequential, ok); err == nil || !strings.Contains(err.Error(), "lengths[1] = 0 out of range") {
		t.Errorf("zero length: error %v", err)
	}
	if _, err := NewListSampler([]int{3}, ListOrder(5), ok); err == nil {
		t.Error("bad list order accepted")
	}
}

func TestParseEnums(t *testing.T) {
	for _, o := range []Overlong{Split, Drop} {
		if got, err := ParseOverlong(strings.ToUpper(o.String())); err != nil || got != o {
			t.Errorf("ParseOverlong(%q) = %v, %v", o, got, err)
		}
	}
	for _, o := range []ListOrder{Resample, Sequential} {
		if got, err := ParseListOrder(" " + o.String()); err != nil || got != o {
			t.Errorf("ParseListOrder(%q) = %v, %v", o, got, err)
		}
	}
	if _, err := ParseOverlong("truncate"); err == nil || !strings.Contains(err.Error(), "allowed: split, drop") {
		t.Errorf("ParseOverlong(truncate) error = %v", err)
	}
	if _, err := ParseListOrder("shuffle"); err == nil || !strings.Contains(err.Error(), "allowed: resample, sequential") {
		t.Errorf("ParseListOrder(shuffle) error = %v", err)
	}
	if s := fmt.Sprint(Overlong(9), ListOrder(9)); s != "Overlong(9) ListOrder(9)" {
		t.Errorf("unknown values print as %q", s)
	}
}

func TestNegativeIterationPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "workload: ") {
			t.Errorf("recover() = %v, want a workload panic", r)
		}
	}()
	mustSampler(t, long256K(t), BatchSpec{TargetTokens: 10, ContextTokens: 10}).Batch(-1)
}

func BenchmarkBatch(b *testing.B) {
	s := mustSampler(b, long256K(b), BatchSpec{TargetTokens: 4_194_304, ContextTokens: 262144, Overlong: Split, Seed: 1})
	seqs, k := 0, 0
	for b.Loop() {
		seqs += len(s.Batch(k).Lengths)
		k++
	}
	b.ReportMetric(float64(seqs)/b.Elapsed().Seconds(), "seqs/s")
	b.ReportMetric(float64(seqs)/float64(k), "seqs/batch")
}
