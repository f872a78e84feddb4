package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/results"
)

// WriteSearchTable prints the first n of ranked (ok candidates, best
// first: results.RankedSearchRows, possibly filtered) as an aligned table:
// tokens/day, step mean with its 95% interval, p95, $ per 1T tokens, peak
// memory and the HBM left free, bubbles, policy, GPUs and layout, and
// against the leader (the first row): "tie" when the two cannot be told
// apart at 95% (results.SearchRow.TiesWith).
func WriteSearchTable(w io.Writer, ranked []results.SearchRow, n int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\ttokens/day (B)\tstep mean (s)\t± 95% (s)\tvs #1\tstep p95 (s)\t$ per 1T tokens (k$)\tpeak memory (GiB)\tHBM free (%)\tPP bubble (%)\tDP bubble (%)\tpolicy\tGPUs\tlayout\t")
	for i, r := range ranked[:min(n, len(ranked))] {
		vs := ""
		switch {
		case i == 0:
			vs = "leader"
		case r.TiesWith(ranked[0]):
			vs = "tie"
		}
		fmt.Fprintf(tw, "%d\t%.2f\t%.3f\t%.3f\t%s\t%.3f\t%.1f\t%.1f / %.1f\t%.1f\t%.1f\t%.1f\t%s\t%d×%s\t%s\t\n",
			r.Rank, r.TokensPerDay/1e9, r.StepSecondsMean, r.StepSecondsCI95, vs, r.StepSecondsP95, r.DollarsPer1TTokens/1e3,
			r.PeakMemoryBytes/(1<<30), r.HBMBytes/(1<<30), 100*r.MemoryHeadroom(), 100*r.PPBubbleShare, 100*r.DPBubbleShare, r.Policy, r.GPUs, r.GPU, r.Layout())
	}
	return tw.Flush()
}
