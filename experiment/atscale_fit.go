package experiment

// Fitting a GPU's sustained efficiency on half of the at-scale table and
// reporting the other half (validation/README.md, "What is fitted").

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/calib"
)

// AtScaleHalves splits runs into the halves a fit uses and the halves it
// is reported on: per GPU kind, the runs in order of their ids, alternately
// to A (the first) and B. The split depends on the ids alone.
func AtScaleHalves(runs []AtScaleRun) (a, b []AtScaleRun) {
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(x, y AtScaleRun) int { return strings.Compare(x.ID, y.ID) })
	seen := map[string]int{}
	for _, r := range sorted {
		if seen[r.GPU]%2 == 0 {
			a = append(a, r)
		} else {
			b = append(b, r)
		}
		seen[r.GPU]++
	}
	return a, b
}

// SustainedFit is the result of fitting one GPU kind's sustained
// efficiency.
type SustainedFit struct {
	// GPU is the kind; Value the fitted efficiency in [0.3, 1].
	GPU   string
	Value float64
	// Fit and Held are the runs fitted on (half A) and held out (half B),
	// predicted with Value.
	Fit, Held []results.ValidationResult
}

// FitSustainedEfficiency fits gpu's calib.Profile.SustainedEfficiency: the
// value in [0.3, 1] minimising Σ ln(predicted/measured)² over the half-A
// runs on that GPU (AtScaleHalves), found by golden-section search to
// 1e-4, then predicts both halves with it. It fails when half A holds no
// run on gpu.
func FitSustainedEfficiency(runs []AtScaleRun, gpu string) (SustainedFit, error) {
	a, b := AtScaleHalves(runs)
	on := func(rs []AtScaleRun) []AtScaleRun {
		return slices.DeleteFunc(slices.Clone(rs), func(r AtScaleRun) bool { return r.GPU != gpu })
	}
	a, b = on(a), on(b)
	if len(a) == 0 {
		return SustainedFit{}, badInput("no run on %s in half A of the table (runs on it: %d)", gpu, len(b))
	}
	base, err := calib.LookupProfile(gpu)
	if err != nil {
		return SustainedFit{}, badInput("%w", err)
	}
	predict := func(rs []AtScaleRun, s float64) ([]results.ValidationResult, error) {
		return predictSustained(rs, base, s)
	}
	var fitErr error
	loss := func(s float64) float64 {
		l, err := sustainedLoss(a, base, s)
		if err != nil {
			fitErr = err
			return math.Inf(1)
		}
		return l
	}
	lo, hi := 0.3, 1.0
	phi := (math.Sqrt(5) - 1) / 2
	x1, x2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
	f1, f2 := loss(x1), loss(x2)
	for hi-lo > 1e-4 && fitErr == nil {
		if f1 <= f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - phi*(hi-lo)
			f1 = loss(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + phi*(hi-lo)
			f2 = loss(x2)
		}
	}
	if fitErr != nil {
		return SustainedFit{}, fitErr
	}
	s := math.Round((lo+hi)/2*1e4) / 1e4
	fit := SustainedFit{GPU: gpu, Value: s}
	if fit.Fit, err = predict(a, s); err != nil {
		return SustainedFit{}, err
	}
	if fit.Held, err = predict(b, s); err != nil {
		return SustainedFit{}, err
	}
	return fit, nil
}

// WriteSustainedFit prints a fit: the value, and the runs of both halves
// with their errors and each half's mean and max |error|.
func WriteSustainedFit(w io.Writer, f SustainedFit) error {
	fmt.Fprintf(w, "%s: sustained_efficiency = %.4f (least squares of ln(predicted/measured) over half A)\n", f.GPU, f.Value)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "half\trun\tpredicted (s)\tmeasured (s)\terror (%)\t")
	for _, h := range []struct {
		name string
		rs   []results.ValidationResult
	}{{"A (fitted)", f.Fit}, {"B (held out)", f.Held}} {
		for _, r := range h.rs {
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%+.1f\t\n", h.name, r.Name, r.PredictedSeconds, r.MeasuredSeconds, 100*r.Error)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range []struct {
		name string
		rs   []results.ValidationResult
	}{{"A (fitted)", f.Fit}, {"B (held out)", f.Held}} {
		s := results.SummarizeValidation(h.rs)
		fmt.Fprintf(w, "half %s: %d runs, mean |error| %.1f%%, max %.1f%%\n", h.name, s.Rows, 100*s.MeanAbsError, 100*s.MaxAbsError)
	}
	return nil
}

// predictSustained predicts rs on base with its sustained efficiency set to
// s.
func predictSustained(rs []AtScaleRun, base *calib.Profile, s float64) ([]results.ValidationResult, error) {
	p := *base
	p.SustainedEfficiency = calib.Const{Value: s, Source: "fit"}
	out := make([]results.ValidationResult, 0, len(rs))
	for _, r := range rs {
		v, err := predictAtScaleOn(r, &p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// sustainedLoss is the fit's objective: Σ ln(predicted/measured)² over rs
// on base at sustained efficiency s.
func sustainedLoss(rs []AtScaleRun, base *calib.Profile, s float64) (float64, error) {
	vs, err := predictSustained(rs, base, s)
	if err != nil {
		return 0, err
	}
	var l float64
	for _, v := range vs {
		e := math.Log(v.PredictedSeconds / v.MeasuredSeconds)
		l += e * e
	}
	return l, nil
}
