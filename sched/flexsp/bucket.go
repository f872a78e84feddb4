package flexsp

import "slices"

// bucket is one sequence bucket of a microbatch (FlexSP §4.1.3): Count
// sequences, every one of at most Boundary tokens, which the MILP treats as
// Boundary tokens long.
type bucket struct {
	Boundary int `json:"boundary"`
	Count    int `json:"count"`
}

// distinct returns the distinct values of lengths, ascending, with their
// counts.
func distinct(lengths []int) (values, counts []int) {
	s := slices.Sorted(slices.Values(lengths))
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			values = append(values, x)
			counts = append(counts, 0)
		}
		counts[len(counts)-1]++
	}
	return values, counts
}

// bucketer computes optimal bucketings of one microbatch's lengths for a
// growing bucket count: the DP of FlexSP §4.1.3 over the sorted lengths,
// minimising the rounding error Σ (boundary − s) with each bucket's boundary
// its longest sequence. It runs over distinct lengths (values with counts),
// which has the same optimum: splitting equal lengths over two buckets never
// lowers the error. The DP cost of a bucket holding values (j, i],
// v_i·(N_i − N_j) − (S_i − S_j), satisfies the quadrangle inequality (its
// mixed difference is (v_d − v_c)(N_b − N_a) >= 0), so the smallest optimal
// split point is monotone in i and each DP layer takes O(D log D) by divide
// and conquer instead of O(D²); the test checks it against the plain DP.
type bucketer struct {
	values []int
	n, s   []int64   // prefix counts and sums over values
	f      [][]int64 // f[k][i]: least error of values[:i] in k+1 buckets
	arg    [][]int   // arg[k][i]: the smallest j attaining f[k][i]
	evals  int64     // cost evaluations, for WorkUnits
}

func newBucketer(values, counts []int) *bucketer {
	b := &bucketer{values: values, n: make([]int64, len(values)+1), s: make([]int64, len(values)+1)}
	for i, v := range values {
		b.n[i+1] = b.n[i] + int64(counts[i])
		b.s[i+1] = b.s[i] + int64(counts[i])*int64(v)
	}
	return b
}

// cost is the rounding error of one bucket holding values[j:i].
func (b *bucketer) cost(j, i int) int64 {
	b.evals++
	return int64(b.values[i-1])*(b.n[i]-b.n[j]) - (b.s[i] - b.s[j])
}

// layers returns how many bucket counts have been computed.
func (b *bucketer) layers() int { return len(b.f) }

// grow computes the DP layer for one more bucket.
func (b *bucketer) grow() {
	d := len(b.values)
	k := len(b.f)
	f := make([]int64, d+1)
	arg := make([]int, d+1)
	const inf = int64(1) << 62
	for i := range f {
		f[i] = inf
	}
	if k == 0 {
		for i := 1; i <= d; i++ {
			f[i] = b.cost(0, i)
		}
	} else {
		prev := b.f[k-1]
		// i in [k+1, d] with k+1 buckets; split j in [k, i-1].
		var solve func(lo, hi, jlo, jhi int)
		solve = func(lo, hi, jlo, jhi int) {
			if lo > hi {
				return
			}
			mid := (lo + hi) / 2
			best, bestJ := inf, jlo
			for j := jlo; j <= min(jhi, mid-1); j++ {
				if prev[j] >= inf {
					continue
				}
				if v := prev[j] + b.cost(j, mid); v < best {
					best, bestJ = v, j
				}
			}
			f[mid], arg[mid] = best, bestJ
			solve(lo, mid-1, jlo, bestJ)
			solve(mid+1, hi, bestJ, jhi)
		}
		solve(k+1, d, k, d-1)
	}
	b.f = append(b.f, f)
	b.arg = append(b.arg, arg)
}

// buckets returns the optimal bucketing into k buckets (1 <= k <= D, the
// layers up to k computed), ascending by boundary.
func (b *bucketer) buckets(k int) []bucket {
	out := make([]bucket, k)
	i := len(b.values)
	for l := k - 1; l >= 0; l-- {
		j := 0
		if l > 0 {
			j = b.arg[l][i]
		}
		out[l] = bucket{Boundary: b.values[i-1], Count: int(b.n[i] - b.n[j])}
		i = j
	}
	return out
}

// roundedTokens is Σ boundary·count of the optimal k-bucketing: the tokens
// the MILP sees.
func (b *bucketer) roundedTokens(k int) int64 {
	return b.s[len(b.values)] + b.f[k-1][len(b.values)]
}

// bucketize is FlexSP's bucketing of one microbatch's lengths with the
// public code's rule for the count: start at q buckets (at most the distinct
// lengths) and add buckets until the rounded-up tokens are at most half way
// from the true tokens to the pool's capacity, (Σ s + capacity)/2, so the
// rounding eats at most half the memory slack. With as many buckets as
// distinct lengths the rounding is exact. It returns the buckets and the DP's
// cost evaluations.
func bucketize(lengths []int, q int, capacity int64) ([]bucket, int64) {
	values, counts := distinct(lengths)
	b := newBucketer(values, counts)
	var total int64
	for _, s := range lengths {
		total += int64(s)
	}
	threshold := (total + capacity) / 2
	k := min(max(q, 1), len(values))
	for b.layers() < k {
		b.grow()
	}
	for k < len(values) && b.roundedTokens(k) > threshold {
		k++
		b.grow()
	}
	return b.buckets(k), b.evals
}

// bucketDP is the plain O(D²k) DP the bucketer must equal (tests only):
// f[k][i] with the smallest j attaining each minimum, reconstructed
// backwards.
func bucketDP(values, counts []int, k int) []bucket {
	b := newBucketer(values, counts)
	d := len(values)
	const inf = int64(1) << 62
	f := make([][]int64, k)
	arg := make([][]int, k)
	for l := range k {
		f[l] = make([]int64, d+1)
		arg[l] = make([]int, d+1)
		for i := 1; i <= d; i++ {
			f[l][i] = inf
			if l == 0 {
				f[l][i] = b.cost(0, i)
				continue
			}
			for j := l; j < i; j++ {
				if f[l-1][j] < inf {
					if v := f[l-1][j] + b.cost(j, i); v < f[l][i] {
						f[l][i], arg[l][i] = v, j
					}
				}
			}
		}
	}
	b.f, b.arg = f, arg
	return b.buckets(k)
}
