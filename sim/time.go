package sim

import "math"

// Nanos is simulated time or a duration, in integer nanoseconds.
type Nanos int64

// MaxNanos is the largest representable time, used as "never".
const MaxNanos = Nanos(math.MaxInt64)

// FromSeconds converts seconds to Nanos, rounding to the nearest nanosecond.
// It panics on NaN or on a value outside Nanos' range (about ±292 years): a
// cost model that returns one has a bug the simulation must not hide.
func FromSeconds(seconds float64) Nanos {
	ns := math.Round(seconds * 1e9)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns < math.MinInt64 {
		panic("sim: FromSeconds: out of range")
	}
	return Nanos(ns)
}

// Seconds returns n in seconds.
func (n Nanos) Seconds() float64 { return float64(n) / 1e9 }
