package sched

import (
	"fmt"
	"math"
)

// OffloadCosts are what a planner needs of a job to choose ByteScale's
// selective-offload ratio (Ge et al., SIGCOMM 2025, §5.2, Eq. 3): how fast a
// rank moves activations to and from host memory, how many bytes per token
// offload moves, and how long the forward they must hide under takes. The
// paper profiles T(s) = α1·s² + β1·s + γ and Act(s) = α2·s + β2 per layer;
// these are the same quantities for the layers offload moves (all of a
// stage's layers but each chunk's last two), on the stage that sets the
// pipeline's pace. Scenario runs take them from the cost model
// (costmodel.Model.OffloadCosts); a policy never sees the cost model itself.
type OffloadCosts struct {
	// Source says where the numbers come from, for diagnostics.
	Source string `json:"source"`
	// HostBytesPerSecond is min(B_d2h, B_h2d), the PCIe copy rate offload
	// moves at both ways (Eq. 3's denominator).
	HostBytesPerSecond float64 `json:"host_bytes_per_second"`
	// OffloadBytesPerToken is Act(s)/s over the offloadable layers: the bytes
	// of activations per token of a rank's shard that offload at ratio 1
	// moves during the forward (and back during the backward).
	OffloadBytesPerToken float64 `json:"offload_bytes_per_token"`
	// ForwardAttentionSecondsPerToken2 and ForwardLinearSecondsPerToken are
	// T(s) over the same layers, forward only (the D2H copies run during the
	// forward): causal attention per token² of per-rank load (s²/k for a
	// sequence on k ranks) and the per-token work (GEMMs, memory-bound ops,
	// MoE dispatch) per token a rank holds.
	ForwardAttentionSecondsPerToken2 float64 `json:"forward_attention_seconds_per_token2"`
	ForwardLinearSecondsPerToken     float64 `json:"forward_linear_seconds_per_token"`
}

// Check returns an error naming the first field out of range: every number
// finite and >= 0, the copy rate and the bytes per token > 0.
func (c OffloadCosts) Check() error {
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) } // NaN fails
	switch {
	case !ok(c.HostBytesPerSecond) || c.HostBytesPerSecond == 0:
		return fmt.Errorf("sched: offload costs: host_bytes_per_second = %v: must be a finite number > 0", c.HostBytesPerSecond)
	case !ok(c.OffloadBytesPerToken) || c.OffloadBytesPerToken == 0:
		return fmt.Errorf("sched: offload costs: offload_bytes_per_token = %v: must be a finite number > 0", c.OffloadBytesPerToken)
	case !ok(c.ForwardAttentionSecondsPerToken2):
		return fmt.Errorf("sched: offload costs: forward_attention_seconds_per_token2 = %v: must be a finite number >= 0", c.ForwardAttentionSecondsPerToken2)
	case !ok(c.ForwardLinearSecondsPerToken):
		return fmt.Errorf("sched: offload costs: forward_linear_seconds_per_token = %v: must be a finite number >= 0", c.ForwardLinearSecondsPerToken)
	}
	return nil
}

// HiddenRatio is the largest offload ratio r whose copies hide under the
// forward of a sequence of s tokens, Eq. 3's T(s) >= Act(s)·r/min(B_d2h,
// B_h2d), at most 1. On k ranks each rank holds s/k tokens and does 1/k of
// the attention, so k cancels:
//
//	r = min(1, B_host·(α·s + β) / a),
//
// α the forward attention per token², β the forward per-token work and a the
// offloaded bytes per token.
func (c OffloadCosts) HiddenRatio(s int) float64 {
	t := c.ForwardAttentionSecondsPerToken2*float64(s) + c.ForwardLinearSecondsPerToken
	return min(1, c.HostBytesPerSecond*t/c.OffloadBytesPerToken)
}

// OffloadRanks is Eq. 3 for a sequence of s >= C tokens, with activations
// proportional to tokens (β2 = 0) and a part share of a rank's keep that
// offload may move: it returns the ratio r and the fewest ranks D(s) that
// hold the sequence when each keeps at most C tokens' worth on the GPU,
//
//	D(s) = ⌈s·(1 − r·share)/C⌉ with r = HiddenRatio(s),
//
// Eq. 3's ⌈(2·Act(s) + (1−r)(l−2)·Act(s))/(l·Act(C))⌉ for share = (l−2)/l. The
// paper bounds r from below by min(1, l·Act(C)/((l−2)·Act(s))), the least
// ratio that spares a rank; a hidden ratio below it (or share = 0) is no
// offload: r = 0, D(s) = ⌈s/C⌉. Of the ratios reaching the least D(s) it
// returns the smallest (Eq. 3's argmin is not unique: a smaller ratio moves
// fewer bytes for the same ranks), r = (1 − D·C/s)/share.
func (c OffloadCosts) OffloadRanks(s, budgetTokens int, share float64) (r float64, ranks int) {
	plain := CeilDiv(s, budgetTokens)
	if share <= 0 || s < budgetTokens {
		return 0, plain
	}
	hidden := c.HiddenRatio(s)
	if hidden < min(1, float64(budgetTokens)/(share*float64(s))) {
		return 0, plain
	}
	ranks = max(1, int(math.Ceil(float64(s)*(1-hidden*share)/float64(budgetTokens)-1e-9)))
	if ranks >= plain {
		return 0, plain
	}
	r = (1 - float64(ranks)*float64(budgetTokens)/float64(s)) / share
	return min(max(r, 0), hidden), ranks
}

// FittingRatio is the least offload ratio at which a rank of a group
// holding tokens tokens per rank keeps at most budget tokens' worth on the
// GPU (ResidentTokens <= budget): 0 when tokens <= budget, and more than 1
// (no ratio fits) when tokens·(1 − share) > budget.
func FittingRatio(tokens, budget, share float64) float64 {
	if tokens <= budget {
		return 0
	}
	if share <= 0 {
		return math.Inf(1)
	}
	return (1 - budget/tokens) / share
}
