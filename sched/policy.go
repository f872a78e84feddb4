package sched

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/milp"
)

// Inputs is everything a policy may use besides the batch itself.
type Inputs struct {
	// PoolRanks is G, the HDP ranks of one pipeline stage.
	PoolRanks int `json:"ranks"`
	// BudgetTokens is B, the most tokens a rank may hold in one microbatch.
	BudgetTokens int `json:"budget_tokens"`
	// PP is the number of pipeline stages (>= 1).
	PP int `json:"pp"`
	// VPP is the number of virtual pipeline chunks per stage (>= 1).
	VPP int `json:"vpp"`
	// MicrobatchGroupSize is Megatron's microbatch_group_size_per_vp_stage N,
	// used with VPP > 1; 0 means PP, Megatron's default.
	MicrobatchGroupSize int `json:"microbatch_group_size,omitempty"`
	// MaxDegree is the largest CP degree the CP engine can run (Ulysses heads
	// times a ring factor); 0 means G.
	MaxDegree int `json:"max_degree,omitempty"`
	// ContextTokens is the training context (the longest sequence a batch may
	// hold); static CP sizes its degree from it. 0 means the batch's longest.
	ContextTokens int `json:"context_tokens,omitempty"`
	// OverheadRatio is θ/c in tokens²: the fixed cost of one more microbatch over
	// the cost of one unit of per-rank load (HyDra's closed form needs only this
	// ratio; the cost model supplies it).
	OverheadRatio float64 `json:"overhead_ratio,omitempty"`
	// EP is the expert-parallel size: the MoE all-to-alls of every layer couple
	// the aligned blocks of EP consecutive ranks, so the ranks of a block take
	// part in the same microbatches (Plan.Participants). 0 or 1: no EP. It must
	// divide PoolRanks.
	EP int `json:"ep,omitempty"`
	// QueryHeads is n_h/tp, the query heads of one TP rank that a CP × HP
	// layout splits (Group.Layout); 0 means DefaultQueryHeads (HeadsPerRank).
	QueryHeads int `json:"query_heads,omitempty"`
	// Cluster, when set, describes a pool of mixed GPU kinds (or one kind) to
	// the policies that plan for them; BudgetTokens is then the smallest
	// kind's budget, which policies that treat every device alike use. nil:
	// every rank alike, of budget BudgetTokens.
	Cluster *Cluster `json:"cluster,omitempty"`
	// OffloadShare is the part of a rank's kept activations that selective
	// offload at ratio 1 moves to host memory (memory.Model.OffloadShare: all
	// layers but each chunk's last two, on the stage where the part is
	// smallest), in [0, 1). A group offloading at ratio r (Group.Offload)
	// holds per-rank tokens × (1 − r·OffloadShare) tokens' worth on the GPU,
	// which the budget B bounds. 0: no group may offload (a GPU without
	// host-copy rates, or a --batches line that names none).
	OffloadShare float64 `json:"offload_share,omitempty"`

	// kindBudgets makes Check bound a sequence by Σ ranks·budget over the
	// kinds instead of G·BudgetTokens (CheckKinds).
	kindBudgets bool
}

// EPSize returns the expert-parallel block size (1 when EP is unset).
func (in Inputs) EPSize() int { return max(in.EP, 1) }

// GroupSizeN returns N, the microbatch group size (PP when unset).
func (in Inputs) GroupSizeN() int {
	if in.MicrobatchGroupSize > 0 {
		return in.MicrobatchGroupSize
	}
	return max(in.PP, 1)
}

// DegreeLimit returns the largest usable CP degree: min(G, MaxDegree).
func (in Inputs) DegreeLimit() int {
	if in.MaxDegree > 0 && in.MaxDegree < in.PoolRanks {
		return in.MaxDegree
	}
	return in.PoolRanks
}

// Limits on Inputs, so a typo or a hostile batch line cannot make a policy
// (or the engine after it) allocate without bound or overflow int64. Each is at
// least the scenario limit of the same quantity (package job, package
// scenarios), so every valid scenario's batches pass.
const (
	// MaxPoolRanks bounds G.
	MaxPoolRanks = 1 << 20
	// MaxBatchSequences bounds the sequences of one batch.
	MaxBatchSequences = 10_000_000
	// MaxPP bounds the pipeline stages (job.MaxPP is 256).
	MaxPP = 1024
	// MaxVPP bounds the virtual pipeline chunks per stage (job.MaxVPP is 64).
	MaxVPP = 128
	// MaxBudgetTokens bounds B, the per-rank token budget (16Mi tokens, as
	// job.MaxBudgetTokens), so G·B stays far below 2^63.
	MaxBudgetTokens = 1 << 24
	// MaxSequenceTokens bounds one sequence's length (32Mi tokens, as
	// job.MaxContextTokens): s² < 2^51 never overflows int64.
	MaxSequenceTokens = 1 << 25
	// MaxBatchTokens bounds Σ s over a batch (10^10, workload.MaxTargetTokens;
	// at least scenarios.MaxBatchTokens): with MaxSequenceTokens it keeps
	// Σ s² <= 2^25·10^10 < 2^59, inside int64.
	MaxBatchTokens = 10_000_000_000
)

// Env is what a policy is built with besides its options: what the job and
// the machine give it (policies.Descriptor.New hands it over). The zero Env
// gives nothing; a policy that cannot plan without something returns an
// error wrapping ErrEnvMissing from its constructor, never a substitute.
type Env struct {
	// Solver solves the MILPs of a policy that plans by solving them
	// (FlexSP); nil when no solver is installed.
	Solver milp.Solver
	// TokenCosts are the job's costs in the linear form profiling planners
	// fit (FlexSP); nil when no cost model describes the job (a --batches
	// line names no model or GPU), and the policy plans with its defaults.
	TokenCosts *TokenCosts
	// Offload are the job's costs of selective activation offload
	// (ByteScale §5.2); nil when the GPU has no host-copy rates or no cost
	// model describes the job, and the policy plans without offload.
	Offload *OffloadCosts
}

// InputChecker is implemented by a policy whose options are valid only for
// some jobs (mcore's min_cp_size must fit the pool): CheckInputs checks them
// against a job's Inputs (its G, B, MaxDegree; no batch) so a scenario can be
// refused when checked instead of failing when run. policies.Descriptor's
// CheckOptionsFor calls it.
type InputChecker interface {
	CheckInputs(in Inputs) error
}

// ErrEnvMissing is wrapped by a constructor's error when the Env lacks what
// the policy needs (e.g. FlexSP without a MILP solver): its options are
// valid, the machine is to blame.
var ErrEnvMissing = errors.New("the policy's environment lacks what it needs")

// ErrInvalidInput is wrapped by every error that blames the batch or the Inputs
// rather than the policy (errors.Is(err, ErrInvalidInput)); it is bad input
// (badinput.Err) like every other error that blames the user.
var ErrInvalidInput = badinput.Sentinel("invalid scheduling input")

// ErrCannotPlan is the one error every policy wraps when a batch is valid input
// but the policy's own rules cannot plan it (Megatron asserts, a count that
// cannot be aligned, too few sequences to pad). It matches ErrInvalidInput under
// errors.Is too: for the policy the batch is to blame. Runs report it per policy
// and carry on with the others; the --batches contracts answer it with exit 2.
var ErrCannotPlan error = cannotPlan{}

type cannotPlan struct{}

func (cannotPlan) Error() string { return "the policy cannot plan this batch" }

// Is makes errors.Is(ErrCannotPlan, ErrInvalidInput) true (and so
// badinput.Err).
func (cannotPlan) Is(target error) bool { return errors.Is(ErrInvalidInput, target) }

// Check validates the inputs and the batch: G, B, PP, VPP and the context in
// range (the limits above), every length in [1, MaxSequenceTokens], the batch
// within MaxBatchSequences and MaxBatchTokens, and every sequence short enough
// for the largest group the policy may form (maxDegree·B tokens). Every error
// names the key and the allowed range. It returns an *ErrSequenceTooLong for
// the first sequence that cannot fit.
func (in Inputs) Check(lengths []int) error {
	if err := in.check(lengths); err != nil {
		var tooLong *ErrSequenceTooLong
		if errors.As(err, &tooLong) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return nil
}

func (in Inputs) check(lengths []int) error {
	switch {
	case in.PoolRanks < 1 || in.PoolRanks > MaxPoolRanks:
		return fmt.Errorf("sched: ranks = %d: must be in [1, %d]", in.PoolRanks, MaxPoolRanks)
	case in.BudgetTokens < 1 || in.BudgetTokens > MaxBudgetTokens:
		return fmt.Errorf("sched: budget_tokens = %d: must be in [1, %d]", in.BudgetTokens, MaxBudgetTokens)
	case in.PP < 1 || in.PP > MaxPP:
		return fmt.Errorf("sched: pp = %d: must be in [1, %d]", in.PP, MaxPP)
	case in.VPP < 1 || in.VPP > MaxVPP:
		return fmt.Errorf("sched: vpp = %d: must be in [1, %d]", in.VPP, MaxVPP)
	case in.MicrobatchGroupSize < 0:
		return fmt.Errorf("sched: microbatch_group_size = %d: must be >= 0 (0 = pp)", in.MicrobatchGroupSize)
	case in.ContextTokens < 0 || in.ContextTokens > MaxSequenceTokens:
		return fmt.Errorf("sched: context_tokens = %d: must be in [0, %d] (0 = the longest sequence)", in.ContextTokens, MaxSequenceTokens)
	case in.EP < 0 || in.EP > 1 && in.PoolRanks%in.EP != 0:
		return fmt.Errorf("sched: ep = %d: must be >= 1 and divide ranks = %d (EP groups are aligned blocks of ep ranks; 0 or absent: 1)", in.EP, in.PoolRanks)
	case in.MaxDegree < 0:
		return fmt.Errorf("sched: max_degree = %d: must be >= 0 (0 = ranks)", in.MaxDegree)
	case in.OverheadRatio < 0 || math.IsNaN(in.OverheadRatio) || math.IsInf(in.OverheadRatio, 0):
		return fmt.Errorf("sched: overhead_ratio = %v: must be a finite number >= 0", in.OverheadRatio)
	case !(in.OffloadShare >= 0 && in.OffloadShare < 1):
		return fmt.Errorf("sched: offload_share = %v: must be in [0, 1) (the part of a rank's activations offload may move; each chunk keeps its last two layers)", in.OffloadShare)
	case in.QueryHeads < 0 || in.QueryHeads > 1<<16:
		return fmt.Errorf("sched: query_heads = %d: must be in [0, 65536] (0 = %d)", in.QueryHeads, DefaultQueryHeads)
	case len(lengths) == 0:
		return fmt.Errorf("sched: empty batch: at least one sequence is needed")
	case len(lengths) > MaxBatchSequences:
		return fmt.Errorf("sched: %d sequences: must be <= %d", len(lengths), MaxBatchSequences)
	}
	if in.Cluster != nil {
		if err := in.Cluster.check(in.PoolRanks); err != nil {
			return err
		}
	}
	limit := in.DegreeLimit()
	why := fmt.Sprintf("the pool (G·B = %d·%d)", in.PoolRanks, in.BudgetTokens)
	if limit < in.PoolRanks {
		why = fmt.Sprintf("the largest CP group the engine runs (%d ranks · B = %d)", limit, in.BudgetTokens)
	}
	maxTokens := int64(limit) * int64(in.BudgetTokens) // <= 2^20·2^24: no overflow
	if in.kindBudgets && in.Cluster != nil && len(in.Cluster.Kinds) > 1 && limit == in.PoolRanks {
		// A policy that plans for the kinds may use every rank's own budget.
		maxTokens = 0
		for _, k := range in.Cluster.Kinds {
			maxTokens += int64(k.Ranks) * int64(k.BudgetTokens)
		}
		why = fmt.Sprintf("the pool (Σ ranks·budget over its %d kinds)", len(in.Cluster.Kinds))
	}
	var total int64
	for i, s := range lengths {
		if s < 1 || s > MaxSequenceTokens {
			return fmt.Errorf("sched: sequence %d has %d tokens: must be in [1, %d]", i, s, MaxSequenceTokens)
		}
		if int64(s) > maxTokens {
			return &ErrSequenceTooLong{Seq: i, Tokens: s, MaxTokens: int(min(maxTokens, math.MaxInt)), Why: why}
		}
		total += int64(s) // <= 10^7·2^25 < 2^49: no overflow
	}
	if total > MaxBatchTokens {
		return fmt.Errorf("sched: the batch holds %d tokens: must be <= %d", total, int64(MaxBatchTokens))
	}
	return nil
}

// CheckKinds is Check for a policy that plans each rank within its own
// kind's budget (Cluster): a sequence may then be as long as the pool's
// Σ ranks·budget over its kinds, not only G·BudgetTokens (the smallest
// kind's).
func (in Inputs) CheckKinds(lengths []int) error {
	in.kindBudgets = true
	return in.Check(lengths)
}

// Policy plans one global batch. Policies are pure: no I/O, no clock, no global
// state; the same batch and Inputs give the same Plan. A policy that carries
// state from one iteration to the next (WLB-LLM's delay queues) keeps it in
// its own value, deterministically: the same sequence of batches gives the
// same sequence of plans; it then sets Plan.Lengths to what it trains.
type Policy interface {
	// Name is the registry name, e.g. "hydra".
	Name() string
	// Plan places every sequence of the batch (lengths[i] is sequence i's length).
	Plan(lengths []int, in Inputs) (*Plan, error)
}

// Promises are the guarantees a policy makes about its plans, which Validate
// then checks. A policy declares them by implementing Promiser.
type Promises struct {
	// Aligned: every group size is a power of two and FirstRank a multiple of it.
	Aligned bool
	// WithinBudget: every rank holds at most B tokens (Σ s/k) in every microbatch.
	WithinBudget bool
	// CoversPool: every microbatch's groups cover all G ranks.
	CoversPool bool
}

// PlanBounder is implemented by a policy that can bound, before planning,
// how large its plan of a batch is at least: callers that refuse a batch
// whose plan would exceed their limits (a plan line's size, the engine's
// ops) ask it first, so a batch is refused before the plan is built.
type PlanBounder interface {
	// PlanBounds returns lower bounds on the microbatches of any plan of
	// the batch and on its sync domains (0: no bound beyond the caller's
	// own), and where the microbatch bound comes from.
	PlanBounds(lengths []int, in Inputs) (microbatches, domains int64, why string)
}

// Promiser is implemented by policies that declare Promises.
type Promiser interface {
	// Promises returns what every plan of the policy guarantees.
	Promises() Promises
}
