package report

import (
	"bytes"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var validationSample = []results.ValidationResult{
	{Name: "a", PredictedSeconds: 1.1, MeasuredSeconds: 1, Error: 0.1, Layout: "8×A100-80G",
		PredictedWeightsOptimizerBytes: 3 << 30, PredictedActivationBytes: 1.5 * (1 << 30)},
	{Name: results.ValidationFittedRun, PredictedSeconds: 1, MeasuredSeconds: 1, Error: 0},
	{Name: "b", PredictedSeconds: 0.97, MeasuredSeconds: 1, Error: -0.03},
}

// TestValidationJSONRoundTrip: the JSON lines hold exactly name,
// predicted_seconds, measured_seconds, error,
// predicted_weights_optimizer_bytes, predicted_activation_bytes,
// measured_value, measured_unit and kind, and read back strictly (a line of
// the first four alone, as written before the memory keys, too).
func TestValidationJSONRoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := results.WriteValidationJSON(&b, validationSample); err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(b.String(), "\n", 2)[0]
	if first != `{"name":"a","predicted_seconds":1.1,"measured_seconds":1,"error":0.1,"predicted_weights_optimizer_bytes":3221225472,"predicted_activation_bytes":1610612736,"measured_value":0,"measured_unit":"","kind":""}` {
		t.Errorf("first line %s", first)
	}
	got, err := results.ReadValidationJSON(strings.NewReader("\n" + b.String()))
	if err != nil || len(got) != 3 || got[2].Name != "b" || got[0].Layout != "" || got[0].PredictedActivationBytes != 1.5*(1<<30) ||
		got[0].PredictedWeightsOptimizerBytes != 3<<30 {
		t.Errorf("read back %+v, %v", got, err)
	}
	if old, err := results.ReadValidationJSON(strings.NewReader(`{"name":"a","predicted_seconds":1.1,"measured_seconds":1,"error":0.1}` + "\n")); err != nil ||
		len(old) != 1 || old[0].PredictedSeconds != 1.1 || old[0].PredictedActivationBytes != 0 {
		t.Errorf("a line without the memory keys: %+v, %v", old, err)
	}
	for _, bad := range []string{`{"name":"a","extra":1}`, `{"name":"a"} {}`, `[1]`} {
		if _, err := results.ReadValidationJSON(strings.NewReader(bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

// TestValidationTableAndStats: the table prints every run and the mean and
// max |error|.
func TestValidationTableAndStats(t *testing.T) {
	s := results.SummarizeValidation(validationSample)
	if s.Rows != 3 || math.Abs(s.MeanAbsError-0.13/3) > 1e-15 || s.MaxAbsError != 0.1 || s.MaxName != "a" {
		t.Errorf("stats %+v", s)
	}
	var b strings.Builder
	if err := WriteValidationTable(&b, validationSample); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+10.0", "-3.0", "8×A100-80G", "states (GiB)  activations (GiB)", "  3.0                1.5  8×A100-80G",
		"3 runs: mean |error| 4.3%, max |error| 10.0% (a)", "states: weights, gradients and optimizer per GPU of the first stage"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestWriteValidationSection: the report's section marks the fitted run,
// judges the runs out of sample against the targets, and names a missing
// file.
func TestWriteValidationSection(t *testing.T) {
	dir := t.TempDir()
	var w strings.Builder
	writeValidation(&w, dir)
	if !strings.Contains(w.String(), "Missing: "+filepath.Join(dir, results.ValidationFile)) {
		t.Errorf("no file: %s", w.String())
	}
	var b bytes.Buffer
	results.WriteValidationJSON(&b, validationSample)
	os.WriteFile(filepath.Join(dir, results.ValidationFile), b.Bytes(), 0o644)
	w.Reset()
	writeValidation(&w, dir)
	for _, want := range []string{"| " + results.ValidationFittedRun + " (**fitted**) |", "2 runs out of sample: mean |error| 6.5% (target <= 5%: **missed**), max |error| 10.0% on a (target <= 10%: met)"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("section lacks %q:\n%s", want, w.String())
		}
	}
}
