package scenarios

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/internal/extpolicy"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// raw types mirror the file; defaults are filled in before decoding.
type rawFile struct {
	Name        string         `toml:"name"`
	Description string         `toml:"description"`
	Cluster     job.Cluster    `toml:"cluster"`
	Model       toml.Primitive `toml:"model"`
	Parallel    rawParallel    `toml:"parallel"`
	Workload    rawWorkload    `toml:"workload"`
	Run         rawRun         `toml:"run"`
	Sweep       *rawSweep      `toml:"sweep"`
	Search      *rawSearch     `toml:"search"`
	Costs       rawCosts       `toml:"costs"`
}

// rawCosts is [costs]: where operator costs come from, and what-if overrides of
// the CP execution each policy assumes.
type rawCosts struct {
	Profile       string            `toml:"profile"`
	PlannerStall  string            `toml:"planner_stall"`
	UlyssesAcross *bool             `toml:"ulysses_across_nodes"`
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
	External         map[string]rawExternal    `toml:"external"`
}

// rawExternal is one [run.external.NAME] table.
type rawExternal struct {
	Command        []string       `toml:"command"`
	Options        map[string]any `toml:"options"`
	TimeoutSeconds *float64       `toml:"timeout_seconds"`
}

type rawSweep struct {
	GPUs          []int                     `toml:"gpus"`
	ContextTokens []int                     `toml:"context_tokens"`
	BudgetTokens  []int                     `toml:"budget_tokens"`
	Options       map[string]toml.Primitive `toml:"options"`
	Policies      []string                  `toml:"policies"`
	Variants      []rawVariant              `toml:"variant"`
}

type rawVariant struct {
	Name     string                    `toml:"name"`
	Model    string                    `toml:"model"`
	Parallel toml.Primitive            `toml:"parallel"`
	Cluster  toml.Primitive            `toml:"cluster"`
	Options  map[string]toml.Primitive `toml:"options"`
}

// modelTable is [model]: an optional preset plus any Model field as an override.
type modelTable struct {
	Preset string `toml:"preset"`
	job.Model
}

// nameRE is the scenario name rule; a name also needs a letter or digit
// (nameAlnumRE), so "." and ".." are refused rather than both becoming the
// results folder "unnamed".
var (
	nameRE      = regexp.MustCompile(`^[a-z0-9._-]{1,64}$`)
	nameAlnumRE = regexp.MustCompile(`[a-z0-9]`)
)

// Parse decodes and validates one scenario. file names it in error messages and
// resolves a relative workload.file. Every problem is reported at once in an
// *Error; unknown keys are problems.
//
// The steps follow the file's tables; each records its problems and goes on,
// so that one run reports everything wrong with the file. The checks of the
// job as a whole, and the sweep's points, need the parts to be sound.
func Parse(data []byte, file string) (*Scenario, error) {
	if n := tooDeep(string(data), MaxNesting); n > 0 {
		return nil, &Error{File: file, Problems: []Problem{{Line: n,
			Message: fmt.Sprintf("arrays and inline tables nested more than %d deep (MaxNesting, the limit of a scenario file)", MaxNesting)}}}
	}
	p := &parser{file: file, lines: keyLines(string(data))}
	raw, md, ok := p.decode(data)
	if !ok {
		return nil, p.err()
	}
	sc := &Scenario{
		Source:      slices.Clone(data),
		Name:        raw.Name,
		Description: raw.Description,
		File:        file,
		lines:       p.lines,
	}
	p.name(md, raw.Name)
	sc.Job.Model = p.model(md, raw.Model)
	pools := p.layout(md, raw, sc)
	sc.Workload = p.workload(md, raw.Workload, raw.Cluster.GPUs)
	sc.Job.ContextTokens = sc.Workload.ContextTokens
	names := p.runAndOptions(md, raw, sc)
	p.costs(md, &raw.Costs, pools, names, sc)
	p.unknownKeys(md)
	p.wholeJob(sc)
	p.sweepTable(md, raw, pools, names, sc)
	p.searchTable(raw, pools, sc)
	return p.finish(sc)
}

// decode reads the TOML into the raw tables over their defaults; ok is false
// (with the problem recorded) when the file is not TOML.
func (p *parser) decode(data []byte) (raw *rawFile, md *toml.MetaData, ok bool) {
	raw = &rawFile{
		Cluster:  job.Cluster{GPUsPerNode: DefaultGPUsPerNode},
		Parallel: newRawParallel(job.Parallel{TP: 1, VPP: 1, EP: 1, SequenceParallel: true}),
		Run:      rawRun{Iterations: DefaultIterations, Seed: DefaultSeed},
		Workload: rawWorkload{Overlong: "split", Order: "resample"},
	}
	meta, err := toml.Decode(string(data), raw)
	if err != nil {
		p.problems = append(p.problems, tomlProblem(err, ""))
		return nil, nil, false
	}
	return raw, &meta, true
}

// name checks the required scenario name.
func (p *parser) name(md *toml.MetaData, name string) {
	if !md.IsDefined("name") {
		p.addf("name", "name: required, a scenario name matching [a-z0-9._-]{1,64}")
	} else if !nameRE.MatchString(name) || !nameAlnumRE.MatchString(name) {
		p.addf("name", "name = %q: must match [a-z0-9._-]{1,64} with at least one letter or digit", name)
	}
}

// layout reads [cluster] and [parallel] into sc.Job: the required keys (fewer
// with cluster.pools, a mixed cluster, which it reports), and a GPU kind with
// a calibration profile.
func (p *parser) layout(md *toml.MetaData, raw *rawFile, sc *Scenario) (pools bool) {
	required := []string{"cluster.gpu", "cluster.gpus", "parallel.pp", "parallel.budget_tokens"}
	pools = md.IsDefined("cluster", "pools")
	if pools {
		required = required[2:]
		p.pools(md, &raw.Cluster)
	}
	for _, k := range required {
		parts := strings.Split(k, ".")
		if !md.IsDefined(parts...) {
			p.addf(k, "%s: required (or cluster.pools for a mixed cluster)", k)
		}
	}
	if raw.Cluster.GPU != "" && !slices.Contains(calib.ProfileNames(), raw.Cluster.GPU) {
		p.addf("cluster.gpu", "cluster.gpu = %q: no calibration profile; known: %s", raw.Cluster.GPU, strings.Join(calib.ProfileNames(), ", "))
	}
	sc.Job.Cluster = raw.Cluster
	sc.Job.Parallel = raw.Parallel.parallel()
	return pools
}

// runAndOptions reads [run] into sc.Run, checks sweep.policies, and decodes
// every policy's options; it returns the names of every policy the scenario
// runs (scenarioPolicies).
func (p *parser) runAndOptions(md *toml.MetaData, raw *rawFile, sc *Scenario) []string {
	sc.Run = p.run(md, raw.Run)
	var swept []string
	if raw.Sweep != nil {
		swept = raw.Sweep.Policies
		p.policyList("sweep.policies", swept)
	}
	names := scenarioPolicies(sc.Run.Policies, append(slices.Clone(swept), searchPolicies(raw.Search)...))
	sc.Run.Options, sc.optionTables = p.policyOptions(md, raw.Run.Options, names)
	return names
}

// costs reads [costs]: a calibration profile file (not for a mixed cluster),
// the Ulysses placement, the planner stall mode, and the per-policy CP
// execution and overlap overrides (only for policies in names).
func (p *parser) costs(md *toml.MetaData, c *rawCosts, pools bool, names []string, sc *Scenario) {
	if md.IsDefined("costs", "profile") {
		if pools {
			p.addf("costs.profile", "costs.profile: replaces the profile of cluster.gpu, and a mixed cluster (cluster.pools) has none; name each pool's gpu instead")
		}
		if c.Profile == "" {
			p.addf("costs.profile", "costs.profile: must name a calibration profile file (e.g. \"calibration/h200.toml\")")
		}
		sc.ProfileFile = c.Profile
	}
	sc.UlyssesAcrossNodes = true // the paper's: inner Ulysses up to the heads, across nodes
	if c.UlyssesAcross != nil {
		sc.UlyssesAcrossNodes = *c.UlyssesAcross
	}
	sc.PlannerStall = PlannerStallModeled
	if md.IsDefined("costs", "planner_stall") {
		switch c.PlannerStall {
		case PlannerStallModeled, PlannerStallNone:
			sc.PlannerStall = c.PlannerStall
		default:
			p.addf("costs.planner_stall", "costs.planner_stall = %q: must be %q or %q", c.PlannerStall, PlannerStallModeled, PlannerStallNone)
		}
	}
	for _, policy := range sortedKeys(c.CPExec) {
		key := "costs.cp_exec." + policy
		if !slices.Contains(names, policy) {
			p.addf(key, "%s: %q is not in run.policies or sweep.policies %q", key, policy, names)
			continue
		}
		e, err := sched.ParseCPExec(c.CPExec[policy])
		if err != nil {
			p.addf(key, "%s = %q: must be one of %s", key, c.CPExec[policy], strings.Join(sched.CPExecNames(), ", "))
			continue
		}
		if sc.CPExec == nil {
			sc.CPExec = map[string]sched.CPExec{}
		}
		sc.CPExec[policy] = e
	}
	for _, policy := range sortedKeys(c.CPOverlap) {
		key := "costs.cp_overlap." + policy
		if !slices.Contains(names, policy) {
			p.addf(key, "%s: %q is not in run.policies or sweep.policies %q", key, policy, names)
			continue
		}
		if sc.CPOverlap == nil {
			sc.CPOverlap = map[string]bool{}
		}
		sc.CPOverlap[policy] = c.CPOverlap[policy]
	}
}

// maxUnknownKeys bounds the unknown-key problems reported for one file; the
// rest are counted in one more problem.
const maxUnknownKeys = 100

// unknownKeys reports the keys no table decoded: one problem per unknown
// table, not one per key inside it, at most maxUnknownKeys of them. The policy
// options and the variants' tables are decoded elsewhere (policyOptions,
// sweep). A key is skipped when one of its prefixes was reported, looked up in
// a set: linear in the keys (a list scanned per key took 26 s for 60,000).
func (p *parser) unknownKeys(md *toml.MetaData) {
	reported := map[string]bool{}
	more := 0
	for _, k := range md.Undecoded() {
		covered := false
		for i := 1; i < len(k) && !covered; i++ {
			covered = reported[k[:i].String()]
		}
		if covered {
			continue
		}
		switch {
		case len(k) >= 4 && k[0] == "sweep" && k[1] == "variant" && (k[2] == "parallel" || k[2] == "cluster" || k[2] == "options"):
			continue // decoded per variant (sweep)
		case len(k) >= 3 && k[0] == "run" && k[1] == "options",
			len(k) >= 3 && k[0] == "sweep" && k[1] == "options":
			continue // decoded per policy (policyOptions, sweep)
		case len(k) >= 5 && k[0] == "run" && k[1] == "external" && k[3] == "options":
			continue // any TOML values, sent to the process as they are
		}
		key := k.String()
		reported[key] = true
		if len(reported) > maxUnknownKeys {
			more++
			continue
		}
		p.addf(key, "%s: unknown key%s", key, suggest(k))
	}
	if more > 0 {
		p.problems = append(p.problems, Problem{Message: fmt.Sprintf("... and %d more unknown keys (at most %d are listed)", more, maxUnknownKeys)})
	}
}

// deriveStageSplit gives a job whose pp·vpp does not divide its layers, and
// that sets neither first_stage_layers, last_stage_layers nor a
// pipeline_layout, the uneven first and last stages a search derives for
// the same layout (StageSplit), and returns a note saying so; "" when the
// job needs none or no split exists (validation then names the problem).
func deriveStageSplit(j *job.Job) string {
	par := &j.Parallel
	layers := j.Model.Layers
	pp, vpp := max(par.PP, 1), max(par.VPP, 1)
	if par.PipelineLayout != "" || par.FirstStageLayers != 0 || par.LastStageLayers != 0 || pp == 1 || layers%(pp*vpp) == 0 {
		return ""
	}
	first, last, err := StageSplit(layers, pp, vpp)
	if err != nil || first == 0 && last == 0 {
		return ""
	}
	par.FirstStageLayers, par.LastStageLayers = first, last
	return fmt.Sprintf("parallel: pp = %d (vpp %d) does not divide model.layers (%d): first_stage_layers = %d and last_stage_layers = %d derived as dcpsim search derives them (set them, or pipeline_layout, to choose)",
		pp, vpp, layers, first, last)
}

// wholeJob checks the job as a whole (its validation, the budgets of each GPU
// kind, the batch's size), only once its parts decoded cleanly: derived checks
// on garbage would only repeat the same problems.
func (p *parser) wholeJob(sc *Scenario) {
	if len(p.problems) > 0 {
		return
	}
	if note := deriveStageSplit(&sc.Job); note != "" {
		sc.Notes = append(sc.Notes, note)
	}
	p.addErr(sc.Job.Validate(), jobKey)
	if len(p.problems) == 0 {
		p.kindBudgets(sc, "")
	}
	if len(p.problems) == 0 {
		p.batch(sc, "")
	}
}

// sweepTable reads [sweep] into sc.Sweep, when there is one (a mixed cluster
// cannot be swept by GPU count).
func (p *parser) sweepTable(md *toml.MetaData, raw *rawFile, pools bool, names []string, sc *Scenario) {
	if raw.Sweep == nil {
		return
	}
	if pools && len(raw.Sweep.GPUs) > 0 {
		p.addf("sweep.gpus", "sweep.gpus: a mixed cluster (cluster.pools) cannot be swept by GPU count; write one scenario per pool size")
	}
	sc.Sweep = p.sweep(md, raw.Sweep, raw.Parallel.parallel(), raw.Cluster.Fabric, names)
}

// finish returns sc, or every problem found; a sweep's points must also be
// valid scenarios (Points).
func (p *parser) finish(sc *Scenario) (*Scenario, error) {
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
	out.External = p.externals(r.External)
	p.known = append(policies.Names(), sortedKeys(out.External)...)
	if !md.IsDefined("run", "policies") || len(r.Policies) == 0 {
		p.addf("run.policies", "run.policies: required, a non-empty list from %s (or a [run.external.NAME] policy)", strings.Join(policies.Names(), ", "))
	}
	p.policyList("run.policies", r.Policies)
	return out
}

// externalNameRE is the syntax of an external policy's name.
var externalNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// externals checks the [run.external.NAME] tables.
func (p *parser) externals(raw map[string]rawExternal) map[string]ExternalPolicy {
	if len(raw) == 0 {
		return nil
	}
	out := map[string]ExternalPolicy{}
	for _, name := range sortedKeys(raw) {
		r, key := raw[name], "run.external."+name
		switch {
		case !externalNameRE.MatchString(name):
			p.addf(key, "[%s]: the name must match %s", key, externalNameRE)
			continue
		case slices.Contains(policies.Names(), name):
			p.addf(key, "[%s]: %q is a built-in policy; give the external one another name", key, name)
			continue
		}
		e := ExternalPolicy{Command: r.Command, Options: r.Options, TimeoutSeconds: extpolicy.DefaultTimeout.Seconds()}
		switch {
		case len(r.Command) == 0 || r.Command[0] == "":
			p.addf(key+".command", "%s.command: required, the program and its arguments, e.g. [\"python3\", \"policy.py\"]", key)
		case len(r.Command) > extpolicy.MaxCommandArgs:
			p.addf(key+".command", "%s.command: %d words, at most %d", key, len(r.Command), extpolicy.MaxCommandArgs)
		}
		for i, w := range r.Command {
			if strings.ContainsRune(w, 0) {
				p.addf(key+".command", "%s.command[%d]: contains a NUL byte", key, i)
			}
		}
		if r.TimeoutSeconds != nil {
			e.TimeoutSeconds = *r.TimeoutSeconds
			if !(e.TimeoutSeconds > 0 && e.TimeoutSeconds <= extpolicy.MaxTimeout.Seconds()) {
				p.addf(key+".timeout_seconds", "%s.timeout_seconds = %v: must be in (0, %g]", key, e.TimeoutSeconds, extpolicy.MaxTimeout.Seconds())
			}
		}
		if e.Options == nil {
			e.Options = map[string]any{}
		}
		// The options go to the process as JSON, which has no NaN or
		// infinity: refused here, not when the first batch is sent.
		if k, v, ok := nonFinite(key+".options", e.Options); ok {
			p.addf(key+".options", "%s = %v: must be a finite number (the options are sent as JSON)", k, v)
		}
		out[name] = e
	}
	return out
}

// nonFinite finds a NaN or infinite number in v (TOML tables and arrays),
// returning its key path (tables by key, in sorted order; arrays by index).
func nonFinite(path string, v any) (string, float64, bool) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return path, x, true
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if kp, f, ok := nonFinite(path+"."+k, x[k]); ok {
				return kp, f, true
			}
		}
	case []any:
		for i, e := range x {
			if kp, f, ok := nonFinite(fmt.Sprintf("%s[%d]", path, i), e); ok {
				return kp, f, true
			}
		}
	case []map[string]any:
		for i, e := range x {
			if kp, f, ok := nonFinite(fmt.Sprintf("%s[%d]", path, i), e); ok {
				return kp, f, true
			}
		}
	}
	return "", 0, false
}

// policyList reports unknown and repeated policy names in the list at key.
func (p *parser) policyList(key string, names []string) {
	seen := map[string]bool{}
	known := p.known
	if known == nil {
		known = policies.Names()
	}
	for _, name := range names {
		switch {
		case !slices.Contains(known, name):
			p.addf(key, "%s: unknown policy %q; known: %s", key, name, strings.Join(known, ", "))
		case seen[name]:
			p.addf(key, "%s: %q listed twice", key, name)
		}
		seen[name] = true
	}
}

// scenarioPolicies is every policy a scenario runs: run.policies, then the
// ones only sweep.policies names.
func scenarioPolicies(run, swept []string) []string {
	out := slices.Clone(run)
	for _, n := range swept {
		if !slices.Contains(out, n) {
			out = append(out, n)
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

// batch checks the size of one batch of a valid job: its expected sequences
// and the least microbatch count it needs. where prefixes the messages (a
// sweep point's name).
func (p *parser) batch(sc *Scenario, where string) {
	w := sc.Workload
	if w.Distribution != nil {
		mean, ok := p.meanLengths[w.ContextTokens]
		if !ok {
			mean = meanTokens(w.Distribution, w.ContextTokens)
			if p.meanLengths != nil {
				p.meanLengths[w.ContextTokens] = mean
			}
		}
		if n := float64(w.BatchTokens) / mean; n > MaxSequencesPerBatch {
			p.addf("workload.batch_tokens", "%sworkload.batch_tokens = %d: expected %.3g sequences per batch at a mean length of %.0f tokens; must be <= %d",
				where, w.BatchTokens, n, mean, MaxSequencesPerBatch)
		}
	}
	pool := int64(sc.Job.PoolRanks()) * int64(sc.Job.Parallel.BudgetTokens)
	if m := (w.BatchTokens + pool - 1) / max(pool, 1); m > MaxMicrobatches {
		p.addf("workload.batch_tokens", "%sworkload.batch_tokens = %d: needs at least %d microbatches per iteration at G·B = %d; must be <= %d (more GPUs or a larger budget_tokens)",
			where, w.BatchTokens, m, pool, MaxMicrobatches)
	}
}
