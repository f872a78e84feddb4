package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/workload"
)

// A layout search (dcpsim search) ranks every candidate of a scenario's
// [search] space (scenarios.Candidates: layouts × policies) by tokens per
// day. Candidates compete inside their group, the candidates of one cluster
// (GPU count and kinds) and one policy, which see the same batches: the best
// layout of every policy at every cluster size is found, so the best per
// policy, the Pareto front over GPUs and the overall ranking are exact
// whenever each group's is.
//
// Inside a group, three rules settle the candidates, cheapest first:
//
//  1. Validity and memory (scenarios.Candidates): a layout the scenario
//     validation refuses is invalid, with the reason; one whose model states
//     do not fit (or, with budget_tokens = "auto", whose HBM has room for no
//     token) is out of memory. Neither is simulated.
//  2. Successive halving: rung r simulates the scenario's first n_r
//     iterations, n_0 = 1 < n_1 < ... < n_R the scenario's own (n_{r-1} =
//     ⌈n_r/eta⌉, down to 1), with the scenario's warm-up (less where a rung
//     is too short to keep a measured iteration after it: the first rung
//     measures iteration 0). Rung r keeps the best max(top, ⌈n/eta⌉) of its
//     n candidates by mean step (the cut before the last rung keeps exactly
//     top), and every candidate within margin of the cut (mean step at most
//     the cut's × (1 + margin)); the rest are pruned-halving. Every rung runs
//     the same first iterations of the scenario (the same batches), so
//     candidates are compared pairwise on identical work, and the last rung
//     is exactly the scenario's own [run] iterations and seed: a leading
//     candidate's figures are what dcpsim run prints for its layout and
//     policy. A survivor's run is continued, not started again: a rung
//     simulates only the iterations the last one did not, and its figures
//     are replayed from the iterations kept with the rung's warm-up
//     (runState.rungOutcome), the same numbers as a fresh run of n_r.
//  3. The lower bound (costmodel.Model.StepLowerBoundSeconds, compute at the
//     calibrated peak plus gradient sync and optimizer step, which no plan
//     avoids): a rung simulates its candidates in waves of searchWave, by
//     bound, lowest first; once a wave has ended, a candidate whose bound
//     over the rung's iterations exceeds (1 + margin) × the k-th best mean
//     simulated so far (k the rung's keep count) is pruned-bound without
//     being simulated. The k-th best of a subset is no better than the k-th
//     best of all, and the bound never exceeds the simulated step, so such a
//     candidate would have been cut by rule 2: the bound never drops a
//     candidate halving would keep.
//
// Halving itself is the one approximation: a candidate outside a rung's cut
// on few iterations could have come back on more. The margin is the stated
// guard; the tests check, on small spaces, that the pruned search returns
// the same best candidate and the same top five as simulating every
// candidate on every iteration.
//
// Everything a search decides depends only on each group's own simulated
// figures, in an order fixed by the candidates' bounds and IDs: the same
// scenario and seed give the same ranking whatever --jobs or --shard.

// searchWave is how many candidates of a group a rung simulates before it
// updates its bound cut: fixed, so that decisions do not depend on --jobs.
const searchWave = 16

// SearchOptions choose where and how much of a search runs.
type SearchOptions struct {
	// Dir is the results folder (search.json, search.csv, figures, and the
	// evaluations a resumed search reuses in Dir/evals/).
	Dir string
	// Shard and Shards select the groups whose index mod Shards is Shard
	// (Shards 0 or 1: every group).
	Shard, Shards int
	// Jobs is how many candidates are simulated at once (>= 1).
	Jobs int
	// Figures draws the search figures and writes the page (unsharded
	// searches only; nil: none).
	Figures Drawer
	// Target is the token target the page answers and draws (nil: none).
	Target *results.SearchTarget
	// Progress, when set, is called with the candidates settled (a final
	// status known) and the total, from one goroutine at a time.
	Progress func(done, total int)
	// AllowExec allows starting the programs the scenario names
	// (Options.AllowExec).
	AllowExec bool
}

// SearchResult is what a Search did.
type SearchResult struct {
	// File is the search's record (search.json's contents; for a shard,
	// only its groups' candidates).
	File SearchFile
	// Files are the files written (beside evals/).
	Files []string
	// Simulations counts the candidate runs simulated now; Reused those
	// read back from an earlier run's evals/.
	Simulations, Reused int
	// SimulatedIterations sums the iterations of the runs simulated now.
	SimulatedIterations int
}

// SearchFile is search.json (and, for a shard, search-shard.json): the
// space, the rules and every candidate.
type SearchFile struct {
	Search    string `json:"search"`
	SearchSHA string `json:"search_sha256"`
	Model     string `json:"model"`
	Seed      uint64 `json:"seed"`
	// Iterations and WarmupIterations are the scenario's [run]; Rungs the
	// iterations of each halving rung (the last is the scenario's).
	Iterations       int   `json:"iterations"`
	WarmupIterations int   `json:"warmup_iterations"`
	Rungs            []int `json:"rungs"`
	// Top, Eta and Margin are the halving's rules.
	Top    int     `json:"top"`
	Eta    int     `json:"eta"`
	Margin float64 `json:"margin"`
	// DollarsPerGPUHour prices the $ per 1T tokens.
	DollarsPerGPUHour float64 `json:"dollars_per_gpu_hour"`
	// Shard and Shards say which groups the file holds (0 of 1: all).
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// CandidatesTotal is the space's size, every shard's candidates
	// together: a merge checks that each of 0 .. CandidatesTotal-1 is there.
	CandidatesTotal int `json:"candidates_total"`
	// Groups are the (cluster, policy) groups in order; Counts the
	// candidates per status.
	Groups []string       `json:"groups"`
	Counts map[string]int `json:"counts"`
	// Candidates are every candidate of the file's groups, by ID.
	Candidates []results.SearchRow `json:"candidates"`
}

// searchRungs returns the iterations of each rung for a scenario of n
// iterations and halving factor eta: 1, ..., ⌈n/eta⌉, n.
func searchRungs(n, eta int) []int {
	rungs := []int{n}
	for n > 1 {
		n = (n + eta - 1) / eta
		rungs = append(rungs, n)
	}
	slices.Reverse(rungs)
	return rungs
}

// rungWarmup is the warm-up of a rung of n iterations: the scenario's w,
// less where n leaves no measured iteration after it.
func rungWarmup(w, n int) int { return min(w, n-1) }

// searchCand is one candidate's state during a search.
type searchCand struct {
	c   *scenarios.Candidate
	row results.SearchRow
	// run is the candidate's run, continued from rung to rung: a rung
	// simulates only the iterations the last one did not (nil before the
	// candidate's first simulation, for an external policy's candidate,
	// which starts again at every rung, and once the candidate is settled).
	run *runState
}

// searcher is one search's shared state.
type searcher struct {
	ctx   context.Context
	sc    *scenarios.Scenario
	opts  SearchOptions
	rungs []int
	store *evalStore
	sem   chan struct{}

	mu          sync.Mutex // guards the counters and progress
	settled     int
	total       int
	simulations int
	reused      int
	iterations  int

	layoutLB   sync.Map // layout name → *layoutBound
	setups     sync.Map // layout name → func() (*Setup, error)
	batchCache sync.Map // batch tokens → func() ([]workload.Batch, error)
}

// Search runs the search of sc's [search] (see the comment at the top of
// this file), writing Dir/search.json, Dir/search.csv and the figures (a
// shard writes Dir/search-shard.json instead, for dcpsim merge), and keeping
// every simulated evaluation in Dir/evals/ so that an interrupted search
// resumes where it stopped. Dir must be absent, empty or a dcpsim search
// folder of the same scenario name.
func Search(ctx context.Context, sc *scenarios.Scenario, opts SearchOptions) (*SearchResult, error) {
	if sc.Search == nil {
		return nil, badInput("scenario %s has no [search]: run it with dcpsim run, or add a [search] table", sc.Name)
	}
	shards := max(opts.Shards, 1)
	if opts.Shard < 0 || opts.Shard >= shards || opts.Jobs < 1 {
		return nil, badInput("shard %d/%d with %d jobs: need 0 <= shard < shards and jobs >= 1", opts.Shard, shards, opts.Jobs)
	}
	if err := CheckExec(sc, opts.AllowExec); err != nil {
		return nil, err
	}
	cands, err := sc.Candidates()
	if err != nil {
		return nil, err
	}
	store, err := openEvalStore(opts.Dir, sc)
	if err != nil {
		return nil, err
	}
	s := &searcher{ctx: ctx, sc: sc, opts: opts, store: store, sem: make(chan struct{}, opts.Jobs),
		rungs: searchRungs(sc.Run.Iterations, sc.Search.Eta)}
	store.batchTokens = s.batchTokens
	groups, byGroup := groupCandidates(cands)
	var mine []int
	for g := range groups {
		if g%shards == opts.Shard {
			mine = append(mine, g)
			s.total += len(byGroup[g])
		}
	}
	if opts.Progress != nil {
		opts.Progress(0, s.total)
	}
	states := make([][]*searchCand, len(groups))
	var wg sync.WaitGroup
	errs := make([]error, len(groups))
	for _, g := range mine {
		states[g] = make([]*searchCand, len(byGroup[g]))
		for i, c := range byGroup[g] {
			states[g][i] = s.newCand(c)
		}
		wg.Go(func() { errs[g] = s.group(states[g]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	file := s.file(groups, mine, shards)
	file.CandidatesTotal = len(cands)
	for _, g := range mine {
		for _, st := range states[g] {
			file.Candidates = append(file.Candidates, st.row)
		}
	}
	finishSearchFile(&file)
	res := &SearchResult{File: file, Simulations: s.simulations, Reused: s.reused, SimulatedIterations: s.iterations}
	if shards > 1 {
		res.Files, err = writeSearchShard(ctx, opts.Dir, &file)
	} else {
		res.Files, err = writeSearch(ctx, opts.Dir, &file, opts.Figures, opts.Target)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// groupCandidates lists the groups by first appearance and each group's
// candidates in ID order.
func groupCandidates(cands []scenarios.Candidate) ([]string, [][]*scenarios.Candidate) {
	var groups []string
	index := map[string]int{}
	var by [][]*scenarios.Candidate
	for i := range cands {
		c := &cands[i]
		g, ok := index[c.Group]
		if !ok {
			g = len(groups)
			index[c.Group] = g
			groups = append(groups, c.Group)
			by = append(by, nil)
		}
		by[g] = append(by[g], c)
	}
	return groups, by
}

// file is the search file's head.
func (s *searcher) file(groups []string, mine []int, shards int) SearchFile {
	sr := s.sc.Search
	f := SearchFile{Search: s.sc.Name, SearchSHA: SweepHash(s.sc), Model: s.sc.Job.Model.Name, Seed: s.sc.Run.Seed,
		Iterations: s.sc.Run.Iterations, WarmupIterations: s.sc.Run.WarmupIterations, Rungs: s.rungs,
		Top: sr.Top, Eta: sr.Eta, Margin: sr.Margin, DollarsPerGPUHour: s.sc.Run.DollarsPerGPUHour,
		Shard: s.opts.Shard, Shards: shards}
	for _, g := range mine {
		f.Groups = append(f.Groups, groups[g])
	}
	return f
}

// finishSearchFile ranks the ok candidates by tokens per day (then ID) and
// counts the statuses.
func finishSearchFile(f *SearchFile) {
	slices.SortFunc(f.Candidates, func(a, b results.SearchRow) int { return cmp.Compare(a.ID, b.ID) })
	var ok []*results.SearchRow
	f.Counts = map[string]int{}
	for i := range f.Candidates {
		r := &f.Candidates[i]
		r.Rank = 0
		f.Counts[r.Status]++
		if r.Status == results.SearchOK {
			ok = append(ok, r)
		}
	}
	slices.SortStableFunc(ok, func(a, b *results.SearchRow) int { return cmp.Compare(b.TokensPerDay, a.TokensPerDay) })
	for i, r := range ok {
		r.Rank = i + 1
	}
}

// newCand is a candidate's starting state: settled at once when invalid or
// out of memory.
func (s *searcher) newCand(c *scenarios.Candidate) *searchCand {
	j, par := c.Scenario.Job, c.Scenario.Job.Parallel
	row := results.SearchRow{ID: c.ID, Group: c.Group, GPUs: j.Cluster.GPUs, GPU: j.Cluster.Label(), Model: j.Model.Name,
		TP: par.TP, PP: par.PP, VPP: par.VPP, EP: par.EP, FirstStageLayers: par.FirstStageLayers, LastStageLayers: par.LastStageLayers,
		BudgetTokens: par.BudgetTokens, BudgetAuto: par.BudgetAuto, Recompute: string(par.RecomputeMode()), Precision: string(par.PrecisionMode()),
		Policy: c.Policy, Rung: -1}
	st := &searchCand{c: c, row: row}
	switch {
	case c.OutOfMemory:
		st.row.Status, st.row.Reason = results.SearchOutOfMemory, c.Problem
	case c.Problem != "":
		st.row.Status, st.row.Reason = results.SearchInvalid, c.Problem
	}
	if st.row.Status != "" {
		s.settle(1)
	}
	return st
}

// settle counts n candidates settled and reports progress.
func (s *searcher) settle(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settled += n
	if s.opts.Progress != nil {
		s.opts.Progress(s.settled, s.total)
	}
}

// group runs the rungs of one group.
func (s *searcher) group(cands []*searchCand) error {
	var alive []*searchCand
	for _, st := range cands {
		if st.row.Status == "" {
			alive = append(alive, st)
		}
	}
	sr := s.sc.Search
	for r, n := range s.rungs {
		w := rungWarmup(s.sc.Run.WarmupIterations, n)
		if len(alive) == 0 {
			break
		}
		final := r == len(s.rungs)-1
		keep := max(sr.Top, (len(alive)+sr.Eta-1)/sr.Eta)
		if r >= len(s.rungs)-2 {
			keep = sr.Top // the last halving leaves top (and the margin's ties) for the final rung
		}
		for _, st := range alive {
			if err := s.bound(st, w, n); err != nil {
				return err
			}
		}
		order := slices.Clone(alive)
		slices.SortStableFunc(order, func(a, b *searchCand) int {
			return cmp.Or(cmp.Compare(a.row.LowerBoundSeconds, b.row.LowerBoundSeconds), cmp.Compare(a.row.ID, b.row.ID))
		})
		var done []*searchCand // simulated at this rung, ok
		for start := 0; start < len(order); start += searchWave {
			if err := s.ctx.Err(); err != nil {
				return err
			}
			cut := math.Inf(1)
			if len(done) >= keep {
				means := make([]float64, len(done))
				for i, st := range done {
					means[i] = st.row.StepSecondsMean
				}
				slices.Sort(means)
				cut = means[keep-1] * (1 + sr.Margin)
			}
			wave := order[start:min(start+searchWave, len(order))]
			var run []*searchCand
			for _, st := range wave {
				if st.row.LowerBoundSeconds > cut {
					st.row.Status = results.SearchPrunedBound
					st.row.Reason = fmt.Sprintf("rung %d (%d iterations): lower bound %.4g s > %.4g s, (1 + %g) × the %d-th best mean step simulated", r, n, st.row.LowerBoundSeconds, cut, sr.Margin, keep)
					s.settle(1)
					continue
				}
				run = append(run, st)
			}
			if err := s.runWave(run, r, n); err != nil {
				return err
			}
			for _, st := range run {
				if st.row.Status == "" {
					done = append(done, st)
				}
			}
		}
		if final {
			for _, st := range done {
				st.row.Status = results.SearchOK
			}
			s.settle(len(done))
		} else {
			alive = s.halve(done, keep, r, n)
		}
		for _, st := range order {
			if st.row.Status != "" {
				st.run = nil // settled: its run is done with
			}
		}
		if final {
			break
		}
	}
	return nil
}

// halve keeps the best keep of done by mean step (then ID) and those within
// the margin of the cut; the others are pruned-halving.
func (s *searcher) halve(done []*searchCand, keep, r, n int) []*searchCand {
	slices.SortStableFunc(done, func(a, b *searchCand) int {
		return cmp.Or(cmp.Compare(a.row.StepSecondsMean, b.row.StepSecondsMean), cmp.Compare(a.row.ID, b.row.ID))
	})
	if len(done) <= keep {
		return done
	}
	margin := s.sc.Search.Margin
	cut := done[keep-1].row.StepSecondsMean * (1 + margin)
	var alive []*searchCand
	pruned := 0
	for i, st := range done {
		if i < keep || st.row.StepSecondsMean <= cut {
			alive = append(alive, st)
			continue
		}
		st.row.Status = results.SearchPrunedHalving
		st.row.Reason = fmt.Sprintf("rung %d (%d iterations): mean step %.4g s > %.4g s, (1 + %g) × the %d-th best of %d simulated", r, n, st.row.StepSecondsMean, cut, margin, keep, len(done))
		pruned++
	}
	s.settle(pruned)
	slices.SortStableFunc(alive, func(a, b *searchCand) int { return cmp.Compare(a.row.ID, b.row.ID) })
	return alive
}

// bound sets the candidate's lower bound over iterations [w, n).
func (s *searcher) bound(st *searchCand, w, n int) error {
	lb, err := s.layoutBound(st.c)
	if err != nil {
		return err
	}
	st.row.LowerBoundSeconds = 0
	if n > w {
		vals := make([]float64, 0, n-w)
		for k := w; k < n; k++ {
			v, err := lb.at(k)
			if err != nil {
				return err
			}
			vals = append(vals, v)
		}
		st.row.LowerBoundSeconds = stat.Mean(vals, nil)
	}
	return nil
}

// layoutBound is one layout's lower bounds by iteration, computed when first
// asked for (a rung of few iterations needs few); shared by the layout's
// policies, as the bound does not depend on the policy.
type layoutBound struct {
	s     *searcher
	sc    *scenarios.Scenario
	setup func() (*Setup, error)
	mu    sync.Mutex
	lbs   map[int]float64
	none  bool // the policy defers sequences: no bound (0)
}

// at is iteration k's bound.
func (l *layoutBound) at(k int) (float64, error) {
	if l.none {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.lbs[k]; ok {
		return v, nil
	}
	setup, err := l.setup()
	if err != nil {
		return 0, err
	}
	batches, err := l.s.batches(l.sc)
	if err != nil {
		return 0, err
	}
	v := setup.Model.StepLowerBoundSeconds(batches[k].Lengths)
	l.lbs[k] = v
	return v, nil
}

// layoutBound returns the candidate's layout's bounds.
func (s *searcher) layoutBound(c *scenarios.Candidate) (*layoutBound, error) {
	if d, err := policies.Lookup(c.Policy); err == nil && d.Defers {
		// The policy may train fewer sequences than its batch: no bound.
		return &layoutBound{none: true}, nil
	}
	v, _ := s.layoutLB.LoadOrStore(layoutKey(c), &layoutBound{s: s, sc: c.Scenario, lbs: map[int]float64{}, setup: s.layoutSetup(c)})
	return v.(*layoutBound), nil
}

// layoutKey names a candidate's layout: its name without the policy.
func layoutKey(c *scenarios.Candidate) string {
	return c.Scenario.Name[:len(c.Scenario.Name)-len(c.Policy)-1]
}

// layoutSetup returns the candidate's layout's Setup, made once for its
// bound and every run of its policies at every rung (NewSetup depends on
// the job alone).
func (s *searcher) layoutSetup(c *scenarios.Candidate) func() (*Setup, error) {
	sc := c.Scenario
	f, _ := s.setups.LoadOrStore(layoutKey(c), sync.OnceValues(func() (*Setup, error) { return NewSetup(sc) }))
	return f.(func() (*Setup, error))
}

// batches are the scenario's iterations' batches, sampled once per batch
// size (every candidate of one cluster size trains the same batches).
func (s *searcher) batches(sc *scenarios.Scenario) ([]workload.Batch, error) {
	f, _ := s.batchCache.LoadOrStore(sc.Workload.BatchTokens, sync.OnceValues(func() ([]workload.Batch, error) {
		sampler, err := sc.NewSampler()
		if err != nil {
			return nil, err
		}
		return SampleBatches(sampler, sc.Run.Iterations), nil
	}))
	return f.(func() ([]workload.Batch, error))()
}

// runWave simulates the wave's candidates at rung r on n iterations, at
// most Jobs at once over the whole search.
func (s *searcher) runWave(wave []*searchCand, r, n int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(wave))
	for i, st := range wave {
		s.sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-s.sem }()
			errs[i] = s.evaluate(st, r, n)
		})
	}
	wg.Wait()
	for _, st := range wave {
		if st.row.Status != "" { // failed, out of memory or skipped
			s.settle(1)
		}
	}
	return errors.Join(errs...)
}

// evaluate simulates (or reads back) one candidate on n iterations and
// records its figures.
func (s *searcher) evaluate(st *searchCand, r, n int) error {
	ev, ok := s.store.load(st.c, r, n)
	if ok {
		s.count(0, true)
	} else {
		simulated := 0
		if st.run != nil {
			simulated = st.run.done
		}
		out, err := s.simulate(st, n)
		if err != nil {
			if s.ctx.Err() != nil {
				return s.ctx.Err()
			}
			ev = searchEval{Status: results.SearchFailed, Reason: err.Error()}
		} else {
			ev = evalOf(out)
		}
		ev.ID, ev.Name, ev.Rung, ev.Iterations = st.c.ID, st.c.Name, r, n
		if err := s.store.save(&ev); err != nil {
			return err
		}
		s.count(n-simulated, false)
	}
	st.apply(&ev)
	return nil
}

// simulate runs the candidate's first n iterations with the rung's warm-up
// and returns what dcpsim run gives for its scenario with n iterations:
// its run continued from the last rung (only the iterations that rung did
// not simulate), or, for an external policy, a run from iteration 0.
func (s *searcher) simulate(st *searchCand, n int) (*Outcome, error) {
	setup, err := s.layoutSetup(st.c)()
	if err != nil {
		return nil, err
	}
	batches, err := s.batches(st.c.Scenario)
	if err != nil {
		return nil, err
	}
	opts := Options{Sequential: true, Setup: setup, AllowExec: s.opts.AllowExec, Batches: func(k int) workload.Batch {
		return workload.Batch{Iteration: k, Lengths: slices.Clone(batches[k].Lengths)}
	}}
	w := rungWarmup(s.sc.Run.WarmupIterations, n)
	if len(st.c.Scenario.Run.External) > 0 {
		sc := *st.c.Scenario
		sc.Run.Iterations, sc.Run.WarmupIterations = n, w
		return RunContext(s.ctx, &sc, opts)
	}
	if st.run == nil {
		if st.run, err = startRun(s.ctx, st.c.Scenario, opts, true); err != nil {
			return nil, err
		}
	}
	defer st.run.idle()
	if err := st.run.advance(s.ctx, n); err != nil {
		return nil, err
	}
	return st.run.rungOutcome(n, w)
}

// count records one evaluation.
func (s *searcher) count(iterations int, reused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if reused {
		s.reused++
		return
	}
	s.simulations++
	s.iterations += iterations
}

// evalOf is one run's figures.
func evalOf(out *Outcome) searchEval {
	ps := out.Summary.Policies[0]
	ev := searchEval{BudgetTokens: out.Summary.BudgetTokens}
	switch {
	case ps.Skipped:
		ev.Status, ev.Reason = results.SearchSkipped, ps.Error
		return ev
	case ps.OutOfMemory != nil:
		ev.Status, ev.Reason = results.SearchOutOfMemory, ps.Error
		return ev
	case ps.Error != "":
		ev.Status, ev.Reason = results.SearchFailed, ps.Error
		return ev
	}
	for _, row := range out.Rows {
		if !row.Warmup {
			ev.Steps, ev.Tokens = append(ev.Steps, row.StepSeconds), append(ev.Tokens, row.Tokens)
		}
	}
	ev.SearchFigures = results.SearchFiguresOf(&ps)
	return ev
}

// apply copies an evaluation into the candidate's row.
func (st *searchCand) apply(ev *searchEval) {
	row := &st.row
	row.Rung, row.Iterations = ev.Rung, ev.Iterations
	if ev.BudgetTokens > 0 {
		row.BudgetTokens = ev.BudgetTokens
	}
	if ev.Status != "" {
		// No figures of an earlier rung stay beside a failure.
		*row = results.SearchRow{Rank: row.Rank, ID: row.ID, Group: row.Group, GPUs: row.GPUs, GPU: row.GPU, Model: row.Model,
			TP: row.TP, PP: row.PP, VPP: row.VPP, EP: row.EP, FirstStageLayers: row.FirstStageLayers, LastStageLayers: row.LastStageLayers,
			BudgetTokens: row.BudgetTokens, BudgetAuto: row.BudgetAuto, Recompute: row.Recompute, Precision: row.Precision, Policy: row.Policy,
			Rung: row.Rung, Iterations: row.Iterations, LowerBoundSeconds: row.LowerBoundSeconds, Status: ev.Status, Reason: ev.Reason}
		return
	}
	row.SearchFigures = ev.SearchFigures
	row.StepSecondsCI95 = ci95(ev.Steps)
}

// ci95 is the half-width of the 95% Student-t confidence interval of the
// mean of xs (0 for fewer than two values).
func ci95(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return 0
	}
	sd := stat.StdDev(xs, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	return t * sd / math.Sqrt(float64(n))
}
