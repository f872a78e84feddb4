package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// ValidationResult is one published run beside the simulator's prediction
// of its iteration time and memory (dcpsim validate). Its JSON form, one
// object per line, is exactly {"name", "predicted_seconds",
// "measured_seconds", "error", "predicted_weights_optimizer_bytes",
// "predicted_activation_bytes", "measured_value", "measured_unit",
// "kind"}.
type ValidationResult struct {
	// Name is the run's name in the table.
	Name string `json:"name"`
	// PredictedSeconds is the simulated iteration time.
	PredictedSeconds float64 `json:"predicted_seconds"`
	// MeasuredSeconds is the published iteration time.
	MeasuredSeconds float64 `json:"measured_seconds"`
	// Error is PredictedSeconds/MeasuredSeconds − 1.
	Error float64 `json:"error"`
	// Layout summarises the run, e.g. "3072×A100-80G tp8 pp64 vpp1 dp6,
	// 512 MBs of 1, full, no SP" (not in the JSON).
	Layout string `json:"-"`
	// ComputeShare, ExposedCommShare, PPBubbleShare and SyncShare split the
	// predicted iteration (sim/step's shares, not in the JSON).
	ComputeShare, ExposedCommShare, PPBubbleShare, SyncShare float64 `json:"-"`
	// PredictedWeightsOptimizerBytes is the model states per GPU of the
	// first pipeline stage: weights, gradients and optimizer states
	// (memory.States(0).Bytes() under the run's gradient sync).
	PredictedWeightsOptimizerBytes float64 `json:"predicted_weights_optimizer_bytes"`
	// PredictedActivationBytes is the first stage's peak held activations
	// per GPU in the simulated iteration (costmodel.Outcome.Memory.Stages[0]).
	PredictedActivationBytes float64 `json:"predicted_activation_bytes"`
	// MeasuredValue and MeasuredUnit are the published measurement as the
	// table gives it (s/step, tokens/s/gpu, tflops/gpu or mfu%), before its
	// conversion to MeasuredSeconds.
	MeasuredValue float64 `json:"measured_value"`
	MeasuredUnit  string  `json:"measured_unit"`
	// Kind tags the run: "dense" or "moe", then "+cp" (context parallelism
	// or sequences of 32K tokens and more) and "+fp8" (FP8 or MXFP8).
	Kind string `json:"kind"`
	// Source is the run's source family, GPU its GPU kind, Assumed what the
	// family supplied for the fields the run leaves unstated (not in the
	// JSON).
	Source  string   `json:"-"`
	GPU     string   `json:"-"`
	Assumed []string `json:"-"`
}

// KindTags are the kinds the summaries group runs by, each a tag of
// ValidationResult.Kind.
var KindTags = []string{"dense", "moe", "cp", "fp8"}

// HasTag reports whether the kind carries tag.
func HasTag(kind, tag string) bool {
	for _, t := range strings.Split(kind, "+") {
		if t == tag {
			return true
		}
	}
	return false
}

// ValidationStats summarises the relative errors of a validation.
type ValidationStats struct {
	// Rows is the number of runs.
	Rows int
	// MeanAbsError and MaxAbsError are the mean and the largest |Error|.
	MeanAbsError, MaxAbsError float64
	// MaxName is the run with the largest |Error|.
	MaxName string
}

// SummarizeValidation returns the mean and max |error| of rs.
func SummarizeValidation(rs []ValidationResult) ValidationStats {
	s := ValidationStats{Rows: len(rs)}
	for _, r := range rs {
		e := math.Abs(r.Error)
		s.MeanAbsError += e
		if e > s.MaxAbsError || s.MaxName == "" {
			s.MaxAbsError, s.MaxName = e, r.Name
		}
	}
	if len(rs) > 0 {
		s.MeanAbsError /= float64(len(rs))
	}
	return s
}

// WriteValidationTable prints predicted beside measured iteration times with
// the relative error per run, each run's layout and the shares of its
// predicted iteration, then the mean and max |error|.
func WriteValidationTable(w io.Writer, rs []ValidationResult) error {
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
	s := SummarizeValidation(rs)
	_, err := fmt.Fprintf(w, "\n%d runs: mean |error| %.1f%%, max |error| %.1f%% (%s); error = predicted / measured - 1\n"+
		"states: weights, gradients and optimizer per GPU of the first stage; activations: its simulated peak (GiB = 2^30 bytes)\n",
		s.Rows, 100*s.MeanAbsError, 100*s.MaxAbsError, s.MaxName)
	return err
}

// WriteValidationJSON writes one JSON object per run and line:
// {"name", "predicted_seconds", "measured_seconds", "error",
// "predicted_weights_optimizer_bytes", "predicted_activation_bytes",
// "measured_value", "measured_unit", "kind"}.
func WriteValidationJSON(w io.Writer, rs []ValidationResult) error {
	enc := json.NewEncoder(w)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// ReadValidationJSON reads what WriteValidationJSON wrote, strictly: one
// object per non-empty line with no key but its nine (the memory keys and
// the measurement's value, unit and kind may be absent, as in files written
// before them: zero).
func ReadValidationJSON(r io.Reader) ([]ValidationResult, error) {
	var out []ValidationResult
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var v ValidationResult
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("line %d: data after the object", n)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// ValidationGroup is the summary of the runs sharing a source family, a
// kind tag or a GPU.
type ValidationGroup struct {
	// By says what the runs share ("source", "kind" or "gpu") and Key its
	// value.
	By, Key string
	ValidationStats
}

// GroupValidation summarises rs by source family, by kind tag (a run is in
// every tag of its Kind) and by GPU, in that order, keys sorted.
func GroupValidation(rs []ValidationResult) []ValidationGroup {
	var out []ValidationGroup
	group := func(by string, keys func(ValidationResult) []string) {
		m := map[string][]ValidationResult{}
		for _, r := range rs {
			for _, k := range keys(r) {
				m[k] = append(m[k], r)
			}
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			out = append(out, ValidationGroup{By: by, Key: k, ValidationStats: SummarizeValidation(m[k])})
		}
	}
	group("source", func(r ValidationResult) []string { return []string{r.Source} })
	group("kind", func(r ValidationResult) []string {
		var ks []string
		for _, t := range KindTags {
			if HasTag(r.Kind, t) {
				ks = append(ks, t)
			}
		}
		return ks
	})
	group("gpu", func(r ValidationResult) []string { return []string{r.GPU} })
	return out
}

// WriteAtScaleValidation prints the runs grouped by source family (each
// group headed by its software), every run with predicted and measured
// seconds per step, the error, the measurement as published, the predicted
// iteration's shares, its layout and what was assumed for it; then the mean
// and max |error| per source family, per kind and per GPU, and overall.
// software maps a family to its description.
func WriteAtScaleValidation(w io.Writer, rs []ValidationResult, software map[string]string) error {
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
	for _, g := range GroupValidation(rs) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%s\t\n", g.By, g.Key, g.Rows, 100*g.MeanAbsError, 100*g.MaxAbsError, g.MaxName)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := SummarizeValidation(rs)
	_, err := fmt.Fprintf(w, "\n%d runs: mean |error| %.1f%%, max |error| %.1f%% (%s); error = predicted / measured - 1, measured in seconds per step\n",
		s.Rows, 100*s.MeanAbsError, 100*s.MaxAbsError, s.MaxName)
	return err
}
