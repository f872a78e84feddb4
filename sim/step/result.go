package step

import (
	"github.com/dcpsim/dcpsim/sim"
)

// OpTime is when one domain op ran and how much of it was exposed
// communication (0 unless the Costs are a CommSplitter).
type OpTime struct {
	Start, End  sim.Nanos
	ExposedComm sim.Nanos
}

// RankResult is what one HDP rank of one stage did during the iteration.
type RankResult struct {
	// Microbatches is the number of microbatches the rank took part in.
	Microbatches int
	// Busy is the total duration of the domain ops the rank took part in. It
	// includes the time a light rank is held by its domain's slowest rank (CP
	// and EP lock-step), which is imbalance, not a pipeline or DP bubble.
	Busy sim.Nanos
	// ExposedComm is the part of Busy its domains spent in exposed
	// communication (CommSplitter; 0 otherwise).
	ExposedComm sim.Nanos
	// LastBackwardEnd is the end of the rank's last backward op (0 if it has
	// no microbatch).
	LastBackwardEnd sim.Nanos
	// DPBubble is the stage's gradient-sync start minus LastBackwardEnd.
	DPBubble sim.Nanos
	// PPBubble is the rest of the rank's idle time in the iteration: Iteration
	// − PlannerStall − Busy − DPBubble − the stage's gradient sync and
	// optimizer time.
	PPBubble sim.Nanos
	// PeakActivationBytes is the most activation bytes the rank held at once
	// (ActivationSizer; 0 otherwise): the chunks it had run forward and not
	// yet backward, plus a running backward's transient.
	PeakActivationBytes float64
}

// ActivationPeak is where a stage's held activations peaked: on which rank,
// in which op, and when.
type ActivationPeak struct {
	// Bytes is the peak (0 when no rank held anything, or the Costs are no
	// ActivationSizer).
	Bytes float64
	// Rank is the HDP rank, MB the microbatch (index in Plan.Microbatches),
	// Chunk and Backward the op at whose end (a forward) or during which (a
	// backward, with its transient) the peak was reached.
	Rank, MB, Chunk int
	Backward        bool
	// At is the end of that forward or the start of that backward.
	At sim.Nanos
}

// StageResult is the end of the iteration on one pipeline stage.
type StageResult struct {
	// GradSyncStart is when the last rank of the stage finished its last
	// backward: the stage's gradient reduce-scatter starts then.
	GradSyncStart sim.Nanos
	// GradSyncEnd and OptimizerEnd end the sync and the optimizer step.
	GradSyncEnd, OptimizerEnd sim.Nanos
	// Ranks is indexed by HDP rank.
	Ranks []RankResult
	// Peak is the stage's largest RankResult.PeakActivationBytes (the lowest
	// such rank) and where it was reached.
	Peak ActivationPeak
}

// Result is the timeline of one iteration, which starts at time 0.
type Result struct {
	// PP, VPP and EP are the parallel sizes simulated.
	PP, VPP, EP int
	// Iteration is the iteration time: the last stage's optimizer end.
	Iteration sim.Nanos
	// PlannerStall is the planner's stall at the head of the iteration
	// (PlannerStaller; 0 otherwise): every op starts after it.
	PlannerStall sim.Nanos
	// Domains lists every microbatch's sync domains, by MB then FirstRank.
	Domains []Domain
	// Ops holds every domain op's times, indexed by OpIndex.
	Ops []OpTime
	// Stages is indexed by pipeline stage.
	Stages []StageResult
	// MBSeconds[k] is microbatch k's forward+backward time through one stage:
	// the sum over chunks of its domain ops' durations, max over stages and
	// over its domains (so over ranks).
	MBSeconds []float64
	// PPBubbleShare and DPBubbleShare are the mean over all (stage, rank) of
	// RankResult.PPBubble and DPBubble, as fractions of Iteration: the share
	// of GPU-time spent in each bubble (see the package doc).
	PPBubbleShare, DPBubbleShare float64
	// ComputeShare, ExposedCommShare, StallShare and SyncShare complete the
	// breakdown the same way (means over (stage, rank) of Busy − ExposedComm,
	// ExposedComm, PlannerStall, and gradient sync + optimizer, over
	// Iteration): ComputeShare + ExposedCommShare + PPBubbleShare + DPBubbleShare +
	// StallShare + SyncShare = 1.
	ComputeShare, ExposedCommShare, StallShare, SyncShare float64
	// Events counts the events the engine delivered.
	Events uint64
}

// shift moves the whole timeline later by stall, the planner's stall.
func (r *Result) shift(stall sim.Nanos) {
	if stall <= 0 {
		return
	}
	r.PlannerStall = stall
	r.Iteration += stall
	for i := range r.Ops {
		r.Ops[i].Start += stall
		r.Ops[i].End += stall
	}
	for s := range r.Stages {
		st := &r.Stages[s]
		st.GradSyncStart += stall
		st.GradSyncEnd += stall
		st.OptimizerEnd += stall
		for k := range st.Ranks {
			if st.Ranks[k].Microbatches > 0 {
				st.Ranks[k].LastBackwardEnd += stall
			}
		}
	}
}

// IterationSeconds returns Iteration in seconds.
func (r *Result) IterationSeconds() float64 { return r.Iteration.Seconds() }

// OpIndex returns the index in Ops of the forward (backward = false) or
// backward of chunk on stage for domain d.
func (r *Result) OpIndex(stage, domain, chunk int, backward bool) int {
	return opIndex(stage, domain, chunk, backward, len(r.Domains), r.VPP)
}

func opIndex(stage, domain, chunk int, backward bool, nd, v int) int {
	b := 0
	if backward {
		b = 1
	}
	return ((stage*nd+domain)*v+chunk)*2 + b
}
