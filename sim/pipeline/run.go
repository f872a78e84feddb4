package pipeline

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sim"
)

// Durations prices the ops and transfers of one iteration. Forward and
// Backward are the compute times of one chunk of one micro-batch on a stage;
// P2P is the time from the end of an op on fromStage to the arrival of its
// activation (forward) or gradient (backward) at the op on toStage that needs
// it, for the sending op's chunk. P2P is asked only for edges between
// different stages. Every duration must be ≥ 0.
type Durations interface {
	Forward(stage, chunk, mb int) sim.Nanos
	Backward(stage, chunk, mb int) sim.Nanos
	P2P(fromStage, toStage, chunk, mb int, backward bool) sim.Nanos
}

// Uniform gives every forward chunk, every backward chunk and every transfer
// the same duration: the setting of Megatron's bubble analysis.
type Uniform struct {
	ForwardChunk, BackwardChunk, Transfer sim.Nanos
}

// Forward returns u.ForwardChunk.
func (u Uniform) Forward(stage, chunk, mb int) sim.Nanos { return u.ForwardChunk }

// Backward returns u.BackwardChunk.
func (u Uniform) Backward(stage, chunk, mb int) sim.Nanos { return u.BackwardChunk }

// P2P returns u.Transfer.
func (u Uniform) P2P(fromStage, toStage, chunk, mb int, backward bool) sim.Nanos {
	return u.Transfer
}

// StageTimeline is what one stage did during the iteration.
type StageTimeline struct {
	Ops        []Op        // the stage's ops in execution order (shared with the Schedule)
	Start, End []sim.Nanos // Start[i], End[i]: when Ops[i] ran
	Busy       sim.Nanos   // total compute time
	Idle       sim.Nanos   // Makespan − Busy: the stage's pipeline bubble
}

// Result is the timeline of one iteration, which starts at time 0.
type Result struct {
	Makespan sim.Nanos // end of the last op of any stage
	Events   uint64    // events the engine delivered
	Stages   []StageTimeline
}

// BubbleRatio returns total idle time over total busy time, the "bubble time
// fraction" of Narayanan et al. (SC'21 §2.2): (p−1)/(v·m) for uniform ops and
// free communication.
func (r *Result) BubbleRatio() float64 {
	var busy, idle sim.Nanos
	for _, st := range r.Stages {
		busy += st.Busy
		idle += st.Idle
	}
	if busy == 0 {
		return 0
	}
	return float64(idle) / float64(busy)
}

// IdleFraction returns total idle time over p·Makespan: the share of stage
// time spent in the bubble.
func (r *Result) IdleFraction() float64 {
	if r.Makespan == 0 {
		return 0
	}
	var idle sim.Nanos
	for _, st := range r.Stages {
		idle += st.Idle
	}
	return float64(idle) / (float64(len(r.Stages)) * float64(r.Makespan))
}

const (
	evDone   uint16 = iota // Obj: stage; Arg: index of the finished op in the stage's order
	evArrive               // Obj: stage; Arg: key of the op whose dependency has arrived
)

// Run times one iteration of s on the sim engine. Each stage is one compute
// stream that runs its ops in schedule order: an op starts when the stage's
// previous op has ended and the output of its dependency (Schedule.Dep) has
// arrived, P2P after that op ended when the two ops are on different stages.
// It returns an error if d gives a negative duration or if some op never runs.
func Run(s *Schedule, d Durations) (*Result, error) {
	p := s.p
	res := &Result{Stages: make([]StageTimeline, p)}
	for r := range p {
		n := len(s.stages[r])
		res.Stages[r] = StageTimeline{Ops: s.stages[r], Start: make([]sim.Nanos, n), End: make([]sim.Nanos, n)}
	}
	arrived := make([]bool, 2*s.v*s.m*p)
	for mb := range s.m {
		arrived[s.key(0, Op{MB: int32(mb)})] = true // F(mb,0,0) waits for nothing
	}
	next := make([]int, p)  // index of each stage's next op
	busy := make([]bool, p) // whether the stage is running an op
	var eng sim.Engine      // single-threaded; events are (kind, stage, index or key)
	eng.Grow(2 * p)         // at most one done and a few arrivals per stage pending
	var err error

	start := func(r int) {
		if busy[r] || next[r] == len(s.stages[r]) || err != nil {
			return
		}
		i := next[r]
		op := s.stages[r][i]
		if !arrived[s.key(r, op)] {
			return
		}
		var dur sim.Nanos
		if op.Backward {
			dur = d.Backward(r, int(op.Chunk), int(op.MB))
		} else {
			dur = d.Forward(r, int(op.Chunk), int(op.MB))
		}
		if dur < 0 {
			err = fmt.Errorf("pipeline: stage %d op %v: negative duration %d ns", r, op, dur)
			return
		}
		busy[r] = true
		res.Stages[r].Start[i] = eng.Now()
		res.Stages[r].Busy += dur
		eng.After(dur, evDone, int32(r), int64(i))
	}

	for r := range p {
		start(r)
	}
	for err == nil {
		ev, ok := eng.Next()
		if !ok {
			break
		}
		r := int(ev.Obj)
		switch ev.Kind {
		case evDone:
			op := s.stages[r][ev.Arg]
			res.Stages[r].End[ev.Arg] = eng.Now()
			busy[r] = false
			next[r]++
			if to, succ, ok := s.next(r, op); ok {
				if to == r {
					arrived[s.key(to, succ)] = true
				} else {
					lag := d.P2P(r, to, int(op.Chunk), int(op.MB), op.Backward)
					if lag < 0 {
						return nil, fmt.Errorf("pipeline: p2p %d→%d after %v: negative duration %d ns", r, to, op, lag)
					}
					eng.After(lag, evArrive, int32(to), int64(s.key(to, succ)))
				}
			}
			start(r)
		case evArrive:
			arrived[ev.Arg] = true
			start(r)
		}
	}
	if err != nil {
		return nil, err
	}
	for r := range p {
		if i := next[r]; i < len(s.stages[r]) {
			return nil, fmt.Errorf("pipeline: deadlock: stage %d stuck before op %d (%v) of %d",
				r, i, s.stages[r][i], len(s.stages[r]))
		}
		if n := len(s.stages[r]); n > 0 {
			res.Makespan = max(res.Makespan, res.Stages[r].End[n-1])
		}
	}
	for r := range res.Stages {
		res.Stages[r].Idle = res.Makespan - res.Stages[r].Busy
	}
	res.Events = eng.Delivered()
	return res, nil
}
