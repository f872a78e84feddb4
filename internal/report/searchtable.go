package report

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"text/tabwriter"
)

// WriteSearchTable prints the n best ok candidates of a search (by Rank)
// as an aligned table: tokens/day, step mean with its 95% interval, p95,
// $ per 1T tokens, peak memory, bubbles, policy, GPUs and layout.
func WriteSearchTable(w io.Writer, rows []results.SearchRow, n int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\ttokens/day (B)\tstep mean (s)\t± 95% (s)\tstep p95 (s)\t$ per 1T tokens (k$)\tpeak memory (GiB)\tPP bubble (%)\tDP bubble (%)\tpolicy\tGPUs\tlayout\t")
	for _, r := range results.RankedSearchRows(rows) {
		if r.Rank > n {
			break
		}
		fmt.Fprintf(tw, "%d\t%.2f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f / %.1f\t%.1f\t%.1f\t%s\t%d×%s\t%s\t\n",
			r.Rank, r.TokensPerDay/1e9, r.StepSecondsMean, r.StepSecondsCI95, r.StepSecondsP95, r.DollarsPer1TTokens/1e3,
			r.PeakMemoryBytes/(1<<30), r.HBMBytes/(1<<30), 100*r.PPBubbleShare, 100*r.DPBubbleShare, r.Policy, r.GPUs, r.GPU, r.Layout())
	}
	return tw.Flush()
}
