package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// WriteSearchTable prints the n best ok candidates of a search (by Rank)
// as an aligned table: tokens/day, step mean with its 95% interval, p95,
// $ per 1T tokens, peak memory, bubbles, policy, GPUs and layout.
func WriteSearchTable(w io.Writer, rows []SearchRow, n int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\ttokens/day (B)\tstep mean (s)\t± 95% (s)\tstep p95 (s)\t$ per 1T tokens (k$)\tpeak memory (GiB)\tPP bubble (%)\tDP bubble (%)\tpolicy\tGPUs\tlayout\t")
	for _, r := range RankedSearchRows(rows) {
		if r.Rank > n {
			break
		}
		fmt.Fprintf(tw, "%d\t%.2f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f / %.1f\t%.1f\t%.1f\t%s\t%d×%s\t%s\t\n",
			r.Rank, r.TokensPerDay/1e9, r.StepSecondsMean, r.StepSecondsCI95, r.StepSecondsP95, r.DollarsPer1TTokens/1e3,
			r.PeakMemoryBytes/(1<<30), r.HBMBytes/(1<<30), 100*r.PPBubbleShare, 100*r.DPBubbleShare, r.Policy, r.GPUs, r.GPU, r.Layout())
	}
	return tw.Flush()
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
