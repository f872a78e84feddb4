package sched

import "fmt"

// Megatron's rule for the microbatch count of one pipeline iteration, in one
// place: sim/pipeline refuses an illegal count with CheckMicrobatchCount, and a
// policy that must reach a legal count (HyDra with vpp > 1) asks
// LegalMicrobatchCount for the least one.
//
// With vpp = 1 (1F1B) every count m >= 1 is legal. With vpp > 1 (interleaved
// 1F1B, forward_backward_pipelining_with_interleaving in
// megatron/core/pipeline_parallel/schedules.py) Megatron raises unless
// pp <= N <= m and m mod N is 0 or >= pp, with N the microbatch group size
// (microbatch_group_size_per_vp_stage, default pp).

// CheckMicrobatchCount returns nil if Megatron's schedule runs m microbatches on
// pp stages with vpp chunks per stage and microbatch group size n (n <= 0 means
// pp), and otherwise an error naming the rule that fails.
func CheckMicrobatchCount(pp, vpp, m, n int) error {
	if n <= 0 {
		n = pp
	}
	switch {
	case pp < 1:
		return fmt.Errorf("p = %d stages: need p ≥ 1", pp)
	case vpp < 1:
		return fmt.Errorf("v = %d chunks per stage: need v ≥ 1", vpp)
	case m < 1:
		return fmt.Errorf("m = %d micro-batches: need m ≥ 1", m)
	case vpp == 1:
		return nil
	case n < pp || n > m:
		return fmt.Errorf("interleaved schedule (v = %d) needs p ≤ N ≤ m "+
			"(Megatron: micro-batch group size must lie in [PP, M]); got p = %d, N = %d, m = %d", vpp, pp, n, m)
	case m%n != 0 && m%n < pp:
		return fmt.Errorf("interleaved schedule (v = %d) needs m mod N = 0 or ≥ p "+
			"(Megatron: a last group smaller than PP introduces dependency bubbles); "+
			"got m = %d, N = %d, m mod N = %d < p = %d", vpp, m, n, m%n, pp)
	}
	return nil
}

// LegalMicrobatchCount returns the smallest count >= m that
// CheckMicrobatchCount accepts for the interleaved schedule (vpp > 1) with pp
// stages and group size n: n when m <= n, m when m mod n is 0 or >= pp, else
// the count that completes the last group to pp. ok is false when no count is
// legal (n < pp). With vpp = 1 every count is legal and this does not apply.
func LegalMicrobatchCount(m, pp, n int) (count int, ok bool) {
	if n < pp || n < 1 {
		return 0, false
	}
	if m <= n {
		return n, true
	}
	r := m % n
	if r == 0 || r >= pp {
		return m, true
	}
	return m + pp - r, true // (m − r) + pp: pp <= n, so a remainder of pp, or 0 when pp = n
}
