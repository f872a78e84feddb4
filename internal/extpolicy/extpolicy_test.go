package extpolicy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/sched"
)

// TestMain makes the test binary a fake external policy when
// DCPSIM_FAKE_POLICY names a behaviour.
func TestMain(m *testing.M) {
	if mode := os.Getenv("DCPSIM_FAKE_POLICY"); mode != "" {
		fake(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fake plays a policy: "good" answers every batch with one microbatch per
// sequence on the whole pool, the others misbehave as their names say
// ("linger" keeps running after its stdin closes, "failexit" exits 4 then).
func fake(mode string) {
	if mode == "background" || mode == "detached" {
		// A child left running: its pid goes to DCPSIM_FAKE_PIDFILE.
		// "background" holds the pipes, as a shell's &-child does;
		// "detached" does not, as nohup's with its output redirected.
		child := exec.Command("sleep", "3600")
		if mode == "background" {
			child.Stdout, child.Stderr = os.Stdout, os.Stderr
		}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "no sleep:", err)
			os.Exit(9)
		}
		os.WriteFile(os.Getenv("DCPSIM_FAKE_PIDFILE"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	for in.Scan() {
		var req Request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(9)
		}
		fmt.Fprintf(os.Stderr, "batch %d\n", req.Batch)
		var groups [][]sched.Group
		for i := range req.Lengths {
			groups = append(groups, []sched.Group{{FirstRank: 0, Size: req.Ranks, Seqs: []int{i}}})
		}
		resp := map[string]any{"groups": groups}
		switch mode {
		case "good", "background", "detached":
		case "seconds":
			resp["planner_seconds"] = 0.25
		case "work":
			resp["stall_work"] = map[string]any{"sequence_visits": len(req.Lengths)}
		case "garbage":
			fmt.Println("hello, dcpsim")
			continue
		case "hang":
			time.Sleep(time.Hour)
		case "exit":
			fmt.Fprintln(os.Stderr, "giving up")
			os.Exit(3)
		case "twice":
			groups[0][0].Seqs = []int{0, 0}
		case "refuse":
			resp = map[string]any{"error": "too long for me"}
		case "unknown":
			resp["colour"] = "blue"
		case "huge":
			fmt.Println(`{"groups": [], "diagnostics": {"pad": "` + strings.Repeat("x", 4096) + `"}}`)
			continue
		case "nonewline":
			b, _ := json.Marshal(resp)
			os.Stdout.Write(b)
			os.Exit(0)
		case "overbudget":
			groups[0][0].Size = 1
		case "flood":
			os.Stderr.Write([]byte(strings.Repeat("y", 3*MaxLogBytes/2)))
		case "mismatch":
			resp["microbatches"] = [][][]int{{{1}}}
		case "escape":
			resp = map[string]any{"error": "no\x1b[2J\x1b]0;pwned\x07 thanks"}
		case "bigdiag":
			resp["diagnostics"] = map[string]any{"pad": strings.Repeat("x", MaxDiagnosticsBytes)}
		case "longline": // valid JSON, but longer than a batch of 2 allows
			b, _ := json.Marshal(resp)
			fmt.Println(string(b[:len(b)-1]) + strings.Repeat(" ", ResponseBaseBytes+1000) + "}")
			continue
		case "neglength":
			resp["lengths"] = []int{-1_000_000, 5}
		case "hugestall":
			resp["stall_work"] = map[string]any{"pool_visits": int64(9e18)}
		case "hugerank":
			groups[0][0].FirstRank = math.MaxInt64 - 3
		}
		b, _ := json.Marshal(resp)
		fmt.Println(string(b))
	}
	if mode == "linger" {
		time.Sleep(time.Hour)
	}
	if mode == "failexit" {
		os.Exit(4)
	}
}

// start runs the test binary as the fake policy mode.
func start(t *testing.T, mode string, timeout time.Duration) *Policy {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DCPSIM_FAKE_POLICY", mode)
	p, err := Start(context.Background(), Spec{Name: "fake", Command: []string{self, "-test.run=^$"}, Timeout: timeout,
		ExitGrace: 5 * time.Second, Options: map[string]any{"fill": 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

var testInputs = sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1}

// TestGoodPolicy: a well-behaved process's plans come back whole, valid,
// with its stall measured, reported in seconds or as work, as it says.
func TestGoodPolicy(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		measured bool
		check    func(sched.StallWork) bool
	}{
		{"good", true, func(w sched.StallWork) bool { return w.ReportedSeconds > 0 }},
		{"seconds", false, func(w sched.StallWork) bool { return w.ReportedSeconds == 0.25 }},
		{"work", false, func(w sched.StallWork) bool { return w.SequenceVisits == 3 && w.ReportedSeconds == 0 }},
	} {
		p := start(t, tc.mode, 10*time.Second)
		lengths := []int{4000, 100, 900}
		for k := range 2 {
			plan, err := p.Plan(lengths, testInputs)
			if err != nil {
				t.Fatalf("%s batch %d: %v", tc.mode, k, err)
			}
			if err := sched.Validate(plan, lengths, testInputs, p.Promises()); err != nil {
				t.Fatalf("%s: invalid plan: %v", tc.mode, err)
			}
			if len(plan.Microbatches) != 3 || plan.Policy != "fake" || !tc.check(plan.StallWork) {
				t.Errorf("%s: %d MBs, policy %q, stall %+v", tc.mode, len(plan.Microbatches), plan.Policy, plan.StallWork)
			}
		}
		if p.MeasuredStall() != tc.measured {
			t.Errorf("%s: MeasuredStall %v, want %v", tc.mode, p.MeasuredStall(), tc.measured)
		}
		if err := p.Close(); err != nil {
			t.Errorf("%s: Close: %v", tc.mode, err)
		}
		if log := string(p.Log()); !strings.Contains(log, "batch 0\nbatch 1\n") {
			t.Errorf("%s: log %q", tc.mode, log)
		}
	}
}

// TestBadPolicies: every way a process can misbehave is an error naming the
// policy, the batch and what went wrong, and later batches fail at once.
func TestBadPolicies(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
	}{
		{"garbage", "not a plan object"},
		{"hang", "no plan line within the 300ms timeout"},
		{"exit", "closed its stdout before answering: it exited with exit status 3; its stderr ends \"batch 0\\ngiving up\""},
		{"refuse", "it refused the batch: too long for me"},
		{"unknown", `unknown field "colour"`},
		{"huge", "longer than 1024 bytes"},
		{"nonewline", "ends without a newline"},
		{"mismatch", "disagree with its \"groups\""},
		// Issue 41: a process's text and sizes are input.
		{"escape", `it refused the batch: no\x1b[2J\x1b]0;pwned\x07 thanks`},
		{"bigdiag", "diagnostics: 65546 bytes of JSON: at most 65536 (MaxDiagnosticsBytes)"},
		{"longline", "its plan line is longer than 262400 bytes (262144 + 128 per sequence of the batch"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			old := maxResponseBytes
			if tc.mode == "huge" {
				maxResponseBytes = 1024
			}
			defer func() { maxResponseBytes = old }()
			timeout := 10 * time.Second
			if tc.mode == "hang" {
				timeout = 300 * time.Millisecond
			}
			p := start(t, tc.mode, timeout)
			start := time.Now()
			_, err := p.Plan([]int{100, 200}, testInputs)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "external policy fake, batch 0 (line 1") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if time.Since(start) > timeout+5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if _, err2 := p.Plan([]int{100}, testInputs); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("second batch: %v, want the first error again", err2)
			}
		})
	}
}

// TestInvalidPlansCaughtByValidate: plans that parse but break the rules are
// left to sched.Validate with the promises (budget always).
func TestInvalidPlansCaughtByValidate(t *testing.T) {
	for _, tc := range []struct{ mode, want string }{
		{"twice", "already placed"},
		{"overbudget", "exceed the budget B = 1024"},
		{"neglength", "lengths[0] = -1000000 tokens: must be in [1, 33554432]"},
		{"hugestall", "stall_work.pool_visits = 9000000000000000000: must be in [0, 10000000000]"},
		{"hugerank", "group 0 (first_rank 9223372036854775804, size 8): outside the pool [0, 8)"},
	} {
		p := start(t, tc.mode, 10*time.Second)
		lengths := []int{2000, 100}
		plan, err := p.Plan(lengths, testInputs)
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		if err := sched.Validate(plan, lengths, testInputs, p.Promises()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", tc.mode, err, tc.want)
		}
	}
}

// TestLogBound: stderr beyond MaxLogBytes is counted, not kept.
func TestLogBound(t *testing.T) {
	p := start(t, "flood", 10*time.Second)
	if _, err := p.Plan([]int{10}, testInputs); err != nil {
		t.Fatal(err)
	}
	_ = p.Close()
	log := p.Log()
	if len(log) > MaxLogBytes+200 || !strings.Contains(string(log), "more bytes of stderr not kept") {
		t.Errorf("log of %d bytes, tail %q", len(log), log[len(log)-80:])
	}
}

// TestCloseKillsAndReports: a process that outlives its stdin is killed
// after the grace; one that exits non-zero after its batches is reported.
func TestCloseKillsAndReports(t *testing.T) {
	p := start(t, "linger", 10*time.Second)
	p.spec.ExitGrace = 500 * time.Millisecond
	if _, err := p.Plan([]int{10}, testInputs); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := p.Close(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v, want killed", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	q := start(t, "failexit", 10*time.Second)
	if _, err := q.Plan([]int{10}, testInputs); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Errorf("Close = %v, want exit status 4", err)
	}
}

// TestCancelKills: cancelling the run's context kills a hanging process.
func TestCancelKills(t *testing.T) {
	self, _ := os.Executable()
	t.Setenv("DCPSIM_FAKE_POLICY", "hang")
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Start(ctx, Spec{Name: "fake", Command: []string{self, "-test.run=^$"}, Timeout: time.Minute, ExitGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	begin := time.Now()
	_, err = p.Plan([]int{10}, testInputs)
	if err == nil || time.Since(begin) > 10*time.Second {
		t.Errorf("after cancel: %v in %v", err, time.Since(begin))
	}
}

// TestStartErrors: a missing program and an empty command are errors naming
// them.
func TestStartErrors(t *testing.T) {
	if _, err := Start(context.Background(), Spec{Name: "x", Command: []string{"/no/such/program"}}); err == nil || !strings.Contains(err.Error(), "/no/such/program") {
		t.Errorf("missing program: %v", err)
	}
	if _, err := Start(context.Background(), Spec{Name: "x"}); err == nil || !strings.Contains(err.Error(), "empty command") {
		t.Errorf("empty command: %v", err)
	}
}
