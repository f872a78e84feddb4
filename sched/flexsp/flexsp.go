package flexsp

import (
	"fmt"

	"github.com/dcpsim/dcpsim/milp"
	"github.com/dcpsim/dcpsim/sched"
)

// Name is the registry name of the policy.
const Name = "flexsp"

// ErrNoSolver is wrapped by New's error when its Env holds no MILP solver:
// FlexSP plans by solving MILPs and never falls back to a heuristic. It
// wraps sched.ErrEnvMissing.
var ErrNoSolver = fmt.Errorf("flexsp: no MILP solver: FlexSP plans by solving MILPs (build it with sched.Env.Solver): %w", sched.ErrEnvMissing)

// Bounds on the options.
const (
	// MaxBuckets bounds Options.Buckets.
	MaxBuckets = 1024
	// MaxExtraMicrobatchCounts bounds Options.MicrobatchCounts.
	MaxExtraMicrobatchCounts = 64
	// MaxNodeLimit bounds Options.NodeLimit.
	MaxNodeLimit = 1 << 30
	// MaxTimeLimitSeconds bounds Options.TimeLimitSeconds.
	MaxTimeLimitSeconds = 3600
	// MaxExplicitGroups bounds Options.ExplicitGroups.
	MaxExplicitGroups = 64
	// MaxWorkers bounds Options.Workers.
	MaxWorkers = 256
)

// Options are the policy's scenario options ([run.options.flexsp]).
type Options struct {
	// Buckets is Q, the initial number of sequence buckets per microbatch
	// (§4.1.3; the code's default 16), grown by the code's rule until the
	// rounding eats at most half the memory slack.
	Buckets int `toml:"buckets"`
	// MicrobatchCounts is M', how many microbatch counts the Sequence
	// Blaster tries from the least feasible one (§4.2: M in
	// [M_min, M_min + M'); the paper and the code's mb_option_num: 5).
	MicrobatchCounts int `toml:"microbatch_counts"`
	// NodeLimit caps every MILP's branch-and-bound nodes: the deterministic
	// limit on a solve's work.
	NodeLimit int64 `toml:"node_limit"`
	// TimeLimitSeconds caps every MILP's wall time, a safety net behind
	// NodeLimit (the code's --time_limit, 5 s). A solve it stops is counted
	// in Diagnostics.TimeLimited: only such plans can differ between runs.
	TimeLimitSeconds float64 `toml:"time_limit_seconds"`
	// Gap is the relative optimality gap at which a solve stops.
	Gap float64 `toml:"gap"`
	// ExplicitGroups is how many groups of each size the MILP models one by
	// one (the paper's per-group variables) before it aggregates the rest
	// of that size (see the package doc, "Formulation"). A pool small enough
	// that the per-group model has at most ExactVariables count variables
	// is modelled per group whatever this says.
	ExplicitGroups int `toml:"explicit_groups"`
	// MinGroupSize is the smallest CP group size (a power of two). The paper
	// allows 1 (its Table 3 shows <1x64>); the public code skips 1
	// (get_sp_options, "ignore sp=1"): set 2 for the code's behaviour.
	MinGroupSize int `toml:"min_group_size"`
	// Workers is how many microbatch MILPs one plan solves at once (FlexSP's
	// two-level multiprocessing); plans do not depend on it.
	Workers int `toml:"workers"`
}

// DefaultOptions are the options of a scenario that gives none.
func DefaultOptions() Options {
	return Options{Buckets: 16, MicrobatchCounts: 5, NodeLimit: 1, TimeLimitSeconds: 5, Gap: 0.01,
		ExplicitGroups: 0, MinGroupSize: 1, Workers: 2}
}

// ExactVariables is the size up to which a microbatch's MILP is the paper's
// per-group formulation: when every group of every candidate size, times the
// buckets, makes at most this many count variables (pools of a few ranks,
// as in the tests), every group is explicit.
const ExactVariables = 256

// New builds the policy from its options and its Env: the MILP solver it
// plans with (required: else an error wrapping ErrNoSolver, once the options
// are found valid) and the job's token costs (nil: DefaultTokenCosts). An
// error names the key and the allowed range.
func New(o Options, env sched.Env) (*Policy, error) {
	switch {
	case o.Buckets < 1 || o.Buckets > MaxBuckets:
		return nil, fmt.Errorf("buckets = %d: must be in [1, %d]", o.Buckets, MaxBuckets)
	case o.MicrobatchCounts < 1 || o.MicrobatchCounts > MaxExtraMicrobatchCounts:
		return nil, fmt.Errorf("microbatch_counts = %d: must be in [1, %d]", o.MicrobatchCounts, MaxExtraMicrobatchCounts)
	case o.NodeLimit < 1 || o.NodeLimit > MaxNodeLimit:
		return nil, fmt.Errorf("node_limit = %d: must be in [1, %d]", o.NodeLimit, MaxNodeLimit)
	case !(o.TimeLimitSeconds > 0 && o.TimeLimitSeconds <= MaxTimeLimitSeconds): // NaN fails
		return nil, fmt.Errorf("time_limit_seconds = %v: must be in (0, %d]", o.TimeLimitSeconds, MaxTimeLimitSeconds)
	case !(o.Gap >= 0 && o.Gap <= 1):
		return nil, fmt.Errorf("gap = %v: must be in [0, 1]", o.Gap)
	case o.ExplicitGroups < 0 || o.ExplicitGroups > MaxExplicitGroups:
		return nil, fmt.Errorf("explicit_groups = %d: must be in [0, %d]", o.ExplicitGroups, MaxExplicitGroups)
	case !sched.IsPow2(o.MinGroupSize) || o.MinGroupSize > sched.MaxPoolRanks:
		return nil, fmt.Errorf("min_group_size = %d: must be a power of two in [1, %d]", o.MinGroupSize, sched.MaxPoolRanks)
	case o.Workers < 1 || o.Workers > MaxWorkers:
		return nil, fmt.Errorf("workers = %d: must be in [1, %d]", o.Workers, MaxWorkers)
	}
	if env.Solver == nil {
		return nil, ErrNoSolver
	}
	p := &Policy{opts: o, solver: env.Solver}
	if env.TokenCosts != nil {
		if err := env.TokenCosts.Check(); err != nil {
			return nil, fmt.Errorf("flexsp: %w", err)
		}
		c := *env.TokenCosts
		p.costs = &c
	}
	return p, nil
}

// Policy is FlexSP's planner, built with its solver and (when a cost model
// describes the job) the job's costs. Plan is safe for concurrent use.
type Policy struct {
	opts   Options
	solver milp.Solver
	costs  *sched.TokenCosts // nil: DefaultTokenCosts
}

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
)

// Name returns "flexsp".
func (*Policy) Name() string { return Name }

// Options returns the policy's options.
func (p *Policy) Options() Options { return p.opts }

// Promises: power-of-two aligned groups (sizes placed largest first), at
// most B tokens per rank. Not CoversPool: ranks the solution leaves idle are
// in no group (every rank still runs every microbatch).
func (*Policy) Promises() sched.Promises {
	return sched.Promises{Aligned: true, WithinBudget: true}
}

// setup returns the solver and the costs (checked by New).
func (p *Policy) setup(in sched.Inputs) (milp.Solver, sched.TokenCosts, error) {
	if p.costs == nil {
		return p.solver, DefaultTokenCosts(in.DegreeLimit()), nil
	}
	return p.solver, *p.costs, nil
}

// degrees returns the candidate group sizes: powers of two from
// MinGroupSize up to the pool, the CP engine's limit (Inputs.DegreeLimit:
// Ulysses' query heads per TP rank) and the widest group the costs
// describe.
func (p *Policy) degrees(in sched.Inputs, c sched.TokenCosts) []int {
	limit := min(in.DegreeLimit(), c.MaxDegree())
	var out []int
	for d := p.opts.MinGroupSize; d <= limit; d *= 2 {
		out = append(out, d)
	}
	return out
}

// cannotPlan wraps sched.ErrCannotPlan with a reason.
func cannotPlan(format string, args ...any) error {
	return fmt.Errorf("flexsp: %w: %s", sched.ErrCannotPlan, fmt.Sprintf(format, args...))
}
