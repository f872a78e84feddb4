// Package milp is a small mixed-integer linear programming layer: a model
// (continuous, integer and binary variables with bounds, linear constraints,
// a linear objective), its text in CPLEX LP format, the Solver interface a
// solver implements, and the solution and status types it returns.
//
// The package is pure and deterministic: it does no I/O besides writing a
// model to an io.Writer, reads no clock and starts nothing. Solvers live in
// sub-packages at the edge (milp/cbc runs COIN-OR CBC as a subprocess); a
// policy receives one when it is built (sched.Env.Solver), so the deterministic
// core (sched/...) never imports them.
//
// # Determinism
//
// A solver given the same model and limits must return the same solution
// unless a wall-clock limit stopped it: Limits.Nodes is the deterministic cap
// on a solve's work, Limits.TimeSeconds a safety net whose cuts a caller can
// see (Solution.Status is TimeLimited) and report, since only such solves can
// differ between runs.
package milp

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Kind is a variable's domain.
type Kind int

const (
	// Continuous variables take any value within their bounds.
	Continuous Kind = iota
	// Integer variables take integer values within their bounds.
	Integer
	// Binary variables take 0 or 1.
	Binary
)

var kindNames = [...]string{Continuous: "continuous", Integer: "integer", Binary: "binary"}

// String names the kind.
func (k Kind) String() string {
	if k >= Continuous && k <= Binary {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Var is a variable of a Model: its index in the order it was added.
type Var int

// Term is Coef·Var.
type Term struct {
	Var  Var
	Coef float64
}

// Sense is a constraint's relation.
type Sense int

const (
	// LE is Σ terms <= RHS.
	LE Sense = iota
	// GE is Σ terms >= RHS.
	GE
	// EQ is Σ terms = RHS.
	EQ
)

var senseText = [...]string{LE: "<=", GE: ">=", EQ: "="}

// String is the relation's LP-format text.
func (s Sense) String() string {
	if s >= LE && s <= EQ {
		return senseText[s]
	}
	return fmt.Sprintf("Sense(%d)", int(s))
}

// Variable describes one variable.
type Variable struct {
	// Name is the variable's name in the LP text (see ValidName).
	Name string
	// Kind is its domain.
	Kind Kind
	// Lower and Upper are its bounds; Upper may be +Inf. A binary variable's
	// bounds are [0, 1].
	Lower, Upper float64
}

// Constraint is Σ Terms Sense RHS.
type Constraint struct {
	// Name is the row's name in the LP text (see ValidName).
	Name  string
	Terms []Term
	Sense Sense
	RHS   float64
}

// Model is a MILP: minimise (or maximise) Σ Objective subject to the
// constraints and bounds. Build it with AddVar, AddConstraint and Minimize or
// Maximize; Check reports what a solver would refuse.
type Model struct {
	// Name is a comment at the head of the LP text.
	Name string
	vars []Variable
	cons []Constraint
	obj  []Term
	max  bool
	// start is a feasible point the solver may start from (nil: none).
	start []float64
}

// MaxNameLength bounds variable and constraint names (CBC's LP reader keeps
// names to 100 characters).
const MaxNameLength = 100

// AddVar adds a variable and returns it. Bounds of binary variables are set to
// [0, 1] whatever lower and upper say.
func (m *Model) AddVar(name string, kind Kind, lower, upper float64) Var {
	if kind == Binary {
		lower, upper = 0, 1
	}
	m.vars = append(m.vars, Variable{Name: name, Kind: kind, Lower: lower, Upper: upper})
	return Var(len(m.vars) - 1)
}

// AddConstraint adds Σ terms sense rhs. Terms naming the same variable twice
// are summed when written. An empty constraint is kept (and must hold for 0).
func (m *Model) AddConstraint(name string, terms []Term, sense Sense, rhs float64) {
	m.cons = append(m.cons, Constraint{Name: name, Terms: terms, Sense: sense, RHS: rhs})
}

// Minimize sets the objective to minimise Σ terms.
func (m *Model) Minimize(terms []Term) { m.obj, m.max = terms, false }

// Maximize sets the objective to maximise Σ terms.
func (m *Model) Maximize(terms []Term) { m.obj, m.max = terms, true }

// SetStart gives the solver a point to start from (a MIP start): one value
// per variable, in order, which should be feasible (a solver may ignore an
// infeasible start). nil removes it. It does not change the LP text.
func (m *Model) SetStart(values []float64) { m.start = values }

// Start returns the MIP start (nil when none).
func (m *Model) Start() []float64 { return m.start }

// Variables returns the variables, in order (shared: do not modify).
func (m *Model) Variables() []Variable { return m.vars }

// Constraints returns the constraints, in order (shared: do not modify).
func (m *Model) Constraints() []Constraint { return m.cons }

// Objective returns the objective's terms and whether it is maximised.
func (m *Model) Objective() (terms []Term, maximize bool) { return m.obj, m.max }

// NumVars is the number of variables.
func (m *Model) NumVars() int { return len(m.vars) }

// NumIntegers is the number of integer and binary variables.
func (m *Model) NumIntegers() int {
	n := 0
	for _, v := range m.vars {
		if v.Kind != Continuous {
			n++
		}
	}
	return n
}

// ValidName reports whether s may name a variable or constraint: 1 to
// MaxNameLength characters from [A-Za-z0-9_.], not starting with a digit or a
// period (the LP format's safe subset, which every reader accepts).
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case (c >= '0' && c <= '9' || c == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}

// checkName checks the name of the i-th variable or constraint (what) and
// records it in seen: it must be valid (ValidName) and not seen before.
func checkName(what string, i int, name string, seen map[string]bool) error {
	defer func() { seen[name] = true }()
	switch {
	case !ValidName(name):
		return fmt.Errorf("milp: %s %d: name %q: want 1-%d characters of [A-Za-z0-9_.], not starting with a digit or '.'", what, i, name, MaxNameLength)
	case seen[name]:
		return fmt.Errorf("milp: %s %d: name %q used twice", what, i, name)
	}
	return nil
}

// Check returns every problem a solver would refuse, joined: names invalid
// or repeated (variables and constraints each), a variable's kind unknown or
// its bounds not lower <= upper with lower finite, a term naming no variable,
// a coefficient or right-hand side not finite, a sense unknown.
func (m *Model) Check() error {
	var errs []error
	seen := map[string]bool{}
	for i, v := range m.vars {
		if err := checkName("variable", i, v.Name, seen); err != nil {
			errs = append(errs, err)
		}
		if v.Kind < Continuous || v.Kind > Binary {
			errs = append(errs, fmt.Errorf("milp: variable %s: unknown kind %d", v.Name, int(v.Kind)))
		}
		if math.IsNaN(v.Lower) || math.IsInf(v.Lower, 0) || math.IsNaN(v.Upper) || math.IsInf(v.Upper, -1) || v.Lower > v.Upper {
			errs = append(errs, fmt.Errorf("milp: variable %s: bounds [%v, %v]: want a finite lower bound <= the upper bound (which may be +Inf)", v.Name, v.Lower, v.Upper))
		}
	}
	checkTerms := func(where string, terms []Term) {
		for _, t := range terms {
			if t.Var < 0 || int(t.Var) >= len(m.vars) {
				errs = append(errs, fmt.Errorf("milp: %s: term names variable %d, outside [0, %d)", where, t.Var, len(m.vars)))
			} else if math.IsNaN(t.Coef) || math.IsInf(t.Coef, 0) {
				errs = append(errs, fmt.Errorf("milp: %s: coefficient %v of %s: want a finite number", where, t.Coef, m.vars[t.Var].Name))
			}
		}
	}
	if m.start != nil && len(m.start) != len(m.vars) {
		errs = append(errs, fmt.Errorf("milp: start holds %d values for %d variables", len(m.start), len(m.vars)))
	}
	for i, x := range m.start {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			errs = append(errs, fmt.Errorf("milp: start value %v of variable %d: want a finite number", x, i))
			break
		}
	}
	checkTerms("objective", m.obj)
	rows := map[string]bool{}
	for i, c := range m.cons {
		where := fmt.Sprintf("constraint %d (%s)", i, c.Name)
		if err := checkName("constraint", i, c.Name, rows); err != nil {
			errs = append(errs, err)
		}
		if c.Sense < LE || c.Sense > EQ {
			errs = append(errs, fmt.Errorf("milp: %s: unknown sense %d", where, int(c.Sense)))
		}
		if math.IsNaN(c.RHS) || math.IsInf(c.RHS, 0) {
			errs = append(errs, fmt.Errorf("milp: %s: right-hand side %v: want a finite number", where, c.RHS))
		}
		checkTerms(where, c.Terms)
	}
	return errors.Join(errs...)
}

// Violation returns the largest violation of the model's bounds, integrality
// and constraints by values (one per variable): 0 for a feasible point. A
// caller checks a solver's answer with it (an integer variable's violation is
// its distance to the nearest integer).
func (m *Model) Violation(values []float64) float64 {
	if len(values) != len(m.vars) {
		return math.Inf(1)
	}
	worst := 0.0
	for i, v := range m.vars {
		x := values[i]
		if math.IsNaN(x) {
			return math.Inf(1)
		}
		worst = max(worst, v.Lower-x, x-v.Upper)
		if v.Kind != Continuous {
			worst = max(worst, math.Abs(x-math.Round(x)))
		}
	}
	for _, c := range m.cons {
		lhs := Value(c.Terms, values)
		switch c.Sense {
		case LE:
			worst = max(worst, lhs-c.RHS)
		case GE:
			worst = max(worst, c.RHS-lhs)
		case EQ:
			worst = max(worst, math.Abs(lhs-c.RHS))
		}
	}
	return worst
}

// Value is Σ coef·values[var] over terms.
func Value(terms []Term, values []float64) float64 {
	var s float64
	for _, t := range terms {
		s += t.Coef * values[t.Var]
	}
	return s
}

// Status is what a solve found.
type Status int

const (
	// Optimal: a solution proven optimal (within the solver's tolerances).
	Optimal Status = iota + 1
	// GapLimited: a solution within Limits.RelativeGap of the best bound.
	GapLimited
	// NodeLimited: the node limit stopped the search; the best solution found.
	NodeLimited
	// TimeLimited: the wall-clock limit stopped the search; the best solution
	// found. Only such solves can differ between runs.
	TimeLimited
	// Infeasible: the model has no solution.
	Infeasible
	// Unbounded: the objective is unbounded.
	Unbounded
	// NoSolution: a limit stopped the search before any solution was found.
	NoSolution
)

var statusNames = [...]string{Optimal: "optimal", GapLimited: "gap-limited", NodeLimited: "node-limited",
	TimeLimited: "time-limited", Infeasible: "infeasible", Unbounded: "unbounded", NoSolution: "no-solution"}

// String names the status ("optimal", "gap-limited", ...).
func (s Status) String() string {
	if s >= Optimal && s <= NoSolution {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// HasSolution reports whether the status comes with a feasible solution.
func (s Status) HasSolution() bool { return s >= Optimal && s <= TimeLimited }

// MarshalText returns the status's name.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Limits bound one solve. Zero values mean no limit (a gap of 0: prove
// optimality).
type Limits struct {
	// Nodes caps the branch-and-bound nodes: the deterministic limit.
	Nodes int64
	// TimeSeconds caps the solve's wall-clock time: a safety net. A solve it
	// stops is TimeLimited and may differ between runs.
	TimeSeconds float64
	// RelativeGap stops the search once (incumbent − bound)/|incumbent| is at
	// most this.
	RelativeGap float64
}

// Check returns an error naming a limit out of range.
func (l Limits) Check() error {
	switch {
	case l.Nodes < 0:
		return fmt.Errorf("milp: node limit %d: must be >= 0 (0 = none)", l.Nodes)
	case !(l.TimeSeconds >= 0) || math.IsInf(l.TimeSeconds, 0):
		return fmt.Errorf("milp: time limit %v s: must be a finite number >= 0 (0 = none)", l.TimeSeconds)
	case !(l.RelativeGap >= 0 && l.RelativeGap <= 1):
		return fmt.Errorf("milp: relative gap %v: must be in [0, 1]", l.RelativeGap)
	}
	return nil
}

// Solution is a solver's answer.
type Solution struct {
	// Status says what was found; Values and Objective are meaningful only
	// when Status.HasSolution().
	Status Status
	// Objective is the objective's value at Values.
	Objective float64
	// Values holds one value per variable, in the model's order.
	Values []float64
	// Nodes and Iterations are the branch-and-bound nodes and simplex
	// iterations the solver reports: the solve's work.
	Nodes, Iterations int64
	// Solver names the solver and its version, e.g. "CBC 2.10.8".
	Solver string
}

// Solver solves a model within limits. Implementations must return an error
// (not a Solution) when they cannot run, and must stop when ctx is done.
type Solver interface {
	Solve(ctx context.Context, m *Model, l Limits) (*Solution, error)
}
