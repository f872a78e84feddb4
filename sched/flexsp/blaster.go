package flexsp

import (
	"cmp"
	"slices"
	"sort"
)

// sortedOrder returns the batch's sequence ids longest first, equal lengths
// by ascending id (the public code sorts a list of sequences by length,
// descending, with Python's stable sort).
func sortedOrder(lengths []int) []int {
	ids := make([]int, len(lengths))
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(lengths[b], lengths[a]) })
	return ids
}

// prefixSums returns P with P[i] = Σ xs[:i].
func prefixSums(xs []int) []int64 {
	p := make([]int64, len(xs)+1)
	for i, x := range xs {
		p[i+1] = p[i] + int64(x)
	}
	return p
}

// chunkStart returns the smallest j <= end with P[end] − P[j] <= limit: the
// start of the longest chunk ending at end whose sum stays within limit.
func chunkStart(p []int64, end int, limit int64) int {
	return sort.Search(end, func(j int) bool { return p[end]-p[j] <= limit })
}

// chunksNeeded returns how many consecutive chunks, each summing to at most
// limit, cover items [0, end) (filled greedily from the back; the greedy
// count is the least possible), or end+1 when an item alone exceeds limit.
func chunksNeeded(p []int64, end int, limit int64) int {
	n := 0
	for end > 0 {
		j := chunkStart(p, end, limit)
		if j == end {
			return len(p) // an item exceeds limit
		}
		end = j
		n++
	}
	return n
}

// minMaxChunk returns the least T such that items [0, end) split into k
// non-empty consecutive chunks each summing to at most T (end >= k >= 1):
// binary search over T with the greedy count.
func minMaxChunk(p []int64, end, k int) int64 {
	var largest int64
	for i := range end {
		largest = max(largest, p[i+1]-p[i])
	}
	lo := max(largest, (p[end]+int64(k)-1)/int64(k))
	hi := p[end]
	for lo < hi {
		mid := lo + (hi-lo)/2
		if chunksNeeded(p, end, mid) <= k {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// chunk is the Sequence Blaster's partition (FlexSP §4.2, App. A): items
// (the sorted sequence lengths) split into m non-empty consecutive chunks
// minimising the largest chunk sum, the DP
// DP[k][i] = min_j max(DP[k−1][j], Σ items[j:i]). It returns the cuts
// c[0] = 0 < c[1] < ... < c[m] = len(items). Among optimal partitions it
// returns the one the public code's DP reconstructs: the last chunk as long
// as possible such that the rest is itself an optimal partition of its
// prefix into one chunk fewer (the DP's smallest j attaining the minimum),
// and so on backwards. Binary search on the answer with a greedy count
// replaces the O(n²m) DP, which a 10^5-sequence batch cannot afford; the test
// checks both give the same cuts. Needs 1 <= m <= len(items).
func chunk(items []int, m int) []int {
	p := prefixSums(items)
	cuts := make([]int, m+1)
	end := len(items)
	cuts[m] = end
	for k := m; k >= 1; k-- {
		if k == 1 {
			cuts[0] = 0
			break
		}
		t := minMaxChunk(p, end, k)
		j := max(chunkStart(p, end, t), k-1)
		cuts[k-1] = j
		end = j
	}
	return cuts
}

// chunkDP is the public code's O(n²m) DP, kept as the reference chunk must
// equal (tests only; the strict improvement over ascending j picks the
// smallest j attaining the minimum).
func chunkDP(items []int, m int) []int {
	n := len(items)
	p := prefixSums(items)
	const inf = int64(1) << 62
	dp := make([][]int64, n+1)
	part := make([][]int, n+1)
	for i := range dp {
		dp[i] = make([]int64, m+1)
		part[i] = make([]int, m+1)
		for k := range dp[i] {
			dp[i][k] = inf
		}
	}
	dp[0][0] = 0
	for k := 1; k <= m; k++ {
		for i := 1; i <= n; i++ {
			for j := k - 1; j < i; j++ {
				if v := max(dp[j][k-1], p[i]-p[j]); v < dp[i][k] {
					dp[i][k], part[i][k] = v, j
				}
			}
		}
	}
	cuts := make([]int, m+1)
	cuts[m] = n
	for k, i := m, n; k > 0; k-- {
		cuts[k-1] = part[i][k]
		i = part[i][k]
	}
	return cuts
}
