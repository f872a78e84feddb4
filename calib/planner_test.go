package calib

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// TestCPythonPlanBuildProvenance: the plan-building costs are the rows of
// calib/planner/cpython_plan_units.csv that their sources name (sort_step at
// N = 22000, the fits at param -1), each cites that file, and each fit's R^2
// comment is present.
func TestCPythonPlanBuildProvenance(t *testing.T) {
	f, err := os.Open(filepath.Join("planner", "cpython_plan_units.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	r.FieldsPerRecord = 5
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || rows[0][0] != "operation" {
		t.Fatalf("cpython_plan_units.csv: no header")
	}
	measured := map[string]float64{} // operation@param -> seconds_per_unit
	for _, row := range rows[1:] {
		v, err := strconv.ParseFloat(row[4], 64)
		if err != nil {
			t.Fatalf("cpython_plan_units.csv: %v", err)
		}
		measured[row[0]+"@"+row[1]] = v
	}
	for _, c := range []struct {
		name, row string
		c         Const
	}{
		{"PreparedSequenceSeconds", "seq_prep@0", CPython.PreparedSequenceSeconds},
		{"SortStepSeconds", "sort_step@22000", CPython.SortStepSeconds},
		{"BatchSlotSeconds", "batch_slot@512", CPython.BatchSlotSeconds},
		{"SequencePieceSeconds", "seq_piece@-1", CPython.SequencePieceSeconds},
		{"GroupSequenceSeconds", "group_seq@-1", CPython.GroupSequenceSeconds},
		{"GroupBatchSeconds", "group_batch@-1", CPython.GroupBatchSeconds},
		{"GroupMetaSeconds", "group_meta@-1", CPython.GroupMetaSeconds},
		{"GroupRankSeconds", "group_rank@-1", CPython.GroupRankSeconds},
	} {
		checkMeasurementSource(t, "CPython."+c.name, c.c.Source)
		if !strings.Contains(c.c.Source, "calib/planner/cpython_plan_units.csv") {
			t.Errorf("CPython.%s: source %q does not cite cpython_plan_units.csv", c.name, c.c.Source)
		}
		if !(c.c.Value > 0 && c.c.Value < 1e-3) {
			t.Errorf("CPython.%s = %v s: want a per-operation time in (0, 1 ms)", c.name, c.c.Value)
		}
		want, ok := measured[c.row]
		if !ok {
			t.Errorf("CPython.%s: cpython_plan_units.csv has no row %s", c.name, c.row)
		} else if c.c.Value != want {
			t.Errorf("CPython.%s = %v, cpython_plan_units.csv has %v for %s", c.name, c.c.Value, want, c.row)
		}
	}
}
