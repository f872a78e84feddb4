package report

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteWorkloadStats prints workload statistics as tables.
func WriteWorkloadStats(w io.Writer, r results.WorkloadStats) error {
	s := r.Summary
	fmt.Fprintf(w, "source        %s\n", r.Source)
	if r.Distribution != "" {
		fmt.Fprintf(w, "distribution  %s\n", r.Distribution)
	}
	if r.BatchTokens > 0 {
		fmt.Fprintf(w, "batches       %d × %s tokens, context %s, seed %d\n", len(r.Batches), thousands(r.BatchTokens), thousands(int64(r.ContextTokens)), r.Seed)
	}
	fmt.Fprintf(w, "\nsequences     %s   tokens %s   mean %.1f   min %d   max %s   E[s²]/E[s] %.0f tokens\n",
		thousands(int64(s.Sequences)), thousands(s.Tokens), s.MeanTokens, s.MinTokens, thousands(int64(s.MaxTokens)), s.SumSquares/float64(max(s.Tokens, 1)))
	fmt.Fprint(w, "percentiles  ")
	for _, p := range s.Percentiles {
		fmt.Fprintf(w, " p%s %s", strconv.FormatFloat(p.P*100, 'f', -1, 64), thousands(int64(p.Tokens)))
	}
	fmt.Fprintln(w, "  (tokens)")

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "longer than\tsequences\ttokens\tattention (Σ s²)\t")
	for _, a := range s.Above {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", kib(a.Tokens), pct(a.SequenceFraction), pct(a.TokenShare), pct(a.SquareShare))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	// The shape hydra-paper.txt §2.2 states for its dataset: a comparison
	// (a user's own data need not look like it), not a check.
	if sh, ok := s.PaperShape(); ok {
		fmt.Fprintf(w, "\nbeside the HyDra paper's 256K dataset (§2.2; for comparison): ≤2K %s (paper >85%%: %s), >32K %s (paper <0.6%%: %s), max/min %.0f× (paper four orders of magnitude: %s)\n",
			pct(sh.AtMost2K), likePaper(sh.AtMost2KOK), pct(sh.Above32K), likePaper(sh.Above32KOK), sh.Span, likePaper(sh.SpanOK))
	}

	if len(r.Batches) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "iteration\tsequences\tΣ s (tokens)\tΣ s² (tokens²)\tmax s\tE[s²]/E[s]\t")
		for _, b := range r.Batches {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%.4g\t%s\t%s\t\n", b.Iteration, thousands(int64(b.Sequences)), thousands(b.Tokens),
				b.SumSquares, thousands(int64(b.MaxTokens)), thousands(int64(b.AttentionWeightedMeanTokens+0.5)))
		}
		return tw.Flush()
	}
	return nil
}

// likePaper says whether a figure is like the paper's dataset's.
func likePaper(like bool) string {
	if like {
		return "alike"
	}
	return "differs"
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 2, 64) + "%" }

// kib prints a token threshold as "2K" when it is a multiple of 1024.
func kib(t int) string {
	if t%1024 == 0 {
		return strconv.Itoa(t/1024) + "K"
	}
	return strconv.Itoa(t)
}

// thousands formats n with thin separators: 4194304 -> "4,194,304".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
