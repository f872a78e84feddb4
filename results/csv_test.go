package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestCSVNamesAreJSONNames: every CSV column is the field's JSON key, for the
// three row types, so a field has one name in every output.
func TestCSVNamesAreJSONNames(t *testing.T) {
	check := func(name string, header []string, err error, v any) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(v)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		if !slices.Equal(slices.Sorted(slices.Values(header)), slices.Sorted(slices.Values(keys))) {
			t.Errorf("%s: CSV header %v, JSON keys %v", name, header, slices.Sorted(slices.Values(keys)))
		}
	}
	full := PolicySummary{Error: "x", Skipped: true, UlyssesFallbackShare: 1, ChosenOptions: ChosenOptions{"cap": 1}, OutOfMemory: &OutOfMemory{}, External: &ExternalRun{}}
	h, err := CSVHeader[IterationRow]()
	check("IterationRow", h, err, IterationRow{})
	h, err = CSVHeader[SweepRow]()
	check("SweepRow", h, err, SweepRow{PolicySummary: full})
	h, err = CSVHeader[PolicySummary]()
	check("PolicySummary", h, err, full)
}

// TestWriteCSVRoundTrip: what WriteCSV writes reads back with encoding/csv
// to the same values: quotes, commas and newlines in a message, floats
// exactly, the histogram and options cells.
func TestWriteCSVRoundTrip(t *testing.T) {
	msg := "policy flexsp needs the cbc program: exec: \"cbc\": executable file not found in $PATH,\nsecond line"
	pts := []SweepPoint{{Index: 3, Name: "p0003-x", Axes: Axes{{"gpus", "64"}, {"hydra.cap", "8"}},
		Summary: Summary{Layout: Layout{GPUs: 64, GPU: "H20", TP: 2, PP: 4, Recompute: "full"}, Policies: []PolicySummary{
			{Policy: "hydra", StepSecondsMean: 1.0 / 3, DegreeShares: []sched.DegreeShare{{Degree: 1, Share: 0.25}, {Degree: 4, Share: 0.75}},
				ChosenOptions: ChosenOptions{"cap": 16, "b": 2}, Measures: Measures{MFU: 2.0 / 3}},
			{Policy: "flexsp", Error: msg, Skipped: true},
		}}}}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, SweepRows(pts)); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("not valid CSV: %v\n%s", err, buf.String())
	}
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	col := func(r int, name string) string { return recs[r][slices.Index(recs[0], name)] }
	for _, c := range []struct {
		row        int
		name, want string
	}{
		{1, "point", "3"}, {1, "axes", "gpus=64 hydra.cap=8"}, {1, "gpus", "64"}, {1, "tp", "2"}, {1, "recompute", "full"},
		{1, "step_seconds_mean", "0.3333333333333333"}, {1, "mfu", "0.6666666666666666"},
		{1, "degree_shares", "1:0.25 4:0.75"}, {1, "chosen_options", "b=2 cap=16"},
		{2, "policy", "flexsp"}, {2, "error", msg}, {2, "skipped", "true"},
	} {
		if got := col(c.row, c.name); got != c.want {
			t.Errorf("row %d %s = %q, want %q", c.row, c.name, got, c.want)
		}
	}
}

// TestCSVColumnsRefuse: a field with no CSV form or no name is an error, not
// a silently dropped column.
func TestCSVColumnsRefuse(t *testing.T) {
	type noName struct{ A int }
	type slice struct {
		A []int `json:"a"`
	}
	type inner struct {
		A int `json:"a"`
	}
	type twice struct {
		inner
		B int `json:"a"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[noName](), reflect.TypeFor[slice](), reflect.TypeFor[twice](), reflect.TypeFor[int]()} {
		if _, err := csvColumns(typ); err == nil {
			t.Errorf("%s: accepted", typ)
		}
	}
}

// TestMeans: the summary's means come from the measured rows alone, field by
// field.
func TestMeans(t *testing.T) {
	rows := []IterationRow{
		{Policy: "a", Warmup: true, Measures: Measures{MFU: 100}},
		{Policy: "a", Measures: Measures{MFU: 0.2, PPBubbleShare: 0.1, PlannerWorkUnits: 10}},
		{Policy: "b", Measures: Measures{MFU: 7}},
		{Policy: "a", Measures: Measures{MFU: 0.4, PPBubbleShare: 0.3, PlannerWorkUnits: 20}},
	}
	got := Means(rows, "a")
	if want := (Measures{MFU: 0.30000000000000004, PPBubbleShare: 0.2, PlannerWorkUnits: 15}); got != want {
		t.Errorf("Means = %+v, want %+v", got, want)
	}
	if got := Means(rows, "c"); got != (Measures{}) {
		t.Errorf("no rows: %+v", got)
	}
	if !strings.Contains(reflect.TypeFor[Measures]().Field(0).Tag.Get("json"), "_share") {
		t.Error("Measures' first field lost its json name")
	}
}
