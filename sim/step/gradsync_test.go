package step_test

import (
	"testing"

	"github.com/dcpsim/dcpsim/sim"
	"github.com/dcpsim/dcpsim/sim/step"
)

// overlapped is uniform chunks with a reduce-scatter of rs seconds per chunk
// (last of them in its last bucket) that overlaps the backward, and rest
// seconds of sync after it.
type overlapped struct {
	uniform
	rs, last, rest float64
	off            bool // no overlap: ChunkGradSync says !ok
}

func (o overlapped) ChunkGradSync(int, int) (float64, float64, bool) { return o.rs, o.last, !o.off }
func (o overlapped) GradSyncSeconds(int) float64                     { return o.rest }

// TestOverlappedGradSync: with pp = 1 the reduce-scatter starts when the
// last backward starts and ends max(its start + rs, the backward's end +
// last bucket); the rest follows. Worked cases on one rank, m = 4
// microbatches of 3 + 5 µs: the last backward runs [27, 32] µs.
func TestOverlappedGradSync(t *testing.T) {
	const us = 1e-6
	for _, c := range []struct {
		rs, last, rest float64
		off            bool
		want           sim.Nanos
	}{
		{rs: 4 * us, last: 1 * us, rest: 2 * us, want: 32000 + 1000 + 2000},     // hidden but the last bucket
		{rs: 10 * us, last: 1 * us, rest: 0, want: 27000 + 10000},               // outlasts the backward by 5 µs
		{rs: 4 * us, last: 4 * us, rest: 0, want: 32000 + 4000},                 // one bucket: all after the backward
		{rs: 0, last: 0, rest: 3 * us, want: 32000 + 3000},                      // nothing to reduce
		{rs: 4 * us, last: 1 * us, rest: 3 * us, off: true, want: 32000 + 3000}, // not overlapped: GradSyncSeconds alone
	} {
		res, err := step.Simulate(onePerRank(1, 4, func(int, int) int { return 0 }), 1, 1, 1,
			overlapped{uniform: uniform{3 * us, 5 * us}, rs: c.rs, last: c.last, rest: c.rest, off: c.off})
		if err != nil {
			t.Fatal(err)
		}
		if res.Iteration != c.want {
			t.Errorf("%+v: iteration %d ns, want %d", c, res.Iteration, c.want)
		}
	}
	// A bucket longer than its chunk's reduce-scatter is refused.
	if _, err := step.Simulate(onePerRank(1, 4, func(int, int) int { return 0 }), 1, 1, 1,
		overlapped{uniform: uniform{3 * us, 5 * us}, rs: 1 * us, last: 2 * us}); err == nil {
		t.Error("last bucket > reduce-scatter: no error")
	}
}

// TestOverlappedGradSyncBounds: on interleaved pipelines the overlapped
// sync ends no later than the same reduce-scatters after the last backward
// and no earlier than the iteration without any sync.
func TestOverlappedGradSyncBounds(t *testing.T) {
	const us = 1e-6
	for p := 1; p <= 4; p++ {
		for v := 1; v <= 3; v++ {
			m := 2 * p
			plan := onePerRank(2, m, func(int, int) int { return 0 })
			run := func(c step.Costs) sim.Nanos {
				res, err := step.Simulate(plan, p, v, 1, c)
				if err != nil {
					t.Fatalf("p %d v %d: %v", p, v, err)
				}
				return res.Iteration
			}
			u := uniform{3 * us, 5 * us}
			none := run(u)
			ov := run(overlapped{uniform: u, rs: 7 * us, last: 2 * us})
			// Not overlapped: all v chunks' reduce-scatters after the last backward.
			serial := run(serialSync{uniform: u, sec: float64(v) * 7 * us})
			if ov < none || ov > serial {
				t.Errorf("p %d v %d: overlapped %d ns outside [no sync %d, serial %d]", p, v, ov, none, serial)
			}
			if v > 1 && ov >= serial {
				t.Errorf("p %d v %d: overlap hid nothing (%d ns, serial %d)", p, v, ov, serial)
			}
		}
	}
}

// serialSync is uniform chunks and sec seconds of sync after the last
// backward.
type serialSync struct {
	uniform
	sec float64
}

func (s serialSync) GradSyncSeconds(int) float64 { return s.sec }
