package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressLine: the count, the share, the elapsed time and the time left
// extrapolated from the mean step.
func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		done, total int
		elapsed     time.Duration
		note, want  string
	}{
		{0, 12, 0, "", "hy3-8k: iterations 0/12 (0%), 0.0 s"},
		{3, 12, 4 * time.Second, "", "hy3-8k: iterations 3/12 (25%), 4.0 s, about 12.0 s left"},
		{10, 40, 90 * time.Second, "2 already there", "hy3-8k: iterations 10/40 (25%), 1m30s, about 4m30s left (2 already there)"},
		{12, 12, 16 * time.Second, "", "hy3-8k: iterations 12/12 (100%), 16.0 s"},
	} {
		if got := progressLine("hy3-8k: iterations", c.done, c.total, c.elapsed, c.note); got != c.want {
			t.Errorf("progressLine(%d, %d, %v) = %q, want %q", c.done, c.total, c.elapsed, got, c.want)
		}
	}
}

// TestProgressOnlyOnTerminal: nothing is printed on a pipe or file; on a
// terminal the line is rewritten at most every progressEvery, and the last
// step always shows.
func TestProgressOnlyOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, "x")
	p.update(1, 2, "")
	p.finish()
	if buf.Len() != 0 {
		t.Errorf("printed %q on a non-terminal", buf.String())
	}
	clock := time.Unix(0, 0)
	p = &progress{w: &buf, what: "x", tty: true, now: func() time.Time { return clock }, start: clock}
	for i := 1; i <= 10; i++ {
		clock = clock.Add(50 * time.Millisecond)
		p.update(i, 10, "")
	}
	p.finish()
	if n := strings.Count(buf.String(), "\r"); n < 3 || n > 5 {
		t.Errorf("%d rewrites of 10 steps 50 ms apart, want 3-5 (every 200 ms and the last): %q", n, buf.String())
	}
	if !strings.Contains(buf.String(), "x 10/10 (100%)") || !strings.HasSuffix(buf.String(), "\n") {
		t.Errorf("last step not shown or line not ended: %q", buf.String())
	}
}

// TestProgressInALog: on a file or pipe (a batch job's log) whole lines are
// written every 10% of the work, every 30 s of a slow step, and at the end.
func TestProgressInALog(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := &progress{w: &buf, what: "x", log: true, now: func() time.Time { return clock }, start: clock}
	for i := 1; i <= 100; i++ {
		clock = clock.Add(100 * time.Millisecond)
		p.update(i, 100, "")
	}
	if n := strings.Count(buf.String(), "\n"); n != 10 || strings.Contains(buf.String(), "\r") || !strings.Contains(buf.String(), "x 100/100 (100%)") {
		t.Errorf("%d lines for 100 steps, want 10 (every 10%%, the last included), no carriage returns: %q", n, buf.String())
	}
	buf.Reset()
	p = &progress{w: &buf, what: "y", log: true, now: func() time.Time { return clock }, start: clock}
	for i := 1; i <= 4; i++ {
		clock = clock.Add(40 * time.Second)
		p.update(i, 1000, "")
	}
	if n := strings.Count(buf.String(), "\n"); n != 4 {
		t.Errorf("%d lines for 4 steps 40 s apart under 10%%, want 4 (every 30 s): %q", n, buf.String())
	}
}
