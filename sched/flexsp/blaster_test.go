package flexsp

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestChunkEqualsDP: the binary-search partition gives the public code's DP
// cuts exactly (same maximum, same tie-breaking) on random sorted and
// unsorted inputs.
func TestChunkEqualsDP(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for c := range 3000 {
		n := 1 + rng.IntN(40)
		items := make([]int, n)
		for i := range items {
			items[i] = 1 + rng.IntN([]int{3, 50, 5000}[c%3])
		}
		if c%2 == 0 {
			slices.SortFunc(items, func(a, b int) int { return b - a })
		}
		m := 1 + rng.IntN(n)
		got, want := chunk(items, m), chunkDP(items, m)
		if !slices.Equal(got, want) {
			t.Fatalf("items %v m %d: cuts %v, DP %v", items, m, got, want)
		}
	}
}

// TestBucketerEqualsDP: the divide-and-conquer bucketing equals the plain DP
// (boundaries and counts) for every bucket count.
func TestBucketerEqualsDP(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for c := range 1000 {
		n := 1 + rng.IntN(40)
		lengths := make([]int, n)
		for i := range lengths {
			lengths[i] = 1 + rng.IntN([]int{4, 100, 100000}[c%3])
		}
		values, counts := distinct(lengths)
		b := newBucketer(values, counts)
		for k := 1; k <= len(values); k++ {
			b.grow()
			if k > 3 && k < len(values)-2 && k%5 != 0 {
				continue // every count up to 3, the last three, every fifth
			}
			got, want := b.buckets(k), bucketDP(values, counts, k)
			if !slices.Equal(got, want) {
				t.Fatalf("lengths %v k %d: %v, DP %v", lengths, k, got, want)
			}
		}
	}
}
