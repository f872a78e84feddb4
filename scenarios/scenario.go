package scenarios

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

// Limits on what a scenario may ask for, so that a typo is refused with the limit
// named instead of exhausting the machine.
const (
	// MaxBatchTokens bounds the tokens of one global batch (10^10).
	MaxBatchTokens = 10_000_000_000
	// MaxSequencesPerBatch bounds the expected number of sequences in one batch
	// (batch tokens divided by the mean length): 10^7, i.e. at least ~80 MB of
	// lengths and far more in the plans built from them.
	MaxSequencesPerBatch = 10_000_000
	// MaxIterations bounds run.iterations.
	MaxIterations = 100_000
	// MaxSweepPoints bounds the number of points a sweep expands to.
	MaxSweepPoints = 10_000
)

// Defaults applied when a key is absent.
const (
	DefaultGPUsPerNode = 8
	DefaultIterations  = 10
	DefaultSeed        = 1
)

// PolicyNames are the scheduling policies a scenario may name: HyDra (heap and
// linear-scan forms) and the baselines of DESIGN.md. The scheduler registry checks
// again, with each policy's options, when a scenario runs.
var PolicyNames = []string{"bytescale", "flexsp", "hexiseq", "hydra", "hydra-scan", "mcore", "static", "wlb"}

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
	// Job is the model, cluster and parallel layout.
	Job job.Job
	// Workload says where the batches' sequence lengths come from.
	Workload Workload
	// Run is the iteration count, seed and policies.
	Run Run
	// Sweep, when non-nil, lists axes to expand with Points.
	Sweep *Sweep
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
	// UlyssesAcrossNodes is [costs] ulysses_across_nodes: let the inner Ulysses
	// degree of Ulysses × ring groups grow past the node, up to the query heads
	// per TP rank (default false: inside NVLink).
	UlyssesAcrossNodes bool
	// HydraCap, when > 0, forces HyDra's cap C (set by sweep.hydra_cap points;
	// it overrides run.options.hydra.cap).
	HydraCap int

	md      *toml.MetaData
	lines   map[string]int
	options map[string]toml.Primitive
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
	// DollarsPerGPUHour prices the training cost columns (default 2, the
	// HyDra paper's rate, §6.3).
	DollarsPerGPUHour float64
}

// Sweep is the resolved [sweep] table: the cartesian product of its axes.
type Sweep struct {
	// GPUs, ContextTokens and BudgetTokens are the swept values (empty: not swept).
	GPUs, ContextTokens, BudgetTokens []int
	// HydraCaps are caps C forced on HyDra (sweep.hydra_cap; 0 = the closed
	// form's C*); empty: not swept.
	HydraCaps []int
	// Policies, when set, makes each point run one policy (sweep.policies).
	Policies []string
	// Variants are model/parallel alternatives (empty: the base scenario only).
	Variants []Variant
}

// Variant is one [[sweep.variant]]: a model preset and parallel overrides.
type Variant struct {
	// Name labels the variant in point names.
	Name string
	// Model is a model preset name replacing the base model (empty: keep it).
	Model string
	// Parallel is the variant's parallel layout (the base one with overrides).
	Parallel job.Parallel
}

// Problem is one thing wrong with a scenario file.
type Problem struct {
	// Line is the 1-based line of the offending key, or 0 when unknown.
	Line int
	// Key is the dotted key, or empty.
	Key string
	// Message says what is wrong and what is allowed.
	Message string
}

// Error lists every problem found in one scenario file. It is the error type of
// all bad-input failures of this package.
type Error struct {
	// File is the scenario file (or embedded preset) name.
	File string
	// Problems are in file order where lines are known.
	Problems []Problem
}

// Error prints one "file:line: message" line per problem.
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, p.Line, p.Message)
		} else {
			fmt.Fprintf(&b, "%s: %s", e.File, p.Message)
		}
	}
	return b.String()
}

// raw types mirror the file; defaults are filled in before decoding.
type rawFile struct {
	Name        string         `toml:"name"`
	Description string         `toml:"description"`
	Cluster     job.Cluster    `toml:"cluster"`
	Model       toml.Primitive `toml:"model"`
	Parallel    job.Parallel   `toml:"parallel"`
	Workload    rawWorkload    `toml:"workload"`
	Run         rawRun         `toml:"run"`
	Sweep       *rawSweep      `toml:"sweep"`
	Costs       rawCosts       `toml:"costs"`
}

// rawCosts is [costs]: where operator costs come from, and what-if overrides of
// the CP execution each policy assumes.
type rawCosts struct {
	Profile       string            `toml:"profile"`
	PlannerStall  string            `toml:"planner_stall"`
	UlyssesAcross bool              `toml:"ulysses_across_nodes"`
	CPExec        map[string]string `toml:"cp_exec"`
	CPOverlap     map[string]bool   `toml:"cp_overlap"`
}

type rawWorkload struct {
	Preset            string         `toml:"preset"`
	Components        []rawComponent `toml:"component"`
	File              string         `toml:"file"`
	Format            string         `toml:"format"`
	Field             string         `toml:"field"`
	Order             string         `toml:"order"`
	ContextTokens     int            `toml:"context_tokens"`
	BatchTokens       int64          `toml:"batch_tokens"`
	BatchTokensPerGPU int64          `toml:"batch_tokens_per_gpu"`
	Overlong          string         `toml:"overlong"`
}

type rawComponent struct {
	Kind         string    `toml:"kind"`
	Weight       float64   `toml:"weight"`
	MedianTokens float64   `toml:"median_tokens"`
	Sigma        float64   `toml:"sigma"`
	Alpha        float64   `toml:"alpha"`
	MinTokens    float64   `toml:"min_tokens"`
	MaxTokens    float64   `toml:"max_tokens"`
	Tokens       []float64 `toml:"tokens"`
	CDF          []float64 `toml:"cdf"`
}

type rawRun struct {
	Iterations       int                       `toml:"iterations"`
	WarmupIterations int                       `toml:"warmup_iterations"`
	Seed             int64                     `toml:"seed"`
	Policies         []string                  `toml:"policies"`
	Options          map[string]toml.Primitive `toml:"options"`
	DollarsPerGPU    *float64                  `toml:"dollars_per_gpu_hour"`
}

type rawSweep struct {
	GPUs          []int        `toml:"gpus"`
	ContextTokens []int        `toml:"context_tokens"`
	BudgetTokens  []int        `toml:"budget_tokens"`
	HydraCaps     []int        `toml:"hydra_cap"`
	Policies      []string     `toml:"policies"`
	Variants      []rawVariant `toml:"variant"`
}

type rawVariant struct {
	Name     string         `toml:"name"`
	Model    string         `toml:"model"`
	Parallel toml.Primitive `toml:"parallel"`
}

// modelTable is [model]: an optional preset plus any Model field as an override.
type modelTable struct {
	Preset string `toml:"preset"`
	job.Model
}

var nameRE = regexp.MustCompile(`^[a-z0-9._-]{1,64}$`)

// parser accumulates problems for one file.
type parser struct {
	file     string
	lines    map[string]int
	problems []Problem
}

func (p *parser) addf(key string, format string, args ...any) {
	p.problems = append(p.problems, Problem{Line: lineOf(p.lines, key), Key: key, Message: fmt.Sprintf(format, args...)})
}

// addErr turns err (possibly joined *job.FieldError values) into problems, with
// keyPrefix prepended to each field key (e.g. "workload." for context_tokens).
func (p *parser) addErr(err error, keyPrefix func(string) string) {
	fields, others := job.FieldErrors(err)
	for _, f := range fields {
		key := keyPrefix(f.Key)
		p.addf(key, "%s = %v: %s", key, f.Value, f.Rule)
	}
	for _, o := range others {
		p.addf("", "%v", o)
	}
}

func (p *parser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	sort.SliceStable(p.problems, func(i, j int) bool {
		li, lj := p.problems[i].Line, p.problems[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0
		}
		return li < lj
	})
	return &Error{File: p.file, Problems: p.problems}
}

// Parse decodes and validates one scenario. file names it in error messages and
// resolves a relative workload.file. Every problem is reported at once in an
// *Error; unknown keys are problems.
func Parse(data []byte, file string) (*Scenario, error) {
	src := string(data)
	p := &parser{file: file, lines: keyLines(src)}
	raw := rawFile{
		Cluster:  job.Cluster{GPUsPerNode: DefaultGPUsPerNode},
		Parallel: job.Parallel{TP: 1, VPP: 1, EP: 1},
		Run:      rawRun{Iterations: DefaultIterations, Seed: DefaultSeed},
		Workload: rawWorkload{Overlong: "split", Order: "resample"},
	}
	md, err := toml.Decode(src, &raw)
	if err != nil {
		p.problems = append(p.problems, tomlProblem(err, ""))
		return nil, p.err()
	}
	sc := &Scenario{
		Source:      slices.Clone(data),
		Name:        raw.Name,
		Description: raw.Description,
		File:        file,
		md:          &md,
		lines:       p.lines,
		options:     raw.Run.Options,
	}

	if !md.IsDefined("name") {
		p.addf("name", "name: required, a scenario name matching [a-z0-9._-]{1,64}")
	} else if !nameRE.MatchString(raw.Name) {
		p.addf("name", "name = %q: must match [a-z0-9._-]{1,64}", raw.Name)
	}

	// [model]
	sc.Job.Model = p.model(&md, raw.Model)

	// [cluster], [parallel]
	for _, k := range []string{"cluster.gpu", "cluster.gpus", "parallel.pp", "parallel.budget_tokens"} {
		parts := strings.Split(k, ".")
		if !md.IsDefined(parts...) {
			p.addf(k, "%s: required", k)
		}
	}
	if raw.Cluster.GPU != "" && !slices.Contains(calib.ProfileNames(), raw.Cluster.GPU) {
		p.addf("cluster.gpu", "cluster.gpu = %q: no calibration profile; known: %s", raw.Cluster.GPU, strings.Join(calib.ProfileNames(), ", "))
	}
	sc.Job.Cluster = raw.Cluster
	sc.Job.Parallel = raw.Parallel

	// [workload]
	sc.Workload = p.workload(&md, raw.Workload, raw.Cluster.GPUs)
	sc.Job.ContextTokens = sc.Workload.ContextTokens

	// [run]
	sc.Run = p.run(&md, raw.Run)

	// [costs]
	if md.IsDefined("costs", "profile") {
		if raw.Costs.Profile == "" {
			p.addf("costs.profile", "costs.profile: must name a calibration profile file (e.g. \"calibration/h200.toml\")")
		}
		sc.ProfileFile = raw.Costs.Profile
	}
	sc.UlyssesAcrossNodes = raw.Costs.UlyssesAcross
	sc.PlannerStall = PlannerStallModeled
	if md.IsDefined("costs", "planner_stall") {
		switch raw.Costs.PlannerStall {
		case PlannerStallModeled, PlannerStallNone:
			sc.PlannerStall = raw.Costs.PlannerStall
		default:
			p.addf("costs.planner_stall", "costs.planner_stall = %q: must be %q or %q", raw.Costs.PlannerStall, PlannerStallModeled, PlannerStallNone)
		}
	}
	for _, policy := range sortedKeys(raw.Costs.CPExec) {
		key := "costs.cp_exec." + policy
		if !slices.Contains(sc.Run.Policies, policy) {
			p.addf(key, "%s: %q is not in run.policies %q", key, policy, sc.Run.Policies)
			continue
		}
		e, err := sched.ParseCPExec(raw.Costs.CPExec[policy])
		if err != nil {
			p.addf(key, "%s = %q: must be one of %s", key, raw.Costs.CPExec[policy], strings.Join(sched.CPExecNames(), ", "))
			continue
		}
		if sc.CPExec == nil {
			sc.CPExec = map[string]sched.CPExec{}
		}
		sc.CPExec[policy] = e
	}
	for _, policy := range sortedKeys(raw.Costs.CPOverlap) {
		key := "costs.cp_overlap." + policy
		if !slices.Contains(sc.Run.Policies, policy) {
			p.addf(key, "%s: %q is not in run.policies %q", key, policy, sc.Run.Policies)
			continue
		}
		if sc.CPOverlap == nil {
			sc.CPOverlap = map[string]bool{}
		}
		sc.CPOverlap[policy] = raw.Costs.CPOverlap[policy]
	}

	// Unknown keys (one problem per unknown table, not one per key inside it).
	var reported []string
	for _, k := range md.Undecoded() {
		key := k.String()
		if slices.ContainsFunc(reported, func(r string) bool { return strings.HasPrefix(key, r+".") }) {
			continue
		}
		switch {
		case len(k) >= 4 && k[0] == "sweep" && k[1] == "variant" && k[2] == "parallel":
			continue // decoded below, per variant
		case len(k) >= 3 && k[0] == "run" && k[1] == "options":
			if slices.Contains(sc.Run.Policies, k[2]) {
				continue // decoded strictly by the policy (DecodeOptions)
			}
			table := "run.options." + k[2]
			p.addf(table, "[%s]: options for %q, which is not in run.policies %q", table, k[2], sc.Run.Policies)
			reported = append(reported, table)
			continue
		}
		p.addf(key, "%s: unknown key%s", key, suggest(k))
		reported = append(reported, key)
	}

	// The job as a whole, only once its parts decoded cleanly (derived checks on
	// garbage would only repeat the same problems).
	if len(p.problems) == 0 {
		p.addErr(sc.Job.Validate(), jobKey)
		if sc.Workload.Distribution != nil && sc.Workload.BatchTokens > 0 {
			mean := meanTokens(sc.Workload.Distribution, sc.Workload.ContextTokens)
			if n := float64(sc.Workload.BatchTokens) / mean; n > MaxSequencesPerBatch {
				p.addf("workload.batch_tokens", "workload.batch_tokens = %d: expected %.3g sequences per batch at a mean length of %.0f tokens; must be <= %d",
					sc.Workload.BatchTokens, n, mean, MaxSequencesPerBatch)
			}
		}
	}

	// [sweep]
	if raw.Sweep != nil && len(p.problems) == 0 {
		sc.Sweep = p.sweep(&md, raw.Sweep, raw.Parallel)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if sc.Sweep != nil {
		if _, err := sc.Points(); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// jobKey maps a job.FieldError key to the scenario key it came from.
func jobKey(k string) string {
	if k == "context_tokens" {
		return "workload.context_tokens"
	}
	return k
}

func (p *parser) model(md *toml.MetaData, prim toml.Primitive) job.Model {
	if !md.IsDefined("model") {
		p.addf("model", "[model]: required; set model.preset to one of %s, or give every field", strings.Join(job.ModelNames(), ", "))
		return job.Model{}
	}
	var head struct {
		Preset string `toml:"preset"`
	}
	// Decode twice: the preset first, then the overrides on top of it. The first
	// pass is lenient on purpose; the second one decodes every key.
	if err := md.PrimitiveDecode(prim, &head); err != nil {
		// A type error here is reported by the full pass below.
		head.Preset = ""
	}
	var mt modelTable
	if head.Preset != "" {
		m, err := job.LookupModel(head.Preset)
		if err != nil {
			p.addf("model.preset", "model.preset = %q: unknown model; known: %s", head.Preset, strings.Join(job.ModelNames(), ", "))
		} else {
			mt.Model = m
		}
	}
	mt.Preset = head.Preset
	if err := md.PrimitiveDecode(prim, &mt); err != nil {
		p.decodeErr("model", err)
	}
	return mt.Model
}

// decodeErr reports a type mismatch found while decoding a table.
func (p *parser) decodeErr(table string, err error) {
	p.problems = append(p.problems, tomlProblem(err, table))
}

// typeErrRE matches BurntSushi/toml's type-mismatch errors, which are plain
// fmt errors: `toml: line 15 (last key "parallel.pp"): incompatible types: ...`.
var typeErrRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`)

// tomlProblem turns an error of the TOML decoder into a Problem with the line
// and key it names; fallbackKey stands in when it names none.
func tomlProblem(err error, fallbackKey string) Problem {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		key := pe.LastKey
		if key == "" {
			key = fallbackKey
		}
		msg := pe.Message
		if key != "" {
			msg = key + ": " + msg
		}
		return Problem{Line: pe.Position.Line, Key: key, Message: msg}
	}
	if m := typeErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Key: m[2], Message: m[2] + ": " + m[3]}
	}
	msg := err.Error()
	if fallbackKey != "" {
		msg = fallbackKey + ": " + msg
	}
	return Problem{Key: fallbackKey, Message: msg}
}

func (p *parser) workload(md *toml.MetaData, w rawWorkload, gpus int) Workload {
	out := Workload{Preset: w.Preset, File: w.File, Field: w.Field, ContextTokens: w.ContextTokens}
	if !md.IsDefined("workload") {
		p.addf("workload", "[workload]: required (preset or component or file, context_tokens, batch_tokens)")
		return out
	}
	sources := 0
	for _, set := range []bool{w.Preset != "", len(w.Components) > 0, w.File != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		p.addf("workload", "[workload]: give exactly one of preset (%s), [[workload.component]] or file; got %d",
			strings.Join(workload.PresetNames(), ", "), sources)
	}
	switch {
	case w.Preset != "":
		d, err := workload.Preset(w.Preset)
		if err != nil {
			p.addf("workload.preset", "workload.preset = %q: unknown distribution; known: %s", w.Preset, strings.Join(workload.PresetNames(), ", "))
		}
		out.Distribution = d
	case len(w.Components) > 0:
		out.Distribution = p.components(w.Components)
	case w.File != "":
		switch w.Format {
		case "":
			if strings.HasSuffix(w.File, ".jsonl") {
				out.Format = "jsonl"
			} else {
				out.Format = "lengths"
			}
		case "lengths", "jsonl":
			out.Format = w.Format
		default:
			p.addf("workload.format", "workload.format = %q: must be \"lengths\" (text or CSV) or \"jsonl\"", w.Format)
		}
		if out.Format == "jsonl" && out.Field == "" {
			out.Field = "length"
		}
		if out.Format == "lengths" && w.Field != "" {
			p.addf("workload.field", "workload.field = %q: only used with format = \"jsonl\"", w.Field)
		}
	}
	if w.File == "" {
		for _, k := range []string{"format", "field"} {
			if md.IsDefined("workload", k) {
				p.addf("workload."+k, "workload.%s: only used with workload.file", k)
			}
		}
	}
	order, err := workload.ParseListOrder(w.Order)
	if err != nil {
		p.addf("workload.order", "workload.order = %q: must be \"resample\" or \"sequential\"", w.Order)
	}
	out.Order = order
	ov, err := workload.ParseOverlong(w.Overlong)
	if err != nil {
		p.addf("workload.overlong", "workload.overlong = %q: must be \"split\" or \"drop\"", w.Overlong)
	}
	out.Overlong = ov

	if !md.IsDefined("workload", "context_tokens") {
		p.addf("workload.context_tokens", "workload.context_tokens: required, in [1, %d]", job.MaxContextTokens)
	}
	hasTotal, hasPerGPU := md.IsDefined("workload", "batch_tokens"), md.IsDefined("workload", "batch_tokens_per_gpu")
	switch {
	case hasTotal && hasPerGPU:
		p.addf("workload.batch_tokens_per_gpu", "workload: give batch_tokens or batch_tokens_per_gpu, not both")
	case hasTotal:
		out.BatchTokens = w.BatchTokens
		if w.BatchTokens < 1 || w.BatchTokens > MaxBatchTokens {
			p.addf("workload.batch_tokens", "workload.batch_tokens = %d: must be in [1, %d]", w.BatchTokens, int64(MaxBatchTokens))
		}
	case hasPerGPU:
		out.BatchTokensPerGPU = w.BatchTokensPerGPU
		out.BatchTokens = w.BatchTokensPerGPU * int64(max(gpus, 0))
		if w.BatchTokensPerGPU < 1 || w.BatchTokensPerGPU > MaxBatchTokens {
			p.addf("workload.batch_tokens_per_gpu", "workload.batch_tokens_per_gpu = %d: must be in [1, %d]", w.BatchTokensPerGPU, int64(MaxBatchTokens))
		} else if gpus > 0 && out.BatchTokens > MaxBatchTokens {
			p.addf("workload.batch_tokens_per_gpu", "workload.batch_tokens_per_gpu = %d: times cluster.gpus (%d) gives %d tokens per batch; must be <= %d",
				w.BatchTokensPerGPU, gpus, out.BatchTokens, int64(MaxBatchTokens))
		}
	default:
		p.addf("workload.batch_tokens", "workload.batch_tokens (or batch_tokens_per_gpu): required, in [1, %d]", int64(MaxBatchTokens))
	}
	return out
}

// componentFields renames workload's Go field names to the TOML keys of
// [[workload.component]] in validation messages.
var componentFields = strings.NewReplacer("MedianTokens", "median_tokens", "Sigma", "sigma",
	"LowTokens", "min_tokens", "HighTokens", "max_tokens", "Alpha", "alpha")

// components builds a distribution from [[workload.component]] tables.
func (p *parser) components(cs []rawComponent) workload.Distribution {
	const key = "workload.component"
	var dists []workload.Distribution
	var weights []float64
	for i, c := range cs {
		at := fmt.Sprintf("%s[%d]", key, i)
		unused := func(name string, set bool) {
			if set {
				p.addf(key, "%s.%s: not used by kind %q", at, name, c.Kind)
			}
		}
		var d workload.Distribution
		switch c.Kind {
		case "lognormal":
			unused("alpha", c.Alpha != 0)
			unused("tokens", c.Tokens != nil)
			unused("cdf", c.CDF != nil)
			d = workload.LogNormal{MedianTokens: c.MedianTokens, Sigma: c.Sigma, LowTokens: c.MinTokens, HighTokens: c.MaxTokens}
		case "pareto":
			unused("median_tokens", c.MedianTokens != 0)
			unused("sigma", c.Sigma != 0)
			unused("tokens", c.Tokens != nil)
			unused("cdf", c.CDF != nil)
			d = workload.TruncatedPareto{LowTokens: c.MinTokens, HighTokens: c.MaxTokens, Alpha: c.Alpha}
		case "empirical":
			unused("median_tokens", c.MedianTokens != 0)
			unused("sigma", c.Sigma != 0)
			unused("alpha", c.Alpha != 0)
			unused("min_tokens", c.MinTokens != 0)
			unused("max_tokens", c.MaxTokens != 0)
			e, err := workload.NewEmpirical(c.Tokens, c.CDF)
			if err != nil {
				p.addf(key, "%s: %v", at, err)
				continue
			}
			d = e
		default:
			p.addf(key, "%s.kind = %q: must be \"lognormal\", \"pareto\" or \"empirical\"", at, c.Kind)
			continue
		}
		if err := d.Validate(); err != nil {
			p.addf(key, "%s: %s", at, componentFields.Replace(strings.ReplaceAll(err.Error(), "\n", "; ")))
			continue
		}
		w := c.Weight
		if len(cs) == 1 && w == 0 {
			w = 1
		}
		if !(w > 0) || math.IsInf(w, 0) {
			p.addf(key, "%s.weight = %v: must be > 0 (weights are normalised)", at, c.Weight)
			continue
		}
		dists = append(dists, d)
		weights = append(weights, w)
	}
	if len(dists) != len(cs) {
		return nil
	}
	if len(dists) == 1 {
		return dists[0]
	}
	m := workload.Mixture{Weights: weights, Components: dists}
	if err := m.Validate(); err != nil {
		p.addf(key, "%s: %v", key, err)
		return nil
	}
	return m
}

func (p *parser) run(md *toml.MetaData, r rawRun) Run {
	out := Run{Iterations: r.Iterations, WarmupIterations: r.WarmupIterations, Policies: r.Policies}
	if r.Iterations < 1 || r.Iterations > MaxIterations {
		p.addf("run.iterations", "run.iterations = %d: must be in [1, %d]", r.Iterations, MaxIterations)
	}
	if r.WarmupIterations < 0 || (r.Iterations >= 1 && r.WarmupIterations >= r.Iterations) {
		p.addf("run.warmup_iterations", "run.warmup_iterations = %d: must be in [0, run.iterations-1 = %d]", r.WarmupIterations, r.Iterations-1)
	}
	if r.Seed < 0 {
		p.addf("run.seed", "run.seed = %d: must be >= 0", r.Seed)
	}
	out.Seed = uint64(r.Seed)
	out.DollarsPerGPUHour = DefaultDollarsPerGPUHour
	if r.DollarsPerGPU != nil {
		out.DollarsPerGPUHour = *r.DollarsPerGPU
		if !(*r.DollarsPerGPU > 0 && *r.DollarsPerGPU <= 1e4) {
			p.addf("run.dollars_per_gpu_hour", "run.dollars_per_gpu_hour = %v: must be in (0, 10000]", *r.DollarsPerGPU)
		}
	}
	if !md.IsDefined("run", "policies") || len(r.Policies) == 0 {
		p.addf("run.policies", "run.policies: required, a non-empty list from %s", strings.Join(PolicyNames, ", "))
	}
	p.policyList("run.policies", r.Policies)
	return out
}

// policyList reports unknown and repeated policy names in the list at key.
func (p *parser) policyList(key string, names []string) {
	seen := map[string]bool{}
	for _, name := range names {
		switch {
		case !slices.Contains(PolicyNames, name):
			p.addf(key, "%s: unknown policy %q; known: %s", key, name, strings.Join(PolicyNames, ", "))
		case seen[name]:
			p.addf(key, "%s: %q listed twice", key, name)
		}
		seen[name] = true
	}
}

func (p *parser) sweep(md *toml.MetaData, s *rawSweep, base job.Parallel) *Sweep {
	out := &Sweep{GPUs: s.GPUs, ContextTokens: s.ContextTokens, BudgetTokens: s.BudgetTokens, HydraCaps: s.HydraCaps, Policies: s.Policies}
	for _, c := range s.HydraCaps {
		if c != 0 && (c < 1 || c > job.MaxGPUs || c&(c-1) != 0) {
			p.addf("sweep.hydra_cap", "sweep.hydra_cap: value %d must be 0 (closed form) or a power of two in [1, %d]", c, job.MaxGPUs)
		}
	}
	if hasDuplicates(s.HydraCaps) {
		p.addf("sweep.hydra_cap", "sweep.hydra_cap: values must be distinct")
	}
	p.policyList("sweep.policies", s.Policies)
	axes := []struct {
		key    string
		vals   []int
		lo, hi int
	}{
		{"sweep.gpus", s.GPUs, 1, job.MaxGPUs},
		{"sweep.context_tokens", s.ContextTokens, 1, job.MaxContextTokens},
		{"sweep.budget_tokens", s.BudgetTokens, 1, job.MaxBudgetTokens},
	}
	for _, a := range axes {
		for _, v := range a.vals {
			if v < a.lo || v > a.hi {
				p.addf(a.key, "%s: value %d must be in [%d, %d]", a.key, v, a.lo, a.hi)
			}
		}
		if hasDuplicates(a.vals) {
			p.addf(a.key, "%s: values must be distinct", a.key)
		}
	}
	names := map[string]bool{}
	for i, v := range s.Variants {
		at := fmt.Sprintf("sweep.variant[%d]", i)
		if !nameRE.MatchString(v.Name) {
			p.addf("sweep.variant.name", "%s.name = %q: must match [a-z0-9._-]{1,64}", at, v.Name)
		}
		if names[v.Name] {
			p.addf("sweep.variant.name", "%s.name = %q: used twice", at, v.Name)
		}
		names[v.Name] = true
		if v.Model != "" {
			if _, err := job.LookupModel(v.Model); err != nil {
				p.addf("sweep.variant.model", "%s.model = %q: unknown model; known: %s", at, v.Model, strings.Join(job.ModelNames(), ", "))
			}
		}
		par := base
		if err := md.PrimitiveDecode(v.Parallel, &par); err != nil {
			p.decodeErr("sweep.variant.parallel", err)
		}
		out.Variants = append(out.Variants, Variant{Name: v.Name, Model: v.Model, Parallel: par})
	}
	for _, k := range md.Undecoded() {
		if len(k) >= 4 && k[0] == "sweep" && k[1] == "variant" && k[2] == "parallel" {
			p.addf(k.String(), "%s: unknown key%s", k.String(), suggest(k))
		}
	}
	return out
}

// sortedKeys returns a map's keys in order, so problems are reported
// deterministically.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func hasDuplicates(v []int) bool {
	s := slices.Clone(v)
	slices.Sort(s)
	return len(slices.Compact(s)) != len(v)
}

// The [costs] planner_stall values, and the default price of a GPU-hour.
const (
	PlannerStallModeled = "modeled"
	PlannerStallNone    = "none"
	// DefaultDollarsPerGPUHour is the HyDra paper's rate (§6.3, after
	// DeepSeek-AI 2024).
	DefaultDollarsPerGPUHour = 2.0
)

// Point is one concrete scenario of a sweep.
type Point struct {
	// Name identifies the point, e.g. "hy3/gpus=8192".
	Name string
	// Scenario is the base scenario with the point's values applied, validated.
	Scenario *Scenario
}

// Points expands the sweep into its concrete scenarios in a fixed order:
// variants, then gpus, then context_tokens, then budget_tokens, then
// hydra_cap, then policies. A scenario without
// a sweep is one point named after it. Every point is validated; the error names
// the failing points.
func (s *Scenario) Points() ([]Point, error) {
	if s.Sweep == nil {
		return []Point{{Name: s.Name, Scenario: s}}, nil
	}
	sw := s.Sweep
	variants := sw.Variants
	if len(variants) == 0 {
		variants = []Variant{{Name: "", Parallel: s.Job.Parallel}}
	}
	orBase := func(v []int, base int) []int {
		if len(v) == 0 {
			return []int{base}
		}
		return v
	}
	gpus := orBase(sw.GPUs, s.Job.Cluster.GPUs)
	ctxs := orBase(sw.ContextTokens, s.Job.ContextTokens)
	budgets := orBase(sw.BudgetTokens, s.Job.Parallel.BudgetTokens)
	caps := orBase(sw.HydraCaps, s.HydraCap)
	pols := sw.Policies
	if len(pols) == 0 {
		pols = []string{""}
	}
	if n := len(variants) * len(gpus) * len(ctxs) * len(budgets) * len(caps) * len(pols); n > MaxSweepPoints {
		return nil, &Error{File: s.File, Problems: []Problem{{Line: lineOf(s.lines, "sweep"), Key: "sweep",
			Message: fmt.Sprintf("[sweep]: %d points; must be <= %d", n, MaxSweepPoints)}}}
	}
	var points []Point
	var problems []Problem
	for _, v := range variants {
		for _, g := range gpus {
			for _, c := range ctxs {
				for _, b := range budgets {
					for _, cp := range caps {
						for _, pol := range pols {
							pt := *s
							pt.Sweep = nil
							pt.Job.Parallel = v.Parallel
							if v.Model != "" {
								m, err := job.LookupModel(v.Model)
								if err != nil {
									return nil, err
								}
								pt.Job.Model = m
							}
							pt.Job.Cluster.GPUs = g
							pt.Job.ContextTokens = c
							pt.Workload.ContextTokens = c
							pt.Job.Parallel.BudgetTokens = b
							if pt.Workload.BatchTokensPerGPU > 0 {
								pt.Workload.BatchTokens = pt.Workload.BatchTokensPerGPU * int64(g)
							}
							var parts []string
							if v.Name != "" {
								parts = append(parts, v.Name)
							}
							if len(sw.GPUs) > 0 {
								parts = append(parts, fmt.Sprintf("gpus=%d", g))
							}
							if len(sw.ContextTokens) > 0 {
								parts = append(parts, fmt.Sprintf("context=%d", c))
							}
							if len(sw.BudgetTokens) > 0 {
								parts = append(parts, fmt.Sprintf("budget=%d", b))
							}
							if len(sw.HydraCaps) > 0 {
								pt.HydraCap = cp
								parts = append(parts, fmt.Sprintf("cap=%d", cp))
							}
							if len(sw.Policies) > 0 {
								pt.Run.Policies = []string{pol}
								parts = append(parts, "policy="+pol)
							}
							pt.Name = s.Name + "/" + strings.Join(parts, "/")
							if err := pt.Job.Validate(); err != nil {
								fields, others := job.FieldErrors(err)
								for _, f := range fields {
									problems = append(problems, Problem{Line: lineOf(s.lines, "sweep"), Key: jobKey(f.Key),
										Message: fmt.Sprintf("sweep point %s: %s = %v: %s", pt.Name, jobKey(f.Key), f.Value, f.Rule)})
								}
								for _, o := range others {
									problems = append(problems, Problem{Line: lineOf(s.lines, "sweep"), Message: fmt.Sprintf("sweep point %s: %v", pt.Name, o)})
								}
								continue
							}
							if pt.Workload.BatchTokens > MaxBatchTokens {
								problems = append(problems, Problem{Line: lineOf(s.lines, "sweep"), Key: "workload.batch_tokens_per_gpu",
									Message: fmt.Sprintf("sweep point %s: %d tokens per batch; must be <= %d", pt.Name, pt.Workload.BatchTokens, int64(MaxBatchTokens))})
								continue
							}
							p := pt
							points = append(points, Point{Name: pt.Name, Scenario: &p})
						}
					}
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, &Error{File: s.File, Problems: problems}
	}
	return points, nil
}

// BatchSpec is the workload's batch sampling spec for this scenario's seed.
func (s *Scenario) BatchSpec() workload.BatchSpec {
	return workload.BatchSpec{
		TargetTokens:  s.Workload.BatchTokens,
		ContextTokens: s.Workload.ContextTokens,
		Overlong:      s.Workload.Overlong,
		Seed:          s.Run.Seed,
	}
}

// DecodeOptions decodes run.options.<policy> strictly into v (a pointer to the
// policy's options struct): a key v does not have is an error naming file, line
// and key. A policy without an options table leaves v unchanged.
func (s *Scenario) DecodeOptions(policy string, v any) error {
	prim, ok := s.options[policy]
	if !ok || s.md == nil {
		return nil
	}
	p := &parser{file: s.File, lines: s.lines}
	if err := s.md.PrimitiveDecode(prim, v); err != nil {
		p.decodeErr("run.options."+policy, err)
		return p.err()
	}
	for _, k := range s.md.Undecoded() {
		if len(k) >= 3 && k[0] == "run" && k[1] == "options" && k[2] == policy {
			p.addf(k.String(), "%s: unknown option for policy %q", k.String(), policy)
		}
	}
	return p.err()
}

// meanTokens estimates E[min(L, context)] from the distribution's CDF by
// integrating the survival function on a log grid; it is only used to bound the
// number of sequences in a batch, so a few per cent of error do not matter.
func meanTokens(d workload.Distribution, context int) float64 {
	hi := float64(d.MaxTokens())
	if context > 0 && float64(context) < hi {
		hi = float64(context)
	}
	if hi <= 1 {
		return 1
	}
	const n = 2000
	mean := 1.0 // ∫_0^1 (1-F) dx, lengths are >= 1
	prevX, prevS := 1.0, 1-d.CDF(1)
	for i := 1; i <= n; i++ {
		x := math.Pow(hi, float64(i)/n)
		s := 1 - d.CDF(x)
		mean += (x - prevX) * (s + prevS) / 2
		prevX, prevS = x, s
	}
	return max(mean, 1)
}

// allowedKeys lists the keys of each table, for suggestions on unknown keys.
var allowedKeys = map[string][]string{
	"":                       {"name", "description", "cluster", "model", "parallel", "workload", "run", "sweep", "costs"},
	"costs":                  {"profile", "cp_exec", "cp_overlap", "planner_stall", "ulysses_across_nodes"},
	"cluster":                {"gpu", "gpus", "gpus_per_node"},
	"parallel":               {"tp", "pp", "vpp", "ep", "budget_tokens", "first_stage_layers", "last_stage_layers"},
	"workload":               {"preset", "component", "file", "format", "field", "order", "context_tokens", "batch_tokens", "batch_tokens_per_gpu", "overlong"},
	"workload.component":     {"kind", "weight", "median_tokens", "sigma", "alpha", "min_tokens", "max_tokens", "tokens", "cdf"},
	"run":                    {"iterations", "warmup_iterations", "seed", "policies", "options", "dollars_per_gpu_hour"},
	"sweep":                  {"gpus", "context_tokens", "budget_tokens", "hydra_cap", "policies", "variant"},
	"sweep.variant":          {"name", "model", "parallel"},
	"sweep.variant.parallel": {"tp", "pp", "vpp", "ep", "budget_tokens", "first_stage_layers", "last_stage_layers"},
	"model":                  modelKeys(),
	"run.options":            PolicyNames,
}

// modelKeys lists the TOML keys of [model] (preset plus every job.Model field).
func modelKeys() []string {
	keys := []string{"preset"}
	keys = append(keys, job.ModelKeys()...)
	return keys
}

// suggest returns ", allowed here: ..." for an unknown key.
func suggest(k toml.Key) string {
	table := strings.Join(k[:len(k)-1], ".")
	allowed, ok := allowedKeys[table]
	if !ok || len(allowed) == 0 {
		return ""
	}
	if table == "" {
		return "; allowed at the top level: " + strings.Join(allowed, ", ")
	}
	return "; allowed in [" + table + "]: " + strings.Join(allowed, ", ")
}
