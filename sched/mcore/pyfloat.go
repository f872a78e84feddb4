package mcore

import (
	"math/big"
	"math/bits"
)

// Python's true division of two ints rounds the exact quotient once. The helpers
// below give the same float64; the fast paths cover every realistic length.

// pyDiv returns Python's n / d for ints n >= 0, d > 0.
func pyDiv(n, d int) float64 {
	if n < 1<<53 {
		return float64(n) / float64(d) // both exact, one rounding
	}
	return bigQuo(new(big.Int).SetUint64(uint64(n)), d)
}

// pyWorkload returns Python's (s * s) / cp: the exact square divided by cp with one
// rounding (Megatron's workload proxy).
func pyWorkload(s, cp int) float64 {
	hi, lo := bits.Mul64(uint64(s), uint64(s))
	if hi == 0 && (lo < 1<<53 || (lo < 1<<63 && cp&(cp-1) == 0)) {
		// Exact square, or a correctly rounded square scaled exactly by a power of two.
		return float64(int64(lo)) / float64(cp)
	}
	sq := new(big.Int).SetUint64(hi)
	sq.Lsh(sq, 64).Or(sq, new(big.Int).SetUint64(lo))
	return bigQuo(sq, cp)
}

// bigQuo rounds n/d to the nearest float64 (ties to even), as Python does.
func bigQuo(n *big.Int, d int) float64 {
	f, _ := new(big.Rat).SetFrac(n, big.NewInt(int64(d))).Float64()
	return f
}
