package sched

import (
	"fmt"
	"math"
)

// TokenCosts is a job's microbatch time on one pipeline stage in the linear
// form the profiling planners fit (FlexSP §4.1.2, Eq. 12-13; ByteScale's
// T(s) = α s² + β s + γ): a CP group of k ranks running sequences s_i under
// Ulysses takes
//
//	FixedSeconds + (AttentionSecondsPerToken2·Σ s_i² + (LinearSecondsPerToken + u_k)·Σ s_i) / k
//
// with u_k = AllToAllSecondsPerToken(k) (0 for k = 1). A policy that plans
// with a profiled cost model receives it in its Env (Env.TokenCosts); scenario runs
// derive it from the cost model (costmodel.Model.TokenCosts), so it describes
// the simulated cluster. It is a plain value: policies never see the cost
// model itself.
type TokenCosts struct {
	// Source says where the numbers come from, for diagnostics.
	Source string `json:"source"`
	// AttentionSecondsPerToken2 is a1: core attention, forward and backward,
	// per token² of per-rank load s²/k.
	AttentionSecondsPerToken2 float64 `json:"attention_seconds_per_token2"`
	// LinearSecondsPerToken is a2: the per-token work (GEMMs, element-wise
	// ops, expert dispatch) per token a rank holds.
	LinearSecondsPerToken float64 `json:"linear_seconds_per_token"`
	// FixedSeconds is b1: what a microbatch costs whatever it holds (kernel
	// launches, collective latencies).
	FixedSeconds float64 `json:"fixed_seconds"`
	// AllToAll holds u_k, the Ulysses all-to-all seconds per token a rank of
	// a group of k ranks holds, forward and backward, by ascending degree k
	// (powers of two from 2). Its last degree is the widest group the costs
	// describe: a policy plans no wider group.
	AllToAll []DegreeSeconds `json:"all_to_all"`
}

// DegreeSeconds is a per-token cost at one CP degree.
type DegreeSeconds struct {
	Degree          int     `json:"degree"`
	SecondsPerToken float64 `json:"seconds_per_token"`
}

// AllToAllSecondsPerToken returns u_k for a group of k ranks: 0 for k <= 1,
// the table's value at k, and false when the table has no entry for k.
func (c TokenCosts) AllToAllSecondsPerToken(k int) (float64, bool) {
	if k <= 1 {
		return 0, true
	}
	for _, d := range c.AllToAll {
		if d.Degree == k {
			return d.SecondsPerToken, true
		}
	}
	return 0, false
}

// MaxDegree is the widest group the costs describe: the last all-to-all
// degree, or 1 when the table is empty.
func (c TokenCosts) MaxDegree() int {
	if len(c.AllToAll) == 0 {
		return 1
	}
	return c.AllToAll[len(c.AllToAll)-1].Degree
}

// Check returns an error naming the first field out of range: every cost a
// finite number >= 0, not all of a1, a2 and the all-to-alls zero, and the
// all-to-all degrees the powers of two 2, 4, 8, ... in order.
func (c TokenCosts) Check() error {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) } // NaN fails
	switch {
	case !ok(c.AttentionSecondsPerToken2):
		return fmt.Errorf("sched: token costs: attention_seconds_per_token2 = %v: must be a finite number >= 0", c.AttentionSecondsPerToken2)
	case !ok(c.LinearSecondsPerToken):
		return fmt.Errorf("sched: token costs: linear_seconds_per_token = %v: must be a finite number >= 0", c.LinearSecondsPerToken)
	case !ok(c.FixedSeconds):
		return fmt.Errorf("sched: token costs: fixed_seconds = %v: must be a finite number >= 0", c.FixedSeconds)
	case c.AttentionSecondsPerToken2 == 0 && c.LinearSecondsPerToken == 0:
		return fmt.Errorf("sched: token costs: attention_seconds_per_token2 and linear_seconds_per_token are both 0: a sequence would cost nothing")
	case len(c.AllToAll) > 30:
		return fmt.Errorf("sched: token costs: %d all-to-all degrees: must be at most 30", len(c.AllToAll))
	}
	for i, d := range c.AllToAll {
		if d.Degree != 2<<i {
			return fmt.Errorf("sched: token costs: all_to_all[%d].degree = %d: must be %d (powers of two from 2, in order)", i, d.Degree, 2<<i)
		}
		if !ok(d.SecondsPerToken) {
			return fmt.Errorf("sched: token costs: all_to_all[%d].seconds_per_token = %v: must be a finite number >= 0", i, d.SecondsPerToken)
		}
	}
	return nil
}
