package main

import (
	"fmt"
	"io"
	"strings"
)

// poolsTOML is a two-kind scenario (16 H100 + 16 A100 at tp1 pp1, G = 32,
// context 32768) whose second pool sets budget_tokens = BT.
const poolsTOML = `name = "small"
description = "two pools"

[cluster]
[[cluster.pools]]
gpu = "H100-SXM"
gpus = 16

[[cluster.pools]]
gpu = "A100-80G"
gpus = 16
budget_tokens = BT

[model]
preset = "llama-3-8b"

[parallel]
tp = 1
pp = 1
budget_tokens = 8192

[workload]
preset = "long-32k"
context_tokens = 32768
batch_tokens = 262144

[run]
iterations = 2
seed = 7
policies = ["hydra", "mcore"]
`

// lengthsLine streams one --batches line of n lengths (100..9099) on ranks
// ranks at budget budget.
func lengthsLine(ranks, budget, n int) func(io.Writer) {
	return func(w io.Writer) {
		var b strings.Builder
		fmt.Fprintf(&b, `{"ranks": %d, "budget_tokens": %d, "lengths": [`, ranks, budget)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, 100+i*7919%9000)
		}
		b.WriteString("]}\n")
		io.WriteString(w, b.String())
	}
}

// validationRow is a validation table of one run of pp 8 and global_batch gb
// (micro_batch 1, dp 1: 16·gb engine ops).
func validationRow(gb int) string {
	return "name,gpu,gpus,hidden,ffn,heads,layers,vocab,seq_len,tp,pp,vpp,global_batch,micro_batch,recompute,sequence_parallel,measured_seconds\n" +
		fmt.Sprintf("big,H800,64,8192,32768,64,96,51200,2048,8,8,1,%d,1,full,false,3.5\n", gb)
}

// hostileMessageCases lists TestHostileInputs' cases of round three's signals, wrong answers and messages (issue 24 items 13, 16, 18-20).
func hostileMessageCases() []hostileCase {
	return []hostileCase{
		// 16. report: a summary.json that is there is read strictly and bounded.
		{name: "report: corrupt summary.json", args: []string{"report", "--results", "res"},
			files: map[string]string{"res/testbed-32k/summary.json": `{"scenario": "testbed-32k",`},
			code:  2, want: []string{"res/testbed-32k/summary.json: corrupt"}},
		{name: "report: unknown key in summary.json", args: []string{"report", "--results", "res"},
			files: map[string]string{"res/testbed-32k/summary.json": `{"scenario": "testbed-32k", "bogus": 1}`},
			code:  2, want: []string{"res/testbed-32k/summary.json", `unknown field "bogus"`}},
		{name: "report: summary.json a folder", args: []string{"report", "--results", "res"},
			files: map[string]string{"res/testbed-32k/summary.json/x": ""},
			code:  2, want: []string{"res/testbed-32k/summary.json: unreadable: not a regular file (a folder)"}},
		{name: "report: missing summaries are named", args: []string{"report", "--results", "res", "--out", "r.md"},
			files: map[string]string{"res/keep": ""}, code: 0, want: []string{"wrote r.md"}, writes: []string{"r.md"}},

		// 18. scenarios show escapes control characters.
		{name: "scenarios show: escape codes in description", args: []string{"scenarios", "show", "x.toml"},
			files: map[string]string{"x.toml": withTiny(`description = "run --scenario test"`, `description = "\u001b]0;pwned\u0007\u001b[31mred\u202e"`)},
			code:  0, want: []string{`\x1b]0;pwned\x07\x1b[31mred\u202e`}},

		// 19. Pool budgets: the smallest that holds the context.
		{name: "pool budget_tokens 1", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": strings.Replace(poolsTOML, "BT", "1", 1)},
			code:  2, want: []string{"x.toml:12: cluster.pools[1].budget_tokens = 1: must be >= ⌈context_tokens / G⌉ = ⌈32768 / 32⌉ = 1024"}},
		{name: "pool budget_tokens 1024 runs", args: []string{"run", "x.toml", "--no-files"},
			files: map[string]string{"x.toml": strings.Replace(poolsTOML, "BT", "1024", 1)},
			code:  0, want: []string{"hydra", "mcore"}},

		// 20. Messages.
		{name: "first_stage_layers 1000", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": withTiny("pp = 3", "pp = 3\nfirst_stage_layers = 1000")},
			code:  2, want: []string{"parallel.first_stage_layers = 1000: the stage overrides exceed the layers"}},
		{name: "mcore min_cp_size 2^20", args: []string{"run", "x.toml", "--no-files"},
			files: map[string]string{"x.toml": tinyTOML + "\n[run.options.mcore]\nmin_cp_size = 1048576\n"},
			code:  0, want: []string{"min_cp_size = 1048576 exceeds the largest CP degree 16 (the pool's G = 16 ranks)"}},
		{name: "ep -4 says 0 is 1", args: []string{"plan", "--batches", "-", "--policy", "hydra"},
			stdin: lines(`{"ranks": 16, "budget_tokens": 2000, "lengths": [2000, 1000], "ep": -4}` + "\n"),
			code:  2, want: []string{"-:1:", "ep = -4: must be >= 1", "0 or absent: 1"}},
		{name: "context shorter than a sequence, static", args: []string{"plan", "--batches", "-", "--policy", "static"},
			stdin: lines(`{"ranks": 4, "budget_tokens": 1000, "lengths": [2000, 1000, 10, 10], "context_tokens": 1000}` + "\n"),
			code:  2, want: []string{"-:1:", "sequence 0 has 2000 tokens; it is longer than context_tokens = 1000"}},
		{name: "context shorter than a sequence, wlb-llm", args: []string{"plan", "--batches", "-", "--policy", "wlb-llm"},
			stdin: lines(`{"ranks": 4, "budget_tokens": 1000, "lengths": [2000, 1000, 10, 10], "context_tokens": 1000}` + "\n"),
			code:  2, want: []string{"-:1:", "longer than context_tokens = 1000"}},

		// 12. Time bounds on planning and validation.
		{name: "hydra-scan: 10^5 sequences on 2^20 ranks", args: []string{"plan", "--batches", "-", "--policy", "hydra-scan"},
			stdin: lengthsLine(1<<20, 1<<24, 100_000), code: 2, want: []string{"-:1:", "hydra-scan", "more than 2147483648 steps", "plan it with hydra"}, slow: true},
		{name: "hydra-hetero: 10^6 sequences", args: []string{"plan", "--batches", "-", "--policy", "hydra-hetero"},
			stdin: lengthsLine(1024, 16384, 1_000_000), code: 2, want: []string{"-:1:", "1000000 sequences × 330 target microbatches", "more than 67108864"}},
		{name: "validate: a run past the ops bound", args: []string{"validate", "--table", "t.csv"},
			files: map[string]string{"t.csv": validationRow(1048576)},
			code:  2, want: []string{"t.csv:2:", "16777216 ops: a validation run may have at most 2097152"}},
		{name: "validate: a table past the ops bound", args: []string{"validate", "--table", "t.csv"},
			files: map[string]string{"t.csv": validationRow(131072) + strings.Replace(validationRow(131072)[strings.Index(validationRow(131072), "\n")+1:], "big,", "big2,", 1) +
				strings.Replace(validationRow(131072)[strings.Index(validationRow(131072), "\n")+1:], "big,", "big3,", 1)},
			code: 2, want: []string{"t.csv:4: the runs up to this one hold 6291456 engine ops"}},
	}
}
