package mcore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/sched"
)

// conformanceDir holds the vectors produced by Megatron-LM's own code
// (testdata/README.md says how).
const conformanceDir = "testdata"

// vector is one line of mcore-dcp-g2*.jsonl.
type vector struct {
	Ranks          int       `json:"ranks"`
	BudgetTokens   int       `json:"budget_tokens"`
	Lengths        []int     `json:"lengths"`
	Microbatches   [][][]int `json:"microbatches"`
	CPythonSeconds float64   `json:"cpython_seconds"`
	MicrobatchN    int       `json:"microbatch_count"`
}

// readVectors reads a conformance file; a missing file is a failure.
func readVectors(t testing.TB, name string) []vector {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(conformanceDir, name))
	if err != nil {
		t.Fatalf("conformance vectors: %v", err)
	}
	var vs []vector
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var v vector
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("%s line %d: %v", name, i+1, err)
		}
		vs = append(vs, v)
	}
	return vs
}

func mustPolicy(t testing.TB, opts Options) sched.Policy {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// planVector plans a vector's batch (pp 1, no VPP) and compares it with
// Megatron's per-rank lists.
func planVector(t *testing.T, p sched.Policy, v vector) *sched.Plan {
	t.Helper()
	in := sched.Inputs{PoolRanks: v.Ranks, BudgetTokens: v.BudgetTokens, PP: 1, VPP: 1}
	plan, err := p.Plan(v.Lengths, in)
	if err != nil {
		t.Fatalf("R=%d C=%d n=%d: %v", v.Ranks, v.BudgetTokens, len(v.Lengths), err)
	}
	got := plan.PerRank()
	if !reflect.DeepEqual(got, v.Microbatches) {
		t.Errorf("R=%d C=%d n=%d: plan differs from Megatron's: %s", v.Ranks, v.BudgetTokens, len(v.Lengths), firstDiff(got, v.Microbatches))
	}
	if err := sched.Validate(plan, v.Lengths, in, sched.Promises{Aligned: true, WithinBudget: true, CoversPool: true}); err != nil {
		t.Errorf("R=%d C=%d n=%d: %v", v.Ranks, v.BudgetTokens, len(v.Lengths), err)
	}
	return plan
}

// firstDiff describes the first micro-batch and rank where two plans differ.
func firstDiff(got, want [][][]int) string {
	for m := range min(len(got), len(want)) {
		for r := range min(len(got[m]), len(want[m])) {
			if !reflect.DeepEqual(got[m][r], want[m][r]) {
				return fmt.Sprintf("micro-batch %d rank %d: got %v, want %v", m, r, got[m][r], want[m][r])
			}
		}
	}
	return fmt.Sprintf("got %d micro-batches, want %d", len(got), len(want))
}

// TestConformance: every plan equals Megatron's on mcore-dcp-g2.jsonl (40 lines).
func TestConformance(t *testing.T) {
	vs := readVectors(t, "mcore-dcp-g2.jsonl")
	if len(vs) != 40 {
		t.Fatalf("mcore-dcp-g2.jsonl: %d vectors, want 40", len(vs))
	}
	p := mustPolicy(t, Options{MinCPSize: 1})
	for i, v := range vs {
		t.Run(fmt.Sprintf("line%02d", i+1), func(t *testing.T) { planVector(t, p, v) })
	}
}

// TestConformanceTiming: the seven timing batches are conformance vectors too.
func TestConformanceTiming(t *testing.T) {
	vs := readVectors(t, "mcore-dcp-g2-timing.jsonl")
	if len(vs) != 7 {
		t.Fatalf("mcore-dcp-g2-timing.jsonl: %d vectors, want 7", len(vs))
	}
	p := mustPolicy(t, Options{MinCPSize: 1})
	for i, v := range vs {
		t.Run(fmt.Sprintf("line%d", i+1), func(t *testing.T) {
			plan := planVector(t, p, v)
			if len(plan.Microbatches) != v.MicrobatchN {
				t.Errorf("%d micro-batches, the file says %d", len(plan.Microbatches), v.MicrobatchN)
			}
		})
	}
}

// TestCPythonTimingFit fits seconds per work unit to the CPython timings of
// mcore-dcp-g2-timing.jsonl (Megatron's scheduler under CPython 3.11 on one core
// of a 2-core x86-64 machine; 256 to 4096 sequences, R = 32 to 128) by least
// squares through the origin, and checks that the fit explains the timings and
// that calib.CPython.PoolVisitSeconds, the cost the simulator prices a pool visit
// at, is that fit. (R² = 0.995; the fitted times are within 20% of the measured
// ones except on the smallest batch, 0.017 s fitted and 0.036 s measured, where
// fixed overheads dominate; Megatron's code on that batch took 0.022 s on
// another machine.)
func TestCPythonTimingFit(t *testing.T) {
	vs := readVectors(t, "mcore-dcp-g2-timing.jsonl")
	p := mustPolicy(t, Options{MinCPSize: 1})
	work := make([]float64, len(vs))
	secs := make([]float64, len(vs))
	for i, v := range vs {
		plan := planVector(t, p, v)
		work[i], secs[i] = float64(plan.WorkUnits), v.CPythonSeconds
	}
	var sxy, sxx float64
	for i := range work {
		sxy += work[i] * secs[i]
		sxx += work[i] * work[i]
	}
	k := sxy / sxx
	var ssRes, ssTot, mean, maxRel float64
	for _, s := range secs {
		mean += s / float64(len(secs))
	}
	for i := range work {
		fit := k * work[i]
		ssRes += (secs[i] - fit) * (secs[i] - fit)
		ssTot += (secs[i] - mean) * (secs[i] - mean)
		maxRel = max(maxRel, math.Abs(fit-secs[i])/secs[i])
		t.Logf("R=%4d C=%5d n=%5d  work %13d  cpython %.3f s  fitted %.3f s", vs[i].Ranks, vs[i].BudgetTokens, len(vs[i].Lengths), int64(work[i]), secs[i], fit)
	}
	r2 := 1 - ssRes/ssTot
	t.Logf("fit: %.4g s/unit, R² = %.4f, max relative error %.1f%%", k, r2, 100*maxRel)
	if r2 < 0.98 {
		t.Errorf("R² = %.4f < 0.98: the work count no longer explains the CPython times", r2)
	}
	if got := calib.CPython.PoolVisitSeconds.Value; math.Abs(got-k)/k > 0.01 {
		t.Errorf("calib.CPython.PoolVisitSeconds = %g, the fit gives %.4g", got, k)
	}
}
