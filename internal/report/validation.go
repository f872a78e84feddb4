package report

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteValidationTable prints predicted beside measured iteration times with
// the relative error per run, each run's layout and the shares of its
// predicted iteration, then the mean and max |error|.
func WriteValidationTable(w io.Writer, rs []results.ValidationResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tpredicted (s)\tmeasured (s)\terror (%)\tcompute (%)\texposed comm (%)\tPP bubble (%)\tDP sync + optimizer (%)\tstates (GiB)\tactivations (GiB)\tlayout\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%+.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t\n", r.Name, r.PredictedSeconds, r.MeasuredSeconds, 100*r.Error,
			100*r.ComputeShare, 100*r.ExposedCommShare, 100*r.PPBubbleShare, 100*r.SyncShare,
			r.PredictedWeightsOptimizerBytes/(1<<30), r.PredictedActivationBytes/(1<<30), r.Layout)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := results.SummarizeValidation(rs)
	_, err := fmt.Fprintf(w, "\n%d runs: mean |error| %.1f%%, max |error| %.1f%% (%s); error = predicted / measured - 1\n"+
		"states: weights, gradients and optimizer per GPU of the first stage; activations: its simulated peak (GiB = 2^30 bytes)\n",
		s.Rows, 100*s.MeanAbsError, 100*s.MaxAbsError, s.MaxName)
	return err
}

// WriteAtScaleValidation prints the runs grouped by source family (each
// group headed by its software), every run with predicted and measured
// seconds per step, the error, the measurement as published, the predicted
// iteration's shares, its layout and what was assumed for it; then the mean
// and max |error| per source family, per kind and per GPU, and overall.
// software maps a family to its description.
func WriteAtScaleValidation(w io.Writer, rs []results.ValidationResult, software map[string]string) error {
	var sources []string
	for _, r := range rs {
		if !slices.Contains(sources, r.Source) {
			sources = append(sources, r.Source)
		}
	}
	for _, src := range sources {
		fmt.Fprintf(w, "== %s: %s\n", src, software[src])
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "run\tpredicted (s)\tmeasured (s)\terror (%)\tpublished\tcompute (%)\texposed comm (%)\tbubbles (%)\tsync (%)\tkind\t")
		for _, r := range rs {
			if r.Source != src {
				continue
			}
			fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%+.1f\t%g %s\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t\n", r.Name, r.PredictedSeconds, r.MeasuredSeconds, 100*r.Error,
				r.MeasuredValue, r.MeasuredUnit, 100*r.ComputeShare, 100*r.ExposedCommShare, 100*r.PPBubbleShare, 100*r.SyncShare, r.Kind)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range rs {
			if r.Source != src {
				continue
			}
			fmt.Fprintf(w, "  %s: %s", r.Name, r.Layout)
			if len(r.Assumed) > 0 {
				fmt.Fprintf(w, "; assumed: %s", strings.Join(r.Assumed, "; "))
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "by\tgroup\truns\tmean |error| (%)\tmax |error| (%)\tworst\t")
	for _, g := range results.GroupValidation(rs) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%s\t\n", g.By, g.Key, g.Rows, 100*g.MeanAbsError, 100*g.MaxAbsError, g.MaxName)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := results.SummarizeValidation(rs)
	_, err := fmt.Fprintf(w, "\n%d runs: mean |error| %.1f%%, max |error| %.1f%% (%s); error = predicted / measured - 1, measured in seconds per step\n",
		s.Rows, 100*s.MeanAbsError, 100*s.MaxAbsError, s.MaxName)
	return err
}
