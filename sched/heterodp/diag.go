package heterodp

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
)

// The two plans hetero-dp chooses between on several kinds
// (Diagnostics.Layout).
const (
	// LayoutPerKind is static CP inside each kind, the batch split across
	// the kinds by speed.
	LayoutPerKind = "per-kind"
	// LayoutPool is static CP over the whole pool, blind to the kinds.
	LayoutPool = "pool"
)

// Diagnostics explain a hetero-dp plan: which plan ran and each kind's
// replicas and share.
type Diagnostics struct {
	// Layout is the plan made, LayoutPerKind or LayoutPool; Forced says
	// Options.Layout chose it.
	Layout string `json:"layout"`
	Forced bool   `json:"forced,omitempty"`
	// PerKindSeconds and PoolSeconds are the two plans' modelled seconds on
	// several kinds (0 with one kind, or for a plan refused: PerKindRefused
	// and PoolRefused then say why).
	PerKindSeconds float64 `json:"per_kind_seconds,omitempty"`
	PoolSeconds    float64 `json:"pool_seconds,omitempty"`
	PerKindRefused string  `json:"per_kind_refused,omitempty"`
	PoolRefused    string  `json:"pool_refused,omitempty"`
	// Kinds are the pool's kinds in rank order (one, "pool", over the
	// pool).
	Kinds []KindDiagnostics `json:"kinds"`
	// Microbatches is M, the most microbatches of any kind, which every rank
	// runs.
	Microbatches int `json:"microbatches"`
	// Proportional is Options.Proportional: the split weighted by speed.
	Proportional bool `json:"proportional"`
}

// KindDiagnostics are one kind's replicas and what the split gave it.
type KindDiagnostics struct {
	// Name is the kind's profile name ("pool" without a cluster).
	Name string `json:"name"`
	// FirstRank and Ranks are the kind's rank range; BudgetTokens its B_k.
	FirstRank    int `json:"first_rank"`
	Ranks        int `json:"ranks"`
	BudgetTokens int `json:"budget_tokens"`
	// Degree is d_k and Replicas n_k = ⌊Ranks/Degree⌋; Capped says d_k is
	// below the context's degree (the kind holds only shorter sequences).
	Degree   int  `json:"degree"`
	Replicas int  `json:"replicas"`
	Capped   bool `json:"capped,omitempty"`
	// Sequences and Tokens are what the split gave the kind.
	Sequences int   `json:"sequences"`
	Tokens    int64 `json:"tokens"`
	// ProjectedSeconds is F_k = Σ t_k(s)/n_k, the kind's projected finish
	// in the planning model (0 without a cluster).
	ProjectedSeconds float64 `json:"projected_seconds"`
	// Bins are the kind's packed bins before padding, Padded after;
	// Microbatches its count ⌈Padded/Replicas⌉.
	Bins         int `json:"bins"`
	Padded       int `json:"padded_bins"`
	Microbatches int `json:"microbatches"`
	// Multiple is n_k·N, the multiple the bin count is padded to.
	Multiple int `json:"multiple"`
}

// diagnostics summarizes the candidate's kinds after packing.
func (c *candidate) diagnostics(proportional bool) *Diagnostics {
	d := &Diagnostics{Microbatches: c.mbs, Proportional: proportional}
	for i := range c.kinds {
		k := &c.kinds[i]
		d.Kinds = append(d.Kinds, KindDiagnostics{Name: k.name, FirstRank: k.first, Ranks: k.ranks, BudgetTokens: k.budget,
			Degree: k.degree, Replicas: k.replicas, Capped: k.capped, Sequences: k.seqs, Tokens: k.tokens,
			ProjectedSeconds: k.finish, Bins: k.packed, Padded: len(k.bins),
			Microbatches: sched.CeilDiv(len(k.bins), k.replicas), Multiple: k.multiple})
	}
	return d
}

// Summary lists the diagnostics: the microbatch count, then one line per
// kind.
func (d *Diagnostics) Summary() []sched.KV {
	split := "by speed"
	switch {
	case d.Layout == LayoutPool:
		split = "none (static CP over the pool)"
	case !d.Proportional:
		split = "equal per rank"
	}
	out := []sched.KV{{Name: "plan", Value: d.Layout}, {Name: "microbatches", Value: fmt.Sprint(d.Microbatches)},
		{Name: "split across kinds", Value: split}}
	if d.PerKindSeconds > 0 || d.PoolSeconds > 0 || d.PerKindRefused != "" || d.PoolRefused != "" {
		out = append(out, sched.KV{Name: "modelled seconds (per kind / over the pool)",
			Value: fmt.Sprintf("%s / %s", secondsOr(d.PerKindSeconds, d.PerKindRefused), secondsOr(d.PoolSeconds, d.PoolRefused))})
	}
	var total int64
	for _, k := range d.Kinds {
		total += k.Tokens
	}
	for _, k := range d.Kinds {
		capped := ""
		if k.Capped {
			capped = " (capped)"
		}
		share := 0.0
		if total > 0 {
			share = 100 * float64(k.Tokens) / float64(total)
		}
		out = append(out, sched.KV{Name: fmt.Sprintf("%s (ranks %d..%d, B = %d)", k.Name, k.FirstRank, k.FirstRank+k.Ranks-1, k.BudgetTokens),
			Value: fmt.Sprintf("cp %d%s × dp %d; %d sequences, %d tokens (%.1f%%), %.4g s projected; bins %d / %d padded, %d microbatches",
				k.Degree, capped, k.Replicas, k.Sequences, k.Tokens, share, k.ProjectedSeconds, k.Bins, k.Padded, k.Microbatches)})
	}
	return out
}

// secondsOr formats a plan's modelled seconds, or "refused" when it was.
func secondsOr(seconds float64, refused string) string {
	switch refused {
	case "":
	case errNotTried.Error():
		return "not tried"
	default:
		return "refused"
	}
	return fmt.Sprintf("%.4g", seconds)
}
