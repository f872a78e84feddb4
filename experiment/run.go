package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"

	"github.com/dcpsim/dcpsim/costmodel"
	"github.com/dcpsim/dcpsim/internal/extpolicy"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/sim/step"
	"github.com/dcpsim/dcpsim/workload"
)

// MaxMBSecondsKept bounds the microbatch times a run keeps per policy for the
// MB-time figure: the measured iterations' times in order, as long as they
// fit (2^20 values, 8 MiB), so memory does not grow with the iterations.
const MaxMBSecondsKept = 1 << 20

// Options choose what Run does beyond the scenario itself.
type Options struct {
	// Policy, when set, runs only that policy (with the scenario's options for
	// it, or its defaults).
	Policy string
	// TraceRanks are the HDP ranks drawn in timelines (nil: rank 0 and stage
	// 0's busiest and idlest ranks).
	TraceRanks []int
	// DollarsPerGPUHour overrides the scenario's price when > 0.
	DollarsPerGPUHour float64
	// Sequential runs the policies one after another instead of concurrently
	// (results do not depend on it, except the measured Go planner times).
	Sequential bool
	// Timelines builds one Timeline per policy, of the first measured
	// iteration.
	Timelines bool
	// Progress, when set, is called before the first iteration (done 0) and
	// after every iteration, with the iterations done and the total.
	Progress func(done, total int)
	// Batches, when set, gives iteration k's batch instead of the
	// scenario's sampler: it must return what sc.NewSampler().Batch(k)
	// would (a search samples each batch once for all its candidates). Run
	// does not modify the batch.
	Batches func(k int) workload.Batch
	// AllowExec allows starting the programs the scenario names (its
	// external policies; CheckExec): without it a scenario that names
	// any is refused.
	AllowExec bool
	// Setup, when set, is NewSetup of the scenario's job, made once for
	// runs that share it (a search's candidates of one layout); nil: Run
	// makes it.
	Setup *Setup
}

// Outcome is everything a run of one scenario produced.
type Outcome struct {
	// Summary has one PolicySummary per policy, in the scenario's order; a
	// policy that failed has its Error set.
	Summary results.Summary
	// Rows are iterations.csv: every policy's iterations, policy by policy.
	Rows []results.IterationRow
	// Timelines are one per policy that ran (Options.Timelines).
	Timelines []results.Timeline
	// Timings are the measured wall times (timings.json), apart from the
	// deterministic Summary and Rows.
	Timings results.Timings
	// Logs are the external policies' stderr, one file each.
	Logs []Log
}

// Hash is the SHA-256 identity of a scenario's inputs: its TOML source, its
// name (every point of a sweep differs), its policies and their decoded
// options.
func Hash(sc *scenarios.Scenario) string {
	h := sha256.New()
	h.Write(sc.Source)
	h.Write([]byte{0})
	h.Write([]byte(sc.Name))
	for _, o := range sc.Overrides {
		h.Write([]byte("\x00override " + o))
	}
	for _, p := range sc.Run.Policies {
		h.Write([]byte("\x00" + p))
		if o, ok := sc.Run.Options[p]; ok {
			b, _ := json.Marshal(o) // options are plain structs: never fails
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Run plans and simulates every policy of sc (or only opts.Policy) on the same
// batches, iteration by iteration (each batch is sampled once and dropped
// after its iteration, so memory does not grow with the batches), and
// summarises them. A policy that fails is reported in its PolicySummary.Error
// and the others carry on; an error is returned only when the scenario itself
// cannot run (an unknown policy, a broken cost model, a length file that
// cannot be read).
func Run(sc *scenarios.Scenario, opts Options) (*Outcome, error) {
	return RunContext(context.Background(), sc, opts)
}

// RunContext is Run, stopped between iterations once ctx is done (it then
// returns ctx's error).
func RunContext(ctx context.Context, sc *scenarios.Scenario, opts Options) (*Outcome, error) {
	rs, err := startRun(ctx, sc, opts, false)
	if err != nil {
		return nil, err
	}
	defer rs.close()
	defer rs.idle()
	if err := rs.advance(ctx, sc.Run.Iterations); err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		opts.Progress(sc.Run.Iterations, sc.Run.Iterations)
	}
	return rs.outcome(func(r *policyRun) *policyRun { return r }, sc)
}

// runState is a run in progress: its setup, its batches and its policies'
// runs, with the iterations simulated so far. RunContext runs one to its
// scenario's end; a search continues a candidate's run from rung to rung
// (advance) and reads each rung's outcome from the iterations it kept
// (rungOutcome), instead of simulating the first iterations again.
type runState struct {
	sc    *scenarios.Scenario
	opts  Options
	setup *Setup
	batch func(k int) workload.Batch
	runs  []*policyRun
	done  int // iterations simulated
	// digests are the SHA-256 of each simulated iteration's batch
	// (batchDigest), in order: Summary.BatchesSHA256 is made from them.
	digests [][sha256.Size]byte
}

// startRun builds a run of sc: its setup (opts.Setup, else NewSetup), its
// batches and its policies. With keep, every policy keeps what each
// iteration's summary needs (rungOutcome).
func startRun(ctx context.Context, sc *scenarios.Scenario, opts Options, keep bool) (*runState, error) {
	names := sc.Run.Policies
	if opts.Policy != "" {
		names = []string{opts.Policy}
	}
	if err := CheckExec(sc, opts.AllowExec, names...); err != nil {
		return nil, err
	}
	setup := opts.Setup
	if setup == nil {
		var err error
		if setup, err = NewSetup(sc); err != nil {
			return nil, err
		}
	}
	batch := opts.Batches
	if batch == nil {
		sampler, err := sc.NewSampler()
		if err != nil {
			return nil, err
		}
		batch = sampler.Batch
	}
	rs := &runState{sc: sc, opts: opts, setup: setup, batch: batch, runs: make([]*policyRun, 0, len(names))}
	for _, name := range names {
		d, err := descriptorFor(sc, name)
		if err != nil {
			rs.close()
			return nil, err
		}
		r := newPolicyRun(ctx, sc, d, setup, opts)
		r.keepIterations = keep
		rs.runs = append(rs.runs, r)
	}
	return rs, nil
}

// close ends the external policies' processes (a no-op once closeExternal
// has run).
func (rs *runState) close() {
	for _, r := range rs.runs {
		if r.ext != nil {
			_ = r.ext.Close()
		}
	}
}

// idle releases the policies' simulators (their memos, up to 13 MiB each,
// go back to costmodel's pool) while the run waits for its next advance, or
// once it is over.
func (rs *runState) idle() {
	for _, r := range rs.runs {
		if r.sim != nil {
			r.sim.Release()
			r.sim = nil
		}
	}
}

// advance simulates iterations rs.done..n-1 of every policy that has not
// failed.
func (rs *runState) advance(ctx context.Context, n int) error {
	for k := rs.done; k < n; k++ {
		if rs.opts.Progress != nil {
			rs.opts.Progress(k, rs.sc.Run.Iterations)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		b := rs.batch(k)
		rs.digests = append(rs.digests, batchDigest(b.Lengths))
		var g errgroup.Group
		if rs.opts.Sequential {
			g.SetLimit(1)
		}
		for _, r := range rs.runs {
			if r.failed() {
				continue
			}
			g.Go(func() error { r.iteration(k, b); return nil })
		}
		_ = g.Wait() // each run keeps its own error
		rs.done = k + 1
	}
	return nil
}

// outcome summarises each policy's run as view gives it, for scenario sc
// (the run's, or one of fewer iterations: rungOutcome).
func (rs *runState) outcome(view func(*policyRun) *policyRun, sc *scenarios.Scenario) (*Outcome, error) {
	profiles, err := sc.ProfileRefs()
	if err != nil {
		return nil, err
	}
	out := &Outcome{Summary: summaryHead(sc, rs.setup.Inputs, rs.opts, profiles), Timings: results.Timings{Scenario: sc.Name}}
	out.Summary.BatchesSHA256 = batchesSHA256(rs.digests[:min(len(rs.digests), sc.Run.Iterations)])
	for _, r := range rs.runs {
		r = view(r)
		r.finish()
		r.closeExternal(out)
		out.Summary.Policies = append(out.Summary.Policies, r.sum)
		out.Timings.Policies = append(out.Timings.Policies, r.timings)
		out.Rows = append(out.Rows, r.rows...)
		if r.timeline != nil {
			out.Timelines = append(out.Timelines, *r.timeline)
		}
	}
	compare(&out.Summary)
	return out, nil
}

// rungOutcome is the outcome of the run's first n iterations (simulated:
// n <= rs.done) with the first w of them warm-up, from the iterations its
// policies kept (startRun with keep): what RunContext gives for the
// scenario with n iterations and w warm-up ones, its timelines and external
// processes aside. The runs go on unchanged.
func (rs *runState) rungOutcome(n, w int) (*Outcome, error) {
	sc := *rs.sc
	sc.Run.Iterations, sc.Run.WarmupIterations = n, w
	return rs.outcome(func(r *policyRun) *policyRun { return r.replay(&sc, n) }, &sc)
}

// batchDigest is the SHA-256 of one batch: its sequence count and lengths,
// little-endian 64-bit integers.
func batchDigest(lengths []int) [sha256.Size]byte {
	h := sha256.New()
	var chunk [4096]byte // the words go to the hash a chunk at a time
	buf := binary.LittleEndian.AppendUint64(chunk[:0], uint64(len(lengths)))
	for _, s := range lengths {
		if len(buf) == len(chunk) {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = binary.LittleEndian.AppendUint64(buf, uint64(s))
	}
	h.Write(buf)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// batchesSHA256 is Summary.BatchesSHA256: the hex SHA-256 of the
// iterations' batch digests in order ("" for none).
func batchesSHA256(digests [][sha256.Size]byte) string {
	if len(digests) == 0 {
		return ""
	}
	h := sha256.New()
	for _, d := range digests {
		h.Write(d[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// summaryHead is the scenario part of a Summary.
func summaryHead(sc *scenarios.Scenario, in sched.Inputs, opts Options, profiles []scenarios.ProfileRef) results.Summary {
	j, par := sc.Job, sc.Job.Parallel
	dollars := sc.Run.DollarsPerGPUHour
	if opts.DollarsPerGPUHour > 0 {
		dollars = opts.DollarsPerGPUHour
	}
	return results.Summary{
		Scenario: sc.Name, Hash: Hash(sc), Seed: sc.Run.Seed,
		Iterations: sc.Run.Iterations, WarmupIterations: sc.Run.WarmupIterations,
		Layout: results.Layout{GPUs: j.Cluster.GPUs, GPU: j.Cluster.Label(), Model: j.Model.Name,
			TP: par.TP, PP: in.PP, VPP: in.VPP, EP: in.EPSize(), PoolRanks: in.PoolRanks,
			BudgetTokens: in.BudgetTokens, ContextTokens: j.ContextTokens, Recompute: string(par.RecomputeMode()),
			RecomputeLayers: par.RecomputeLayers, Precision: string(par.PrecisionMode()), BudgetAuto: par.BudgetAuto},
		DollarsPerGPUHour: dollars, PlannerStall: sc.PlannerStall, UlyssesAcrossNodes: sc.UlyssesAcrossNodes,
		Profiles: profiles,
	}
}

// policyRun is one policy's side of a Run: its policy (which may keep state
// from one iteration to the next), its CP execution, its rows and what the
// summary needs beyond them.
type policyRun struct {
	sc       *scenarios.Scenario
	desc     policies.Descriptor
	setup    *Setup
	opts     Options
	policy   sched.Policy
	ext      *extpolicy.Policy    // the process of an external policy; nil for a built-in one
	sim      *costmodel.Simulator // this run's own scratch for pricing and running plans
	exec     costmodel.Exec
	err      error
	skipped  bool                 // err names a program the policy needs that is not installed
	oom      *results.OutOfMemory // set with err when a plan did not fit
	lastStep float64              // the previous iteration's step seconds (PlansAhead)
	sum      results.PolicySummary
	rows     []results.IterationRow
	timeline *results.Timeline
	// goSeconds are the measured wall times of the plans, by iteration
	// (results.Timings; never in the rows).
	goSeconds []float64
	// mbSeconds pools the measured iterations' microbatch times (the MB-time
	// figure), bounded by MaxMBSecondsKept.
	mbSeconds []float64
	slots     map[int]float64 // GPU-slots at each CP degree, summed over iterations
	// fallbackSlots sums costmodel.Iteration.FallbackSlots over iterations.
	fallbackSlots float64
	// timings are the measured wall times, once finished.
	timings results.PolicyTimings
	// keepIterations keeps every iteration's measured (without its plan's
	// groups and its timeline) in kept, for replay.
	keepIterations bool
	kept           []measured
}

func newPolicyRun(ctx context.Context, sc *scenarios.Scenario, d policies.Descriptor, setup *Setup, opts Options) *policyRun {
	r := &policyRun{sc: sc, desc: d, setup: setup, opts: opts, slots: map[int]float64{}, sim: setup.Model.NewSimulator()}
	if _, ok := sc.Run.External[d.Name]; ok {
		r.ext, r.err = startExternal(ctx, sc, d.Name, setup, opts.AllowExec)
		if r.ext != nil {
			r.policy = r.ext
		}
	} else {
		r.policy, r.err = BuildPolicy(d, sc.Run.Options[d.Name], setup)
	}
	r.skipped = errors.Is(r.err, ErrMissingProgram)
	cp, overlap := sc.CPExecFor(d, r.policy)
	r.exec = costmodel.Exec{CP: cp, OverlapAllToAll: overlap}
	r.sum = results.PolicySummary{Policy: d.Name, CPExec: cp.String(), OverlapAllToAll: overlap}
	return r
}

func (r *policyRun) failed() bool { return r.err != nil }

// iteration plans, prices and simulates batch b (iteration k) and keeps its
// row.
func (r *policyRun) iteration(k int, b workload.Batch) {
	m, err := r.step(k, b)
	if err == nil {
		err = r.keep(m)
	}
	if err == nil && r.keepIterations {
		r.kept = append(r.kept, r.forReplay(m))
	}
	if err != nil {
		r.err = fmt.Errorf("iteration %d: %w", k, err)
	}
}

// measured is one iteration's outcome: its row, and what the summary and
// the timeline take beyond it.
type measured struct {
	row results.IterationRow
	// plan is the iteration's plan; nil when kept for replay, which keeps
	// only the option values it chose (chosen: WLB-LLM's diagnostics name
	// every document's origin).
	plan     *sched.Plan
	chosen   map[string]float64
	result   *step.Result
	stats    sched.Stats
	fallback int64 // costmodel.Outcome.FallbackSlots
	memory   costmodel.MemoryUse
}

// forReplay is m without what replay does not read: the plan's groups and
// diagnostics (but the option values it chose), the engine's timelines.
// The microbatch times are copied.
func (r *policyRun) forReplay(m *measured) measured {
	return measured{row: m.row, chosen: r.chosenOptions(m), result: &step.Result{MBSeconds: slices.Clone(m.result.MBSeconds)},
		stats: m.stats, fallback: m.fallback, memory: m.memory}
}

// replay is r as a run of sc (r's scenario with fewer iterations, n, and
// maybe another warm-up) would have left it: its first n kept iterations
// kept again with sc's warm-up, and its error if it failed within them.
// r must keep its iterations (keepIterations) and have run n of them or
// failed; sc must not ask for timelines.
func (r *policyRun) replay(sc *scenarios.Scenario, n int) *policyRun {
	c := &policyRun{sc: sc, desc: r.desc, setup: r.setup, opts: r.opts, policy: r.policy, exec: r.exec, skipped: r.skipped,
		slots: map[int]float64{}, sum: results.PolicySummary{Policy: r.sum.Policy, CPExec: r.sum.CPExec, OverlapAllToAll: r.sum.OverlapAllToAll}}
	if r.err != nil && len(r.kept) < n {
		c.err, c.oom = r.err, r.oom
	}
	for k := range min(n, len(r.kept)) {
		m := r.kept[k]
		m.row.Warmup = k < sc.Run.WarmupIterations
		_ = c.keep(&m) // no timeline: nothing to fail
	}
	c.goSeconds = r.goSeconds[:min(n, len(r.goSeconds))]
	return c
}

// step runs iteration k on the straight road: the plan, then one call that
// prices and simulates it (costmodel.Simulator.Simulate), measured into a row.
func (r *policyRun) step(k int, b workload.Batch) (*measured, error) {
	in := r.setup.Inputs
	start := time.Now()
	plan, err := r.policy.Plan(b.Lengths, in)
	r.goSeconds = append(r.goSeconds, time.Since(start).Seconds())
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if r.ext != nil {
		// An external plan is checked as any plan (every sequence once, groups
		// inside the pool, budgets); the built-in policies' plans are by tests.
		if err := sched.Validate(plan, b.Lengths, in, r.ext.Promises()); err != nil {
			return nil, fmt.Errorf("plan: external policy %s, batch %d: its plan breaks the rules: %w", r.desc.Name, k, err)
		}
	}
	lengths := plan.Trained(b.Lengths) // a stateful policy trains its own set
	var tokens int64
	for _, s := range lengths {
		tokens += int64(s)
	}
	stall := costmodel.PlannerStallSeconds(plan.StallWork)
	onPath := 0.0
	if r.sc.PlannerStall == scenarios.PlannerStallModeled {
		onPath = stall
		if r.desc.PlansAhead { // planned during the previous iteration: only the excess waits
			onPath = max(0, stall-r.lastStep)
		}
	}
	if r.sim == nil {
		r.sim = r.setup.Model.NewSimulator()
	}
	out, err := r.sim.Simulate(plan, lengths, r.exec, onPath)
	if err != nil {
		return nil, err
	}
	if oom := out.OutOfMemory; oom != nil {
		r.oom = &results.OutOfMemory{Iteration: k, Stage: oom.Stage, Rank: oom.Rank, Kind: oom.Kind,
			NeededBytes: oom.TotalBytes(), AvailableBytes: oom.HBMBytes,
			StatesBytes: oom.StatesBytes, ReserveBytes: oom.ReserveBytes, ActivationBytes: oom.ActivationBytes}
		return nil, oom
	}
	res := out.Result
	peak := out.Memory.Peak()
	st := sched.ComputeStats(plan, lengths, in.EPSize())
	t := res.IterationSeconds()
	cv, maxMin := spread(res.MBSeconds)
	r0 := res.Stages[0].Ranks[0]
	it := float64(res.Iteration)
	row := results.IterationRow{
		Policy: r.desc.Name, Iteration: k, Warmup: k < r.sc.Run.WarmupIterations, StepSeconds: t, Tokens: tokens, Sequences: len(lengths),
		Measures: results.Measures{
			ComputeShare: res.ComputeShare, ExposedCommShare: res.ExposedCommShare,
			PPBubbleShare: res.PPBubbleShare, DPBubbleShare: res.DPBubbleShare, PlannerStallShare: res.StallShare, SyncShare: res.SyncShare,
			PPBubbleRank0Share: float64(r0.PPBubble) / it, DPBubbleRank0Share: float64(r0.DPBubble) / it,
			StepSecondsNoStall: t - res.PlannerStall.Seconds(), MFU: r.setup.Model.MFU(lengths, t),
			MBTimeCV: cv, MBTimeMaxOverMin: maxMin, Microbatches: st.RankMicrobatchesMean,
			PlannerModeledSeconds: stall, PlannerWorkUnits: float64(plan.WorkUnits),
			PeakMemoryBytes: peak.TotalBytes(), PeakActivationBytes: peak.ActivationBytes,
			EPBarrierWaitShare: out.HeldSeconds / (float64(len(res.Stages)*in.PoolRanks) * t),
			DPStragglerRatio:   dpStraggler(res),
		},
	}
	return &measured{row: row, plan: plan, result: res, stats: st, fallback: out.FallbackSlots, memory: out.Memory}, nil
}

// dpStraggler is results.Measures.DPStragglerRatio of a result: per stage,
// the slowest rank's span from the planner stall's end to its last backward
// over the median rank's (ranks in no microbatch left out), averaged over
// the stages with a median span above 0.
func dpStraggler(res *step.Result) float64 {
	var sum float64
	n := 0
	spans := make([]float64, 0, len(res.Stages[0].Ranks))
	for _, st := range res.Stages {
		spans = spans[:0]
		for _, r := range st.Ranks {
			if r.Microbatches > 0 {
				spans = append(spans, float64(r.LastBackwardEnd-res.PlannerStall))
			}
		}
		if len(spans) == 0 {
			continue
		}
		slices.Sort(spans)
		med := spans[len(spans)/2]
		if len(spans)%2 == 0 {
			med = (spans[len(spans)/2-1] + spans[len(spans)/2]) / 2
		}
		if med > 0 {
			sum += spans[len(spans)-1] / med
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// keep records an iteration: its row, and for a measured one what the
// summary needs beyond the rows (the CP-degree slots, the microbatch times,
// the chosen options and the timeline of the first).
func (r *policyRun) keep(m *measured) error {
	r.rows = append(r.rows, m.row)
	r.lastStep = m.row.StepSeconds
	if m.row.Warmup {
		return nil
	}
	if r.sum.Iterations == 0 {
		r.sum.ChosenOptions = r.chosenOptions(m)
		if r.opts.Timelines {
			tl, err := buildTimeline(r.desc.Name, m.row.Iteration, m.plan, m.result, r.opts.TraceRanks)
			if err != nil {
				return fmt.Errorf("timeline: %w", err)
			}
			r.timeline = tl
		}
	}
	r.sum.Iterations++
	if len(r.mbSeconds)+len(m.result.MBSeconds) <= MaxMBSecondsKept {
		r.mbSeconds = append(r.mbSeconds, m.result.MBSeconds...)
	}
	for _, d := range m.stats.Degrees {
		r.slots[d.Degree] += d.Share * float64(m.stats.Slots)
	}
	r.fallbackSlots += float64(m.fallback)
	ps := &r.sum
	if ps.PeakMemoryByStageBytes == nil {
		ps.PeakMemoryByStageBytes = make([]float64, len(m.memory.Stages))
	}
	for s, g := range m.memory.Stages {
		ps.PeakMemoryByStageBytes[s] = max(ps.PeakMemoryByStageBytes[s], g.TotalBytes())
	}
	if peak := m.memory.Peak(); peak.TotalBytes() > ps.PeakMemoryMaxBytes {
		ps.PeakMemoryMaxBytes, ps.HBMBytes = peak.TotalBytes(), peak.HBMBytes
	}
	return nil
}

// chosenOptions returns the option values the policy chose itself on m's
// plan (sched.OptionChooser; nil when none).
func (r *policyRun) chosenOptions(m *measured) map[string]float64 {
	if m.plan == nil {
		return m.chosen
	}
	oc, ok := m.plan.Diagnostics.(sched.OptionChooser)
	if !ok {
		return nil
	}
	var chosen map[string]float64
	for _, key := range r.desc.OptionKeys() {
		if v, ok := oc.ChosenOption(key); ok {
			if chosen == nil {
				chosen = map[string]float64{}
			}
			chosen[key] = v
		}
	}
	return chosen
}

// finish computes the summary from the rows (results.Means and the step
// times' mean, p95 and tokens/day), or turns it into an error line.
func (r *policyRun) finish() {
	ps := &r.sum
	if r.err == nil && ps.Iterations == 0 {
		r.err = errors.New("no iteration after the warm-up")
	}
	if r.err != nil {
		*ps = results.PolicySummary{Policy: ps.Policy, CPExec: ps.CPExec, OverlapAllToAll: ps.OverlapAllToAll, Error: r.err.Error(), Skipped: r.skipped, OutOfMemory: r.oom}
		r.rows, r.timeline, r.goSeconds = nil, nil, nil
		r.timings = results.PolicyTimings{Policy: ps.Policy}
		return
	}
	var steps, goSeconds []float64
	var tokens float64
	for i, row := range r.rows {
		if !row.Warmup {
			steps = append(steps, row.StepSeconds)
			goSeconds = append(goSeconds, r.goSeconds[i])
			tokens += float64(row.Tokens)
		}
	}
	ps.Measures = results.Means(r.rows, r.desc.Name)
	ps.StepSecondsMean, ps.StepSecondsP95, ps.TokensPerDay = stepFigures(steps, tokens)
	ps.DegreeShares = sched.SharesOf(r.slots)
	ps.MBSeconds = r.mbSeconds
	var all float64
	for _, n := range r.slots {
		all += n
	}
	if all > 0 {
		ps.UlyssesFallbackShare = r.fallbackSlots / all
	}
	r.timings = results.PolicyTimings{Policy: ps.Policy, PlannerGoSecondsMean: stat.Mean(goSeconds, nil), PlannerGoSeconds: r.goSeconds}
}

// compare fills the columns that compare policies or need the layout: the
// first policy's speedup and the cost per 10^12 tokens.
func compare(s *results.Summary) {
	var ref float64
	if len(s.Policies) > 0 && s.Policies[0].Error == "" {
		ref = s.Policies[0].StepSecondsMean
	}
	for i := range s.Policies {
		p := &s.Policies[i]
		if p.Error != "" {
			continue
		}
		if ref > 0 {
			p.SpeedupOfFirst = p.StepSecondsMean / ref
		}
		p.DollarsPer1TTokens = dollarsPer1TTokens(s.GPUs, s.DollarsPerGPUHour, p.TokensPerDay)
	}
}

// stepFigures are the summary's figures of the measured iterations' step
// seconds and their tokens in all: the mean step, its p95 and tokens per
// day. A resumed search recomputes them from an evaluation file's steps
// (evalStore.load) with this same function.
func stepFigures(steps []float64, tokens float64) (mean, p95, tokensPerDay float64) {
	return stat.Mean(steps, nil), percentile(steps, 0.95), tokens * 86400 / floats.Sum(steps)
}

// dollarsPer1TTokens is the cost of 10^12 tokens on gpus GPUs at price per
// GPU-hour (0 without throughput).
func dollarsPer1TTokens(gpus int, price, tokensPerDay float64) float64 {
	if !(tokensPerDay > 0) {
		return 0
	}
	return float64(gpus) * price * (1e12 / tokensPerDay * 24)
}

// spread returns the coefficient of variation (population std / mean) and the
// max/min ratio of xs (0 and 1 for fewer than two values; max/min is 0 when
// the minimum is 0).
func spread(xs []float64) (cv, maxOverMin float64) {
	if len(xs) < 2 {
		return 0, 1
	}
	mean, std := stat.PopMeanStdDev(xs, nil)
	if mean == 0 {
		return 0, 1
	}
	if lo := slices.Min(xs); lo > 0 {
		maxOverMin = slices.Max(xs) / lo
	}
	return std / mean, maxOverMin
}

// percentile returns the nearest-rank q-quantile of xs (0 for none).
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stat.Quantile(q, stat.Empirical, slices.Sorted(slices.Values(xs)), nil)
}
