package flexsp

import (
	"fmt"
	"strings"

	"github.com/dcpsim/dcpsim/sched"
)

// Diagnostics explain a FlexSP plan: the costs it planned with, every
// microbatch count tried and why it was kept or not, the solver's answers
// and the chosen microbatches.
type Diagnostics struct {
	// Costs names where the cost coefficients come from.
	Costs string `json:"costs"`
	// Degrees are the candidate group sizes.
	Degrees []int `json:"degrees"`
	// TokenBoundMicrobatches is ⌈tokens/(G·B)⌉; MinMicrobatches the least
	// count whose chunks all fit the pool (M_min, §4.2).
	TokenBoundMicrobatches int `json:"token_bound_microbatches"`
	MinMicrobatches        int `json:"min_microbatches"`
	// Candidates are the counts tried, in order.
	Candidates []CandidateDiag `json:"candidates"`
	// Microbatches is the chosen count and PredictedSeconds its Σ Cmax.
	Microbatches     int     `json:"chosen_microbatches"`
	PredictedSeconds float64 `json:"predicted_seconds"`
	// Solver names the solver of the last solve.
	Solver string `json:"solver,omitempty"`
	// Solves counts the MILPs solved, by status; StartWithinGap the
	// microbatches whose heuristic start was provably within the gap, so
	// no solve ran; TimeLimited solves are the only ones whose answer can
	// differ between runs.
	Solves         int `json:"solves"`
	Optimal        int `json:"optimal"`
	GapLimited     int `json:"gap_limited"`
	NodeLimited    int `json:"node_limited"`
	TimeLimited    int `json:"time_limited"`
	Infeasible     int `json:"infeasible"`
	NoSolution     int `json:"no_solution"`
	StartWithinGap int `json:"start_within_gap"`
	// PackingFailures counts microbatches whose aggregated groups found no
	// packing within B (their count then had no plan).
	PackingFailures int `json:"packing_failures"`
	// Chosen describes the chosen count's microbatches.
	Chosen []MicrobatchDiag `json:"chosen"`
}

// CandidateDiag is one microbatch count tried.
type CandidateDiag struct {
	Microbatches      int     `json:"microbatches"`
	LowerBoundSeconds float64 `json:"lower_bound_seconds"`
	PredictedSeconds  float64 `json:"predicted_seconds,omitempty"`
	Outcome           string  `json:"outcome"`
}

// MicrobatchDiag is one microbatch of the chosen count.
type MicrobatchDiag struct {
	Sequences int `json:"sequences"`
	Buckets   int `json:"buckets"`
	// Groups is the mix of group sizes, e.g. "1x32 2x16 3x8".
	Groups string `json:"groups"`
	// CmaxSeconds is the slowest group's time on the true lengths;
	// ObjectiveSeconds the MILP's C (bucketed lengths, aggregated groups'
	// means); LowerBoundSeconds C's lower bound.
	CmaxSeconds       float64 `json:"cmax_seconds"`
	ObjectiveSeconds  float64 `json:"objective_seconds"`
	LowerBoundSeconds float64 `json:"lower_bound_seconds"`
	Status            string  `json:"status"`
	// FillsPool: the code's rule (groups cover the pool, none empty) held;
	// else the paper's Σ d·m <= N.
	FillsPool bool `json:"fills_pool"`
	// PerGroupModel: every group was modelled one by one (the paper's
	// formulation, exact).
	PerGroupModel bool `json:"per_group_model"`
	Variables     int  `json:"variables"`
}

// lastReason is the outcome of the last count tried.
func (d *Diagnostics) lastReason() string {
	if len(d.Candidates) == 0 {
		return "none tried"
	}
	c := d.Candidates[len(d.Candidates)-1]
	return fmt.Sprintf("M = %d: %s", c.Microbatches, c.Outcome)
}

// Summary lists the plan's main numbers.
func (d *Diagnostics) Summary() []sched.KV {
	var tried []string
	for _, c := range d.Candidates {
		v := strings.SplitN(c.Outcome, ":", 2)[0]
		if c.PredictedSeconds > 0 {
			v = fmt.Sprintf("%.4g s", c.PredictedSeconds)
		}
		tried = append(tried, fmt.Sprintf("%d: %s", c.Microbatches, v))
	}
	return []sched.KV{
		{Name: "costs", Value: d.Costs},
		{Name: "group sizes", Value: fmt.Sprint(d.Degrees)},
		{Name: "M_min", Value: fmt.Sprintf("%d (token bound %d)", d.MinMicrobatches, d.TokenBoundMicrobatches)},
		{Name: "counts tried", Value: strings.Join(tried, "; ")},
		{Name: "chosen M", Value: fmt.Sprint(d.Microbatches)},
		{Name: "predicted Σ Cmax", Value: fmt.Sprintf("%.4g s", d.PredictedSeconds)},
		{Name: "solves", Value: fmt.Sprintf("%d (optimal %d, gap %d, node limit %d, time limit %d, infeasible %d, none found %d); %d starts within the gap",
			d.Solves, d.Optimal, d.GapLimited, d.NodeLimited, d.TimeLimited, d.Infeasible, d.NoSolution, d.StartWithinGap)},
		{Name: "packing failures", Value: fmt.Sprint(d.PackingFailures)},
	}
}
