package static

import (
	"slices"
	"testing"
)

// TestPack: next-fit in the ids' order, padding to the multiple by
// splitting off last sequences, nil ids as every sequence, an empty list as
// no bins, the first too-long sequence named, and padding that runs out.
func TestPack(t *testing.T) {
	lengths := []int{6, 3, 3, 5, 2, 9}
	for _, c := range []struct {
		name     string
		ids      []int
		capacity int64
		multiple int
		bins     [][]int
		packed   int
		padded   bool
		tooLong  int
	}{
		{"all, no padding", nil, 10, 1, [][]int{{0, 1}, {2, 3, 4}, {5}}, 3, true, -1},
		{"all, padded to 4", nil, 10, 4, [][]int{{0, 1}, {2, 3}, {5}, {4}}, 3, true, -1},
		{"a subset in its order", []int{3, 1, 4}, 10, 1, [][]int{{3, 1, 4}}, 1, true, -1},
		{"empty", []int{}, 10, 2, nil, 0, true, -1},
		{"too long", nil, 8, 1, nil, 0, false, 5},
		{"cannot pad", []int{0, 5}, 10, 4, [][]int{{0}, {5}}, 2, false, -1},
	} {
		pk := Pack(lengths, c.ids, c.capacity, 0, c.multiple)
		if pk.TooLong != c.tooLong {
			t.Errorf("%s: too long %d, want %d", c.name, pk.TooLong, c.tooLong)
			continue
		}
		if c.tooLong >= 0 {
			continue
		}
		if !slices.EqualFunc(pk.Bins, c.bins, slices.Equal[[]int]) || pk.Packed != c.packed || pk.Padded != c.padded {
			t.Errorf("%s: bins %v (packed %d, padded %v), want %v (%d, %v)", c.name, pk.Bins, pk.Packed, pk.Padded, c.bins, c.packed, c.padded)
		}
	}
}
