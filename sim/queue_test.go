package sim

import (
	"container/heap"
	"testing"
)

// oracle is container/heap over the same order, the reference Queue must match.
type oracle []Event

func (o oracle) Len() int           { return len(o) }
func (o oracle) Less(i, j int) bool { return o[i].Before(o[j]) }
func (o oracle) Swap(i, j int)      { o[i], o[j] = o[j], o[i] }
func (o *oracle) Push(x any)        { *o = append(*o, x.(Event)) }
func (o *oracle) Pop() any {
	old := *o
	e := old[len(old)-1]
	*o = old[:len(old)-1]
	return e
}

// checkAgainstOracle replays ops on a Queue and on container/heap: a byte with
// the top bit set pops, any other pushes an event whose time is the byte's low
// bits (few distinct times, so ties and the Seq tie-break are exercised).
func checkAgainstOracle(t *testing.T, ops []byte) {
	t.Helper()
	var q Queue
	var o oracle
	var seq uint64
	for i, b := range ops {
		if b&0x80 != 0 {
			if q.Len() != o.Len() {
				t.Fatalf("op %d: Len %d, oracle %d", i, q.Len(), o.Len())
			}
			if o.Len() == 0 {
				continue
			}
			if got, want := q.Peek(), o[0]; got != want {
				t.Fatalf("op %d: Peek %+v, oracle %+v", i, got, want)
			}
			if got, want := q.Pop(), heap.Pop(&o).(Event); got != want {
				t.Fatalf("op %d: Pop %+v, oracle %+v", i, got, want)
			}
			continue
		}
		e := Event{At: Nanos(b & 0x0f), Seq: seq, Kind: uint16(b), Obj: int32(i), Arg: int64(-i)}
		seq++
		q.Push(e)
		heap.Push(&o, e)
	}
	for o.Len() > 0 {
		if got, want := q.Pop(), heap.Pop(&o).(Event); got != want {
			t.Fatalf("drain: Pop %+v, oracle %+v", got, want)
		}
	}
	if q.Len() != 0 {
		t.Fatalf("drain: %d events left", q.Len())
	}
}

func FuzzQueue(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 2, 0x80, 1, 1, 0x80, 0x80, 0x80})
	f.Add([]byte{5, 5, 5, 5, 0x80, 4, 4, 0x80, 0x80, 6, 0x80})
	f.Fuzz(checkAgainstOracle)
}

func TestQueueMatchesOracle(t *testing.T) {
	// A deterministic long sequence for plain `go test` (the fuzzer explores more).
	ops := make([]byte, 20000)
	x := uint32(12345)
	for i := range ops {
		x = x*1664525 + 1013904223
		ops[i] = byte(x >> 24)
		if i%3 == 0 {
			ops[i] &^= 0x80 // push a little more often than pop, so the heap grows
		}
	}
	checkAgainstOracle(t, ops)
}

func TestQueueEmptyPanics(t *testing.T) {
	for name, f := range map[string]func(*Queue){"Pop": func(q *Queue) { q.Pop() }, "Peek": func(q *Queue) { q.Peek() }} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on an empty queue did not panic", name)
				}
			}()
			var q Queue
			f(&q)
		})
	}
}

func BenchmarkQueueHold(b *testing.B) {
	// Hold model of research/go-ecosystem.md §2.2: pop the minimum, push min+Δ.
	const pending = 1 << 16
	var q Queue
	x := uint64(1)
	for i := range pending {
		x = x*6364136223846793005 + 1442695040888963407
		q.Push(Event{At: Nanos(x >> 44), Seq: uint64(i)})
	}
	seq := uint64(pending)
	for b.Loop() {
		e := q.Pop()
		x = x*6364136223846793005 + 1442695040888963407
		e.At += Nanos(x >> 50)
		e.Seq = seq
		seq++
		q.Push(e)
	}
}
