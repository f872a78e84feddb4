package scenarios

import (
	"fmt"
	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

// Limits on what a scenario may ask for, so that a typo is refused with the limit
// named instead of exhausting the machine.
const (
	// MaxBatchTokens bounds the tokens of one global batch: 2^31, i.e. 16,384
	// tokens per GPU on 131,072 GPUs. With the sequence and microbatch bounds
	// below it keeps one iteration of any accepted scenario within ~2 GiB.
	MaxBatchTokens = 1 << 31
	// MaxSequencesPerBatch bounds the expected number of sequences in one batch
	// (batch tokens divided by the mean length): 10^7, i.e. at least ~80 MB of
	// lengths and far more in the plans built from them.
	MaxSequencesPerBatch = 10_000_000
	// MaxIterations bounds run.iterations. Runs stream their batches (memory
	// does not grow with the iterations), so this bounds time: at the ~0.1-1 s
	// per iteration of the paper-scale presets, hours.
	MaxIterations = 10_000
	// MaxMicrobatches bounds the least number of microbatches an iteration
	// needs, ⌈batch tokens / (G·B)⌉: the engine's work grows with it (the
	// paper's settings need 8 to 16).
	MaxMicrobatches = 1024
	// MaxSweepPoints bounds the number of points a sweep expands to.
	MaxSweepPoints = 10_000
)

// Defaults applied when a key is absent.
const (
	DefaultGPUsPerNode = 8
	DefaultIterations  = 10
	DefaultSeed        = 1
)

// Scenario is one parsed and validated simulation setup.
type Scenario struct {
	// Name is the scenario's name ([a-z0-9._-], at most 64 characters).
	Name string
	// Description is a one-line summary.
	Description string
	// Source is the TOML text the scenario was parsed from (its SHA-256
	// identifies a run's inputs in results manifests).
	Source []byte
	// File is where the scenario came from, as used in error messages.
	File string
	// Notes say what the parser derived that the file did not state (an
	// uneven pipeline split), for scenarios check and run to print.
	Notes []string
	// Overrides are the command-line changes made to the parsed scenario
	// (Override), e.g. "run.iterations = 4": part of its identity beside
	// Source (a results manifest's hash covers them).
	Overrides []string
	// Job is the model, cluster and parallel layout.
	Job job.Job
	// Workload says where the batches' sequence lengths come from.
	Workload Workload
	// Run is the iteration count, seed and policies.
	Run Run
	// Sweep, when non-nil, lists axes to expand with Points.
	Sweep *Sweep
	// Search, when non-nil, is the layout space dcpsim search ranks
	// (Candidates).
	Search *Search
	// CPExec and CPOverlap are [costs] cp_exec.<policy> and cp_overlap.<policy>:
	// what-if overrides of the CP execution a policy assumes (see CPExecFor).
	CPExec    map[string]sched.CPExec
	CPOverlap map[string]bool
	// ProfileFile is [costs] profile: a calibration profile file (relative paths
	// resolved against the scenario's folder) replacing the embedded profile of
	// cluster.gpu; empty means the embedded one.
	ProfileFile string
	// PlannerStall is [costs] planner_stall: PlannerStallModeled (default) puts
	// each plan's modelled planning time at the head of its iteration,
	// PlannerStallNone leaves planning off the critical path.
	PlannerStall string
	// UlyssesAcrossNodes is [costs] ulysses_across_nodes: the inner Ulysses
	// degree of Ulysses × ring groups grows past the node, up to the query heads
	// per TP rank, and the ring takes only the factor beyond (default true, the
	// HyDra paper's "inner Ulysses group inside a shallow outer ring", §5.2.1;
	// false keeps it inside NVLink, a what-if).
	UlyssesAcrossNodes bool

	lines map[string]int
	loaded
	// optionTables are the [run.options.<policy>] tables as decoded TOML
	// values, the base a sweep point's option values are merged into.
	optionTables map[string]map[string]any
}

// Workload is the resolved [workload] table.
type Workload struct {
	// Preset names the length distribution preset, or is empty.
	Preset string
	// Distribution draws lengths; nil when they come from File.
	Distribution workload.Distribution
	// File is a length file (text/CSV or JSONL), relative paths resolved against
	// the scenario file's folder; empty when a distribution is used.
	File string
	// Format is "lengths" (text or CSV with a length column) or "jsonl".
	Format string
	// Field is the integer field of a JSONL file holding the length.
	Field string
	// Order is how batches walk a length file.
	Order workload.ListOrder
	// ContextTokens is the training context; longer sequences are split or dropped.
	ContextTokens int
	// BatchTokens is the global batch size in tokens (resolved from
	// batch_tokens_per_gpu when that was given).
	BatchTokens int64
	// BatchTokensPerGPU is the per-GPU batch share when the scenario gave one
	// (weak scaling), else 0.
	BatchTokensPerGPU int64
	// Overlong is what happens to sequences longer than the context.
	Overlong workload.Overlong
}

// Run is the resolved [run] table.
type Run struct {
	// Iterations is how many iterations are simulated (warm-up included).
	Iterations int
	// WarmupIterations are simulated but left out of the averages.
	WarmupIterations int
	// Seed selects the batches: the same seed gives the same batches.
	Seed uint64
	// Policies are compared on identical batches, the first one is the reference.
	Policies []string
	// Options holds every policy's options, decoded strictly from
	// [run.options.<policy>] (with a sweep point's option values) and validated
	// by the policy's constructor when the scenario was parsed: a pointer to the
	// policy's options struct (policies.Descriptor.Options), its defaults where
	// the scenario gives none. Build the policy with experiment.BuildPolicy, which hands it its Env. Read-only.
	Options map[string]any
	// DollarsPerGPUHour prices the training cost columns (default 2, the
	// HyDra paper's rate, §6.3).
	DollarsPerGPUHour float64
	// External are the [run.external.NAME] policies, by name: programs in
	// any language that plan over JSON lines (package extpolicy). Their names
	// may appear in Policies like any built-in policy's.
	External map[string]ExternalPolicy
}

// ExternalPolicy is one [run.external.NAME] table.
type ExternalPolicy struct {
	// Command is the program and its arguments, run in the scenario's
	// folder.
	Command []string
	// Options is the table sent with every batch (any TOML values).
	Options map[string]any
	// TimeoutSeconds bounds each batch's round trip (default 60).
	TimeoutSeconds float64
}

// Sweep is the resolved [sweep] table: the cartesian product of its axes.
type Sweep struct {
	// GPUs, ContextTokens and BudgetTokens are the swept values (empty: not swept).
	GPUs, ContextTokens, BudgetTokens []int
	// Options are the swept policy options (sweep.options.<policy>.<key>), by
	// policy then key.
	Options []OptionAxis
	// Policies, when set, makes each point run one policy (sweep.policies).
	Policies []string
	// Variants are model/parallel alternatives (empty: the base scenario only).
	Variants []Variant
}

// OptionAxis is one sweep.options.<policy>.<key> axis: the values a policy
// option takes across the sweep's points.
type OptionAxis struct {
	// Policy and Key name the option ([run.options.<Policy>] key).
	Policy, Key string
	// Values are the TOML values, in the order written.
	Values []any
}

// Name is the axis's name in point names and results: "<policy>.<key>".
func (a OptionAxis) Name() string { return a.Policy + "." + a.Key }

// Variant is one [[sweep.variant]]: a model preset and parallel overrides.
type Variant struct {
	// Name labels the variant in point names.
	Name string
	// Model is a model preset name replacing the base model (empty: keep it).
	Model string
	// Parallel is the variant's parallel layout (the base one with overrides).
	Parallel job.Parallel
	// Fabric is the variant's scale-out network ([sweep.variant.cluster]:
	// nics_per_node, nodes_per_leaf, spine_oversubscription over the base
	// cluster's).
	Fabric job.Fabric
	// Options are [sweep.variant.options.<policy>] tables: policy options of
	// this variant's points, over [run.options.<policy>] (e.g. ring static CP
	// for one model only).
	Options map[string]map[string]any
}

// The [costs] planner_stall values, and the default price of a GPU-hour.
const (
	PlannerStallModeled = "modeled"
	PlannerStallNone    = "none"
	// DefaultDollarsPerGPUHour is the HyDra paper's rate (§6.3, after
	// DeepSeek-AI 2024).
	DefaultDollarsPerGPUHour = 2.0
)

// Override sets [run] iterations (the warm-up capped below it) and seed
// from the command line where given (nil: the file's), checked as the
// file's values are, and records each change in Overrides.
func (sc *Scenario) Override(iterationsFlag *int, seed *uint64) error {
	if iterationsFlag != nil {
		iterations := *iterationsFlag
		if iterations < 1 || iterations > MaxIterations {
			return badinput.Errorf("--iterations %d: must be in [1, %d]", iterations, MaxIterations)
		}
		sc.Run.Iterations = iterations
		sc.Run.WarmupIterations = min(sc.Run.WarmupIterations, iterations-1)
		sc.Overrides = append(sc.Overrides, fmt.Sprintf("run.iterations = %d", iterations), fmt.Sprintf("run.warmup_iterations = %d", sc.Run.WarmupIterations))
	}
	if seed != nil {
		sc.Run.Seed = *seed
		sc.Overrides = append(sc.Overrides, fmt.Sprintf("run.seed = %d", *seed))
	}
	return nil
}
