// Package extpolicy runs a DCP policy written in any language as a child
// process that speaks JSON lines: dcpsim writes each batch as one line on its
// stdin and reads one plan line from its stdout. It lives at the edge (it
// starts processes, reads pipes and a clock), never in the deterministic core.
//
// # Protocol
//
// The process is started once per run, in the scenario's folder, with the
// command of [run.external.NAME]. For every batch dcpsim writes one line,
// a JSON object (Request):
//
//	{"batch": 0, "ranks": 128, "budget_tokens": 8192, "lengths": [...],
//	 "pp": 4, "vpp": 1, "context_tokens": 262144, "overhead_ratio": 1.3e7, "ep": 8,
//	 "max_degree": 128, "query_heads": 128,
//	 "token_costs": {"source": ..., "attention_seconds_per_token2": ..., "linear_seconds_per_token": ...,
//	                 "fixed_seconds": ..., "all_to_all": [{"degree": 2, "seconds_per_token": ...}, ...]},
//	 "options": {...}}
//
// the fields of dcpsim plan --batches' input contract (ranks, budget_tokens,
// lengths, pp, vpp, context_tokens, overhead_ratio, ep) plus the batch's
// index, the CP engine's widest group (max_degree), the query heads a CP × HP
// layout may split, the job's cost coefficients (sched.TokenCosts: a1, a2, b1
// and u_k) and the scenario's options table for the policy. It reads back one
// line, a JSON object (Response):
//
//	{"groups": [[{"first_rank": 0, "size": 4, "seqs": [3, 7]}, ...] per microbatch],
//	 "microbatches": [[[ids] per rank] per microbatch],   (optional; checked against groups)
//	 "lengths": [...],                                     (optional: the sequences trained, for a policy that defers)
//	 "diagnostics": {...},                                 (optional, any object)
//	 "work_units": 1234,                                   (optional)
//	 "stall_work": {"pool_visits": ..., "heap_ops": ..., "sequence_visits": ...},  (optional)
//	 "planner_seconds": 0.012}                             (optional)
//
// the groups of dcpsim plan --batches' output contract, or {"error": "why"}
// to refuse the batch. Unknown fields are an error. The plan is then
// validated like every policy's (sched.Validate): every sequence placed once,
// groups inside the pool and ordered, no rank in two groups of a microbatch,
// and every rank within its budget (the promise an external policy makes;
// Spec.Promises may add alignment and pool cover). The planning stall the
// simulator puts on the critical path is, in order: the stall_work the
// process reports (priced as dcpsim prices its own Python planners), its
// planner_seconds, or else the measured round trip of the batch (wall time:
// then the run is not byte-for-byte reproducible, and the summary says so).
//
// # Bounds
//
// A response line is read with a bound while it is read: ResponseBaseBytes
// plus ResponseBytesPerSequence per sequence of the batch, at most
// MaxResponseBytes (a plan of n sequences holds at most n groups, so a valid
// plan is far shorter; the decoded plan takes about five times the line's
// bytes). Its diagnostics object may hold MaxDiagnosticsBytes. Every number
// is checked for range by sched.Validate before it is used;
// each batch has Spec.Timeout from writing its line to reading the answer,
// after which the process (and its process group) is killed and the policy
// fails naming the batch; the process is killed too when the run's context is
// cancelled and when Close is called (after stdin is closed and
// Spec.ExitGrace has passed). The process runs in a process group of its
// own (on Unix), which is killed whenever the process ends: nothing it
// started outlives it (a child that leaves the group, with setsid, escapes
// this). Its stderr is kept, up to MaxLogBytes, for the results folder's log.
package extpolicy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/sched"
)

// Bounds of the protocol.
const (
	// MaxResponseBytes bounds one response line, enforced while reading,
	// whatever the batch.
	MaxResponseBytes = 256 << 20
	// ResponseBaseBytes and ResponseBytesPerSequence bound one response
	// line by its batch: 256 KiB + 128 bytes per sequence (a group of one
	// sequence, {"first_rank": 1234, "size": 1, "seqs": [56789]}, takes 45,
	// and its length in "lengths" 8 more).
	ResponseBaseBytes        = 256 << 10
	ResponseBytesPerSequence = 128
	// MaxDiagnosticsBytes bounds the "diagnostics" object of a plan line
	// (its JSON text): decoded into maps and re-encoded for the summary, a
	// byte of it takes tens of bytes of memory.
	MaxDiagnosticsBytes = 64 << 10
	// MaxLogBytes bounds the stderr kept for the log; the rest is counted.
	MaxLogBytes = 1 << 20
	// MaxCommandArgs bounds the command's words.
	MaxCommandArgs = 256
	// DefaultTimeout is a batch's limit when the scenario gives none.
	DefaultTimeout = 60 * time.Second
	// MaxTimeout bounds timeout_seconds.
	MaxTimeout = time.Hour
)

// maxResponseBytes is MaxResponseBytes, a variable for the tests.
var maxResponseBytes = MaxResponseBytes

// Spec says how to run one external policy.
type Spec struct {
	// Name is the policy's name in run.policies.
	Name string
	// Command is the program and its arguments (Command[0] is looked up on
	// PATH unless it has a slash).
	Command []string
	// Dir is the working directory (the scenario's folder); "" the current.
	Dir string
	// Options is the scenario's options table, sent with every batch.
	Options map[string]any
	// Timeout bounds each batch's round trip; 0 is DefaultTimeout.
	Timeout time.Duration
	// ExitGrace is how long Close waits for the process to exit after its
	// stdin is closed before killing it; 0 is two seconds.
	ExitGrace time.Duration
	// Promises are checked on every plan besides WithinBudget, which every
	// external plan must keep.
	Promises sched.Promises
	// TokenCosts are the job's cost coefficients sent with each batch (nil:
	// none are sent).
	TokenCosts *sched.TokenCosts
}

// Request is one batch line dcpsim writes.
type Request struct {
	Batch         int               `json:"batch"`
	Ranks         int               `json:"ranks"`
	BudgetTokens  int               `json:"budget_tokens"`
	Lengths       []int             `json:"lengths"`
	PP            int               `json:"pp"`
	VPP           int               `json:"vpp"`
	ContextTokens int               `json:"context_tokens"`
	OverheadRatio float64           `json:"overhead_ratio"`
	EP            int               `json:"ep"`
	MaxDegree     int               `json:"max_degree"`
	QueryHeads    int               `json:"query_heads"`
	TokenCosts    *sched.TokenCosts `json:"token_costs,omitempty"`
	Options       map[string]any    `json:"options"`
}

// Response is one plan line the process writes.
type Response struct {
	Groups         [][]sched.Group  `json:"groups"`
	Microbatches   [][][]int        `json:"microbatches"`
	Lengths        []int            `json:"lengths"`
	Diagnostics    json.RawMessage  `json:"diagnostics"`
	WorkUnits      int64            `json:"work_units"`
	StallWork      *sched.StallWork `json:"stall_work"`
	PlannerSeconds *float64         `json:"planner_seconds"`
	Error          *string          `json:"error"`
}

// Policy is a running external policy: a sched.Policy whose plans come from
// the process. Plan is not safe for concurrent use (a run calls it once per
// iteration).
type Policy struct {
	spec   Spec
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	// stdoutFile is stdout's pipe, closed by Close.
	stdoutFile *os.File
	stderr     *logBuffer
	batch      int
	// measured says a plan's stall was the measured round trip (the process
	// reported no work).
	measured bool
	// err, once set, fails every later Plan: the process is dead or out of
	// step with the batches.
	err     error
	maxLine int // maxResponseBytes when started
	exited  chan struct{}
	mu      sync.Mutex
	closed  bool
}

// Start starts the process of spec; ctx's cancellation kills it.
func Start(ctx context.Context, spec Spec) (*Policy, error) {
	if len(spec.Command) == 0 || spec.Command[0] == "" {
		return nil, fmt.Errorf("external policy %s: empty command", spec.Name)
	}
	if len(spec.Command) > MaxCommandArgs {
		return nil, fmt.Errorf("external policy %s: %d command words, at most %d", spec.Name, len(spec.Command), MaxCommandArgs)
	}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultTimeout
	}
	if spec.ExitGrace <= 0 {
		spec.ExitGrace = 2 * time.Second
	}
	cmd := exec.CommandContext(ctx, spec.Command[0], spec.Command[1:]...)
	cmd.Dir = spec.Dir
	setProcessGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = spec.ExitGrace
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("external policy %s: %w", spec.Name, err)
	}
	// Its stdout and stderr are pipes of our own, read by our own
	// goroutines: cmd.Wait neither closes them under a read nor waits for a
	// child it left running that holds them (os/exec's would, until
	// WaitDelay).
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("external policy %s: %w", spec.Name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("external policy %s: %w", spec.Name, err)
	}
	logs := &logBuffer{max: MaxLogBytes}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("external policy %s: starting %q: %w", spec.Name, strings.Join(spec.Command, " "), err)
	}
	logged := make(chan struct{})
	go func() {
		_, _ = io.Copy(logs, errR)
		close(logged)
	}()
	p := &Policy{spec: spec, cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(outR, 1<<16), stdoutFile: outR, stderr: logs, exited: make(chan struct{}), maxLine: maxResponseBytes}
	go func() {
		_ = cmd.Wait()
		// What it started and left running (a background child) goes with
		// it: its process group is killed once it has exited. Then its
		// stderr ends, soon (a child that left the group may hold it: the
		// log is then cut after the grace).
		_ = killGroup(cmd)
		select {
		case <-logged:
		case <-time.After(spec.ExitGrace):
		}
		errR.Close()
		close(p.exited)
	}()
	return p, nil
}

// Name is the policy's scenario name.
func (p *Policy) Name() string { return p.spec.Name }

// Promises are WithinBudget and Spec.Promises.
func (p *Policy) Promises() sched.Promises {
	pr := p.spec.Promises
	pr.WithinBudget = true
	return pr
}

// MeasuredStall reports whether some plan's stall was the measured round
// trip (the process reported neither stall_work nor planner_seconds), which
// makes the run's stall, and so its step times, depend on the machine.
func (p *Policy) MeasuredStall() bool { return p.measured }

// Plan sends the batch, reads the plan line and turns it into a plan;
// sched.Validate is left to the caller (as for every policy).
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if p.err != nil {
		return nil, p.err
	}
	k := p.batch
	p.batch++
	req := Request{Batch: k, Ranks: in.PoolRanks, BudgetTokens: in.BudgetTokens, Lengths: lengths, PP: max(in.PP, 1), VPP: max(in.VPP, 1),
		ContextTokens: in.ContextTokens, OverheadRatio: in.OverheadRatio, EP: max(in.EP, 1), MaxDegree: in.DegreeLimit(),
		QueryHeads: in.HeadsPerRank(), TokenCosts: p.spec.TokenCosts, Options: p.spec.Options}
	if req.Options == nil {
		req.Options = map[string]any{}
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, p.fail(k, fmt.Errorf("encoding the batch: %w", err))
	}
	line = append(line, '\n')
	start := time.Now()
	resp, err := p.roundTrip(line, responseLimit(p.maxLine, len(lengths)))
	took := time.Since(start).Seconds()
	if err != nil {
		return nil, p.fail(k, err)
	}
	plan, err := p.toPlan(resp, lengths, in)
	if err != nil {
		// The process is still in step: a refused or bad plan fails the run
		// of this policy, as a built-in policy's error does.
		return nil, p.fail(k, err)
	}
	switch {
	case resp.StallWork != nil:
		plan.StallWork = *resp.StallWork
	case resp.PlannerSeconds != nil:
		plan.StallWork.ReportedSeconds = *resp.PlannerSeconds
	default:
		plan.StallWork.ReportedSeconds = took
		p.measured = true
	}
	return plan, nil
}

// fail records err for batch k (its line number on the process's stdin is
// k+1) and returns it.
func (p *Policy) fail(k int, err error) error {
	p.err = fmt.Errorf("external policy %s, batch %d (line %d of its stdin and stdout): %w", p.spec.Name, k, k+1, err)
	return p.err
}

// responseLimit is the longest answer to a batch of n sequences:
// ResponseBaseBytes + ResponseBytesPerSequence·n, at most max.
func responseLimit(max, n int) int {
	return min(max, ResponseBaseBytes+ResponseBytesPerSequence*min(n, max))
}

// roundTrip writes line and reads the answer, at most limit bytes, within
// the batch's timeout.
func (p *Policy) roundTrip(line []byte, limit int) (*Response, error) {
	type result struct {
		resp *Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		if _, err := p.stdin.Write(line); err != nil {
			select { // the exit closes the pipe: name it rather than the pipe
			case <-p.exited:
			case <-time.After(200 * time.Millisecond):
			}
			if note := p.exitNote(); note != "" {
				done <- result{err: fmt.Errorf("it stopped reading its batches%s", note)}
				return
			}
			done <- result{err: fmt.Errorf("writing the batch: %w", err)}
			return
		}
		raw, err := readLine(p.stdout, limit)
		if err != nil {
			done <- result{err: err}
			return
		}
		resp, err := decodeResponse(raw)
		done <- result{resp: resp, err: err}
	}()
	timer := time.NewTimer(p.spec.Timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil && errors.Is(r.err, io.EOF) {
			// Give the exit a moment to be reaped so its status can be named.
			select {
			case <-p.exited:
			case <-time.After(200 * time.Millisecond):
			}
			return nil, fmt.Errorf("the process closed its stdout before answering%s", p.exitNote())
		}
		return r.resp, r.err
	case <-timer.C:
		_ = killGroup(p.cmd)
		return nil, fmt.Errorf("no plan line within the %v timeout (timeout_seconds); the process was killed", p.spec.Timeout)
	}
}

// exitNote describes how the process ended, if it has.
func (p *Policy) exitNote() string {
	select {
	case <-p.exited:
		if st := p.cmd.ProcessState; st != nil {
			return fmt.Sprintf(": it exited with %s; its stderr ends %q", st, p.stderr.tail(200))
		}
	default:
	}
	return ""
}

// readLine reads one line of at most max bytes (without the newline).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max+1 {
			return nil, fmt.Errorf("its plan line is longer than %d bytes (%d + %d per sequence of the batch, at most %d: ResponseBaseBytes, ResponseBytesPerSequence, MaxResponseBytes): refused while reading",
				max, ResponseBaseBytes, ResponseBytesPerSequence, maxResponseBytes)
		}
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, fmt.Errorf("its plan line ends without a newline (%d bytes) and the stream closed", len(line))
		default:
			return nil, err
		}
	}
}

// decodeResponse decodes one plan line strictly: one JSON object of the
// Response fields, nothing after it.
func decodeResponse(raw []byte) (*Response, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("its plan line is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r Response
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("its plan line is not a plan object: %v (it begins %q)", err, clip(raw, 120))
	}
	if dec.More() {
		return nil, fmt.Errorf("its plan line has more after the object (it begins %q)", clip(raw, 120))
	}
	return &r, nil
}

// clip returns at most n bytes of b as text.
func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// toPlan turns a response into a plan: the groups per microbatch, checked
// against the per-rank lists when given.
func (p *Policy) toPlan(r *Response, lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if r.Error != nil {
		return nil, fmt.Errorf("it refused the batch: %s", badinput.Printable(clip([]byte(*r.Error), 4096)))
	}
	if r.Groups == nil {
		return nil, errors.New(`its plan line has no "groups" (one list of {first_rank, size, seqs} per microbatch)`)
	}
	plan := &sched.Plan{Policy: p.spec.Name, PoolRanks: in.PoolRanks, Lengths: r.Lengths, WorkUnits: r.WorkUnits}
	if r.PlannerSeconds != nil && !(*r.PlannerSeconds >= 0 && *r.PlannerSeconds <= 3600) {
		return nil, fmt.Errorf("planner_seconds = %v: must be in [0, 3600]", *r.PlannerSeconds)
	}
	for _, groups := range r.Groups {
		plan.Microbatches = append(plan.Microbatches, sched.Microbatch{Groups: groups})
	}
	if len(r.Diagnostics) > MaxDiagnosticsBytes {
		return nil, fmt.Errorf("diagnostics: %d bytes of JSON: at most %d (MaxDiagnosticsBytes)", len(r.Diagnostics), MaxDiagnosticsBytes)
	}
	if len(r.Diagnostics) > 0 && string(r.Diagnostics) != "null" {
		var d map[string]any
		if err := json.Unmarshal(r.Diagnostics, &d); err != nil {
			return nil, fmt.Errorf("diagnostics: not a JSON object: %v", err)
		}
		plan.Diagnostics = Diagnostics(d)
	}
	if r.Microbatches != nil {
		// Validate the groups first so that PerRank is defined.
		if err := sched.Validate(plan, lengths, in, p.Promises()); err != nil {
			return nil, err
		}
		want := plan.PerRank()
		if !equalPerRank(want, r.Microbatches) {
			return nil, errors.New(`its "microbatches" lists disagree with its "groups" (each rank's ids in a microbatch are its group's seqs)`)
		}
	}
	return plan, nil
}

// equalPerRank compares two per-rank id lists.
func equalPerRank(a, b [][][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if len(a[i][j]) != len(b[i][j]) {
				return false
			}
			for k := range a[i][j] {
				if a[i][j][k] != b[i][j][k] {
					return false
				}
			}
		}
	}
	return true
}

// Log returns what the process wrote on its stderr (its first MaxLogBytes,
// then a line counting what was dropped).
func (p *Policy) Log() []byte { return p.stderr.bytes() }

// Close closes the process's stdin, waits Spec.ExitGrace for it to exit and
// kills its process group otherwise; once it has exited, the rest of its
// process group (children it left running) is killed too. It returns an
// error when the process had to be killed or exited with a failure after
// answering every batch.
func (p *Policy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	_ = p.stdin.Close()
	defer p.stdoutFile.Close()
	select {
	case <-p.exited: // and the rest of its process group killed
	case <-time.After(p.spec.ExitGrace):
		_ = killGroup(p.cmd)
		<-p.exited
		return fmt.Errorf("external policy %s: still running %v after its stdin closed; killed", p.spec.Name, p.spec.ExitGrace)
	}
	if st := p.cmd.ProcessState; st != nil && !st.Success() && p.err == nil {
		return fmt.Errorf("external policy %s: exited with %s after its last batch", p.spec.Name, st)
	}
	return nil
}

// Diagnostics are an external plan's "diagnostics" object: its fields, sorted
// by name, are its summary.
type Diagnostics map[string]any

// Summary lists the fields by name, values as compact JSON.
func (d Diagnostics) Summary() []sched.KV {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]sched.KV, 0, len(keys))
	for _, k := range keys {
		v, err := json.Marshal(d[k])
		if err != nil {
			v = []byte(fmt.Sprint(d[k]))
		}
		out = append(out, sched.KV{Name: k, Value: string(v)})
	}
	return out
}

// logBuffer keeps the first max bytes written and counts the rest.
type logBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int64
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - len(b.buf)
	if room > 0 {
		n := min(room, len(p))
		b.buf = append(b.buf, p[:n]...)
		b.dropped += int64(len(p) - n)
	} else {
		b.dropped += int64(len(p))
	}
	return len(p), nil
}

func (b *logBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := bytes.Clone(b.buf)
	if b.dropped > 0 {
		out = append(out, fmt.Sprintf("\n[dcpsim: %d more bytes of stderr not kept (MaxLogBytes = %d)]\n", b.dropped, b.max)...)
	}
	return out
}

// tail returns the last n bytes kept.
func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return strings.TrimSpace(string(s))
}
