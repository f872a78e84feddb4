package pipeline

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dcpsim/dcpsim/sim"
)

// TestAnalyticMakespan checks the closed form of Narayanan et al. (SC'21
// §2.2.2) against the executor. With every forward chunk taking a = t_f/v,
// every backward chunk b = t_b/v and free communication, the makespan is
//
//	(m·v + p − 1)·(a + b) = (m·v + p − 1)·(t_f + t_b)/v,
//
// i.e. a bubble of (p − 1)(t_f + t_b)/v per stage and a bubble ratio
// (idle/busy) of (p − 1)/(v·m). Measured here, it holds exactly for every
// ratio t_b/t_f in the table (not only t_b = 2·t_f), for every legal (p, v, m,
// N) in the table including N > p, a partial last group and the warm-up bound
// W_r = m·v; and for v = 1 it is 1F1B's (m + p − 1)(t_f + t_b), also with m < p.
func TestAnalyticMakespan(t *testing.T) {
	// The first six are research/baselines.md §2.3's (p, m, v) table, written
	// here as (p, v, m), with its bubble ratios.
	cases := []struct {
		p, v, m, n int
		bubble     float64 // (p−1)/(v·m), 0 = not checked
	}{
		{4, 1, 8, 0, 0.375},
		{4, 2, 8, 0, 0.1875},
		{4, 2, 16, 0, 0.09375},
		{4, 4, 8, 0, 0.09375},
		{2, 2, 4, 0, 0.125},
		{8, 2, 16, 0, 0.21875},
		// The brief's tuples read as (p, v, m) where legal: m ≥ N = p.
		{4, 8, 4, 0, 0},  // W_0 = 6 + 28 > m·v = 32: all forwards, then all backwards
		{2, 4, 2, 0, 0},  // m = p = N
		{8, 16, 8, 0, 0}, // deep warm-up bound on every stage
		{4, 16, 8, 0, 0},
		{4, 2, 14, 5, 0}, // N > p, last group of 4 ≥ p
		{4, 3, 12, 6, 0},
		{3, 2, 9, 3, 0},
		{1, 4, 3, 0, 0},
		{1, 1, 5, 0, 0},
		{4, 1, 2, 0, 0}, // 1F1B with m < p
		{16, 2, 64, 0, 0},
	}
	ratios := [][2]sim.Nanos{{1000, 2000}, {1000, 1000}, {3000, 1000}, {2000, 5000}, {7, 0}}
	for _, tc := range cases {
		s, err := New(tc.p, tc.v, tc.m, tc.n)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		for _, fb := range ratios {
			a, b := fb[0], fb[1]
			res, err := Run(s, Uniform{ForwardChunk: a, BackwardChunk: b})
			if err != nil {
				t.Fatal(err)
			}
			want := sim.Nanos(tc.m*tc.v+tc.p-1) * (a + b)
			if res.Makespan != want {
				t.Errorf("p=%d v=%d m=%d N=%d a=%d b=%d: makespan %d, formula %d",
					tc.p, tc.v, tc.m, tc.n, a, b, res.Makespan, want)
			}
			if tc.bubble != 0 {
				if got := res.BubbleRatio(); fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", tc.bubble) {
					t.Errorf("p=%d v=%d m=%d a=%d b=%d: bubble ratio %g, want %g", tc.p, tc.v, tc.m, a, b, got, tc.bubble)
				}
			}
		}
	}
}

// table is a Durations with one duration per op and per transfer.
type table struct {
	p, v, m  int
	fwd, bwd []sim.Nanos // [(stage·v + chunk)·m + mb]
	p2pF     []sim.Nanos // transfer sent by F(stage, chunk, mb), same index
	p2pB     []sim.Nanos
}

func (d *table) at(stage, chunk, mb int) int { return (stage*d.v+chunk)*d.m + mb }
func (d *table) Forward(stage, chunk, mb int) sim.Nanos {
	return d.fwd[d.at(stage, chunk, mb)]
}
func (d *table) Backward(stage, chunk, mb int) sim.Nanos {
	return d.bwd[d.at(stage, chunk, mb)]
}
func (d *table) P2P(from, to, chunk, mb int, backward bool) sim.Nanos {
	if backward {
		return d.p2pB[d.at(from, chunk, mb)]
	}
	return d.p2pF[d.at(from, chunk, mb)]
}

func randomTable(rng *rand.Rand, p, v, m int) *table {
	n := p * v * m
	d := &table{p: p, v: v, m: m}
	fill := func(lo, hi int64) []sim.Nanos {
		x := make([]sim.Nanos, n)
		for i := range x {
			x[i] = sim.Nanos(lo + rng.Int64N(hi-lo))
		}
		return x
	}
	d.fwd, d.bwd, d.p2pF, d.p2pB = fill(1, 1000), fill(1, 3000), fill(0, 200), fill(0, 200)
	return d
}

// randomLegal draws (p, v, m, N) that Megatron accepts.
func randomLegal(rng *rand.Rand) (p, v, m, n int) {
	p = 1 + rng.IntN(8)
	v = 1 + rng.IntN(4)
	if v == 1 {
		return p, 1, 1 + rng.IntN(24), 0
	}
	for {
		n = p + rng.IntN(4)
		m = n + rng.IntN(24)
		if m%n == 0 || m%n >= p {
			return p, v, m, n
		}
	}
}

// checkTimeline verifies the executor's semantics on a result: stage order,
// durations, dependencies plus transfer times, busy and idle sums.
func checkTimeline(t *testing.T, s *Schedule, d *table, res *Result) {
	t.Helper()
	end := map[[2]int]sim.Nanos{} // (stage, key) → end
	for r := range s.Stages() {
		for i, op := range s.Ops(r) {
			end[[2]int{r, s.key(r, op)}] = res.Stages[r].End[i]
		}
	}
	for r := range s.Stages() {
		st := res.Stages[r]
		var busy, prev sim.Nanos
		for i, op := range st.Ops {
			dur := d.Forward(r, int(op.Chunk), int(op.MB))
			if op.Backward {
				dur = d.Backward(r, int(op.Chunk), int(op.MB))
			}
			busy += dur
			if st.End[i]-st.Start[i] != dur || st.Start[i] < prev {
				t.Fatalf("stage %d op %v: [%d, %d] after %d, duration %d", r, op, st.Start[i], st.End[i], prev, dur)
			}
			prev = st.End[i]
			if from, dep, ok := s.Dep(r, op); ok {
				ready := end[[2]int{from, s.key(from, dep)}]
				if from != r {
					ready += d.P2P(from, r, int(dep.Chunk), int(dep.MB), dep.Backward)
				}
				if st.Start[i] < ready {
					t.Fatalf("stage %d op %v starts at %d before its dependency %v arrives at %d", r, op, st.Start[i], dep, ready)
				}
			}
		}
		if st.Busy != busy || st.Idle != res.Makespan-busy || prev > res.Makespan {
			t.Fatalf("stage %d: busy %d idle %d makespan %d, want busy %d", r, st.Busy, st.Idle, res.Makespan, busy)
		}
	}
}

func TestRandomProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		p, v, m, n := randomLegal(rng)
		name := fmt.Sprintf("trial %d p=%d v=%d m=%d N=%d", trial, p, v, m, n)
		s, err := New(p, v, m, n)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := randomTable(rng, p, v, m)
		res, err := Run(s, d) // no deadlock: Run errors if any op never runs
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkTimeline(t, s, d, res)
		for r, st := range res.Stages {
			if res.Makespan < st.Busy {
				t.Fatalf("%s: makespan %d < stage %d work %d", name, res.Makespan, r, st.Busy)
			}
		}
		again, err := Run(s, d)
		if err != nil || !reflect.DeepEqual(res, again) {
			t.Fatalf("%s: second run differs (err %v)", name, err)
		}
		// Monotonicity: lengthening one op or one transfer never shortens the
		// iteration, nor moves any op earlier.
		i := rng.IntN(len(d.fwd))
		slot := [][]sim.Nanos{d.fwd, d.bwd, d.p2pF, d.p2pB}[rng.IntN(4)]
		slot[i] += sim.Nanos(1 + rng.Int64N(2000))
		longer, err := Run(s, d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if longer.Makespan < res.Makespan {
			t.Fatalf("%s: more work, makespan %d < %d", name, longer.Makespan, res.Makespan)
		}
		for r := range res.Stages {
			for k := range res.Stages[r].Start {
				if longer.Stages[r].Start[k] < res.Stages[r].Start[k] {
					t.Fatalf("%s: more work moved stage %d op %d earlier", name, r, k)
				}
			}
		}
	}
}

// TestOneStage: with p = 1 there is no pipeline; the makespan is the sum of
// all micro-batch times, whatever the chunking.
func TestOneStage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, vm := range [][2]int{{1, 1}, {1, 7}, {3, 1}, {2, 5}, {4, 16}} {
		s, err := New(1, vm[0], vm[1], 0)
		if err != nil {
			t.Fatal(err)
		}
		d := randomTable(rng, 1, vm[0], vm[1])
		var sum sim.Nanos
		for i := range d.fwd {
			sum += d.fwd[i] + d.bwd[i]
		}
		res, err := Run(s, d)
		if err != nil {
			t.Fatal(err)
		}
		if res.Makespan != sum || res.Stages[0].Idle != 0 {
			t.Errorf("v=%d m=%d: makespan %d idle %d, want %d and 0", vm[0], vm[1], res.Makespan, res.Stages[0].Idle, sum)
		}
	}
}

func TestNegativeDuration(t *testing.T) {
	s, err := New(2, 1, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(s, Uniform{ForwardChunk: -1, BackwardChunk: 1}); err == nil {
		t.Error("negative forward: no error")
	}
	if _, err := Run(s, Uniform{ForwardChunk: 1, BackwardChunk: 1, Transfer: -1}); err == nil {
		t.Error("negative transfer: no error")
	}
}

// BenchmarkSchedule builds and times one iteration at p = 16, v = 2, m = 256.
func BenchmarkSchedule(b *testing.B) {
	d := Uniform{ForwardChunk: 1000, BackwardChunk: 2000, Transfer: 50}
	var events uint64
	for b.Loop() {
		s, err := New(16, 2, 256, 0)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Run(s, d)
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
