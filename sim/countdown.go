package sim

import "fmt"

// Countdown completes a barrier or a collective over a fixed number of
// participants: each participant calls Arrive once, and the last arrival
// completes it at the latest arrival time. A model keeps its Countdowns in a
// slice indexed by an event's Obj and schedules one completion event when
// Arrive returns true, instead of exchanging N messages.
type Countdown struct {
	left int
	last Nanos
}

// NewCountdown returns a Countdown waiting for n arrivals. It panics if n < 1.
func NewCountdown(n int) Countdown {
	if n < 1 {
		panic(fmt.Sprintf("sim: NewCountdown(%d): need at least one participant", n))
	}
	return Countdown{left: n}
}

// Arrive records one arrival at time t and reports whether it was the last.
// It panics if every participant has already arrived.
func (c *Countdown) Arrive(t Nanos) (done bool) {
	if c.left <= 0 {
		panic("sim: Countdown.Arrive after completion")
	}
	c.left--
	c.last = max(c.last, t)
	return c.left == 0
}

// Left returns the number of arrivals still awaited.
func (c *Countdown) Left() int { return c.left }

// Done reports whether every participant has arrived.
func (c *Countdown) Done() bool { return c.left == 0 }

// At returns the latest arrival time so far; once Done, the completion time.
func (c *Countdown) At() Nanos { return c.last }
