package experiment

import (
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
)

const validationHeader = "name,gpu,gpus,hidden,ffn,heads,layers,vocab,seq_len,tp,pp,vpp,global_batch,micro_batch,recompute,sequence_parallel,measured_seconds"

// goodRow is a valid run: the 22B GPT of Korthikanti et al. on 8 A100s.
var goodRow = []string{"k22-22b", "A100-80G", "8", "6144", "24576", "64", "48", "51200", "2048", "8", "1", "1", "4", "4", "full", "false", "1.42"}

// withField returns goodRow with field i set to v.
func withField(i int, v string) []string {
	r := append([]string(nil), goodRow...)
	r[i] = v
	return r
}

// fieldCol is the 1-based byte column where field i of rec starts.
func fieldCol(rec []string, i int) int {
	col := 1
	for _, f := range rec[:i] {
		col += len(f) + 1
	}
	return col
}

// TestDecodeValidationTableRejects is the table of bad tables: each fails
// with an input error naming the file, the line and the column (and the
// column's name and what it allows) of every bad field.
func TestDecodeValidationTableRejects(t *testing.T) {
	idx := map[string]int{} // column indexes by name
	for i, c := range ValidationColumns {
		idx[c] = i
	}
	type rowCase struct {
		field, value string
		want         string // after "name = \"value\": "
	}
	for _, tc := range []rowCase{
		{"name", "a b", "must match [A-Za-z0-9._-]{1,64}"},
		{"gpu", "V100", "no calibration profile; known: A100-80G"},
		{"gpus", "0", "must be an integer in [1, 1048576]"},
		{"gpus", "+8", "must be an integer in [1, 1048576]"},
		{"hidden", "6144.0", "must be an integer in [1, 65536]"},
		{"hidden", "70000", "must be an integer in [1, 65536]"},
		{"ffn", "-1", "must be an integer in [1, 1048576]"},
		{"heads", "5000", "must be an integer in [1, 1024]"},
		{"heads", "60", "must divide hidden (6144): head dim = hidden/heads"},
		{"layers", "", "must be an integer in [1, 1024]"},
		{"vocab", "1e5", "must be an integer in [1, 10000000]"},
		{"seq_len", "2000000", "must be an integer in [1, 1048576]"},
		{"tp", "3", "must divide the GPUs of a A100-80G node (8) and heads (64)"},
		{"tp", "16", "must divide the GPUs of a A100-80G node (8) and heads (64)"},
		{"pp", "5", "must divide layers (48)"},
		{"pp", "0", "must be an integer in [1, 256]"},
		{"vpp", "2", "must be 1 when pp = 1"},
		{"global_batch", "6", "must be a multiple of micro_batch·dp = 4·1"},
		{"micro_batch", "8", "must be at most global_batch (4)"},
		{"recompute", "partial", `must be "none", "selective" or "full"`},
		{"recompute", "Full", `must be "none", "selective" or "full"`},
		{"sequence_parallel", "yes", "must be true or false"},
		{"sequence_parallel", "True", "must be true or false"},
		{"measured_seconds", "0", "must be a number of seconds in (0, 1e+07]"},
		{"measured_seconds", "NaN", "must be a number of seconds in (0, 1e+07]"},
		{"measured_seconds", "inf", "must be a number of seconds in (0, 1e+07]"},
		{"measured_seconds", "fast", "must be a number of seconds in (0, 1e+07]"},
	} {
		i := idx[tc.field]
		rec := withField(i, tc.value)
		text := validationHeader + "\n" + strings.Join(goodRow, ",") + "\n" + strings.Join(rec, ",") + "\n"
		// The second run repeats the first's name; rename it unless the case is the name.
		if tc.field != "name" {
			rec[0] = "second"
			text = validationHeader + "\n" + strings.Join(goodRow, ",") + "\n" + strings.Join(rec, ",") + "\n"
		}
		_, err := DecodeValidationTable(strings.NewReader(text), "t.csv")
		want := fmt.Sprintf("t.csv:3:%d: %s = %q: %s", fieldCol(rec, i), tc.field, tc.value, tc.want)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %q: error %v, want %q", tc.field, tc.value, err, want)
		}
		if !badinput.Is(err) {
			t.Errorf("%s = %q: error is not bad input (badinput.Err)", tc.field, tc.value)
		}
	}

	// Layouts that only the fields together break.
	for _, tc := range []struct {
		set  map[string]string
		want string // the blamed field and its rule
	}{
		{map[string]string{"gpus": "12"}, `gpus = "12": must be a multiple of tp·pp = 8`},
		{map[string]string{"gpus": "12", "tp": "4", "global_batch": "12", "micro_batch": "4"}, `gpus = "12": must be a multiple of the GPUs of a A100-80G node (8)`},
		{map[string]string{"pp": "4", "vpp": "5"}, `vpp = "5": must divide the layers of a stage, layers/pp = 12`},
		{map[string]string{"gpus": "32", "pp": "4", "vpp": "2", "global_batch": "6", "micro_batch": "1"},
			`global_batch = "6": gives 6 microbatches per replica: with vpp > 1 they must be a multiple of pp (4)`},
		{map[string]string{"global_batch": "1048576", "micro_batch": "1", "pp": "48", "vpp": "1", "gpus": "384"},
			`global_batch = "1048576": pp·(global_batch/micro_batch)·vpp·2 = 100663296 ops: more than the engine's 16777216`},
		{map[string]string{"global_batch": "262144", "micro_batch": "1", "pp": "8", "vpp": "1", "gpus": "64"},
			`global_batch = "262144": pp·(global_batch/micro_batch)·vpp·2 = 4194304 ops: a validation run may have at most 2097152`},
		{map[string]string{"micro_batch": "32", "seq_len": "1048576", "global_batch": "32"}, `micro_batch = "32": micro_batch·seq_len = 33554432 tokens per microbatch: must be at most 16777216`},
	} {
		rec := append([]string(nil), goodRow...)
		for k, v := range tc.set {
			rec[idx[k]] = v
		}
		text := validationHeader + "\n" + strings.Join(rec, ",") + "\n"
		_, err := DecodeValidationTable(strings.NewReader(text), "t.csv")
		field := tc.want[:strings.Index(tc.want, " =")]
		loc := fmt.Sprintf("t.csv:2:%d: ", fieldCol(rec, idx[field]))
		if err == nil || !strings.Contains(err.Error(), loc+tc.want) {
			t.Errorf("%v: error %v, want %q", tc.set, err, loc+tc.want)
		}
	}

	// Whole-file problems.
	for _, tc := range []struct{ text, want string }{
		{"", "t.csv: empty; the first line must be the header name,gpu,"},
		{"name,gpu\n", `t.csv:1: header "name,gpu": must be exactly name,gpu,gpus,`},
		{validationHeader + ",extra\n", "t.csv:1: header"},
		{validationHeader + "\n", "t.csv: no run after the header"},
		{validationHeader + "\n" + strings.Join(goodRow[:16], ",") + "\n", "t.csv:2: 16 fields, want 17 (name,gpu,"},
		{validationHeader + "\n" + strings.Join(goodRow, ",") + "\n" + strings.Join(goodRow, ",") + "\n", `t.csv:3:1: name = "k22-22b": used twice (first on line 2)`},
		{validationHeader + "\n\"k22,A100-80G\n", "t.csv:2:"},
	} {
		_, err := DecodeValidationTable(strings.NewReader(tc.text), "t.csv")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !badinput.Is(err) {
			t.Errorf("%q: error %v, want %q (an input error)", tc.text, err, tc.want)
		}
	}

	// Every bad field of a line is reported, each at its column.
	rec := withField(idx["gpus"], "0")
	rec[idx["recompute"]] = "some"
	_, err := DecodeValidationTable(strings.NewReader(validationHeader+"\n"+strings.Join(rec, ",")+"\n"), "t.csv")
	for _, f := range []string{"gpus", "recompute"} {
		if loc := fmt.Sprintf("t.csv:2:%d: %s", fieldCol(rec, idx[f]), f); err == nil || !strings.Contains(err.Error(), loc) {
			t.Errorf("two bad fields: error %v lacks %q", err, loc)
		}
	}
}

// TestDecodeValidationTableGood: a valid row decodes to its fields.
func TestDecodeValidationTableGood(t *testing.T) {
	runs, err := DecodeValidationTable(strings.NewReader(validationHeader+"\n"+strings.Join(goodRow, ",")+"\n"), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := ValidationRun{Line: 2, Name: "k22-22b", GPU: "A100-80G", GPUs: 8, Hidden: 6144, FFN: 24576, Heads: 64, Layers: 48, Vocab: 51200,
		SeqLen: 2048, TP: 8, PP: 1, VPP: 1, GlobalBatch: 4, MicroBatch: 4, Recompute: job.RecomputeFull, MeasuredSeconds: 1.42}
	if len(runs) != 1 || !reflect.DeepEqual(runs[0], want) {
		t.Errorf("decoded %+v, want %+v", runs, want)
	}
	if runs[0].DP() != 1 || runs[0].Microbatches() != 1 {
		t.Errorf("DP %d, microbatches %d; want 1, 1", runs[0].DP(), runs[0].Microbatches())
	}
}

// TestReadValidationTableBounded: a table larger than its bound is refused
// while it is read, as an input error.
func TestReadValidationTableBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(big, []byte(validationHeader+"\n"+strings.Repeat("x", safeio.MaxValidationTableBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadValidationTable(big)
	if !errors.Is(err, safeio.ErrTooLarge) || !badinput.Is(err) {
		t.Errorf("oversized table: %v", err)
	}
	if _, err := ReadValidationTable(filepath.Join(dir, "missing.csv")); !badinput.Is(err) {
		t.Errorf("missing table: %v", err)
	}
}

// TestValidationJob: a run's job is Megatron-LM's GPT on its GPUs with the
// gradients all-reduced, its recomputation and sequence parallelism as the
// table says, and one microbatch of MicroBatch sequences per rank budget.
func TestValidationJob(t *testing.T) {
	runs, err := DecodeValidationTable(strings.NewReader(validationHeader+"\n"+strings.Join(goodRow, ",")+"\n"), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	j, prof, err := ValidationJob(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	p := j.Parallel
	if prof.Name != "A100-80G" || j.Model.Activation != job.GELU || !j.Model.LearnedPositions || j.Model.HeadDimQK != 96 ||
		p.GradSyncMode() != job.GradAllReduce || p.RecomputeMode() != job.RecomputeFull || p.SequenceParallel || p.BudgetTokens != 8192 ||
		j.ContextTokens != 2048 || j.Cluster.GPUsPerNode != 8 {
		t.Errorf("job %+v / %+v", j, p)
	}
}

// committedRuns reads the committed table, validation/megatron-lm.csv.
func committedRuns(t *testing.T) []ValidationRun {
	t.Helper()
	runs, err := ReadValidationTable(filepath.Join("..", "validation", "megatron-lm.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// fittedRun names the one validation run a constant was fitted on (the A100
// profile's gemm.max); every other run is out of sample.
const fittedRun = results.ValidationFittedRun

// TestValidateCommittedTable runs dcpsim validate's logic end to end on the
// committed table: every published run gets a positive prediction with error
// = predicted/measured − 1, the same on a second run, and the out-of-sample
// runs meet the targets of issue 13 (mean |error| <= 5%, max <= 10%).
func TestValidateCommittedTable(t *testing.T) {
	runs := committedRuns(t)
	if len(runs) != 18 {
		t.Fatalf("%d runs in the committed table, want 18 (SC'21 Table 1 and Korthikanti et al. Table 5)", len(runs))
	}
	res, err := Validate(runs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Validate(runs)
	if err != nil || !reflect.DeepEqual(res, again) {
		t.Errorf("a second validation differs: %v", err)
	}
	var sum, worst float64
	n := 0
	for i, r := range res {
		if r.Name != runs[i].Name || !(r.PredictedSeconds > 0) || r.MeasuredSeconds != runs[i].MeasuredSeconds ||
			math.Abs(r.Error-(r.PredictedSeconds/r.MeasuredSeconds-1)) > 1e-15 {
			t.Errorf("%s: %+v", runs[i].Name, r)
		}
		if r.Name == fittedRun {
			continue
		}
		sum += math.Abs(r.Error)
		worst = max(worst, math.Abs(r.Error))
		n++
	}
	if mean := sum / float64(n); mean > 0.05 || worst > 0.10 {
		t.Errorf("out of sample (%d runs): mean |error| %.1f%%, max %.1f%%; targets 5%% and 10%%", n, 100*mean, 100*worst)
	}
}

// TestA100GEMMFittedPoint pins the one constant fitted on a validation run:
// the A100 profile's gemm.max makes the run k22-22b-full (Korthikanti et al.
// 2022 Table 5, 1.42 s) come out right, and refitting it by bisection gives
// the committed value.
func TestA100GEMMFittedPoint(t *testing.T) {
	var run ValidationRun
	for _, r := range committedRuns(t) {
		if r.Name == fittedRun {
			run = r
		}
	}
	res, err := ValidateRun(run)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Error) > 1e-3 {
		t.Errorf("%s: error %.3f%% with the committed gemm.max", fittedRun, 100*res.Error)
	}
	prof, err := calib.LookupProfile("A100-80G")
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := 0.5, 1.0
	for range 40 {
		p := *prof
		p.GEMM.Max.Value = (lo + hi) / 2
		v, err := validateRunOn(run, &p)
		if err != nil {
			t.Fatal(err)
		}
		if v.Error > 0 { // too slow: the GEMMs must be faster
			lo = p.GEMM.Max.Value
		} else {
			hi = p.GEMM.Max.Value
		}
	}
	if fit := (lo + hi) / 2; math.Abs(fit-prof.GEMM.Max.Value) > 5e-4 {
		t.Errorf("refitted gemm.max %.4f, the profile says %.4f", fit, prof.GEMM.Max.Value)
	}
}

// TestCommittedValidationUpToDate: results/validation.jsonl, which
// results/REPORT.md is generated from, is what dcpsim validate --json writes
// on the committed table now, so the report's validation section never
// drifts from the cost model (run make figures, or the validate line of its
// recipe, after changing either).
func TestCommittedValidationUpToDate(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "results", results.ValidationFile))
	if err != nil {
		t.Skipf("no committed validation results: %v", err)
	}
	res, err := Validate(committedRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := results.WriteValidationJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("results/%s is stale: run make figures (or bin/dcpsim validate --table validation/megatron-lm.csv --json > results/%s, then dcpsim report) and commit it",
			results.ValidationFile, results.ValidationFile)
	}
}

// TestValidateMemory: every committed run's predicted memory is the first
// stage's model states under all-reduce (18 bytes per parameter it holds)
// and its simulated peak of held activations, which, every microbatch
// filling its ranks' budget with sequences of seq_len, is the budget's
// worst case B·PeakPerToken(0, seq_len) of the memory model.
func TestValidateMemory(t *testing.T) {
	for _, r := range committedRuns(t) {
		res, err := ValidateRun(r)
		if err != nil {
			t.Fatal(err)
		}
		j, _, err := ValidationJob(r)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := memory.New(j, compute.MegatronSoftmax)
		if err != nil {
			t.Fatal(err)
		}
		st := mem.States(0)
		if res.PredictedWeightsOptimizerBytes != st.Bytes() || math.Abs(st.Bytes()-18*st.DenseParams) > 1e-6*st.Bytes() {
			t.Errorf("%s: states %.0f, memory model %.0f (18 × %.0f params)", r.Name, res.PredictedWeightsOptimizerBytes, st.Bytes(), st.DenseParams)
		}
		worst := float64(j.Parallel.BudgetTokens) * mem.PeakPerToken(0, r.SeqLen)
		if !(res.PredictedActivationBytes > 0) || math.Abs(res.PredictedActivationBytes-worst) > 1e-9*worst {
			t.Errorf("%s: activations %.0f, the budget's worst case %.0f", r.Name, res.PredictedActivationBytes, worst)
		}
		// Every published run ran, on 80 GB A100s: the model must let it fit.
		if need := st.Bytes() + memory.ReserveBytes + res.PredictedActivationBytes; need > 80e9 {
			t.Errorf("%s: the first stage needs %.1f GiB, more than the A100's 80 GB the run had", r.Name, need/memory.GiB)
		}
	}
}

// TestValidationTableWorkBounded: a table's work is bounded before any run is
// simulated (issue 24 item 12): global_batch at most 2^20, a run at most
// 2^21 engine ops (about 2 s), a table at most 2^22 ops in all (about 4 s);
// the run at the bound is accepted.
func TestValidationTableWorkBounded(t *testing.T) {
	idx := map[string]int{}
	for i, c := range ValidationColumns {
		idx[c] = i
	}
	row := func(name string) string {
		rec := append([]string(nil), goodRow...)
		rec[idx["name"]], rec[idx["global_batch"]], rec[idx["micro_batch"]], rec[idx["pp"]], rec[idx["gpus"]] = name, "131072", "1", "8", "64"
		return strings.Join(rec, ",")
	}
	runs, err := DecodeValidationTable(strings.NewReader(validationHeader+"\n"+row("a")+"\n"+row("b")+"\n"), "t.csv")
	if err != nil || len(runs) != 2 || runs[0].engineOps() != MaxValidationRowOps {
		t.Fatalf("two runs at the row bound: %v", err)
	}
	_, err = DecodeValidationTable(strings.NewReader(validationHeader+"\n"+row("a")+"\n"+row("b")+"\n"+row("c")+"\n"), "t.csv")
	if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "t.csv:4: the runs up to this one hold 6291456 engine ops") || !strings.Contains(err.Error(), "at most 4194304") {
		t.Errorf("three runs at the row bound: %v", err)
	}
	_, err = DecodeValidationTable(strings.NewReader(validationHeader+"\n"+strings.Join(withField(idx["global_batch"], "16777216"), ",")+"\n"), "t.csv")
	if err == nil || !strings.Contains(err.Error(), `global_batch = "16777216": must be an integer in [1, 1048576]`) {
		t.Errorf("global_batch 2^24: %v", err)
	}
}
