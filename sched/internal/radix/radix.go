// Package radix sorts the planners' sequence keys: uint64s that carry a
// sequence's index in their low bits, in index order, under a key on the
// bits above (HyDra, Megatron-Core DCP, WLB-LLM and ByteScale put the
// longest sequence first, ties by lower index). A stable LSD radix sort over
// only the high bits in which the keys differ gives exactly the order
// slices.Sort gives them, in O(N): the batches of a search at 16K GPUs hold
// 10^5-10^6 sequences, planned every iteration.
package radix

import (
	"cmp"
	"math/bits"
	"slices"
)

// maxDigitBits bounds a pass's digit: 2^11 counters. Lengths up to 256K
// differ in 18 bits, sorted in two passes of 9-bit digits, whose 512
// buckets scatter faster than 2048 (hydra's BenchmarkSortLongestFirst,
// 181K sequences: 2.4-2.9 ms against 3.4-3.9 ms with fixed 11-bit digits;
// 6-bit digits in three passes, and counting every pass's digits in one
// read, were slower).
const maxDigitBits = 11

// SortIndexed sorts keys ascending. Each key's low indexBits bits must hold
// an index that increases along keys (the keys are then distinct, and those
// equal above the index already in order); the sort is over the bits above,
// in as few passes of at most maxDigitBits-bit digits as cover the bits in
// which some keys differ, the digits as narrow as that allows. tmp is its
// buffer, of len(keys); the sorted keys are returned, in keys or in tmp.
func SortIndexed(keys, tmp []uint64, indexBits uint) []uint64 {
	if len(keys) == 0 {
		return keys
	}
	var spread uint64 // the bits above the index in which some key differs from the first
	first := keys[0] >> indexBits
	for _, k := range keys {
		spread |= k>>indexBits ^ first
	}
	if spread == 0 {
		return keys // index order is the order
	}
	low := int(indexBits) + bits.TrailingZeros64(spread)
	width := int(indexBits) + bits.Len64(spread) - low
	passes := (width + maxDigitBits - 1) / maxDigitBits
	digitBits := (width + passes - 1) / passes
	mask := uint64(1)<<digitBits - 1
	var count [1 << maxDigitBits]int
	for p := range passes {
		shift := low + p*digitBits
		c := &count
		clear(c[:mask+1])
		for _, x := range keys {
			c[(x>>shift)&mask]++
		}
		total := 0
		for d := range mask + 1 {
			c[d], total = total, total+c[d]
		}
		for _, x := range keys {
			d := (x >> shift) & mask
			tmp[c[d]] = x
			c[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// LongestFirst returns the indices of lengths (each >= 0) by length
// descending, equal lengths in index order: Python's stable sort by length,
// reversed, as Megatron-Core's and MegaScale's packers sort. O(N) through
// SortIndexed while every length is below 2^32 (a comparison sort above).
func LongestFirst(lengths []int) []int32 {
	items := make([]int32, len(lengths))
	if len(lengths) > 0 && slices.Max(lengths) < 1<<32 {
		// One key per index: the complemented length above the index.
		keys := make([]uint64, len(lengths))
		for i, s := range lengths {
			keys[i] = uint64(^uint32(s))<<32 | uint64(i)
		}
		for i, k := range SortIndexed(keys, make([]uint64, len(keys)), 32) {
			items[i] = int32(uint32(k))
		}
		return items
	}
	for i := range items {
		items[i] = int32(i)
	}
	slices.SortStableFunc(items, func(x, y int32) int { return cmp.Compare(lengths[y], lengths[x]) })
	return items
}
