package results

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// ValidationRecord is one run of a validation folder: the prediction, the
// published measurement and how the run was set up.
type ValidationRecord struct {
	Name             string   `json:"name"`
	Source           string   `json:"source"`
	GPU              string   `json:"gpu"`
	Kind             string   `json:"kind"`
	PredictedSeconds float64  `json:"predicted_seconds"`
	MeasuredSeconds  float64  `json:"measured_seconds"`
	Error            float64  `json:"error"`
	MeasuredValue    float64  `json:"measured_value"`
	MeasuredUnit     string   `json:"measured_unit"`
	ComputeShare     float64  `json:"compute_share"`
	ExposedCommShare float64  `json:"exposed_comm_share"`
	BubbleShare      float64  `json:"bubble_share"`
	SyncShare        float64  `json:"sync_share"`
	Layout           string   `json:"layout"`
	Assumed          []string `json:"assumed"`
}

// ValidationRows is a validation folder's validation.json: the runs and the
// software of each source family.
type ValidationRows struct {
	Runs     []ValidationRecord `json:"runs"`
	Software map[string]string  `json:"software"`
}

// RecordOf is r as a ValidationRecord.
func RecordOf(r ValidationResult) ValidationRecord {
	return ValidationRecord{Name: r.Name, Source: r.Source, GPU: r.GPU, Kind: r.Kind, PredictedSeconds: r.PredictedSeconds,
		MeasuredSeconds: r.MeasuredSeconds, Error: r.Error, MeasuredValue: r.MeasuredValue, MeasuredUnit: r.MeasuredUnit,
		ComputeShare: r.ComputeShare, ExposedCommShare: r.ExposedCommShare, BubbleShare: r.PPBubbleShare, SyncShare: r.SyncShare,
		Layout: r.Layout, Assumed: slices.Clone(r.Assumed)}
}

// Result is the record as a ValidationResult (what the summaries take).
func (v ValidationRecord) Result() ValidationResult {
	return ValidationResult{Name: v.Name, Source: v.Source, GPU: v.GPU, Kind: v.Kind, PredictedSeconds: v.PredictedSeconds,
		MeasuredSeconds: v.MeasuredSeconds, Error: v.Error, MeasuredValue: v.MeasuredValue, MeasuredUnit: v.MeasuredUnit,
		ComputeShare: v.ComputeShare, ExposedCommShare: v.ExposedCommShare, PPBubbleShare: v.BubbleShare, SyncShare: v.SyncShare,
		Layout: v.Layout, Assumed: slices.Clone(v.Assumed)}
}

// ReadValidationRows reads a validation.json strictly.
func ReadValidationRows(b []byte) (ValidationRows, error) {
	var rows ValidationRows
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rows); err != nil {
		return ValidationRows{}, err
	}
	if dec.More() {
		return ValidationRows{}, fmt.Errorf("data after the object")
	}
	return rows, nil
}

// Files of a validation folder.
const (
	// ValidationRowsFile holds every run (ValidationRecord), as JSON.
	ValidationRowsFile = "validation.json"
	// ValidationCSVFile holds the same, one run per line.
	ValidationCSVFile = "validation.csv"
	// ValidationFigure is the log-log figure's base name.
	ValidationFigure = "predicted-vs-measured"
)

// ValidationFittedRun is the one run of validation/megatron-lm.csv a
// constant was fitted on (the A100 profile's gemm.max); every other run is
// out of sample.
const ValidationFittedRun = "k22-22b-full"

// ValidationFile is the file, under a results folder, that make figures
// writes with dcpsim validate --json on validation/megatron-lm.csv and the
// reproduction report reads.
const ValidationFile = "validation.jsonl"

// AtScaleDir is the results folder make figures writes with dcpsim validate
// --table validation/atscale.csv --table validation/megatron-lm.csv --out
// (WriteValidationFolder), which the report's at-scale section reads.
const AtScaleDir = "validation"

// MegatronLM2022 is the source family of validation/megatron-lm.csv's runs
// (dense GPT models trained with Megatron-LM in 2021-22).
const MegatronLM2022 = "megatron-lm-2022"

// WriteValidationRows writes validation.json (ValidationRows, with the
// families' software) and validation.csv, one run per line, into dir and
// returns the names written.
func WriteValidationRows(dir string, rs []ValidationResult, software map[string]string) ([]string, error) {
	rows := ValidationRows{Software: software}
	for _, r := range rs {
		rows.Runs = append(rows.Runs, RecordOf(r))
	}
	var names []string
	err := safeio.WriteFileAtomic(filepath.Join(dir, ValidationRowsFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	})
	if err != nil {
		return nil, err
	}
	names = append(names, ValidationRowsFile)
	err = safeio.WriteFileAtomic(filepath.Join(dir, ValidationCSVFile), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"name", "source", "gpu", "kind", "predicted_seconds", "measured_seconds", "error", "measured_value", "measured_unit", "layout", "assumed"})
		for _, r := range rows.Runs {
			f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
			_ = cw.Write([]string{r.Name, r.Source, r.GPU, r.Kind, f(r.PredictedSeconds), f(r.MeasuredSeconds), f(r.Error), f(r.MeasuredValue),
				r.MeasuredUnit, r.Layout, strings.Join(r.Assumed, "; ")})
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return names, err
	}
	names = append(names, ValidationCSVFile)
	return names, nil
}
