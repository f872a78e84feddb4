package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dcpsim/dcpsim/sched/policies"
)

// TestRunBatchesLoad runs the external contract end to end on batches small
// enough to check by hand (load mode: forward of one chunk = load·1e-12/(pp·vpp),
// backward twice that, the rest free).
//
// Line 1: G = 2, pp = 1, hydra puts the 2000-token sequence on rank 0 (load 4e6,
// 12 µs) and the two 1000-token ones on rank 1 (load 2e6, 6 µs) in one MB. The
// iteration is 12 µs; rank 1 waits 6 µs for the gradient sync: DP bubble
// 6/(2·12) = 0.25, no PP bubble; the MB takes 12 µs.
//
// Line 2: G = 4, pp = 2, ep = 2, one sequence per rank (2000, 1000, 1000, 1000).
// Domains = EP blocks {0,1} (F 2 µs, B 4 µs per stage: rank 0's load 4e6 over pp
// = 2) and {2,3} (0.5 µs, 1 µs). Block {0,1}: stage 0 F [0,2], stage 1 F [2,4],
// B [4,8], stage 0 B [8,12]; block {2,3}: F [0,.5] [.5,1], B [1,2] [2,3]. T = 12
// µs; syncs start at 12 (stage 0) and 8 (stage 1). DP: ranks 2,3 wait 9 µs on
// stage 0 and 6 on stage 1: 30/(8·12) = 0.3125. PP = T − busy − DP: ranks 0,1
// 12 − 6 = 6 on each stage, ranks 2,3 12 − 1.5 − 9 = 1.5 (stage 0) and 12 − 1.5
// − 6 = 4.5 (stage 1): 36/96 = 0.375. The MB takes 3·4e6·1e-12/2 = 6 µs.
func TestRunBatchesLoad(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	lines := `{"ranks": 2, "budget_tokens": 2000, "lengths": [2000, 1000, 1000]}

{"ranks": 4, "budget_tokens": 2000, "lengths": [2000, 1000, 1000, 1000], "pp": 2, "ep": 2}
`
	if err := os.WriteFile(in, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := dcpsim(t, "run", "--batches", in, "--policy", "hydra", "--costs", "load")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `{"iteration_seconds":0.000012,"pp_bubble":0,"dp_bubble":0.25,"mb_seconds":[0.000012],"microbatch_count":1}
{"iteration_seconds":0.000012,"pp_bubble":0.375,"dp_bubble":0.3125,"mb_seconds":[0.000006],"microbatch_count":1}
`
	if out != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}

	for _, c := range []struct {
		args []string
		line string
		want string
	}{
		{[]string{"--costs", "model"}, "", "only --costs load applies"},
		{nil, `{"ranks": 4, "budget_tokens": 2000, "lengths": [1], "ep": 3}`, "in.jsonl:1: invalid scheduling input: sched: ep = 3: must be >= 1 and divide ranks = 4"},
		{nil, `{"ranks": 4, "budget": 4, "lengths": [1]}`, `in.jsonl:1: not a batch object`},
		{nil, `{"ranks": 4, "budget_tokens": 4, "lengths": [1], "pp": 2, "vpp": 2}`, "in.jsonl:1: hydra: no legal microbatch count for the interleaved schedule"},
	} {
		if c.line != "" {
			if err := os.WriteFile(in, []byte(c.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		args := append([]string{"run", "--batches", in, "--policy", "hydra"}, c.args...)
		code, _, errOut := dcpsim(t, args...)
		if code != exitInput || !strings.Contains(errOut, c.want) {
			t.Errorf("%v %s: exit %d, want 2 with %q; stderr: %s", c.args, c.line, code, c.want, errOut)
		}
	}
	if code, _, errOut := dcpsim(t, "run", "--costs", "load"); code != exitInput || !strings.Contains(errOut, "goes with --batches") {
		t.Errorf("run --costs without --batches: exit %d: %s", code, errOut)
	}
}

const tinyScenario = `name = "tiny"
description = "run --scenario test"

[cluster]
gpu = "H20"
gpus = 48
gpus_per_node = 8

[model]
preset = "deepseek-v2-lite"

[parallel]
tp = 1
pp = 3
vpp = VPP
ep = 8
budget_tokens = 8192

[workload]
preset = "long-256k"
context_tokens = 32768
batch_tokens = 131072
overlong = "split"

[run]
iterations = 3
warmup_iterations = 1
seed = 1
policies = POLICIES
`

// TestRunScenario runs dcpsim run --scenario end to end on a tiny scenario:
// one row per implemented policy with a unit on every column, a note for the
// unknown one, the shares of the iteration summing to 100, and exit 1 when no
// policy ran.
func TestRunScenario(t *testing.T) {
	dir := t.TempDir()
	write := func(vpp, policies string) string {
		f := filepath.Join(dir, "tiny-"+vpp+".toml")
		s := strings.NewReplacer("VPP", vpp, "POLICIES", policies).Replace(tinyScenario)
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	// The default table is narrow: the main columns, no line of it over
	// 120 characters, the rest behind --wide.
	code, out, errOut := dcpsim(t, "run", "--no-files", "--scenario", write("1", `["hydra", "mcore", "static"]`))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	table := false
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "policy" {
			table = true
			if strings.Contains(l, "step p95") || !strings.Contains(l, "tokens/day (B)") {
				t.Errorf("the narrow table's header: %q", l)
			}
		}
		if table && utf8.RuneCountInString(l) > 120 {
			t.Errorf("a line of %d characters in the narrow table: %q", utf8.RuneCountInString(l), l)
		}
		if l == "" {
			table = false
		}
	}
	if !strings.Contains(out, "--wide adds") {
		t.Errorf("the narrow table does not point to --wide:\n%s", out)
	}

	code, out, errOut = dcpsim(t, "run", "--no-files", "--wide", "--scenario", write("1", `["hydra", "mcore", "static"]`))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "\n  DP straggler (×): Per stage, the slowest rank's time") {
		t.Errorf("--wide does not say what each column means:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	var header string
	rows := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == "policy" {
			header = l
		}
		if len(f) == 23 && (f[0] == "hydra" || f[0] == "mcore" || f[0] == "static") {
			rows[f[0]] = f
		}
	}
	for _, col := range []string{"MFU (%)", "PP rank 0 (%)", "DP rank 0 (%)", "step mean (s)", "step p95 (s)", "tokens/day (B)", "step / hydra (×)", "PP bubble (%)", "DP bubble (%)",
		"compute-busy (%)", "exposed comm (%)", "planner stall (%)", "MB-time CV (%)", "MB max/min (×)", "MBs per rank",
		"EP wait (%)", "DP straggler (×)", "planner modelled (ms)", "$ per 1T tokens (k$)", "peak memory (GiB)"} {
		if !strings.Contains(header, col) {
			t.Errorf("header %q lacks %q", header, col)
		}
	}
	if len(rows) != 3 || rows["hydra"][4] != "1.00" {
		t.Fatalf("rows %v; output:\n%s", rows, out)
	}
	for name, f := range rows {
		var step, p95, pp, dp, busy, comm, stall float64
		for i, v := range []*float64{&step, &p95, &pp, &dp, &busy, &comm, &stall} {
			if _, err := fmt.Sscan(f[[]int{1, 2, 6, 7, 10, 11, 12}[i]], v); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if step <= 0 || p95 < step*0.5 || pp < 0 || dp < 0 || busy <= 0 || comm < 0 || stall < 0 || pp+dp+busy+comm+stall > 100.3 {
			t.Errorf("%s: step %g s (p95 %g), PP %g%%, DP %g%%, busy %g%%, comm %g%%, stall %g%%", name, step, p95, pp, dp, busy, comm, stall)
		}
	}
	if !strings.Contains(out, "share of GPU-slots") || !strings.Contains(out, "  static   ") {
		t.Errorf("no CP-degree shares:\n%s", out)
	}

	// vpp 3 over pp 3: HyDra splits MBs to a count the interleaved schedule
	// runs, Megatron aligns its own; both run.
	code, out, errOut = dcpsim(t, "run", "--no-files", "--scenario", write("3", `["hydra", "mcore"]`))
	if code != exitOK || strings.Contains(out, "error") {
		t.Errorf("vpp 3: exit %d: %s%s", code, out, errOut)
	}

	// A policy the registry does not know is bad input, before anything runs.
	code, _, errOut = dcpsim(t, "run", "--no-files", "--scenario", write("1", `["hydra", "wlb"]`))
	if code != exitInput || !strings.Contains(errOut, `run.policies: unknown policy "wlb"; known: `+strings.Join(policies.Names(), ", ")) {
		t.Errorf("exit %d, want 2: %s", code, errOut)
	}

	// A bad [run.options.hydra] is exit 2 from run and scenarios check alike.
	f := write("1", `["hydra", "mcore"]`)
	s, _ := os.ReadFile(f)
	os.WriteFile(f, append(s, "\n[run.options.hydra]\nbogus = 3\n"...), 0o644)
	for _, args := range [][]string{{"run", "--no-files", f}, {"scenarios", "check", f}} {
		code, _, errOut = dcpsim(t, args...)
		if code != exitInput || !strings.Contains(errOut, `run.options.hydra.bogus: unknown option for policy "hydra"`) {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errOut)
		}
	}
}
