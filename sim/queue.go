package sim

// Event is one scheduled occurrence. Kind says what happens and Obj and Arg
// whom it concerns; their meaning belongs to the model that scheduled it.
type Event struct {
	At   Nanos  // when it happens
	Seq  uint64 // scheduling order; breaks ties between equal At
	Kind uint16 // model-defined kind, dispatched by the caller
	Obj  int32  // model-defined object index (a stage, a group, a barrier)
	Arg  int64  // model-defined payload (an op index, a slot in a side table)
}

// Before reports whether e is delivered before f: earlier time first, then
// lower sequence number.
func (e Event) Before(f Event) bool {
	return e.At < f.At || e.At == f.At && e.Seq < f.Seq
}

// Queue is a min-heap of Events ordered by Event.Before, stored by value in
// one slice. The zero Queue is empty and ready to use.
type Queue struct {
	ev []Event
}

// Len returns the number of queued events.
func (q *Queue) Len() int { return len(q.ev) }

// Grow makes room for n more events without reallocating.
func (q *Queue) Grow(n int) {
	if cap(q.ev)-len(q.ev) < n {
		ev := make([]Event, len(q.ev), len(q.ev)+n)
		copy(ev, q.ev)
		q.ev = ev
	}
}

// Push adds e.
func (q *Queue) Push(e Event) {
	q.ev = append(q.ev, e)
	// Sift up: move the hole towards the root while the parent is later.
	i := len(q.ev) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !e.Before(q.ev[parent]) {
			break
		}
		q.ev[i] = q.ev[parent]
		i = parent
	}
	q.ev[i] = e
}

// Peek returns the first event without removing it. It panics if q is empty.
func (q *Queue) Peek() Event {
	if len(q.ev) == 0 {
		panic("sim: Peek on an empty queue")
	}
	return q.ev[0]
}

// Pop removes and returns the first event. It panics if q is empty.
func (q *Queue) Pop() Event {
	n := len(q.ev) - 1
	if n < 0 {
		panic("sim: Pop on an empty queue")
	}
	top := q.ev[0]
	last := q.ev[n]
	q.ev = q.ev[:n]
	if n == 0 {
		return top
	}
	// Sift down: move the hole from the root towards the leaves while a child
	// is earlier than the former last element, then put that element there.
	i := 0
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if r := child + 1; r < n && q.ev[r].Before(q.ev[child]) {
			child = r
		}
		if !q.ev[child].Before(last) {
			break
		}
		q.ev[i] = q.ev[child]
		i = child
	}
	q.ev[i] = last
	return top
}

// Reset empties q, keeping its storage.
func (q *Queue) Reset() { q.ev = q.ev[:0] }
