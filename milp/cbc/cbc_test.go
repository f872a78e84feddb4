package cbc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/milp"
)

// solver returns cbc from PATH, or skips the test when it is not installed.
func solver(t *testing.T) *Solver {
	t.Helper()
	s, err := Find()
	if err != nil {
		t.Skipf("cbc not installed (%v)", err)
	}
	s.TempDir = t.TempDir()
	return s
}

// fake returns a Solver running the stand-in script testdata/name.
func fake(t *testing.T, name string) *Solver {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return &Solver{Path: path, TempDir: t.TempDir()}
}

// assertNoTempFiles fails if a solve left anything in s.TempDir.
func assertNoTempFiles(t *testing.T, s *Solver) {
	t.Helper()
	left, err := os.ReadDir(s.TempDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// knapsack is a two-constraint 0-1 knapsack of n items, each weight and value
// a small deterministic function of its index, and its optimum by brute force.
func knapsack(n int) (*milp.Model, float64) {
	m := &milp.Model{Name: "knapsack"}
	var obj, c1, c2 []milp.Term
	w := make([]float64, n)
	v := make([]float64, n)
	for i := range n {
		w[i] = float64(3 + (i*7)%11)
		v[i] = float64(2 + (i*5)%13)
		x := m.AddVar(fmt.Sprintf("x%d", i), milp.Binary, 0, 1)
		obj = append(obj, milp.Term{Var: x, Coef: v[i]})
		c1 = append(c1, milp.Term{Var: x, Coef: w[i]})
		c2 = append(c2, milp.Term{Var: x, Coef: float64(1 + i%3)})
	}
	m.Maximize(obj)
	m.AddConstraint("weight", c1, milp.LE, 40)
	m.AddConstraint("count", c2, milp.LE, 9)
	best := 0.0
	for mask := range 1 << min(n, 20) { // brute force only for small n
		if n > 20 {
			return m, math.NaN()
		}
		var wt, cnt, val float64
		for i := range n {
			if mask>>i&1 == 1 {
				wt, cnt, val = wt+w[i], cnt+float64(1+i%3), val+v[i]
			}
		}
		if wt <= 40 && cnt <= 9 {
			best = max(best, val)
		}
	}
	return m, best
}

// TestRoundTrip: CBC solves a known small integer program to its brute-force
// optimum, reports a feasible point, its work, its version, and leaves no
// files behind; the same solve twice gives the same answer.
func TestRoundTrip(t *testing.T) {
	s := solver(t)
	m, want := knapsack(14)
	sol, err := s.Solve(context.Background(), m, milp.Limits{TimeSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	if sol.Status != milp.Optimal || sol.Objective != want {
		t.Fatalf("status %s objective %v, want optimal %v", sol.Status, sol.Objective, want)
	}
	if v := m.Violation(sol.Values); v > 1e-9 {
		t.Errorf("solution violates the model by %v", v)
	}
	if !strings.HasPrefix(sol.Solver, "CBC 2.") {
		t.Errorf("solver %q, want CBC 2.x", sol.Solver)
	}
	again, err := s.Solve(context.Background(), m, milp.Limits{TimeSeconds: 60})
	if err != nil || fmt.Sprint(again.Values) != fmt.Sprint(sol.Values) || again.Nodes != sol.Nodes || again.Iterations != sol.Iterations {
		t.Errorf("second solve differs: %+v vs %+v (%v)", again, sol, err)
	}
	assertNoTempFiles(t, s)
}

// TestStatuses: an infeasible model, a node limit, and the LP features the
// writer uses (negative and fixed bounds, general integers, exponents) read
// back as CBC solves them.
func TestStatuses(t *testing.T) {
	s := solver(t)
	inf := &milp.Model{}
	x := inf.AddVar("x", milp.Integer, 0, 10)
	inf.AddConstraint("odd", []milp.Term{{Var: x, Coef: 2}}, milp.EQ, 5)
	sol, err := s.Solve(context.Background(), inf, milp.Limits{})
	if err != nil || sol.Status != milp.Infeasible {
		t.Errorf("2x = 5: %+v, %v; want infeasible", sol, err)
	}

	m := &milp.Model{}
	y := m.AddVar("y", milp.Integer, -3, 7)
	w := m.AddVar("w_1.2", milp.Integer, 2, math.Inf(1))
	f := m.AddVar("fixed", milp.Continuous, 1.5, 1.5)
	z := m.AddVar("z", milp.Continuous, 0, math.Inf(1))
	m.Minimize([]milp.Term{{Var: y, Coef: -2.5}, {Var: w, Coef: 1e-7}, {Var: z, Coef: 1e12}})
	m.AddConstraint("eq", []milp.Term{{Var: y, Coef: 2}, {Var: f, Coef: 2}}, milp.EQ, 7)
	m.AddConstraint("ge", []milp.Term{{Var: z, Coef: 3}, {Var: w, Coef: -1}}, milp.GE, -4.25)
	sol, err = s.Solve(context.Background(), m, milp.Limits{Nodes: 100, RelativeGap: 0})
	if err != nil || sol.Status != milp.Optimal || sol.Values[0] != 2 || sol.Values[1] != 2 || sol.Values[2] != 1.5 || sol.Values[3] != 0 {
		t.Errorf("features model: %+v, %v; want y = 2, w = 2, fixed = 1.5, z = 0", sol, err)
	}

	big, _ := knapsack(40)
	first, err := s.Solve(context.Background(), big, milp.Limits{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Status.HasSolution() && first.Status != milp.NoSolution {
		t.Errorf("node limit 1: status %s", first.Status)
	}
	second, err := s.Solve(context.Background(), big, milp.Limits{Nodes: 1})
	if err != nil || second.Status != first.Status || fmt.Sprint(second.Values) != fmt.Sprint(first.Values) {
		t.Errorf("node-limited solve not repeatable: %+v vs %+v (%v)", second, first, err)
	}
	assertNoTempFiles(t, s)
}

// TestFindNamesThePackage: without cbc on PATH, Find's error wraps
// ErrNotFound and names the Debian package.
func TestFindNamesThePackage(t *testing.T) {
	_, err := FindWith(func(string) (string, error) { return "", errors.New(`exec: "cbc": executable file not found in $PATH`) })
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "coinor-cbc") {
		t.Errorf("FindWith(absent) = %v, want ErrNotFound naming coinor-cbc", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := Find(); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find with an empty PATH = %v", err)
	}
	var zero *Solver
	if _, err := zero.Solve(context.Background(), &milp.Model{}, milp.Limits{}); err == nil {
		t.Error("nil solver: no error")
	}
}

// TestCancelKills: cancelling the context stops a solve that never ends,
// promptly, and removes its files.
func TestCancelKills(t *testing.T) {
	s := fake(t, "sleep.sh")
	m, _ := knapsack(3)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Solve(ctx, m, milp.Limits{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to stop", d)
	}
	assertNoTempFiles(t, s)
}

// TestBadAnswers: a crash, a nonsense solution file and a flood of log are
// errors or bounded, never a panic or an unbounded read.
func TestBadAnswers(t *testing.T) {
	m := &milp.Model{}
	x := m.AddVar("x", milp.Integer, 0, 5)
	m.Maximize([]milp.Term{{Var: x, Coef: 1}})
	for _, c := range []struct{ script, want string }{
		{"fail.sh", "Segmentation fault"},
		{"garbage.sh", `unknown status "Confused"`},
	} {
		s := fake(t, c.script)
		if _, err := s.Solve(context.Background(), m, milp.Limits{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", c.script, err, c.want)
		}
		assertNoTempFiles(t, s)
	}
	s := fake(t, "chatty.sh")
	sol, err := s.Solve(context.Background(), m, milp.Limits{})
	if err != nil || sol.Status != milp.Optimal || sol.Values[0] != 3 || sol.Nodes != 7 || sol.Iterations != 42 {
		t.Errorf("chatty: %+v, %v", sol, err)
	}
	if _, err := s.Solve(context.Background(), m, milp.Limits{Nodes: -1}); err == nil {
		t.Error("negative node limit accepted")
	}
}

// TestBoundedLog keeps the head and the tail only.
func TestBoundedLog(t *testing.T) {
	var b boundedLog
	for range 1000 {
		_, _ = b.Write([]byte(strings.Repeat("y", 1000) + "\n"))
	}
	_, _ = b.Write([]byte("Total iterations: 12\n"))
	if n := len(b.text()); n > logHeadBytes+logTailBytes {
		t.Errorf("kept %d bytes", n)
	}
	if b.counter("Total iterations:") != 12 {
		t.Error("lost the tail")
	}
}

// TestStart: a feasible MIP start is passed to cbc and the solve still
// reaches the optimum; a start of the wrong length is refused before cbc
// runs.
func TestStart(t *testing.T) {
	s := solver(t)
	m, want := knapsack(12)
	m.SetStart(make([]float64, m.NumVars())) // nothing packed: feasible
	sol, err := s.Solve(context.Background(), m, milp.Limits{TimeSeconds: 60})
	if err != nil || sol.Status != milp.Optimal || sol.Objective != want {
		t.Errorf("with a start: %+v, %v; want optimal %v", sol, err, want)
	}
	m.SetStart([]float64{1})
	if _, err := s.Solve(context.Background(), m, milp.Limits{}); err == nil || !strings.Contains(err.Error(), "start holds 1 values for 12 variables") {
		t.Errorf("short start: %v", err)
	}
	assertNoTempFiles(t, s)
}
