package flexsp

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
)

// FlexSP's public code defaults (galvatron/flexsp_solver/solver.py,
// flexSPCostModel: GPT-7B profiled on A100-40GB), used when no cost model
// describes the job (the --batches contracts, whose lines name no model or
// GPU). Times there are in milliseconds; here in seconds.
const (
	// DefaultAttentionSecondsPerToken2 is cpt_alpha1 = 5.128e-6 ms/token².
	DefaultAttentionSecondsPerToken2 = 5.128e-9
	// DefaultLinearSecondsPerToken is cpt_alpha2 = 0.1839576 ms/token.
	DefaultLinearSecondsPerToken = 1.839576e-4
	// DefaultFixedSeconds is cpt_beta1 = 629.3563 ms.
	DefaultFixedSeconds = 0.6293563
	// defaultAllToAllBytesPerToken is the code's all-to-all volume per token a
	// rank holds: 4·2·layers·hidden·2 bytes = 2 MiB for GPT-7B (32 layers,
	// hidden 4096), which it divides by a bandwidth in "GB/s" taken as MiB per
	// ms: u = 2/v ms per token.
	defaultAllToAllMsPerTokenGBs = 2.0
)

// defaultBandwidthGBs is the code's all-to-all bandwidth by group size
// (alltoall_bandwidth_dict_gbs): the constructor's default {2: 154, 4: 137,
// 8: 121, 16: 8.7} (inside an A100 node, then across its 400 Gb/s IB) and
// check_costmodel's {32: 6, 64: 5}; wider groups keep 5 (our extension: the
// code has no entry and would fail).
var defaultBandwidthGBs = map[int]float64{2: 154, 4: 137, 8: 121, 16: 8.7, 32: 6, 64: 5}

// DefaultTokenCosts returns FlexSP's code defaults as sched.TokenCosts, with
// all-to-all entries for every power of two up to maxDegree.
func DefaultTokenCosts(maxDegree int) sched.TokenCosts {
	c := sched.TokenCosts{
		Source: "FlexSP's public code defaults (flexSPCostModel, GPT-7B on A100-40GB): a1 = 5.128e-6 ms/token², " +
			"a2 = 0.184 ms/token, b1 = 629 ms, all-to-all 2 MiB/token at {2: 154, 4: 137, 8: 121, 16: 8.7, 32: 6, 64: 5 and wider: 5} GB/s",
		AttentionSecondsPerToken2: DefaultAttentionSecondsPerToken2,
		LinearSecondsPerToken:     DefaultLinearSecondsPerToken,
		FixedSeconds:              DefaultFixedSeconds,
	}
	for k := 2; k <= maxDegree && k <= sched.MaxPoolRanks; k *= 2 {
		v, ok := defaultBandwidthGBs[k]
		if !ok {
			v = defaultBandwidthGBs[64]
		}
		c.AllToAll = append(c.AllToAll, sched.DegreeSeconds{Degree: k, SecondsPerToken: defaultAllToAllMsPerTokenGBs / v * 1e-3})
	}
	return c
}

// timing is FlexSP's cost model (§4.1.2, Eq. 12-13) on the costs planned
// with: a group of k ranks running sequences s_i takes
// b1 + Σ_i (a1·s_i² + (a2 + u_k)·s_i)/k.
type timing struct {
	a1, a2, b1 float64
	u          map[int]float64 // all-to-all seconds per per-rank token by degree
}

func newTiming(c sched.TokenCosts) timing {
	t := timing{a1: c.AttentionSecondsPerToken2, a2: c.LinearSecondsPerToken, b1: c.FixedSeconds, u: map[int]float64{1: 0}}
	for _, d := range c.AllToAll {
		t.u[d.Degree] = d.SecondsPerToken
	}
	return t
}

// seqSeconds is one sequence's share of a group's time: (a1·s² + (a2+u_k)·s)/k.
func (t timing) seqSeconds(s, k int) float64 {
	x := float64(s)
	return (t.a1*x*x + (t.a2+t.u[k])*x) / float64(k)
}

// groupSeconds is a group's time running lengths.
func (t timing) groupSeconds(lengths []int, k int) float64 {
	sum := t.b1
	for _, s := range lengths {
		sum += t.seqSeconds(s, k)
	}
	return sum
}

// describe is a one-line summary of the coefficients.
func (t timing) String() string {
	return fmt.Sprintf("a1 %.3g s/token², a2 %.3g s/token, b1 %.3g s", t.a1, t.a2, t.b1)
}
