package results

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// The statuses of a search candidate (SearchRow.Status), in search.csv,
// search.json and dcpsim search --json.
const (
	// SearchOK is a candidate simulated on the scenario's own [run]
	// iterations and seed: its figures are what dcpsim run prints for it.
	SearchOK = "ok"
	// SearchPrunedBound is a candidate whose lower bound on the step
	// exceeded the cut of its group at a rung (it could not have survived).
	SearchPrunedBound = "pruned-bound"
	// SearchPrunedHalving is a candidate simulated on fewer iterations and
	// dropped by successive halving (outside its group's leading fraction
	// and the stated margin).
	SearchPrunedHalving = "pruned-halving"
	// SearchOutOfMemory is a candidate whose model states (or, with an
	// automatic budget, every token's activations) do not fit, or whose
	// simulated plan exceeded a GPU's HBM.
	SearchOutOfMemory = "out-of-memory"
	// SearchInvalid is a candidate the scenario validation refuses (Reason
	// says why).
	SearchInvalid = "invalid"
	// SearchFailed is a candidate whose policy failed to plan or simulate.
	SearchFailed = "failed"
	// SearchSkipped is a candidate whose policy needs a program that is not
	// installed (FlexSP without CBC).
	SearchSkipped = "skipped"
)

// SearchStatuses are the statuses a search candidate may have, in the order
// the search's counts are printed.
var SearchStatuses = []string{SearchOK, SearchPrunedHalving, SearchPrunedBound, SearchOutOfMemory, SearchInvalid, SearchFailed, SearchSkipped}

// SearchRow is one candidate of a dcpsim search: a row of search.csv and
// one entry of search.json. Figures are zero where the candidate was not
// simulated; for a pruned-halving candidate they are those of the last rung
// it ran (Iterations says how many iterations that was).
type SearchRow struct {
	// Rank is the candidate's place among the ok candidates by tokens per
	// day (1 is the best); 0 for the others.
	Rank int `json:"rank"`
	// ID is the candidate's index in the search space's fixed order.
	ID int `json:"id"`
	// Group is the candidate's (gpus, gpu, policy) group: halving and bound
	// pruning compare candidates inside a group only.
	Group string `json:"group"`
	// GPUs is the cluster size, GPU the kind (a mixed cluster's label),
	// Model the model's name.
	GPUs  int    `json:"gpus"`
	GPU   string `json:"gpu"`
	Model string `json:"model"`
	// TP, PP, VPP and EP are the layout; FirstStageLayers and
	// LastStageLayers the derived uneven stages (0: an even share).
	TP               int `json:"tp"`
	PP               int `json:"pp"`
	VPP              int `json:"vpp"`
	EP               int `json:"ep"`
	FirstStageLayers int `json:"first_stage_layers"`
	LastStageLayers  int `json:"last_stage_layers"`
	// BudgetTokens is the per-rank budget B (resolved when BudgetAuto);
	// 0 when it could not be resolved.
	BudgetTokens int  `json:"budget_tokens"`
	BudgetAuto   bool `json:"budget_auto"`
	// Recompute is none, selective or full.
	Recompute string `json:"recompute"`
	// Precision is the GEMMs' number format, "bf16" or "fp8".
	Precision string `json:"precision"`
	// Policy is the DCP policy.
	Policy string `json:"policy"`
	// Status is one of the Search* statuses; Reason says why for every
	// status but ok.
	Status string `json:"status"`
	Reason string `json:"reason"`
	// Rung is the last successive-halving rung the candidate was simulated
	// at (-1: never simulated); Iterations the iterations of that run
	// (warm-up included).
	Rung       int `json:"rung"`
	Iterations int `json:"iterations"`
	// LowerBoundSeconds is the sound lower bound on the mean step over the
	// measured iterations of the last rung the candidate was considered at
	// (costmodel StepLowerBoundSeconds); 0 when not computed.
	LowerBoundSeconds float64 `json:"lower_bound_seconds"`
	// SearchFigures are the simulated figures of the candidate's last run.
	SearchFigures
	// StepSecondsCI95 is the half-width of the 95% Student-t confidence
	// interval of StepSecondsMean over the measured iterations.
	StepSecondsCI95 float64 `json:"step_seconds_ci95"`
}

// SearchFigures are a search candidate's simulated figures, as in
// summary.json's PolicySummary (peak memory its PeakMemoryMaxBytes; the
// bubbles and MFU means over the measured iterations).
type SearchFigures struct {
	StepSecondsMean    float64 `json:"step_seconds_mean"`
	StepSecondsP95     float64 `json:"step_seconds_p95"`
	TokensPerDay       float64 `json:"tokens_per_day"`
	DollarsPer1TTokens float64 `json:"dollars_per_1t_tokens"`
	PeakMemoryBytes    float64 `json:"peak_memory_bytes"`
	HBMBytes           float64 `json:"hbm_bytes"`
	PPBubbleShare      float64 `json:"pp_bubble_share"`
	DPBubbleShare      float64 `json:"dp_bubble_share"`
	MFU                float64 `json:"mfu"`
}

// SearchFiguresOf are a policy's figures in a run's summary.
func SearchFiguresOf(ps *PolicySummary) SearchFigures {
	return SearchFigures{StepSecondsMean: ps.StepSecondsMean, StepSecondsP95: ps.StepSecondsP95, TokensPerDay: ps.TokensPerDay,
		DollarsPer1TTokens: ps.DollarsPer1TTokens, PeakMemoryBytes: ps.PeakMemoryMaxBytes, HBMBytes: ps.HBMBytes,
		PPBubbleShare: ps.PPBubbleShare, DPBubbleShare: ps.DPBubbleShare, MFU: ps.MFU}
}

// Layout is the row's layout in one short string, e.g. "tp1 pp8 (10+12)
// vpp1 ep16 B=auto:49727 full".
func (r SearchRow) Layout() string {
	split := ""
	if r.FirstStageLayers > 0 || r.LastStageLayers > 0 {
		split = " (" + strconv.Itoa(r.FirstStageLayers) + "+" + strconv.Itoa(r.LastStageLayers) + ")"
	}
	b := strconv.Itoa(r.BudgetTokens)
	if r.BudgetAuto {
		b = "auto:" + b
	}
	prec := ""
	if r.Precision == "fp8" {
		prec = " fp8"
	}
	return "tp" + strconv.Itoa(r.TP) + " pp" + strconv.Itoa(r.PP) + split + " vpp" + strconv.Itoa(r.VPP) + " ep" + strconv.Itoa(r.EP) +
		" B=" + b + " " + r.Recompute + prec
}

// RankedSearchRows returns the ok rows in rank order.
func RankedSearchRows(rows []SearchRow) []SearchRow {
	var ok []SearchRow
	for _, r := range rows {
		if r.Status == SearchOK && r.Rank > 0 {
			ok = append(ok, r)
		}
	}
	slices.SortFunc(ok, func(a, b SearchRow) int { return cmp.Compare(a.Rank, b.Rank) })
	return ok
}

// BestSearchRows returns, for each policy in order of first appearance
// among the ranked rows, its best ok row at gpus GPUs (every cluster size
// when gpus is 0).
func BestSearchRows(rows []SearchRow, gpus int) []SearchRow {
	var out []SearchRow
	seen := map[string]bool{}
	for _, r := range RankedSearchRows(rows) {
		if seen[r.Policy] || (gpus > 0 && r.GPUs != gpus) {
			continue
		}
		seen[r.Policy] = true
		out = append(out, r)
	}
	return out
}

// BestPerSize returns the row with the most tokens per day at each cluster
// size among rows, by size ascending (of rows that tie, the first in rows'
// order: the best ranked when rows are in rank order).
func BestPerSize(rows []SearchRow) []SearchRow {
	var out []SearchRow
	for _, r := range rows {
		i, found := slices.BinarySearchFunc(out, r.GPUs, func(b SearchRow, g int) int { return cmp.Compare(b.GPUs, g) })
		switch {
		case !found:
			out = slices.Insert(out, i, r)
		case r.TokensPerDay > out[i].TokensPerDay:
			out[i] = r
		}
	}
	return out
}

// TokensPerDayInterval is the row's tokens per day over the 95% interval of
// its mean step (StepSecondsCI95): the tokens a step trains, at the step's
// upper and lower bound. An interval that reaches zero has no upper bound
// (+Inf); a row without figures gives (0, 0).
func (r SearchRow) TokensPerDayInterval() (lo, hi float64) {
	m, ci := r.StepSecondsMean, r.StepSecondsCI95
	if !(m > 0) || !(r.TokensPerDay > 0) {
		return 0, 0
	}
	perStep := r.TokensPerDay * m // tokens a step trains, × 86,400 s
	lo = perStep / (m + ci)
	if m-ci <= 0 {
		return lo, math.Inf(1)
	}
	return lo, perStep / (m - ci)
}

// TiesWith reports whether the search cannot tell r from o at 95%: their
// tokens-per-day intervals (TokensPerDayInterval) overlap. A candidate that
// ties the leader is as good an answer as the leader's, as far as the
// iterations simulated can say.
func (r SearchRow) TiesWith(o SearchRow) bool {
	rl, rh := r.TokensPerDayInterval()
	ol, oh := o.TokensPerDayInterval()
	if rh == 0 || oh == 0 {
		return false
	}
	return rl <= oh && ol <= rh
}

// MemoryHeadroom is the share of the GPU's HBM the row's peak leaves free,
// 1 - peak/HBM (0 when the HBM is not recorded).
func (r SearchRow) MemoryHeadroom() float64 {
	if !(r.HBMBytes > 0) {
		return 0
	}
	return 1 - r.PeakMemoryBytes/r.HBMBytes
}
