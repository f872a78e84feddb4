// Package cbc solves milp models with COIN-OR CBC, run as a subprocess: the
// `cbc` program of the Debian package coinor-cbc (apt-get install
// coinor-cbc). It is the edge of the MILP layer: it writes the model to a
// temporary LP file, runs cbc on it single-threaded with the limits, reads
// back its solution file and its log (status, nodes, simplex iterations) and
// removes the files. Cancelling the context kills the process.
//
// Single-threaded CBC (its BLAS too) is deterministic: the same model and
// limits give the same solution, unless the wall-clock limit (the safety
// net) stops a solve, which the solution's status then says
// (milp.TimeLimited).
package cbc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dcpsim/dcpsim/milp"
)

// Program is the CBC executable's name and Package the Debian package that
// installs it.
const (
	Program = "cbc"
	Package = "coinor-cbc"
)

// DefaultArgs are the cbc arguments Find's solver passes before the limits:
// cut generation off. On FlexSP's microbatch models (a few hundred
// variables, a MIP start from a heuristic) cuts took most of the time and
// bought little: the 91 MILPs of one hy3-8k plan, 20 nodes each, took 37 s
// with CBC's defaults and 4.2 s with cuts off, for sums of objectives within
// 3% of each other. (Preprocessing off would save a further 20%, but CBC
// 2.10.8 then crashes on some infeasible models, e.g. 2x = 5 with x
// integer: TestStatuses.)
var DefaultArgs = []string{"-cuts", "off"}

// singleThreadedBLAS are the environment variables a solve adds for cbc's
// BLAS and LAPACK (Debian links OpenBLAS): one thread. Otherwise OpenBLAS
// starts a thread per core in every cbc process, and they spin waiting for
// work that FlexSP's small models never give them: a solve of the 4K search
// preset took 160 ms of CPU, 90 ms with one thread (the same answers: the
// search's outputs are byte-identical), and a cbc process's results no
// longer depend on the machine's core count through its BLAS.
var singleThreadedBLAS = []string{"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"}

// ErrNotFound is wrapped by Find's error when cbc is not on PATH.
var ErrNotFound = errors.New("the cbc program (Debian package " + Package + ") is not installed: apt-get install " + Package)

// Bounds on what is read back from a run, so a broken or hostile binary cannot
// make the caller allocate without bound.
const (
	// logHeadBytes and logTailBytes are the start and the end of cbc's output
	// kept (the version is at the start, the summary at the end).
	logHeadBytes = 4 << 10
	logTailBytes = 64 << 10
	// solutionBytesPerVar bounds the solution file: one line per variable
	// (index, name of at most milp.MaxNameLength characters, value, reduced
	// cost) plus a status line.
	solutionBytesPerVar = milp.MaxNameLength + 100
)

// Solver runs CBC. Its zero value is not usable: build one with Find or
// FindWith.
type Solver struct {
	// Path is the cbc executable.
	Path string
	// TempDir is where each solve makes its temporary folder ("" means
	// os.TempDir()).
	TempDir string
	// Args are extra cbc arguments placed before the limits, e.g.
	// {"-cuts", "off"}.
	Args []string
}

var _ milp.Solver = (*Solver)(nil)

// Find looks cbc up on PATH. Its error wraps ErrNotFound and names the
// Debian package.
func Find() (*Solver, error) { return FindWith(exec.LookPath) }

// FindWith is Find with an injected lookup (tests simulate a machine without
// cbc with it).
func FindWith(lookPath func(file string) (string, error)) (*Solver, error) {
	path, err := lookPath(Program)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNotFound, err)
	}
	return &Solver{Path: path, Args: DefaultArgs}, nil
}

// Solve writes m to a temporary LP file, runs cbc on it with one thread and
// the limits (maxNodes, ratioGap, and seconds in elapsed-time mode), and reads
// the solution. An error means cbc could not run or answered something this
// package cannot read; statuses such as infeasible are answers, not errors.
// Values of integer variables are rounded to the nearest integer, and the
// objective is recomputed from the values.
func (s *Solver) Solve(ctx context.Context, m *milp.Model, l milp.Limits) (*milp.Solution, error) {
	if s == nil || s.Path == "" {
		return nil, errors.New("cbc: no executable (build the solver with Find)")
	}
	if err := l.Check(); err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(s.TempDir, "dcpsim-cbc-")
	if err != nil {
		return nil, tempDirErr(s.TempDir, err)
	}
	defer removeTemp(dir)
	lpPath, solPath := filepath.Join(dir, "model.lp"), filepath.Join(dir, "solution.txt")
	if err := writeFile(lpPath, m.WriteLP); err != nil {
		return nil, fmt.Errorf("cbc: writing the model: %w", err)
	}
	args := []string{lpPath, "-threads", "1", "-timeMode", "elapsed"}
	if start := m.Start(); start != nil {
		startPath := filepath.Join(dir, "start.txt")
		if err := writeFile(startPath, func(w io.Writer) error { return writeStart(w, m, start) }); err != nil {
			return nil, fmt.Errorf("cbc: writing the start: %w", err)
		}
		args = append(args, "-mips", startPath)
	}
	if l.TimeSeconds > 0 {
		args = append(args, "-sec", strconv.FormatFloat(l.TimeSeconds, 'g', -1, 64))
	}
	if l.Nodes > 0 {
		args = append(args, "-maxN", strconv.FormatInt(min(l.Nodes, math.MaxInt32), 10))
	}
	args = append(args, s.Args...)
	args = append(args, "-ratio", strconv.FormatFloat(l.RelativeGap, 'g', -1, 64), "-solve", "-solu", solPath)
	cmd := exec.CommandContext(ctx, s.Path, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), singleThreadedBLAS...)
	// cbc runs in a process group of its own, and a cancelled context (a
	// signal's, a deadline's) kills the whole group: nothing it started can
	// outlive the solve and write into the folder after it is removed.
	ownGroup(cmd)
	out := &boundedLog{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cbc: %w", err)
	}
	if runErr != nil {
		return nil, fmt.Errorf("cbc: %s: %w; output ends: %s", s.Path, runErr, out.tail(400))
	}
	sol, err := readSolution(solPath, m)
	if err != nil {
		return nil, fmt.Errorf("cbc: %w; output ends: %s", err, out.tail(400))
	}
	sol.Nodes, sol.Iterations = out.counter("Enumerated nodes:"), out.counter("Total iterations:")
	sol.Solver = "CBC " + out.version()
	return sol, nil
}

// tempDirErr explains a temporary folder that could not be made: where the
// folder was to be made (TMPDIR, or Solver.TempDir) and what to do.
func tempDirErr(tempDir string, err error) error {
	if tempDir == "" {
		where := os.Getenv("TMPDIR")
		if where == "" {
			return fmt.Errorf("cbc: cannot make a temporary folder for the model in %s (the default, TMPDIR being unset): %w; make it writable or set TMPDIR to a writable folder", os.TempDir(), err)
		}
		return fmt.Errorf("cbc: cannot make a temporary folder for the model in TMPDIR = %s: %w; set TMPDIR to an existing, writable folder (or unset it for %s)", where, err, "/tmp")
	}
	return fmt.Errorf("cbc: cannot make a temporary folder for the model in %s (Solver.TempDir): %w", tempDir, err)
}

// removeTemp removes a solve's folder, once more if a first try left it
// (a file made while it was being removed).
func removeTemp(dir string) {
	if os.RemoveAll(dir) != nil {
		os.RemoveAll(dir)
	}
}

// writeFile writes path with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeStart writes a MIP start in cbc's solution-file layout: a status
// line, then "index name value" per variable (integers rounded).
func writeStart(w io.Writer, m *milp.Model, start []float64) error {
	if _, err := fmt.Fprintln(w, "Feasible - objective value 0"); err != nil {
		return err
	}
	for i, v := range m.Variables() {
		x := start[i]
		if v.Kind != milp.Continuous {
			x = math.Round(x)
		}
		if _, err := fmt.Fprintf(w, "%d %s %s\n", i, v.Name, strconv.FormatFloat(x, 'g', -1, 64)); err != nil {
			return err
		}
	}
	return nil
}

// readSolution reads cbc's solution file: a status line "<status> - objective
// value <x>", then one line per variable with a nonzero value: index, name,
// value, reduced cost. Variables not listed are 0.
func readSolution(path string, m *milp.Model) (*milp.Solution, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("no solution file: %w", err)
	}
	defer f.Close()
	limit := int64(solutionBytesPerVar)*int64(m.NumVars()+1) + 4096
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the solution file: %w", err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("the solution file holds more than %d bytes for %d variables", limit, m.NumVars())
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	head, _, ok := strings.Cut(lines[0], " - objective value")
	if !ok {
		return nil, fmt.Errorf("solution file: status line %q: want \"<status> - objective value <x>\"", clip(lines[0]))
	}
	status, err := parseStatus(head)
	if err != nil {
		return nil, err
	}
	sol := &milp.Solution{Status: status}
	if !status.HasSolution() {
		return sol, nil
	}
	index := make(map[string]int, m.NumVars())
	vars := m.Variables()
	for i, v := range vars {
		index[v.Name] = i
	}
	sol.Values = make([]float64, len(vars))
	for n, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("solution file line %d: %q: want index, name, value", n+2, clip(line))
		}
		i, ok := index[f[1]]
		if !ok {
			return nil, fmt.Errorf("solution file line %d: unknown variable %q", n+2, clip(f[1]))
		}
		x, err := strconv.ParseFloat(f[2], 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("solution file line %d: value %q of %s: want a finite number", n+2, clip(f[2]), f[1])
		}
		if vars[i].Kind != milp.Continuous {
			x = math.Round(x)
		}
		sol.Values[i] = x
	}
	obj, _ := m.Objective()
	sol.Objective = milp.Value(obj, sol.Values)
	return sol, nil
}

// parseStatus maps the status part of cbc's solution-file head line.
func parseStatus(head string) (milp.Status, error) {
	switch {
	case strings.Contains(head, "no integer solution"):
		return milp.NoSolution, nil
	case head == "Optimal":
		return milp.Optimal, nil
	case strings.HasPrefix(head, "Optimal (within gap tolerance)"), strings.HasPrefix(head, "Stopped on gap"):
		return milp.GapLimited, nil
	case strings.HasPrefix(head, "Stopped on time"):
		return milp.TimeLimited, nil
	case strings.HasPrefix(head, "Stopped on iterations"), strings.HasPrefix(head, "Stopped on nodes"):
		return milp.NodeLimited, nil
	case strings.Contains(head, "nfeasible"):
		return milp.Infeasible, nil
	case strings.Contains(head, "nbounded"):
		return milp.Unbounded, nil
	}
	return 0, fmt.Errorf("solution file: unknown status %q", clip(head))
}

// clip quotes at most 80 bytes of s.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// boundedLog keeps the first logHeadBytes and the last logTailBytes of what
// is written to it, so a chatty run cannot grow memory.
type boundedLog struct {
	head []byte
	tl   []byte // ring of the last bytes, compacted when it doubles
}

func (b *boundedLog) Write(p []byte) (int, error) {
	n := len(p)
	if room := logHeadBytes - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	b.tl = append(b.tl, p...)
	if len(b.tl) > 2*logTailBytes {
		b.tl = append(b.tl[:0], b.tl[len(b.tl)-logTailBytes:]...)
	}
	return n, nil
}

// text is the kept output: the head and the last logTailBytes.
func (b *boundedLog) text() []byte {
	t := b.tl
	if len(t) > logTailBytes {
		t = t[len(t)-logTailBytes:]
	}
	return append(append([]byte{}, b.head...), t...)
}

// tail returns the last n bytes of the output, on one line.
func (b *boundedLog) tail(n int) string {
	t := b.text()
	if len(t) > n {
		t = t[len(t)-n:]
	}
	return strings.Join(strings.Fields(string(t)), " ")
}

// counter returns the integer after the last line starting with key (0 when
// absent).
func (b *boundedLog) counter(key string) int64 {
	var v int64
	for _, line := range bytes.Split(b.text(), []byte("\n")) {
		if rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte(key)); ok {
			if x, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64); err == nil && x >= 0 {
				v = x
			}
		}
	}
	return v
}

// version returns cbc's version from its banner ("?" when absent).
func (b *boundedLog) version() string {
	for _, line := range bytes.Split(b.head, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("Version:")); ok {
			return string(bytes.TrimSpace(rest))
		}
	}
	return "?"
}
