package radix

import (
	"cmp"
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

// TestLongestFirst: the indices by length descending, equal lengths in
// index order, as a stable comparison sort gives them, below 2^32 (the radix
// path) and with a length above it (the comparison path).
func TestLongestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 46))
	for _, tc := range []struct {
		n, spread int
		huge      bool
	}{{0, 1, false}, {1, 1, false}, {50, 3, false}, {5000, 1 << 18, false}, {300, 20, true}} {
		lengths := make([]int, tc.n)
		for i := range lengths {
			lengths[i] = rng.IntN(tc.spread)
		}
		if tc.huge {
			lengths[7] = 1 << 33
		}
		want := make([]int32, tc.n)
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(x, y int32) int { return cmp.Compare(lengths[y], lengths[x]) })
		if got := LongestFirst(lengths); !slices.Equal(got, want) {
			t.Errorf("n %d, spread %d, a length of 2^33 %v: LongestFirst differs from a stable sort", tc.n, tc.spread, tc.huge)
		}
	}
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
