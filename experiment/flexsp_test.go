package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/dcpsim/dcpsim/badinput"
	"os/exec"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/costmodel"
	"github.com/dcpsim/dcpsim/sched/flexsp"
)

// needCBC skips a test when cbc is not installed.
func needCBC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("cbc"); err != nil {
		t.Skip("cbc not installed (Debian package coinor-cbc)")
	}
}

// tinyFlexSP is tiny with FlexSP beside HyDra.
var tinyFlexSP = strings.Replace(tiny, `policies = ["hydra", "mcore", "static"]`, `policies = ["hydra", "mcore", "flexsp"]`, 1)

// TestRunSkipsFlexSPWithoutCBC: with no cbc on PATH a run skips FlexSP with
// a note naming the Debian package, substitutes nothing, and runs the
// others; the --batches entry point refuses it as bad input, naming the
// package.
func TestRunSkipsFlexSPWithoutCBC(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	out, err := Run(parse(t, tinyFlexSP), Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, f := out.Summary.Policies[0], out.Summary.Policies[2]
	if h.Error != "" || h.Iterations == 0 {
		t.Errorf("hydra did not run: %+v", h)
	}
	if !f.Skipped || !strings.Contains(f.Error, "coinor-cbc") || f.Iterations != 0 {
		t.Errorf("flexsp: %+v, want skipped naming coinor-cbc", f)
	}
	for _, r := range out.Rows {
		if r.Policy == flexsp.Name {
			t.Errorf("a skipped policy has iteration rows: %+v", r)
		}
	}
	_, err = NewPolicy(flexsp.Name)
	if !errors.Is(err, ErrMissingProgram) || !badinput.Is(err) || !strings.Contains(err.Error(), "apt-get install coinor-cbc") {
		t.Errorf("NewPolicy(flexsp) without cbc: %v", err)
	}
	if _, err := NewPolicy("hydra"); err != nil {
		t.Errorf("hydra needs nothing: %v", err)
	}
}

// TestRunFlexSP: with cbc a run plans FlexSP with the job's costs (not the
// code's defaults), its modelled solve stall is counted, and, FlexSP
// planning a batch ahead, only the part beyond the previous iteration's step
// is on the critical path: all of it in the first iteration.
func TestRunFlexSP(t *testing.T) {
	needCBC(t)
	sc := parse(t, tinyFlexSP)
	out, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := out.Summary.Policies[2]
	if f.Error != "" || f.Iterations != 2 || f.CPExec != "ulysses" || f.OverlapAllToAll {
		t.Fatalf("flexsp: %+v", f)
	}
	var prev float64
	for _, r := range out.Rows {
		if r.Policy != flexsp.Name {
			continue
		}
		if !(r.PlannerModeledSeconds > 0) {
			t.Errorf("iteration %d: modelled stall %v, want the priced solver work", r.Iteration, r.PlannerModeledSeconds)
		}
		onPath := r.PlannerStallShare * r.StepSeconds
		want := max(0, r.PlannerModeledSeconds-prev)
		if r.Iteration == 0 {
			want = r.PlannerModeledSeconds
		}
		if d := onPath - want; d > 1e-6*r.StepSeconds || d < -1e-6*r.StepSeconds {
			t.Errorf("iteration %d: %.6f s on the critical path, want %.6f (modelled %.6f, previous step %.3f)", r.Iteration, onPath, want, r.PlannerModeledSeconds, prev)
		}
		prev = r.StepSeconds
	}
	setup, err := NewSetup(sc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PolicyFor(sc, flexsp.Name, setup)
	if err != nil {
		t.Fatal(err)
	}
	smp, _ := sc.NewSampler()
	plan, err := p.Plan(smp.Batch(0).Lengths, setup.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	if d := plan.Diagnostics.(*flexsp.Diagnostics); !strings.HasPrefix(d.Costs, "cost model of deepseek-v2-lite on H20") {
		t.Errorf("planned with %q, want the scenario's cost model", d.Costs)
	}
	if costmodel.PlannerStallSeconds(plan.StallWork) <= 0 || plan.StallWork.SolverSolves == 0 {
		t.Errorf("stall work %+v", plan.StallWork)
	}
}

// TestBatchesFlexSP: plan --batches emits FlexSP's plans in the JSON-lines
// contract (per-rank lists, groups, diagnostics with policy, work units
// and microbatch count), and run --batches --costs load times them.
func TestBatchesFlexSP(t *testing.T) {
	needCBC(t)
	p, err := NewPolicy(flexsp.Name)
	if err != nil {
		t.Fatal(err)
	}
	in := `{"ranks": 8, "budget_tokens": 1000, "lengths": [4000, 1500, 900, 700, 300, 200, 100, 90, 80, 3000], "pp": 2}` + "\n\n" +
		`{"ranks": 4, "budget_tokens": 500, "lengths": [2000, 100]}` + "\n"
	var buf bytes.Buffer
	if err := PlanBatches(strings.NewReader(in), "b.jsonl", &buf, p, -1); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 batches:\n%s", len(lines), buf.String())
	}
	for i, line := range lines {
		var pl PlanLine
		if err := json.Unmarshal([]byte(line), &pl); err != nil {
			t.Fatal(err)
		}
		if pl.Diagnostics["policy"] != flexsp.Name || pl.Diagnostics["microbatch_count"] != float64(len(pl.Groups)) ||
			len(pl.Microbatches) != len(pl.Groups) || pl.Diagnostics["costs"] == "" {
			t.Errorf("line %d: %s", i, line)
		}
		if !strings.Contains(pl.Diagnostics["costs"].(string), "FlexSP's public code defaults") {
			t.Errorf("line %d plans with %v, want the code's defaults (a --batches line names no model)", i, pl.Diagnostics["costs"])
		}
	}
	buf.Reset()
	if err := RunBatches(strings.NewReader(in), "b.jsonl", &buf, p); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rl RunLine
		if err := json.Unmarshal([]byte(line), &rl); err != nil || !(rl.IterationSeconds > 0) || len(rl.MBSeconds) != rl.MicrobatchCount {
			t.Errorf("run line %d: %s (%v)", i, line, err)
		}
	}
}
