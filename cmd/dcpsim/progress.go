package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress shows a long command's advance: a count out of the total, the
// elapsed time and an estimate of the time left. On a terminal the line is
// rewritten in place at most every progressEvery; on a pipe or a file (a
// batch job's log: Slurm, nohup, tee) a whole line is written each time
// another logStep of the work is done or logEvery has passed since the
// last, and at the end; to any other writer (a buffer) nothing.
type progress struct {
	w    io.Writer
	what string
	tty  bool
	// log says w is a file or pipe that is not a terminal; logged is the
	// share of the work (in logStep units) last logged.
	log    bool
	logged int
	now    func() time.Time // the clock (tests set it)
	// start is when the progress began; last when it was last printed.
	start, last time.Time
	printed     bool
}

// progressEvery bounds how often the line is rewritten on a terminal;
// logStep (a share of the work, in percent) and logEvery how often a line
// is written to a log.
const (
	progressEvery = 200 * time.Millisecond
	logStep       = 10
	logEvery      = 30 * time.Second
)

// newProgress returns the progress of what ("hy3-8k: iterations") shown on w
// when w is a terminal.
func newProgress(w io.Writer, what string) *progress {
	p := &progress{w: w, what: what, now: time.Now}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			p.tty = st.Mode()&os.ModeCharDevice != 0
			p.log = !p.tty
		}
	}
	p.start = p.now()
	return p
}

// update shows done of total, with a note (may be empty); the last step
// (done == total) is always shown.
func (p *progress) update(done, total int, note string) {
	if p.log {
		p.logLine(done, total, note)
		return
	}
	if !p.tty {
		return
	}
	t := p.now()
	if done < total && p.printed && t.Sub(p.last) < progressEvery {
		return
	}
	p.last, p.printed = t, true
	fmt.Fprintf(p.w, "\r\033[K%s", progressLine(p.what, done, total, t.Sub(p.start), note))
}

// logLine writes the progress as a whole line to a log when another
// logStep percent is done, logEvery has passed since the last line, or the
// work is done.
func (p *progress) logLine(done, total int, note string) {
	if total <= 0 || done <= 0 {
		return
	}
	t := p.now()
	if p.last.IsZero() {
		p.last = p.start
	}
	step := 100 * done / total / logStep
	if done < total && step <= p.logged && t.Sub(p.last) < logEvery {
		return
	}
	p.logged, p.last = step, t
	fmt.Fprintln(p.w, progressLine(p.what, done, total, t.Sub(p.start), note))
}

// finish ends the progress line (a newline once something was shown).
func (p *progress) finish() {
	if p.tty && p.printed {
		fmt.Fprintln(p.w)
	}
}

// progressLine is "what 3/12 (25%), 4.0 s, about 12 s left (note)": the time
// left is extrapolated from the mean time per step so far.
func progressLine(what string, done, total int, elapsed time.Duration, note string) string {
	line := fmt.Sprintf("%s %d/%d", what, done, total)
	if total > 0 {
		line += fmt.Sprintf(" (%d%%)", 100*done/total)
	}
	line += ", " + roundDuration(elapsed)
	if done > 0 && done < total {
		left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
		line += ", about " + roundDuration(left) + " left"
	}
	if note != "" {
		line += " (" + note + ")"
	}
	return line
}

// roundDuration prints d to a tenth of a second under a minute, to the
// second above.
func roundDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}
