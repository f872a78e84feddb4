package step

import (
	"math"

	"github.com/dcpsim/dcpsim/sched"
)

// Costs prices the work of one iteration in seconds. Simulate asks every
// method a bounded number of times (ChunkSeconds once per stage, chunk and
// domain) and rejects a negative, NaN or infinite answer.
type Costs interface {
	// ChunkSeconds returns the forward and backward time of one model chunk
	// (chunk 0..vpp-1) of domain d's microbatch on one stage: for the whole
	// domain, i.e. the slowest of its ranks including the CP and MoE
	// collectives that couple them.
	ChunkSeconds(stage, chunk int, d *Domain) (forward, backward float64)
	// P2PSeconds returns the time from the end of domain d's op (forward or
	// backward of chunk on fromStage) to the arrival of its output at the op
	// of toStage that needs it. Asked only for edges between different stages.
	P2PSeconds(fromStage, toStage, chunk int, d *Domain, backward bool) float64
	// GradSyncSeconds returns the gradient reduce-scatter time of a stage.
	GradSyncSeconds(stage int) float64
	// OptimizerSeconds returns the optimizer step time of a stage, after its
	// gradient sync.
	OptimizerSeconds(stage int) float64
}

// OverlappedGradSyncer is implemented by Costs whose gradient
// reduce-scatter overlaps the backward pass (Megatron-LM's
// --overlap-grad-reduce): each model chunk's gradients are reduced in
// buckets as soon as its last backward produces them, one chunk after
// another on one communication stream. Run then starts chunk c's
// reduce-scatter when both the stream is free and the chunk's last backward
// has begun, and ends it no earlier than ChunkGradSync's seconds after the
// stream took it up and its last-bucket seconds after that backward ended;
// Costs.GradSyncSeconds is what follows the last chunk's reduce-scatter
// (the exposed rest of the sync). Without overlap (ok false for any chunk)
// the stage syncs as Costs says.
type OverlappedGradSyncer interface {
	// ChunkGradSync returns chunk's reduce-scatter seconds on stage and the
	// part of them its last bucket takes; both finite, >= 0, last <=
	// seconds.
	ChunkGradSync(stage, chunk int) (seconds, lastBucketSeconds float64, ok bool)
}

// PlannerStaller is implemented by Costs that put the planner's stall on the
// critical path: every stage starts its first op PlannerStallSeconds after the
// iteration begins (the plan is computed on the host at the head of every
// iteration, and no GPU can start before it).
type PlannerStaller interface {
	PlannerStallSeconds() float64
}

// CommSplitter is implemented by Costs that can say how much of a chunk's time
// is exposed communication (CP and MoE collectives not hidden behind compute),
// so the result can split a rank's busy time into compute and communication.
// The answer must lie in [0, ChunkSeconds].
type CommSplitter interface {
	ChunkExposedCommSeconds(stage, chunk int, d *Domain) (forward, backward float64)
}

// ActivationSizer is implemented by Costs that say what a microbatch's
// activations weigh, so Run follows each rank's held activations through its
// schedule and reports their peak (RankResult.PeakActivationBytes,
// StageResult.Peak). What a rank keeps is linear in what it holds of the
// microbatch: its tokens and its attention scores (Σ s²/k over its CP
// group's sequences, which only a kernel that stores the scores keeps), at
// rates set by the stage and chunk (their layers).
type ActivationSizer interface {
	// GroupShard returns what each rank of group gi (an index into
	// d.Groups) of domain d's microbatch holds: its tokens and its
	// attention scores. Both must be finite and >= 0.
	GroupShard(d *Domain, gi int) (tokens, scores float64)
	// ChunkActivation returns the rates of chunk on stage: the bytes a rank
	// keeps from the chunk's forward until its backward, and the transient
	// bytes the backward adds while it runs (recomputed activations), per
	// token and per score. All must be finite and >= 0.
	ChunkActivation(stage, chunk int) ActivationRate
}

// ActivationRate is one chunk's activation bytes per token and per
// attention score of a rank's shard (ActivationSizer).
type ActivationRate struct {
	KeptPerToken, KeptPerScore         float64
	BackwardPerToken, BackwardPerScore float64
	// OffloadPerToken and OffloadPerScore are the part of the kept rates a
	// group's offload ratio r applies to (sched.Group.Offload: selective
	// offload moves r of them to host memory between the forward and the
	// backward): a rank of the group keeps Kept − r·Offload on the GPU. They
	// must not exceed the kept rates.
	OffloadPerToken, OffloadPerScore float64
}

// LoadSecondsPerToken2 is the load mode's price of one unit of per-rank load
// (one token²) for a whole forward pass through the model: 1e-12 s.
const LoadSecondsPerToken2 = 1e-12

// LoadCosts is the transparent "load" cost mode: a rank's forward time for one
// chunk of a microbatch is its per-rank load L (Σ s²/k over the sequences its
// CP group runs, tokens²) × LoadSecondsPerToken2 / (PP·VPP), backward is twice
// that, and communication, GEMM, gradient sync and optimizer cost nothing. A
// domain's op takes its slowest rank's time, so CP groups and EP blocks still
// couple ranks. Lengths[i] is sequence i's length in tokens.
type LoadCosts struct {
	Lengths []int
	PP, VPP int
}

// Load returns a group's per-rank load Σ s²/k in tokens², or NaN if it names
// a sequence outside Lengths or has no ranks.
func (c LoadCosts) Load(g sched.Group) float64 {
	if g.Size < 1 {
		return math.NaN()
	}
	var l float64
	for _, id := range g.Seqs {
		if id < 0 || id >= len(c.Lengths) {
			return math.NaN()
		}
		s := float64(c.Lengths[id])
		l += s * s
	}
	return l / float64(g.Size)
}

// ChunkSeconds returns max over d's groups of Load × 1e-12 / (PP·VPP) and
// twice that; NaN if a group names an unknown sequence or PP·VPP < 1.
func (c LoadCosts) ChunkSeconds(_, _ int, d *Domain) (forward, backward float64) {
	if c.PP < 1 || c.VPP < 1 {
		return math.NaN(), math.NaN()
	}
	var worst float64
	for _, g := range d.Groups {
		l := c.Load(g)
		if math.IsNaN(l) {
			return l, l
		}
		worst = max(worst, l)
	}
	f := worst * LoadSecondsPerToken2 / float64(c.PP*c.VPP)
	return f, 2 * f
}

// P2PSeconds returns 0.
func (LoadCosts) P2PSeconds(_, _, _ int, _ *Domain, _ bool) float64 { return 0 }

// GradSyncSeconds returns 0.
func (LoadCosts) GradSyncSeconds(int) float64 { return 0 }

// OptimizerSeconds returns 0.
func (LoadCosts) OptimizerSeconds(int) float64 { return 0 }
