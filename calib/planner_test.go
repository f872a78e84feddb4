package calib

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestCPythonProvenance: every CPython cost has a measurement source citing a
// file of the repository and a plausible value; HeapOpSeconds and
// SequenceVisitSeconds are the rows of calib/planner/cpython_units.csv that
// their sources name (PoolVisitSeconds is refitted by sched/mcore's
// TestCPythonTimingFit).
func TestCPythonProvenance(t *testing.T) {
	for name, c := range map[string]Const{
		"PoolVisitSeconds":     CPython.PoolVisitSeconds,
		"HeapOpSeconds":        CPython.HeapOpSeconds,
		"SequenceVisitSeconds": CPython.SequenceVisitSeconds,
	} {
		checkMeasurementSource(t, "CPython."+name, c.Source)
		if !(c.Value > 0 && c.Value < 1e-3) {
			t.Errorf("CPython.%s = %v s: want a per-operation time in (0, 1 ms)", name, c.Value)
		}
	}

	f, err := os.Open(filepath.Join("planner", "cpython_units.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	measured := map[string]float64{} // operation@pool_ranks -> seconds_per_unit
	for _, row := range rows[1:] {
		v, err := strconv.ParseFloat(row[4], 64)
		if err != nil {
			t.Fatalf("cpython_units.csv: %v", err)
		}
		measured[row[0]+"@"+row[1]] = v
	}
	if got, want := CPython.HeapOpSeconds.Value, measured["heap_op@2048"]; got != want {
		t.Errorf("CPython.HeapOpSeconds = %v, cpython_units.csv has %v for heap_op at G = 2048", got, want)
	}
	if got, want := CPython.SequenceVisitSeconds.Value, measured["seq_visit@0"]; got != want {
		t.Errorf("CPython.SequenceVisitSeconds = %v, cpython_units.csv has %v for seq_visit", got, want)
	}
}
