package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary run as the dcpsim CLI (DCPSIM_TEST_AS_CLI=1),
// so hostile inputs run in a child process: a panic, an out-of-memory kill or
// a hang then fails one case instead of the test binary.
func TestMain(m *testing.M) {
	if os.Getenv("DCPSIM_TEST_AS_CLI") == "1" {
		code := run(os.Args[1:], os.Stdout, os.Stderr)
		if f := os.Getenv("DCPSIM_TEST_HWM_FILE"); f != "" {
			// The peak resident set of this process (VmHWM): rusage's
			// maxrss of a child can include its forked parent's pages.
			if b, err := os.ReadFile("/proc/self/status"); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
						os.WriteFile(f, []byte(strings.TrimSpace(v)), 0o644)
					}
				}
			}
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// child is one run of the CLI in a child process.
type child struct {
	code           int
	stdout, stderr string
	maxRSSMiB      float64
	elapsed        time.Duration
}

// runChild runs the CLI with args in dir under a soft memory limit
// (GOMEMLIMIT) and a watchdog, feeding stdin (may be nil).
func runChild(t *testing.T, dir string, watchdog time.Duration, stdin func(io.Writer), args ...string) child {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir = dir
	hwm := filepath.Join(t.TempDir(), "hwm")
	cmd.Env = append([]string{"GOMEMLIMIT=256MiB"}, os.Environ()...) // a case's own GOMEMLIMIT comes later and wins
	cmd.Env = append(cmd.Env, "DCPSIM_TEST_AS_CLI=1", "DCPSIM_TEST_HWM_FILE="+hwm, "GOMAXPROCS=2")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer w.Close()
			stdin(w) // the child may stop reading early: write errors are expected
		}()
	}
	start := time.Now()
	err := cmd.Run()
	c := child{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%v: still running after %v (killed): %v", args, watchdog, err)
	}
	if b, err := os.ReadFile(hwm); err == nil { // "123456 kB"
		var kib float64
		if _, err := fmt.Sscanf(string(b), "%f kB", &kib); err == nil {
			c.maxRSSMiB = kib / 1024
		}
	}
	return c
}

// treeState lists every path under root with its size, for a before/after
// comparison.
func treeState(t *testing.T, root string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(root, p)
			m[rel] = info.Size()
		}
		return nil
	})
	return m
}

// hostileCase is one hostile input: the command, what it must answer, and
// what it may write (paths relative to the case's working folder).
type hostileCase struct {
	name   string
	args   []string
	files  map[string]string // created in the working folder before the run
	stdin  func(io.Writer)
	code   int
	want   []string // substrings of stderr (exit != 0) or stdout (exit 0)
	writes []string // paths under the working folder the run may create
	maxMiB float64  // peak resident memory allowed (default 300 MiB)
	// slow marks a case that runs seconds of real work before it is
	// refused (a time bound itself): skipped under the race detector,
	// which makes it ten times slower than the watchdog allows.
	slow bool
	// env are variables set for the child (beside the harness's own;
	// "GOMEMLIMIT": "off" lifts the harness's soft memory limit);
	// watchdog replaces the default minute.
	env      map[string]string
	watchdog time.Duration
}

// tinyTOML is a 48-GPU scenario small enough to run in a fraction of a second.
var tinyTOML = strings.NewReplacer("VPP", "1", "POLICIES", `["hydra", "mcore"]`).Replace(tinyScenario)

// withTiny returns tinyTOML with old replaced by new (once; old must occur).
func withTiny(old, new string) string {
	if !strings.Contains(tinyTOML, old) {
		panic("withTiny: " + old)
	}
	return strings.Replace(tinyTOML, old, new, 1)
}

// digits streams a --batches line whose lengths list is n bytes of "1,".
func digits(n int) func(io.Writer) {
	return func(w io.Writer) {
		io.WriteString(w, `{"ranks": 2, "budget_tokens": 2000, "lengths": [`)
		chunk := bytes.Repeat([]byte("1,"), 1<<15)
		for sent := 0; sent < n; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		io.WriteString(w, "1]}\n")
	}
}

func lines(s string) func(io.Writer) { return func(w io.Writer) { io.WriteString(w, s) } }

// TestHostileInputs runs every hostile input of the "refused cleanly" issue,
// and neighbours that must still work, as a child process: each gets its exit
// status and a message naming the offending thing, never a Go panic's
// goroutine trace, writes nothing outside what it may write (a sentinel
// folder beside the working folder must not change), stays under a memory
// bound (GOMEMLIMIT plus the measured peak RSS) and a watchdog.
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("child processes")
	}
	batch := `{"ranks": 2, "budget_tokens": 2000, "lengths": [2000, 1000]`
	cases := []hostileCase{
		// 1. Files a scenario names: refused when loaded, by check and run alike.
		{name: "missing workload.file", args: []string{"run", "x.toml"}, files: map[string]string{"x.toml": withTiny(`preset = "long-256k"`, `file = "nosuch.csv"`)},
			code: 2, want: []string{"x.toml:", "workload.file = \"nosuch.csv\""}},
		{name: "missing workload.file, check", args: []string{"scenarios", "check", "x.toml"}, files: map[string]string{"x.toml": withTiny(`preset = "long-256k"`, `file = "nosuch.csv"`)},
			code: 2, want: []string{"workload.file"}},
		{name: "missing costs.profile", args: []string{"run", "x.toml"}, files: map[string]string{"x.toml": tinyTOML + "\n[costs]\nprofile = \"nope.toml\"\n"},
			code: 2, want: []string{"x.toml:", "costs.profile = \"nope.toml\""}},
		{name: "broken costs.profile", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": tinyTOML + "\n[costs]\nprofile = \"p.toml\"\n", "p.toml": "name = 3\n"},
			code:  2, want: []string{"costs.profile = \"p.toml\""}},
		{name: "length file that works", args: []string{"scenarios", "check", "x.toml"},
			files: map[string]string{"x.toml": withTiny(`preset = "long-256k"`, `file = "l.csv"`), "l.csv": "1000\n2000\n30000\n"},
			code:  0, want: []string{"ok   x.toml"}},

		// 3. --batches lines.
		{name: "vpp 1e9", args: []string{"run", "--batches", "-", "--policy", "hydra", "--costs", "load"},
			stdin: lines(batch + `, "vpp": 1000000000, "pp": 2}` + "\n"), code: 2, want: []string{"-:1:", "vpp = 1000000000", "[1, 128]"}},
		{name: "pp 1e9", args: []string{"plan", "--batches", "-", "--policy", "hydra"},
			stdin: lines(batch + `, "pp": 1000000000}` + "\n"), code: 2, want: []string{"-:1:", "pp = 1000000000", "[1, 1024]"}},
		{name: "negative pp", args: []string{"plan", "--batches", "-", "--policy", "mcore"},
			stdin: lines(batch + `, "pp": -3}` + "\n"), code: 2, want: []string{"-:1:", "pp = -3"}},
		{name: "trailing garbage", args: []string{"plan", "--batches", "-", "--policy", "static"},
			stdin: lines(batch + `} xyz` + "\n"), code: 2, want: []string{"-:1:"}},
		{name: "second object", args: []string{"plan", "--batches", "-", "--policy", "static"},
			stdin: lines(batch + `} {"ranks": 2}` + "\n"), code: 2, want: []string{"-:1:"}},
		{name: "duplicate key", args: []string{"plan", "--batches", "-", "--policy", "static"},
			stdin: lines(batch + `, "ranks": 4}` + "\n"), code: 2, want: []string{"-:1:", `"ranks" given twice`}},
		{name: "length near MaxInt64", args: []string{"plan", "--batches", "-", "--policy", "hydra"},
			stdin: lines(`{"ranks": 2, "budget_tokens": 2000, "lengths": [9223372036854775806]}` + "\n"), code: 2,
			want: []string{"-:1:", "9223372036854775806"}},
		{name: "200 MB line", args: []string{"run", "--batches", "-", "--policy", "hydra", "--costs", "load"},
			stdin: digits(200 << 20), code: 2, want: []string{"-:1:"}, maxMiB: 600},
		{name: "blank lines: one output line per batch line", args: []string{"run", "--batches", "-", "--policy", "hydra", "--costs", "load"},
			stdin: lines("\n" + batch + "}\n   \n" + batch + ", \"pp\": 2}\n"), code: 0, want: []string{`"microbatch_count":1}` + "\n" + `{"iteration_seconds"`}},

		// 4. Unbounded reads.
		{name: "scenarios check /dev/zero", args: []string{"scenarios", "check", "/dev/zero"}, code: 2, want: []string{"/dev/zero", "too large"}},
		{name: "calibrate --from /dev/zero", args: []string{"calibrate", "--from", "/dev/zero", "--base", "H800", "--out", "x.toml"},
			code: 2, want: []string{"/dev/zero", "too large"}},
		{name: "workload stats --file /dev/zero", args: []string{"workload", "stats", "--file", "/dev/zero"}, code: 2, want: []string{"/dev/zero"}},
		{name: "validate --table /dev/zero", args: []string{"validate", "--table", "/dev/zero"}, code: 2, want: []string{"/dev/zero", "too large"}},
		{name: "validate: a bad field", args: []string{"validate", "--table", "t.csv"},
			files: map[string]string{"t.csv": "name,gpu,gpus,hidden,ffn,heads,layers,vocab,seq_len,tp,pp,vpp,global_batch,micro_batch,recompute,sequence_parallel,measured_seconds\n" +
				"x,A100-80G,8,6144,24576,64,48,51200,2048,8,1,1,4,4,full,false,-1\n"},
			code: 2, want: []string{"t.csv:2:63: measured_seconds = \"-1\""}},

		// 5. Documented limits bound time and memory.
		{name: "batch_tokens 1e10", args: []string{"scenarios", "check", "x.toml"}, files: map[string]string{"x.toml": withTiny("batch_tokens = 131072", "batch_tokens = 10000000000")},
			code: 2, want: []string{"workload.batch_tokens = 10000000000", "[1, 2147483648]"}},
		{name: "too many microbatches", args: []string{"run", "x.toml"}, files: map[string]string{"x.toml": withTiny("batch_tokens = 131072", "batch_tokens = 2147483648")},
			code: 2, want: []string{"workload.batch_tokens = 2147483648", "microbatches per iteration", "must be <= 1024"}},
		{name: "iterations 100000", args: []string{"run", "x.toml"}, files: map[string]string{"x.toml": withTiny("iterations = 3", "iterations = 100000")},
			code: 2, want: []string{"run.iterations = 100000", "[1, 10000]"}},
		{name: "iterations 10000 is accepted", args: []string{"scenarios", "check", "x.toml"}, files: map[string]string{"x.toml": withTiny("iterations = 3", "iterations = 10000")},
			code: 0, want: []string{"ok"}},

		// 6. Option errors.
		{name: "unknown hydra option", args: []string{"run", "x.toml"}, files: map[string]string{"x.toml": tinyTOML + "\n[run.options.hydra]\nbogus = 3\n"},
			code: 2, want: []string{"run.options.hydra.bogus: unknown option for policy \"hydra\""}},
		{name: "bad hydra cap", args: []string{"scenarios", "check", "x.toml"}, files: map[string]string{"x.toml": tinyTOML + "\n[run.options.hydra]\ncap = 3\n"},
			code: 2, want: []string{"[run.options.hydra]: policy hydra: cap = 3"}},

		// 7. The results folder.
		{name: "--out /", args: []string{"run", "x.toml", "--out", "/"}, files: map[string]string{"x.toml": tinyTOML},
			code: 2, want: []string{"--out /: a filesystem root cannot be a results folder"}},
		{name: "--out a foreign folder", args: []string{"run", "x.toml", "--out", "mine"}, files: map[string]string{"x.toml": tinyTOML, "mine/notes.txt": "keep"},
			code: 2, want: []string{"mine is not empty and holds no dcpsim manifest.json"}},
		{name: "a run that works", args: []string{"run", "x.toml", "--out", "out", "--no-files"}, files: map[string]string{"x.toml": tinyTOML},
			code: 0, want: []string{"hydra", "mcore"}},
		{name: "a run that writes", args: []string{"run", "x.toml", "--out", "out"}, files: map[string]string{"x.toml": tinyTOML},
			code: 0, want: []string{"wrote out/"}, writes: []string{"out"}},
		{name: "scenario named ..", args: []string{"run", "x.toml"}, files: map[string]string{"x.toml": withTiny(`name = "tiny"`, `name = ".."`)},
			code: 2, want: []string{`name = ".."`}},

		// 8. Silent nonsense.
		{name: "--overhead-ratio NaN", args: []string{"plan", "--policy", "hydra", "--scenario", "testbed-32k", "--overhead-ratio", "NaN"},
			code: 2, want: []string{"--overhead-ratio"}},
		{name: "--overhead-ratio Inf", args: []string{"plan", "--policy", "hydra", "--scenario", "testbed-32k", "--overhead-ratio", "+Inf"},
			code: 2, want: []string{"--overhead-ratio"}},
		{name: "workload stats --seed -1", args: []string{"workload", "stats", "--seed", "-1"}, code: 2, want: []string{"--seed"}},
		{name: "workload stats --iterations 0", args: []string{"workload", "stats", "--iterations", "0"}, code: 2, want: []string{"--iterations"}},
		{name: "calibrate --workers 100000", args: []string{"calibrate", "--workers", "100000", "--out", "x.toml"}, code: 2, want: []string{"--workers"}},
		{name: "calibrate --out /", args: []string{"calibrate", "--from", "m.csv", "--base", "H800", "--out", "/"}, files: map[string]string{"m.csv": ""},
			code: 2, want: []string{"--out"}},
		{name: "report --results /nonexistent", args: []string{"report", "--results", "/nonexistent"}, code: 2, want: []string{"/nonexistent"}},
	}
	// Round three (issue 24), by group, each in a file of its own.
	cases = append(cases, hostileOutputCases()...)  // hostile_outputs_test.go
	cases = append(cases, hostileBoundCases()...)   // hostile_bounds_test.go
	cases = append(cases, hostileMessageCases()...) // hostile_messages_test.go
	// Round four (issue 41), in its own file.
	cases = append(cases, hostileRound4Cases(t)...) // hostile_round4_test.go
	rootBefore := treeStateTop(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.slow && raceEnabled {
				t.Skip("seconds of planning before the refusal; too slow under -race")
			}
			base := t.TempDir()
			work, sentinel := filepath.Join(base, "work"), filepath.Join(base, "sentinel")
			for _, d := range []string{work, sentinel} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(sentinel, "keep.txt"), []byte("sentinel"), 0o644)
			for name, body := range c.files {
				p := filepath.Join(work, name)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := treeState(t, base)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			watchdog := c.watchdog
			if watchdog == 0 {
				watchdog = 60 * time.Second
			}
			got := runChild(t, work, watchdog, c.stdin, c.args...)
			msg := got.stderr
			if c.code == 0 {
				msg = got.stdout
			}
			if got.code != c.code {
				t.Errorf("exit %d, want %d\nstderr: %s", got.code, c.code, got.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("output lacks %q:\n%s", w, msg)
				}
			}
			if strings.Contains(got.stderr, "goroutine ") || strings.Contains(got.stderr, "panic:") {
				t.Errorf("a Go panic:\n%s", got.stderr)
			}
			if strings.Contains(got.stdout+got.stderr, "\x1b") { // issue 41 class 5: no terminal escape gets out raw
				t.Errorf("a raw escape (ESC) in the output")
			}
			limit := c.maxMiB
			if limit == 0 {
				limit = 300
			}
			if got.maxRSSMiB > limit && !raceEnabled {
				t.Errorf("peak RSS %.0f MiB, want <= %.0f MiB", got.maxRSSMiB, limit)
			}
			after := treeState(t, base)
			for p, size := range after {
				allowed := slices.ContainsFunc(c.writes, func(w string) bool {
					rel := filepath.Join("work", w)
					return p == rel || strings.HasPrefix(p, rel+string(filepath.Separator))
				})
				if old, ok := before[p]; (!ok || old != size) && !allowed {
					t.Errorf("wrote %s", p)
				}
			}
			for p := range before {
				if _, ok := after[p]; !ok {
					t.Errorf("removed %s", p)
				}
			}
			t.Logf("exit %d in %v, peak RSS %.0f MiB", got.code, got.elapsed.Round(time.Millisecond), got.maxRSSMiB)
		})
	}
	if after := treeStateTop(t); !slices.Equal(rootBefore, after) {
		t.Errorf("/ changed: %v → %v", rootBefore, after)
	}
}

// treeStateTop lists the names in /, to see that no case wrote there.
func treeStateTop(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/")
	if err != nil {
		t.Skipf("cannot list /: %v", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, fmt.Sprint(e.Name()))
	}
	return names
}
