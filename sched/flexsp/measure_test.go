package flexsp

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/milp"
	"github.com/dcpsim/dcpsim/sched"
)

// timedSolver records every solve's work and wall time.
type timedSolver struct {
	s    milp.Solver
	mu   sync.Mutex
	rows [][]string
	tag  []string
}

func (t *timedSolver) Solve(ctx context.Context, m *milp.Model, l milp.Limits) (*milp.Solution, error) {
	start := time.Now()
	sol, err := t.s.Solve(ctx, m, l)
	secs := time.Since(start).Seconds()
	if err == nil {
		t.mu.Lock()
		t.rows = append(t.rows, append(append([]string{}, t.tag...),
			strconv.Itoa(m.NumVars()), strconv.Itoa(m.NumIntegers()), strconv.Itoa(len(m.Constraints())),
			strconv.FormatInt(sol.Nodes, 10), strconv.FormatInt(sol.Iterations, 10), sol.Status.String(),
			strconv.FormatFloat(secs, 'g', 6, 64)))
		t.mu.Unlock()
	}
	return sol, err
}

// TestMeasureCBC writes the measurement behind calib.CBC: every MILP of
// FlexSP plans of long-256k batches (16,384 tokens per rank and pp 8, as
// hy3-8k) on pools of 128 to 2,048 ranks at node limits 1, 20 and 200, one
// solve at a time, with its nodes, simplex iterations and wall seconds.
// It runs only when DCPSIM_MEASURE_CBC names the CSV to write:
//
//	DCPSIM_MEASURE_CBC=$PWD/calib/planner/cbc_flexsp_solves.csv go test ./sched/flexsp -run MeasureCBC -timeout 1h
func TestMeasureCBC(t *testing.T) {
	out := os.Getenv("DCPSIM_MEASURE_CBC")
	if out == "" {
		t.Skip("set DCPSIM_MEASURE_CBC to the CSV to write")
	}
	costs := sched.TokenCosts{Source: "hy3 on H800 (costmodel, rounded)", AttentionSecondsPerToken2: 1.04e-9, LinearSecondsPerToken: 3.86e-5, FixedSeconds: 0.0074,
		AllToAll: []sched.DegreeSeconds{{Degree: 2, SecondsPerToken: 2.5e-6}, {Degree: 4, SecondsPerToken: 3.7e-6}, {Degree: 8, SecondsPerToken: 4.3e-6},
			{Degree: 16, SecondsPerToken: 1e-5}, {Degree: 32, SecondsPerToken: 1.76e-5}, {Degree: 64, SecondsPerToken: 2.7e-5}}}
	ts := &timedSolver{s: testSolver(t)}
	for _, g := range []int{128, 256, 512, 1024, 2048} {
		for _, nodes := range []int64{1, 20, 200} {
			p := buildTestPolicy(t, func(o *Options) { o.Workers, o.NodeLimit = 1, nodes }, sched.Env{Solver: ts, TokenCosts: &costs})
			lengths := longBatch(t, int64(g)*8*16384, 262144, uint64(g)+uint64(nodes))
			ts.tag = []string{strconv.Itoa(g), strconv.FormatInt(nodes, 10)}
			if _, err := p.Plan(lengths, sched.Inputs{PoolRanks: g, BudgetTokens: 8192, PP: 8, VPP: 1, EP: 8, ContextTokens: 262144}); err != nil {
				t.Fatal(err)
			}
			t.Logf("G = %d, node limit %d: %d solves so far", g, nodes, len(ts.rows))
		}
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	fmt.Fprintf(f, "# CBC solves of FlexSP microbatch MILPs (sched/flexsp TestMeasureCBC): one row per solve, single-threaded cbc with milp/cbc.DefaultArgs, one solve at a time,\n# %s, %s/%s, %d CPUs visible, %s; regenerate with taskset -c 0 env DCPSIM_MEASURE_CBC=$PWD/calib/planner/cbc_flexsp_solves.csv go test ./sched/flexsp -run MeasureCBC -timeout 1h\n",
		cpu, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"))
	w := csv.NewWriter(f)
	_ = w.Write([]string{"pool_ranks", "node_limit", "variables", "integers", "rows", "nodes", "iterations", "status", "seconds"})
	_ = w.WriteAll(ts.rows)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
