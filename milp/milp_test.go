package milp

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite milp/testdata/*.lp from the current writer")

// sample is a small model using every feature the writer has: kinds, bounds
// (default, lower only, both, fixed), repeated and zero terms, every sense, a
// long row that wraps and a negative right-hand side.
func sample() *Model {
	m := &Model{Name: "sample: every feature"}
	x := m.AddVar("x", Continuous, 0, math.Inf(1))
	y := m.AddVar("y", Integer, -3, 7)
	z := m.AddVar("z", Binary, 5, 9) // bounds ignored
	w := m.AddVar("w_1.2", Integer, 2, math.Inf(1))
	f := m.AddVar("fixed", Continuous, 1.5, 1.5)
	m.Minimize([]Term{{x, 1}, {y, -2.5}, {z, 1e-7}, {x, 0.5}})
	m.AddConstraint("le", []Term{{x, 1}, {y, 1}}, LE, 10)
	m.AddConstraint("ge", []Term{{x, 3}, {w, -1}, {z, 0}}, GE, -4.25)
	m.AddConstraint("eq", []Term{{y, 1}, {y, 1}, {f, 2}}, EQ, 7)
	m.AddConstraint("cancel", []Term{{x, 1}, {x, -1}}, LE, 0)
	long := []Term{{x, 1}}
	for i := range 9 {
		v := m.AddVar(fmt.Sprintf("v%d", i), Continuous, 0, 1)
		long = append(long, Term{v, float64(-i - 1)})
	}
	m.AddConstraint("long", long, LE, 1e12)
	return m
}

// TestWriteLPGolden: the LP text of sample() is testdata/sample.lp
// (regenerate with go test ./milp -run WriteLPGolden -update after an
// intended change).
func TestWriteLPGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := sample().WriteLP(&buf); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "sample.lp")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("LP text differs from %s:\n%s\nwant:\n%s", golden, buf.Bytes(), want)
	}
	var again bytes.Buffer
	_ = sample().WriteLP(&again)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two writes of the same model differ")
	}
}

// TestCheck: every kind of bad model is refused, naming what is wrong.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(m *Model)
		want  string
	}{
		{"bad var name", func(m *Model) { m.AddVar("1x", Continuous, 0, 1) }, `name "1x"`},
		{"dup var", func(m *Model) { m.AddVar("a", Continuous, 0, 1); m.AddVar("a", Integer, 0, 1) }, `"a" used twice`},
		{"bounds", func(m *Model) { m.AddVar("a", Continuous, 2, 1) }, "bounds [2, 1]"},
		{"inf lower", func(m *Model) { m.AddVar("a", Continuous, math.Inf(-1), 1) }, "finite lower bound"},
		{"nan coef", func(m *Model) {
			a := m.AddVar("a", Continuous, 0, 1)
			m.AddConstraint("c", []Term{{a, math.NaN()}}, LE, 1)
		}, "coefficient NaN of a"},
		{"unknown var", func(m *Model) { m.AddVar("a", Continuous, 0, 1); m.Minimize([]Term{{7, 1}}) }, "variable 7, outside [0, 1)"},
		{"rhs", func(m *Model) {
			a := m.AddVar("a", Continuous, 0, 1)
			m.AddConstraint("c", []Term{{a, 1}}, GE, math.Inf(1))
		}, "right-hand side +Inf"},
		{"row name", func(m *Model) {
			a := m.AddVar("a", Continuous, 0, 1)
			m.AddConstraint("c d", []Term{{a, 1}}, GE, 0)
		}, `name "c d"`},
		{"sense", func(m *Model) {
			a := m.AddVar("a", Continuous, 0, 1)
			m.AddConstraint("c", []Term{{a, 1}}, Sense(9), 0)
		}, "unknown sense 9"},
	} {
		m := &Model{}
		c.build(m)
		err := m.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check = %v, want it to mention %q", c.name, err, c.want)
		}
		if err := m.WriteLP(&bytes.Buffer{}); err == nil {
			t.Errorf("%s: WriteLP accepted a bad model", c.name)
		}
	}
	if err := sample().Check(); err != nil {
		t.Errorf("sample: %v", err)
	}
	if err := (&Model{}).WriteLP(&bytes.Buffer{}); err == nil {
		t.Error("WriteLP of an empty model: no error")
	}
}

// TestViolation: a feasible point scores 0; each kind of violation scores its
// size.
func TestViolation(t *testing.T) {
	m := &Model{}
	x := m.AddVar("x", Integer, 0, 10)
	y := m.AddVar("y", Continuous, 0, 1)
	m.AddConstraint("c", []Term{{x, 1}, {y, 2}}, LE, 4)
	m.AddConstraint("e", []Term{{x, 1}}, EQ, 2)
	for _, c := range []struct {
		v    []float64
		want float64
	}{
		{[]float64{2, 1}, 0},
		{[]float64{2, 1.5}, 1},     // y above its bound by 0.5, c by 1
		{[]float64{2.25, 0}, 0.25}, // fractional integer, e off by 0.25
		{[]float64{1}, math.Inf(1)},
	} {
		if got := m.Violation(c.v); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Violation(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestLimitsCheck names each bad limit.
func TestLimitsCheck(t *testing.T) {
	for _, c := range []struct {
		l    Limits
		want string
	}{
		{Limits{Nodes: -1}, "node limit -1"},
		{Limits{TimeSeconds: math.NaN()}, "time limit NaN"},
		{Limits{RelativeGap: 2}, "relative gap 2"},
	} {
		if err := c.l.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.l, err)
		}
	}
	if err := (Limits{Nodes: 5, TimeSeconds: 1, RelativeGap: 0.01}).Check(); err != nil {
		t.Error(err)
	}
}

// TestStatusNames: every status has a name, and only the four with a
// solution say so.
func TestStatusNames(t *testing.T) {
	for s := Optimal; s <= NoSolution; s++ {
		if strings.HasPrefix(s.String(), "Status(") {
			t.Errorf("status %d has no name", int(s))
		}
		if s.HasSolution() != (s <= TimeLimited) {
			t.Errorf("%s.HasSolution() = %v", s, s.HasSolution())
		}
	}
}
