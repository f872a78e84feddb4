package radix

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortIndexedIsSlicesSort: on keys of random high parts (a few values,
// a narrow or a wide spread, one value, wide indexes) above an increasing
// index, SortIndexed gives exactly slices.Sort's order.
func TestSortIndexedIsSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 46))
	cases := 0
	for _, indexBits := range []uint{20, 32, 38} {
		for _, highBits := range []uint{0, 1, 3, 9, 18, 25, 64 - 38} {
			for _, n := range []int{0, 1, 2, 17, 1000, 50000} {
				keys := make([]uint64, n)
				for i := range keys {
					high := rng.Uint64() & (1<<highBits - 1)
					if highBits > 0 && rng.IntN(3) == 0 {
						high = 1<<highBits - 1 // many equal keys above the index
					}
					keys[i] = high<<indexBits | uint64(i)
				}
				want := slices.Sorted(slices.Values(keys))
				got := SortIndexed(slices.Clone(keys), make([]uint64, n), indexBits)
				if !slices.Equal(got, want) {
					t.Fatalf("index bits %d, high bits %d, n %d: SortIndexed differs from slices.Sort", indexBits, highBits, n)
				}
				cases++
			}
		}
	}
	t.Logf("%d cases", cases)
}

// BenchmarkSortIndexed sorts 181K keys of 18-bit high parts (a long-256k
// batch's lengths at G = 4096) against slices.Sort.
func BenchmarkSortIndexed(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 46))
	keys := make([]uint64, 181368)
	for i := range keys {
		keys[i] = uint64(rng.IntN(1<<18))<<32 | uint64(i)
	}
	buf, tmp := make([]uint64, len(keys)), make([]uint64, len(keys))
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			copy(buf, keys)
			SortIndexed(buf, tmp, 32)
		}
	})
	b.Run("slices.Sort", func(b *testing.B) {
		for b.Loop() {
			copy(buf, keys)
			slices.Sort(buf)
		}
	})
}
