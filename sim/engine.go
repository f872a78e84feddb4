package sim

import "fmt"

// Engine is the clock and the pending events of one simulation. The zero
// Engine starts at time 0 with nothing pending. It is not safe for concurrent
// use; run independent simulations on independent Engines.
type Engine struct {
	now       Nanos
	seq       uint64
	delivered uint64
	q         Queue
}

// Now returns the current simulated time: the time of the last event
// delivered by Next, or 0 before the first.
func (e *Engine) Now() Nanos { return e.now }

// Pending returns the number of scheduled events not yet delivered.
func (e *Engine) Pending() int { return e.q.Len() }

// Delivered returns the number of events Next has delivered.
func (e *Engine) Delivered() uint64 { return e.delivered }

// Grow makes room for n more pending events without reallocating.
func (e *Engine) Grow(n int) { e.q.Grow(n) }

// At schedules an event of the given kind at time t. It panics if t is before
// Now: an event in the past would break causality.
func (e *Engine) At(t Nanos, kind uint16, obj int32, arg int64) {
	if t < e.now {
		panic(fmt.Sprintf("sim: event kind %d at %d ns, before now (%d ns)", kind, t, e.now))
	}
	e.q.Push(Event{At: t, Seq: e.seq, Kind: kind, Obj: obj, Arg: arg})
	e.seq++
}

// After schedules an event d after Now. It panics if d is negative.
func (e *Engine) After(d Nanos, kind uint16, obj int32, arg int64) {
	e.At(e.now+d, kind, obj, arg)
}

// Next removes the first pending event, advances the clock to its time and
// returns it; ok is false when nothing is pending.
func (e *Engine) Next() (ev Event, ok bool) {
	if e.q.Len() == 0 {
		return Event{}, false
	}
	ev = e.q.Pop()
	e.now = ev.At
	e.delivered++
	return ev, true
}

// Reset returns e to time 0 with nothing pending, keeping its storage.
func (e *Engine) Reset() {
	e.q.Reset()
	e.now, e.seq, e.delivered = 0, 0, 0
}
