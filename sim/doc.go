// Package sim is dcpsim's discrete-event engine core: an integer-nanosecond
// clock and an event queue. Models built on it (the iteration engine in
// sim/step) own their state and dispatch the events themselves.
//
// # Model
//
// Time is Nanos, an int64 count of simulated nanoseconds; cost models work in
// float64 seconds and convert once at the edge with FromSeconds. Integer time
// makes equal times compare equal exactly and sums associative, so a timeline
// does not depend on the order in which durations were added.
//
// An Event is a small value: a time, a sequence number, a kind and two integer
// payloads (Obj, Arg). There is no closure and no goroutine per event or per
// entity: the caller pops events from an Engine and dispatches on Kind, keeping
// larger payloads in its own slices indexed by Obj or Arg. The queue is a typed
// binary heap over a value slice, without container/heap's boxing into any
// (research/go-ecosystem.md §2.2 measured it about twice as fast and
// allocation-free); it is fuzzed against container/heap as the oracle.
//
// A barrier or collective over N participants is one event when its last
// participant arrives (sim/step counts the arrivals an op awaits), rather than
// N messages.
//
// # Determinism
//
// The engine is single-threaded and pure: it reads no clock, no file and no
// random source. Events are ordered by (time, sequence number), where the
// sequence number is the order in which they were scheduled, so two events at
// the same time are always delivered in the order the model created them. The
// same model and input therefore give an identical event sequence and an
// identical timeline on every run and every machine.
package sim
