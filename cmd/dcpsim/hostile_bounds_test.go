package main

import (
	"bytes"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/workload"
)

// repeated streams count copies of line (its '\n' included), stopping early
// when the child stops reading.
func repeated(line string, count int) func(io.Writer) {
	return func(w io.Writer) {
		per := max(1, (64<<10)/len(line))
		chunk := bytes.Repeat([]byte(line), per)
		for sent := 0; sent < count; sent += per {
			n := min(per, count-sent)
			if _, err := w.Write(chunk[:n*len(line)]); err != nil {
				return
			}
		}
	}
}

// oneTokenBatch streams a --batches line of n one-token lengths on ranks ranks.
func oneTokenBatch(ranks, n int) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprintf(w, `{"ranks": %d, "budget_tokens": 4096, "lengths": [`, ranks)
		repeated("1,", n-1)(w)
		io.WriteString(w, "1]}\n")
	}
}

// bigBatchScenario is production-256k with batches of 2^30 tokens (about
// 730,000 sequences each).
func bigBatchScenario() string {
	b, err := os.ReadFile("../../scenarios/production-256k.toml")
	if err != nil {
		panic(err)
	}
	s := string(b)
	if !strings.Contains(s, "batch_tokens = 33554432\n") {
		panic("production-256k.toml: batch_tokens changed")
	}
	return strings.Replace(s, "batch_tokens = 33554432\n", "batch_tokens = 1073741824\n", 1)
}

// nestedTables is a 36 KB value of inline tables nested 6,000 deep.
var nestedTables = strings.Repeat("{a=", 6000) + "1" + strings.Repeat("}", 6000)

// manyUnknownKeys is 60,000 unknown keys of [costs], one problem each.
func manyUnknownKeys() string {
	var b strings.Builder
	b.WriteString("\n[costs]\n")
	for i := range 60000 {
		fmt.Fprintf(&b, "k%d = 1\n", i)
	}
	return b.String()
}

// hostileBoundCases lists TestHostileInputs' cases of round three's bounds on memory and time (issue 24 items 6-12, 21).
func hostileBoundCases() []hostileCase {
	lengthFile := func(file string) string { return withTiny(`preset = "long-256k"`, `file = "`+file+`"`) }
	return []hostileCase{
		// 6. Length files are read bounded: 300M lines (600 MB) on a pipe, or
		// more than 1 GiB, used to be kept whole (out of memory).
		{name: "length file: 300M lines on stdin, workload stats", args: []string{"workload", "stats", "--file", "/dev/stdin"},
			stdin: repeated("1\n", 300_000_000), code: 2, want: []string{"/dev/stdin:8388609:", "more than 8388608 lines", "MaxLengthFileLines"}},
		{name: "length file: 300M lines on stdin, scenarios check", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": lengthFile("/dev/stdin")},
			stdin: repeated("1\n", 300_000_000), code: 2, want: []string{"/dev/stdin:8388609:", "MaxLengthFileLines"}},
		{name: "length file: more than 1 GiB", args: []string{"workload", "stats", "--file", "/dev/stdin"},
			stdin: repeated("#"+strings.Repeat(" ", 4094)+"\n", 300_000), code: 2, want: []string{"/dev/stdin: more than 1073741824 bytes", "MaxLengthFileBytes"}},
		{name: "length file at the line bound works", args: []string{"workload", "stats", "--file", "/dev/stdin", "--json"},
			stdin: repeated("1\n", 8388608), code: 0, want: []string{`"sequences": 8388608`}},

		// 7. Sequences per batch of a length file's batches.
		{name: "workload stats --batch-tokens 1e10 of one-token lengths", args: []string{"workload", "stats", "--file", "l.txt", "--batch-tokens", "10000000000", "--context", "32768"},
			files: map[string]string{"l.txt": "1\n1\n"}, code: 2,
			want: []string{"--batch-tokens = 10000000000", "expected 1e+10 sequences per batch", "must be <= 10000000"}},

		// 8. Statistics stream: memory does not grow with --iterations.
		{name: "workload stats --iterations 16 of 2^30-token batches", args: []string{"workload", "stats", "--scenario", "big.toml", "--iterations", "16"},
			files: map[string]string{"big.toml": bigBatchScenario()}, code: 0,
			want: []string{"batches       16 × 1,073,741,824 tokens", "p99.9"}, maxMiB: 150},

		// 9. Nesting depth is bounded before the TOML decoder.
		{name: "36 KB of nested inline tables", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": tinyTOML + "\n[costs]\nx = " + nestedTables + "\n"}, code: 2,
			want: []string{"x.toml:32: arrays and inline tables nested more than 32 deep", "MaxNesting"}, maxMiB: 100},
		{name: "brackets inside strings and comments do not count", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": withTiny(`description = "run --scenario test"`,
				`description = "`+strings.Repeat("[{", 40)+`" # `+strings.Repeat("[", 40)+"\n# "+strings.Repeat("{", 40))}, code: 0, want: []string{"ok   x.toml"}},

		// 10. Unknown keys are linear, and at most 100 are listed.
		{name: "60,000 unknown keys", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": tinyTOML + manyUnknownKeys()}, code: 2,
			want: []string{"x.toml:32: costs.k0: unknown key", "costs.k99: unknown key", "... and 59900 more unknown keys (at most 100 are listed)"}},

		// 11. A --batches line whose plan could only be refused is refused before planning.
		{name: "plan --batches: 10^7 one-token lengths on 1,024 ranks, hydra", args: []string{"plan", "--batches", "-", "--policy", "hydra"},
			stdin: oneTokenBatch(1024, 10_000_000), code: 2, want: []string{"-:1:", "MaxPlanLineEntries", "refused before planning"}},
		{name: "run --batches: 10^7 one-token lengths on 1,024 ranks, hydra", args: []string{"run", "--batches", "-", "--policy", "hydra", "--costs", "load"},
			stdin: oneTokenBatch(1024, 10_000_000), code: 2, want: []string{"-:1:", "step.MaxOps", "refused before planning"}},

		// 21. A key given twice in a JSON-lines length file.
		{name: "length file: JSONL key given twice", args: []string{"workload", "stats", "--file", "d.jsonl"},
			files: map[string]string{"d.jsonl": `{"length": 5}` + "\n" + `{"length": 5, "id": 1, "length": 7}` + "\n"}, code: 2,
			want: []string{"d.jsonl:2:", `key "length" given twice`}},
		{name: "length file: JSONL key given twice, scenarios check", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": lengthFile("d.jsonl"), "d.jsonl": `{"length": 5, "length": 7}` + "\n"}, code: 2,
			want: []string{"d.jsonl:1:", `key "length" given twice`}},

		// 20 (in these files). A byte-order mark before a --batches line; --context out of range.
		{name: "--batches with a UTF-8 BOM", args: []string{"plan", "--batches", "-", "--policy", "static"},
			stdin: lines("\xEF\xBB\xBF" + `{"ranks": 2, "budget_tokens": 2000, "lengths": [2000, 1000]}` + "\n"), code: 0, want: []string{`{"microbatches":`}},
		{name: "workload stats --context 2e9", args: []string{"workload", "stats", "--file", "l.txt", "--batch-tokens", "1000", "--context", "2000000000"},
			files: map[string]string{"l.txt": "1000\n"}, code: 2, want: []string{"--context = 2000000000: must be in [1, 1073741824]"}},
		{name: "workload stats --batch-tokens past the limit", args: []string{"workload", "stats", "--file", "l.txt", "--batch-tokens", "20000000000", "--context", "1000"},
			files: map[string]string{"l.txt": "1000\n"}, code: 2, want: []string{"--batch-tokens = 20000000000: must be in [1, 10000000000]"}},
	}
}

// TestWorkloadStatsStreamed (issue 24 item 8): the streamed statistics are
// those of experiment.WorkloadStats, which keeps every batch and the pooled
// lengths, for a scenario, a length file whole, and its batches in both
// orders.
func TestWorkloadStatsStreamed(t *testing.T) {
	sc, err := scenarios.Resolve("testbed-32k")
	if err != nil {
		t.Fatal(err)
	}
	lengths, err := scenarios.ReadLengths("testdata/workload/lengths.txt", "", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]experiment.WorkloadRequest{
		"scenario":   {Scenario: sc, Iterations: 7},
		"file":       {File: "l.txt", Lengths: lengths},
		"resample":   {File: "l.txt", Lengths: lengths, BatchTokens: 600000, ContextTokens: 32768, Order: workload.Resample, Seed: 5, Iterations: 9},
		"sequential": {File: "l.txt", Lengths: lengths, BatchTokens: 250000, ContextTokens: 65536, Order: workload.Sequential, Iterations: 6},
	} {
		want, pooled := keptWorkloadStats(t, req)
		got, acc, err := experiment.WorkloadStats(req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: streamed %+v\nwant %+v", name, got, want)
		}
		sorted := slices.Sorted(slices.Values(pooled))
		if !slices.Equal(acc.Lengths(), sorted) {
			t.Errorf("%s: the figure's lengths differ", name)
		}
	}
}

// keptWorkloadStats is what workload stats computed before it streamed:
// every batch kept (experiment.SampleBatches) and the pooled lengths
// summarised at once (workload.Summarize).
func keptWorkloadStats(t *testing.T, req experiment.WorkloadRequest) (results.WorkloadStats, []int) {
	t.Helper()
	rep, _, err := experiment.WorkloadStats(req) // the fields other than the statistics
	if err != nil {
		t.Fatal(err)
	}
	rep.Batches = nil
	var pooled []int
	var sampler *workload.Sampler
	n := req.Iterations
	switch {
	case req.Scenario != nil:
		if sampler, err = req.Scenario.NewSampler(); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			n = req.Scenario.Run.Iterations
		}
	case req.BatchTokens > 0:
		spec := workload.BatchSpec{TargetTokens: req.BatchTokens, ContextTokens: req.ContextTokens, Overlong: workload.Split, Seed: req.Seed}
		if sampler, err = workload.NewListSampler(req.Lengths, req.Order, spec); err != nil {
			t.Fatal(err)
		}
	default:
		pooled = req.Lengths
	}
	if sampler != nil {
		for _, b := range experiment.SampleBatches(sampler, n) {
			rep.Batches = append(rep.Batches, b.Stats())
			pooled = append(pooled, b.Lengths...)
		}
	}
	rep.Summary = workload.Summarize(pooled, workload.DefaultThresholds())
	return rep, pooled
}
