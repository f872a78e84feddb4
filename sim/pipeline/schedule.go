package pipeline

import (
	"fmt"
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
)

// Op is one compute operation of a stage: the forward or backward pass of one
// micro-batch through one of the stage's model chunks.
type Op struct {
	Backward bool  // backward pass; forward when false
	Chunk    int32 // model chunk on this stage, 0..v-1 (virtual stage Chunk·p + stage)
	MB       int32 // micro-batch, 0..m-1
}

// String writes o as in research/baselines.md §2.2: "F3c1" is the forward of
// micro-batch 3 on chunk 1, "B0c0" a backward.
func (o Op) String() string {
	b := make([]byte, 0, 12)
	if o.Backward {
		b = append(b, 'B')
	} else {
		b = append(b, 'F')
	}
	b = strconv.AppendInt(b, int64(o.MB), 10)
	b = append(b, 'c')
	b = strconv.AppendInt(b, int64(o.Chunk), 10)
	return string(b)
}

// Schedule is the per-stage op order of one pipeline iteration. Build it with
// New; it is immutable afterwards.
type Schedule struct {
	p, v, m, n int
	stages     [][]Op
}

// New returns Megatron's schedule for p stages, v model chunks per stage and m
// micro-batches: interleaved 1F1B when v > 1, with micro-batch groups of n
// (n ≤ 0 selects Megatron's default, n = p), and non-interleaved 1F1B when
// v = 1 (n is then ignored). It returns an error, naming Megatron's rule, for
// illegal arguments; see the package doc for why it rejects rather than pads.
func New(p, v, m, n int) (*Schedule, error) {
	if n <= 0 {
		n = p
	}
	if err := validate(p, v, m, n); err != nil {
		return nil, err
	}
	if v == 1 {
		n = m // one group: the table is micro-batches 0..m-1 on chunk 0
	}
	// Megatron's get_schedule_table: groups of n micro-batches (the last one
	// possibly smaller), each group run through chunk 0, then chunk 1, ...
	table := make([]Op, 0, m*v)
	for g0 := 0; g0 < m; g0 += n {
		hi := min(g0+n, m)
		for c := range v {
			for mb := g0; mb < hi; mb++ {
				table = append(table, Op{Chunk: int32(c), MB: int32(mb)})
			}
		}
	}
	total := m * v
	s := &Schedule{p: p, v: v, m: m, n: n, stages: make([][]Op, p)}
	for r := range p {
		w := Warmup(p, v, m, n, r)
		fwd := func(k int) Op { return table[k] }
		bwd := func(k int) Op {
			return Op{Backward: true, Chunk: int32(v-1) - table[k].Chunk, MB: table[k].MB}
		}
		ops := make([]Op, 0, 2*total)
		for k := range w {
			ops = append(ops, fwd(k))
		}
		for k := range total - w {
			ops = append(ops, fwd(k+w), bwd(k))
		}
		for k := total - w; k < total; k++ {
			ops = append(ops, bwd(k))
		}
		s.stages[r] = ops
	}
	return s, nil
}

// validate applies Megatron's rule for the micro-batch count
// (sched.CheckMicrobatchCount).
func validate(p, v, m, n int) error {
	if err := sched.CheckMicrobatchCount(p, v, m, n); err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	return nil
}

// Warmup returns the number of forward ops stage r runs before its first
// backward: min((p−r−1)·2 + (v−1)·n, m·v) for the interleaved schedule and
// min(p−r−1, m) when v = 1 (Megatron's get_pp_rank_microbatches, without
// overlap_moe_expert_parallel_comm). n ≤ 0 means n = p. It does not validate.
func Warmup(p, v, m, n, r int) int {
	if n <= 0 {
		n = p
	}
	if v == 1 {
		return min(p-r-1, m)
	}
	return min((p-r-1)*2+(v-1)*n, m*v)
}

// Stages returns p, the number of pipeline stages.
func (s *Schedule) Stages() int { return s.p }

// Chunks returns v, the number of model chunks per stage.
func (s *Schedule) Chunks() int { return s.v }

// Microbatches returns m.
func (s *Schedule) Microbatches() int { return s.m }

// GroupSize returns N, the micro-batch group size of the schedule table (m
// when v = 1).
func (s *Schedule) GroupSize() int { return s.n }

// Ops returns stage r's ops in execution order. The slice is shared: do not
// modify it.
func (s *Schedule) Ops(r int) []Op { return s.stages[r] }

// Dep returns the op that op on stage r waits for, and its stage
// (research/baselines.md §2.3): F(mb,c,r) ← F(mb,c,r−1) if r > 0, else
// F(mb,c−1,p−1) if c > 0; B(mb,c,r) ← B(mb,c,r+1) if r < p−1, else
// B(mb,c+1,0) if c < v−1, else F(mb,v−1,p−1), the loss. ok is false for
// F(mb,0,0), which waits for nothing.
func (s *Schedule) Dep(r int, op Op) (stage int, dep Op, ok bool) {
	last := int32(s.v - 1)
	switch {
	case !op.Backward && r > 0:
		return r - 1, op, true
	case !op.Backward && op.Chunk > 0:
		return s.p - 1, Op{Chunk: op.Chunk - 1, MB: op.MB}, true
	case !op.Backward:
		return 0, Op{}, false
	case r < s.p-1:
		return r + 1, op, true
	case op.Chunk < last:
		return 0, Op{Backward: true, Chunk: op.Chunk + 1, MB: op.MB}, true
	default:
		return s.p - 1, Op{Chunk: last, MB: op.MB}, true
	}
}

// next is the inverse of Dep: the op that waits for op on stage r, if any.
func (s *Schedule) next(r int, op Op) (stage int, succ Op, ok bool) {
	last := int32(s.v - 1)
	switch {
	case !op.Backward && r < s.p-1:
		return r + 1, op, true
	case !op.Backward && op.Chunk < last:
		return 0, Op{Chunk: op.Chunk + 1, MB: op.MB}, true
	case !op.Backward:
		return s.p - 1, Op{Backward: true, Chunk: last, MB: op.MB}, true
	case r > 0:
		return r - 1, op, true
	case op.Chunk > 0:
		return s.p - 1, Op{Backward: true, Chunk: op.Chunk - 1, MB: op.MB}, true
	default:
		return 0, Op{}, false
	}
}
