package results

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
)

// The types below are what a run of one scenario produces, in plain values with
// units in their names: the CLI fills them from the simulator's results, and
// this package writes them as JSON, CSV, figures and Perfetto traces. They hold
// no reference to the simulator's internals so the writers can be tested alone.

// Summary is summary.json: the scenario, then one PolicySummary per policy in
// the scenario's order (the first is the reference of Speedup). It holds no
// wall-clock measurement (those are in Timings, timings.json), so the same
// scenario and seed give the same bytes on every machine and GOMAXPROCS.
type Summary struct {
	// Scenario is the scenario's name; Hash the SHA-256 of its canonical TOML.
	Scenario string `json:"scenario"`
	Hash     string `json:"scenario_sha256"`
	// Seed, Iterations and WarmupIterations are the run's; the means exclude the
	// warm-up.
	Seed             uint64 `json:"seed"`
	Iterations       int    `json:"iterations"`
	WarmupIterations int    `json:"warmup_iterations"`
	// BatchesSHA256 is the SHA-256 of every iteration's batch (its
	// sequence lengths in order): two runs with the same value simulated
	// the same batches, so compare pairs their iterations.
	BatchesSHA256 string `json:"batches_sha256,omitempty"`
	// Layout describes the job: GPUs, GPU kind, model, parallel sizes.
	Layout
	// DollarsPerGPUHour prices DollarsPer1TTokens.
	DollarsPerGPUHour float64 `json:"dollars_per_gpu_hour"`
	// PlannerStall says how the planner's time was put on the critical path.
	PlannerStall string `json:"planner_stall"`
	// UlyssesAcrossNodes says whether Ulysses × ring groups could place their
	// inner all-to-all across nodes ([costs] ulysses_across_nodes).
	UlyssesAcrossNodes bool `json:"ulysses_across_nodes"`
	// Profiles are the calibration profiles the costs came from, one per
	// GPU kind in rank order (name, file, SHA-256).
	Profiles []scenarios.ProfileRef `json:"profiles"`
	Policies []PolicySummary        `json:"policies"`
}

// Layout is the job a run simulated: what a planner who sweeps variants needs
// to tell the rows of a sweep apart.
type Layout struct {
	// GPUs is the cluster's GPU count; GPU its kind (a mixed cluster's label,
	// e.g. "32×H100-SXM + 32×A100-80G"); Model the model's name.
	GPUs  int    `json:"gpus"`
	GPU   string `json:"gpu"`
	Model string `json:"model"`
	// TP, PP, VPP and EP are the parallel sizes; PoolRanks the HDP ranks of a
	// stage (G).
	TP        int `json:"tp"`
	PP        int `json:"pp"`
	VPP       int `json:"vpp"`
	EP        int `json:"ep"`
	PoolRanks int `json:"pool_ranks"`
	// BudgetTokens is B; ContextTokens the context length.
	BudgetTokens  int `json:"budget_tokens"`
	ContextTokens int `json:"context_tokens"`
	// Recompute is the activation recomputation: none, selective or full;
	// RecomputeLayers, under full, the layers of each model chunk
	// recomputed (0: all).
	Recompute       string `json:"recompute"`
	RecomputeLayers int    `json:"recompute_layers"`
	// Precision is the GEMMs' number format, "bf16" or "fp8"
	// (job.Parallel.Precision).
	Precision string `json:"precision"`
	// BudgetAuto says BudgetTokens was chosen as the largest budget whose
	// peak memory fits (budget_tokens = "auto").
	BudgetAuto bool `json:"budget_auto"`
}

// Measures are one iteration's figures (in an IterationRow) or, in a
// PolicySummary, their means over the measured iterations (Means computes
// them from the rows). Every field is a float64 and its json tag is its
// column in iterations.csv, summary.json and sweep.csv: a new per-iteration
// figure is one field here, set where the iteration is measured.
type Measures struct {
	// Shares of the iteration (mean over (stage, rank)); they sum to 1 with
	// SyncShare.
	ComputeShare      float64 `json:"compute_share"`
	ExposedCommShare  float64 `json:"exposed_comm_share"`
	PPBubbleShare     float64 `json:"pp_bubble_share"`
	DPBubbleShare     float64 `json:"dp_bubble_share"`
	PlannerStallShare float64 `json:"planner_stall_share"`
	SyncShare         float64 `json:"grad_sync_optimizer_share"`
	// PPBubbleRank0Share and DPBubbleRank0Share are the bubbles as the HyDra
	// paper measures them (§6.2, §6.3, appendix A): on rank 0 (stage 0, HDP
	// rank 0), as shares of the iteration.
	PPBubbleRank0Share float64 `json:"pp_bubble_rank0_share"`
	DPBubbleRank0Share float64 `json:"dp_bubble_rank0_share"`
	// StepSecondsNoStall is the step time without the modelled planner stall
	// (the stall shifts the whole iteration, so this is the step time with
	// planning off the critical path).
	StepSecondsNoStall float64 `json:"step_seconds_no_stall"`
	// MFU is the model FLOPs utilization (costmodel.Model.MFU).
	MFU float64 `json:"mfu"`
	// MBTimeCV and MBTimeMaxOverMin describe the spread of microbatch times.
	MBTimeCV         float64 `json:"mb_time_cv"`
	MBTimeMaxOverMin float64 `json:"mb_time_max_over_min"`
	// Microbatches is the mean microbatch count of a rank (the plan's count
	// for policies whose microbatches span the pool).
	Microbatches float64 `json:"microbatches"`
	// PlannerModeledSeconds is the planner stall modelled from the policy's
	// work (calib.CPython, calib.CBC); PlannerWorkUnits that work. The
	// measured wall time of our Go planner is in Timings, never here.
	PlannerModeledSeconds float64 `json:"planner_modeled_seconds"`
	PlannerWorkUnits      float64 `json:"planner_work_units"`
	// EPBarrierWaitShare is the share of GPU-time ranks spend held by a
	// slower CP group of their domain (the MoE all-to-all barrier binds an EP
	// block; costmodel.Iteration.HeldSeconds), part of ComputeShare: the
	// HyDra paper's "stalls waste ~2.3% of aggregate GPU time" (§3.2, Fig. 7).
	EPBarrierWaitShare float64 `json:"ep_barrier_wait_share"`
	// DPStragglerRatio is, per stage, the slowest rank's time to its last
	// backward over the median rank's (from the end of the planner's
	// stall), averaged over the stages: how late the gradient
	// reduce-scatter starts for the replica that waits for the straggler
	// (§3.2, Fig. 6).
	DPStragglerRatio float64 `json:"dp_straggler_ratio"`
	// PeakMemoryBytes is the iteration's peak memory on its GPU with the
	// least headroom (model states + reserve + peak held activations,
	// costmodel.MemoryUse.Peak); PeakActivationBytes its activations.
	PeakMemoryBytes     float64 `json:"peak_memory_bytes"`
	PeakActivationBytes float64 `json:"peak_activation_bytes"`
}

// OutOfMemory is a plan that cannot run: on its GPU with the least
// headroom, the peak exceeds the HBM.
type OutOfMemory struct {
	// Iteration is the iteration whose plan it was (warm-up included).
	Iteration int `json:"iteration"`
	// Stage and Rank place the GPU (a pipeline stage's HDP rank), Kind names
	// its GPU kind.
	Stage int    `json:"stage"`
	Rank  int    `json:"rank"`
	Kind  string `json:"kind"`
	// NeededBytes is states + reserve + activations; AvailableBytes the HBM.
	NeededBytes     float64 `json:"needed_bytes"`
	AvailableBytes  float64 `json:"available_bytes"`
	StatesBytes     float64 `json:"states_bytes"`
	ReserveBytes    float64 `json:"reserve_bytes"`
	ActivationBytes float64 `json:"activation_bytes"`
}

// PolicySummary is one policy's means over the measured iterations.
type PolicySummary struct {
	Policy string `json:"policy"`
	// Error is set (and the numbers are zero) when the policy failed, or
	// was skipped.
	Error string `json:"error,omitempty"`
	// Skipped says the policy did not run because a program it needs is not
	// installed (Error names the package); it did not fail.
	Skipped bool `json:"skipped,omitempty"`
	// CPExec and OverlapAllToAll are the CP execution its plans were priced with.
	CPExec          string `json:"cp_exec"`
	OverlapAllToAll bool   `json:"overlap_all_to_all"`
	// External describes a [run.external.NAME] policy's process; nil for a
	// built-in policy.
	External *ExternalRun `json:"external,omitempty"`
	// Iterations is the number of measured iterations.
	Iterations int `json:"iterations"`
	// StepSecondsMean and StepSecondsP95 are the iteration time's mean and 95th
	// percentile (nearest rank).
	StepSecondsMean float64 `json:"step_seconds_mean"`
	StepSecondsP95  float64 `json:"step_seconds_p95"`
	// TokensPerDay is Σ batch tokens × 86400 / Σ step seconds.
	TokensPerDay float64 `json:"tokens_per_day"`
	// SpeedupOfFirst is this policy's mean step time over the first policy's.
	SpeedupOfFirst float64 `json:"speedup_of_first"`
	// Measures are the means of the measured iterations' Measures.
	Measures
	// UlyssesFallbackShare is the share of GPU-slots in groups wider than the
	// query heads per TP rank that a Ulysses execution ran as Ulysses × ring
	// (Megatron's hierarchical CP); 0 for other executions.
	UlyssesFallbackShare float64 `json:"ulysses_fallback_share,omitempty"`
	// DegreeShares is the share of GPU-slots (rank × microbatch) at each CP
	// degree, over all measured iterations, by degree.
	DegreeShares DegreeShares `json:"degree_shares"`
	// ChosenOptions are the values the policy chose itself for its options
	// (sched.OptionChooser) on the first measured batch, by option key; e.g.
	// HyDra's closed-form C* under "cap", even when the run forced the cap.
	ChosenOptions ChosenOptions `json:"chosen_options,omitempty"`
	// DollarsPer1TTokens is GPUs × $/GPU-hour × hours per 10^12 tokens.
	DollarsPer1TTokens float64 `json:"dollars_per_1t_tokens"`
	// PeakMemoryMaxBytes is the largest PeakMemoryBytes of the measured
	// iterations, HBMBytes the memory of the GPU it was reached on, and
	// PeakMemoryByStageBytes each stage's largest (its GPU with the least
	// headroom) over the measured iterations.
	PeakMemoryMaxBytes     float64    `json:"peak_memory_max_bytes"`
	HBMBytes               float64    `json:"hbm_bytes"`
	PeakMemoryByStageBytes StageBytes `json:"peak_memory_by_stage_bytes"`
	// OutOfMemory is set when the policy failed because a plan's peak
	// exceeded a GPU's HBM (Error says so too).
	OutOfMemory *OutOfMemory `json:"out_of_memory,omitempty"`
	// MBSeconds are the measured iterations' microbatch times pooled (for the
	// MB-time distribution figure), as many whole iterations as fit in 2^20
	// values; not in summary.json.
	MBSeconds []float64 `json:"-"`
}

// DegreeShares is a policy's CP-degree histogram; its CSV cell is
// "degree:share" pairs, by degree.
type DegreeShares []sched.DegreeShare

// CSVText is the CSV cell: "1:0.25 4:0.75".
func (d DegreeShares) CSVText() string {
	parts := make([]string, len(d))
	for i, s := range d {
		parts[i] = strconv.Itoa(s.Degree) + ":" + formatFloat(s.Share)
	}
	return strings.Join(parts, " ")
}

// StageBytes are bytes per pipeline stage; the CSV cell lists them by stage.
type StageBytes []float64

// CSVText is the CSV cell: "7.1e+10 6.5e+10".
func (b StageBytes) CSVText() string {
	parts := make([]string, len(b))
	for i, v := range b {
		parts[i] = formatFloat(v)
	}
	return strings.Join(parts, " ")
}

// CSVText is the CSV cell of an out-of-memory policy: "iteration 3 stage 0
// rank 17 H800 needs 9.1e+10 of 8e+10 bytes", empty when it fitted.
func (o *OutOfMemory) CSVText() string {
	if o == nil {
		return ""
	}
	return fmt.Sprintf("iteration %d stage %d rank %d %s needs %s of %s bytes",
		o.Iteration, o.Stage, o.Rank, o.Kind, formatFloat(o.NeededBytes), formatFloat(o.AvailableBytes))
}

// ChosenOptions are option values a policy chose itself, by key; its CSV
// cell is "key=value" pairs in key order.
type ChosenOptions map[string]float64

// CSVText is the CSV cell: "cap=64".
func (c ChosenOptions) CSVText() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, k+"="+formatFloat(c[k]))
	}
	return strings.Join(parts, " ")
}

// IterationRow is one line of iterations.csv; its columns are its fields'
// json names (WriteCSV), in field order.
type IterationRow struct {
	Policy    string `json:"policy"`
	Iteration int    `json:"iteration"`
	// Warmup marks an iteration excluded from the means.
	Warmup      bool    `json:"warmup"`
	StepSeconds float64 `json:"step_seconds"`
	// Tokens and Sequences are what the iteration trained.
	Tokens    int64 `json:"tokens"`
	Sequences int   `json:"sequences"`
	Measures
}

// Means returns the mean of each of Measures' fields over the rows of policy
// that are not warm-up (gonum's stat.Mean; zero when there is none).
func Means(rows []IterationRow, policy string) Measures {
	var ms []Measures
	for _, r := range rows {
		if r.Policy == policy && !r.Warmup {
			ms = append(ms, r.Measures)
		}
	}
	var out Measures
	if len(ms) == 0 {
		return out
	}
	ov := reflect.ValueOf(&out).Elem()
	col := make([]float64, len(ms))
	for f := range ov.NumField() {
		for i := range ms {
			col[i] = reflect.ValueOf(ms[i]).Field(f).Float()
		}
		ov.Field(f).SetFloat(stat.Mean(col, nil))
	}
	return out
}

// Timings is timings.json: what was measured in wall time on this machine,
// kept apart from the deterministic results (Summary, the CSVs), which it
// never feeds.
type Timings struct {
	Scenario string `json:"scenario"`
	// Policies are in the scenario's order.
	Policies []PolicyTimings `json:"policies"`
}

// PolicyTimings is one policy's measured planner wall time.
type PolicyTimings struct {
	Policy string `json:"policy"`
	// PlannerGoSecondsMean is the mean over the measured iterations of our Go
	// planner's wall time per plan (never on the simulated critical path:
	// Measures.PlannerModeledSeconds is).
	PlannerGoSecondsMean float64 `json:"planner_go_seconds_mean"`
	// PlannerGoSeconds is each iteration's, warm-up included, in order.
	PlannerGoSeconds []float64 `json:"planner_go_seconds"`
}

// GoSecondsOf returns policy's mean planner wall time (0 when t has none).
func (t *Timings) GoSecondsOf(policy string) float64 {
	if t == nil {
		return 0
	}
	for _, p := range t.Policies {
		if p.Policy == policy {
			return p.PlannerGoSecondsMean
		}
	}
	return 0
}

// Timeline is one iteration of one policy as a set of slices on tracks, for
// the pipeline figure and the Perfetto trace. Times are nanoseconds from the
// start of the iteration (0); the planner's stall, when modelled, is the slice
// [0, PlannerStallNanos) on every track.
type Timeline struct {
	Policy    string
	Iteration int
	// IterationNanos is the iteration's length.
	IterationNanos int64
	// PlannerStallNanos is the modelled planner stall at the head (0: none).
	PlannerStallNanos int64
	// Stages is pp; Ranks the representative HDP ranks drawn, ascending.
	Stages int
	Ranks  []int
	// RankRoles says why a rank of Ranks was drawn when it was picked by its
	// load rather than requested: "busiest" or "idlest" (the rank of stage 0
	// with the most or the least busy time); the timeline figure labels the
	// rank's tracks with it. nil when unknown.
	RankRoles map[int]string
	// Slices are the ops of every (stage, rank in Ranks), any order.
	Slices []Slice
	// Flows are the cross-stage p2p transfers between drawn ops.
	Flows []Flow
}

// ExternalRun is what a summary records of an external policy's process
// (package extpolicy).
type ExternalRun struct {
	// Command is the program and its arguments.
	Command []string `json:"command"`
	// Log is the results-folder file holding its stderr.
	Log string `json:"log"`
	// MeasuredStall says some plan's planning stall was its measured round
	// trip (it reported neither stall_work nor planner_seconds): the step
	// times then depend on the machine, and a rerun differs.
	MeasuredStall bool `json:"measured_stall"`
	// CloseError is how the process ended when that was a failure after its
	// last batch (killed after the grace, or a non-zero exit).
	CloseError string `json:"close_error,omitempty"`
}

// CSVText is the command, its words joined by spaces ("" for a built-in
// policy), for the CSV column external.
func (e *ExternalRun) CSVText() string {
	if e == nil {
		return ""
	}
	return strings.Join(e.Command, " ")
}

// SliceKind says what a slice is.
type SliceKind int

// The slice kinds.
const (
	Forward SliceKind = iota
	Backward
	GradSync
	Optimizer
	PlannerStall
)

// String is "forward", "backward", "grad-sync", "optimizer" or "planner".
func (k SliceKind) String() string {
	switch k {
	case Forward:
		return "forward"
	case Backward:
		return "backward"
	case GradSync:
		return "grad-sync"
	case Optimizer:
		return "optimizer"
	case PlannerStall:
		return "planner"
	}
	return "unknown"
}

// Slice is one op on one (stage, rank) track.
type Slice struct {
	Stage, Rank int
	Kind        SliceKind
	// MB and Chunk identify a forward or backward op (-1 otherwise).
	MB, Chunk int
	// StartNanos and EndNanos bound it; EndNanos >= StartNanos.
	StartNanos, EndNanos int64
	// ExposedCommNanos is the part of a forward or backward spent in exposed
	// communication (CP and MoE collectives), <= its duration.
	ExposedCommNanos int64
}

// Flow is a p2p transfer: the output of the op that ended at FromNanos on
// (FromStage, Rank) reaching the op that needs it on (ToStage, Rank) at
// ToNanos.
type Flow struct {
	Rank               int
	FromStage, ToStage int
	MB, Chunk          int
	Backward           bool
	FromNanos, ToNanos int64
}

// SweepPoint is one point of a sweep: the values of its swept axes and the
// run of the scenario at that point.
type SweepPoint struct {
	// Index is the point's position in the sweep's deterministic order.
	Index int `json:"index"`
	// Name is a file-safe name of the point (e.g. "p003-gpus8192-hy3").
	Name string `json:"name"`
	// Axes are the swept keys and their values at this point, in the sweep's
	// axis order.
	Axes Axes `json:"axes"`
	// GPUs, Model and ContextTokens repeat the layout for the sweep figures.
	GPUs          int    `json:"gpus"`
	Model         string `json:"model"`
	ContextTokens int    `json:"context_tokens"`
	// Summary is the run at this point.
	Summary Summary `json:"summary"`
}

// Axis is one swept key's value at a sweep point. Keys are "variant",
// "gpus", "context_tokens", "budget_tokens", "policy", and "<policy>.<key>" for
// a policy option (sweep.options).
type Axis struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Axes are a sweep point's swept values; the CSV cell is "key=value" pairs in
// axis order.
type Axes []Axis

// CSVText is the CSV cell: "gpus=8192 variant=hy3".
func (a Axes) CSVText() string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = x.Key + "=" + x.Value
	}
	return strings.Join(parts, " ")
}

// SweepRow is one line of sweep.csv: a (point, policy) pair with the point's
// layout and the policy's summary, columns named by the fields' json names.
type SweepRow struct {
	Point int    `json:"point"`
	Name  string `json:"name"`
	Axes  Axes   `json:"axes"`
	Layout
	PolicySummary
}

// SweepRows flattens sweep points into sweep.csv's rows, point by point and
// policy by policy.
func SweepRows(pts []SweepPoint) []SweepRow {
	var rows []SweepRow
	for _, p := range pts {
		for _, s := range p.Summary.Policies {
			rows = append(rows, SweepRow{Point: p.Index, Name: p.Name, Axes: p.Axes, Layout: p.Summary.Layout, PolicySummary: s})
		}
	}
	return rows
}

// SweepTimings is a sweep's timings.json: each point's measured wall times
// (Timings), in point order. It is the one file of a sweep that differs
// from run to run.
type SweepTimings struct {
	Sweep  string        `json:"sweep"`
	Points []PointTiming `json:"points"`
}

// PointTiming is one sweep point's Timings.
type PointTiming struct {
	Index   int     `json:"index"`
	Name    string  `json:"name"`
	Timings Timings `json:"timings"`
}
