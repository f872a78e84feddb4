package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// ValidationResult is one published run beside the simulator's prediction
// of its iteration time and memory (dcpsim validate). Its JSON form, one
// object per line, is exactly {"name", "predicted_seconds",
// "measured_seconds", "error", "predicted_weights_optimizer_bytes",
// "predicted_activation_bytes"}.
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
// "predicted_weights_optimizer_bytes", "predicted_activation_bytes"}.
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
// object per non-empty line with no key but its six (the two memory keys
// may be absent, as in files written before them: zero).
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
