package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress shows a long command's advance on a terminal: a count out of the
// total, the elapsed time and an estimate of the time left, rewritten in
// place at most every progressEvery. On a pipe or a file it prints nothing,
// so outputs stay clean for scripts and tests.
type progress struct {
	w    io.Writer
	what string
	tty  bool
	now  func() time.Time // the clock (tests set it)
	// start is when the progress began; last when it was last printed.
	start, last time.Time
	printed     bool
}

// progressEvery bounds how often the line is rewritten.
const progressEvery = 200 * time.Millisecond

// newProgress returns the progress of what ("hy3-8k: iterations") shown on w
// when w is a terminal.
func newProgress(w io.Writer, what string) *progress {
	p := &progress{w: w, what: what, now: time.Now}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	p.start = p.now()
	return p
}

// update shows done of total, with a note (may be empty); the last step
// (done == total) is always shown.
func (p *progress) update(done, total int, note string) {
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
