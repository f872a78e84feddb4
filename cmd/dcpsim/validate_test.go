package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const committedTable = "../../validation/megatron-lm.csv"

// TestValidateCommand: dcpsim validate prints every run of the committed
// table beside its prediction and the mean and max |error|, and exits 0.
func TestValidateCommand(t *testing.T) {
	code, out, errOut := dcpsim(t, "validate", "--table", committedTable)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"predicted (s)", "measured (s)", "error (%)", "states (GiB)", "activations (GiB)", "sc21-1008.0b", "k22-1t-selective-sp", "18 runs: mean |error|", "max |error|"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestValidateJSON: --json prints one object per run and line, with exactly
// the keys name, predicted_seconds, measured_seconds, error,
// predicted_weights_optimizer_bytes and predicted_activation_bytes, error =
// predicted / measured - 1, the bytes positive.
func TestValidateJSON(t *testing.T) {
	code, out, errOut := dcpsim(t, "validate", "--json", "--table", committedTable)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 18 {
		t.Fatalf("%d lines, want 18:\n%s", len(lines), out)
	}
	for _, l := range lines {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader([]byte(l)))
		if err := dec.Decode(&m); err != nil || dec.More() {
			t.Fatalf("line %q: not one JSON object: %v", l, err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"error", "kind", "measured_seconds", "measured_unit", "measured_value", "name", "predicted_activation_bytes", "predicted_seconds", "predicted_weights_optimizer_bytes"}) {
			t.Errorf("line %q: keys %v", l, keys)
		}
		p, _ := m["predicted_seconds"].(float64)
		ms, _ := m["measured_seconds"].(float64)
		e, _ := m["error"].(float64)
		wo, _ := m["predicted_weights_optimizer_bytes"].(float64)
		act, _ := m["predicted_activation_bytes"].(float64)
		if _, ok := m["name"].(string); !ok || !(p > 0) || !(ms > 0) || math.Abs(e-(p/ms-1)) > 1e-12 || !(wo > 0) || !(act > 0) {
			t.Errorf("line %q: inconsistent values", l)
		}
	}
}

// TestValidateBadInput: a bad table or a usage error is exit 2, naming the
// line and column of the bad field.
func TestValidateBadInput(t *testing.T) {
	dir := t.TempDir()
	table, err := os.ReadFile(committedTable)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte(strings.Replace(string(table), "A100-80G,8,6144", "A100-80G,8,6143", 1)), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validate"}, "want --table FILE.csv"},
		{[]string{"validate", "--table", committedTable, "extra"}, `got ["extra"]`},
		{[]string{"validate", "--table", filepath.Join(dir, "missing.csv")}, "missing.csv"},
		{[]string{"validate", "--table", bad}, `bad.csv:12:36: heads = "64": must divide hidden (6143)`},
		{[]string{"validate", "--tabel", bad}, "flag provided but not defined"},
	} {
		code, _, errOut := dcpsim(t, c.args...)
		if code != exitInput || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
