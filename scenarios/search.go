package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
)

// Limits and defaults of a [search].
const (
	// MaxSearchCandidates bounds the candidates (layouts × policies) a
	// search expands to before any pruning.
	MaxSearchCandidates = 200_000
	// MaxSearchAxisValues bounds the values of one axis (a range included).
	MaxSearchAxisValues = 1024
	// DefaultSearchTop is how many leading candidates of each group are
	// finished on the scenario's own [run] iterations.
	DefaultSearchTop = 5
	// DefaultSearchEta is successive halving's factor: each rung keeps the
	// best 1/eta of a group (at least top) and multiplies the iterations by
	// eta.
	DefaultSearchEta = 3
	// DefaultSearchMargin is the relative margin of a halving cut: a
	// candidate within it of the cut's mean step survives.
	DefaultSearchMargin = 0.05
)

// Search is the resolved [search] table: the space of layouts and policies
// dcpsim search ranks. Empty axes keep the base scenario's value.
type Search struct {
	// GPUs are the cluster sizes (one-kind clusters only).
	GPUs []int
	// GPU are alternative kinds of a one-kind cluster (cluster.gpu).
	GPU []string
	// PoolGPUs are alternative kinds of a mixed cluster's pools: each entry
	// names every pool's kind, in the pools' order.
	PoolGPUs [][]string
	// TP, PP, VPP and EP are the parallel sizes.
	TP, PP, VPP, EP []int
	// Budgets are the per-rank token budgets.
	Budgets []SearchBudget
	// Recompute are the recomputation modes (full recomputes every layer).
	Recompute []job.RecomputeGranularity
	// Precision are the GEMMs' number formats (job.PrecisionBF16,
	// job.PrecisionFP8; default the scenario's).
	Precision []job.Precision
	// Policies are the DCP policies (default run.policies).
	Policies []string
	// Top is how many leading candidates of each group end on the [run]
	// iterations; Eta the halving factor; Margin the relative margin of a
	// cut.
	Top, Eta int
	Margin   float64
	// PolicySpaces are [search.policy.<name>]: per policy, the subsets of
	// the axes its candidates take (an expensive policy searched over fewer
	// layouts); a policy without one takes the whole space.
	PolicySpaces map[string]PolicySpace
}

// PolicySpace is one policy's subsets of a search's axes; an empty list
// leaves that axis whole.
type PolicySpace struct {
	GPUs, TP, PP, VPP, EP []int
	Budgets               []SearchBudget
	Recompute             []job.RecomputeGranularity
}

// allows reports whether the policy's space holds the layout's values.
func (ps PolicySpace) allows(gpus, tp, pp, vpp, ep int, b SearchBudget, rec job.RecomputeGranularity) bool {
	in := func(v []int, x int) bool { return len(v) == 0 || slices.Contains(v, x) }
	return in(ps.GPUs, gpus) && in(ps.TP, tp) && in(ps.PP, pp) && in(ps.VPP, vpp) && in(ps.EP, ep) &&
		(len(ps.Budgets) == 0 || slices.Contains(ps.Budgets, b)) && (len(ps.Recompute) == 0 || slices.Contains(ps.Recompute, rec))
}

// SearchBudget is one budget_tokens value of a search: a token count, or
// Auto (the largest whose peak memory fits).
type SearchBudget struct {
	Tokens int
	Auto   bool
}

// String is the value as written: "auto" or the count.
func (b SearchBudget) String() string {
	if b.Auto {
		return AutoBudget
	}
	return strconv.Itoa(b.Tokens)
}

// rawSearch is [search] as written.
type rawSearch struct {
	GPUs      intAxis        `toml:"gpus"`
	GPU       []string       `toml:"gpu"`
	PoolGPUs  [][]string     `toml:"pool_gpus"`
	TP        intAxis        `toml:"tp"`
	PP        intAxis        `toml:"pp"`
	VPP       intAxis        `toml:"vpp"`
	EP        intAxis        `toml:"ep"`
	Budget    []budgetTokens `toml:"budget_tokens"`
	Recompute []string       `toml:"recompute"`
	Precision []string       `toml:"precision"`
	Policies  []string       `toml:"policies"`
	Top       *int           `toml:"top"`
	Eta       *int           `toml:"eta"`
	Margin    *float64       `toml:"margin"`
	// Policy are [search.policy.<name>] tables: a policy's own subsets.
	Policy map[string]rawPolicySpace `toml:"policy"`
}

// rawPolicySpace is [search.policy.<name>]: the values of each axis the
// policy's candidates take (absent: all of the search's).
type rawPolicySpace struct {
	GPUs      intAxis        `toml:"gpus"`
	TP        intAxis        `toml:"tp"`
	PP        intAxis        `toml:"pp"`
	VPP       intAxis        `toml:"vpp"`
	EP        intAxis        `toml:"ep"`
	Budget    []budgetTokens `toml:"budget_tokens"`
	Recompute []string       `toml:"recompute"`
}

// intAxis is an integer axis: a list of values, or a range table
// {from, to, step} (arithmetic) or {from, to, factor} (geometric).
type intAxis struct {
	vals []int
	err  string
}

// UnmarshalTOML takes a list of integers or a range table; a problem is
// kept for the parser to report with the key.
func (a *intAxis) UnmarshalTOML(v any) error {
	*a = intAxis{}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n, ok := e.(int64)
			if !ok {
				a.err = fmt.Sprintf("%v is not an integer", e)
				return nil
			}
			a.vals = append(a.vals, int(max(min(n, 1<<40), -1<<40)))
		}
	case map[string]any:
		a.fromRange(x)
	default:
		a.err = fmt.Sprintf("%v: want a list of integers or a range {from = A, to = B, step = S} or {from = A, to = B, factor = F}", v)
	}
	return nil
}

// fromRange expands {from, to, step|factor}.
func (a *intAxis) fromRange(t map[string]any) {
	get := func(k string) (int64, bool) {
		v, ok := t[k]
		if !ok {
			return 0, false
		}
		n, isInt := v.(int64)
		if !isInt {
			a.err = fmt.Sprintf("range %s = %v: must be an integer", k, v)
		}
		return n, isInt
	}
	for k := range t {
		if !slices.Contains([]string{"from", "to", "step", "factor"}, k) {
			a.err = fmt.Sprintf("range key %q: allowed: from, to, step, factor", k)
			return
		}
	}
	from, okF := get("from")
	to, okT := get("to")
	step, okS := get("step")
	factor, okX := get("factor")
	switch {
	case a.err != "":
		return
	case !okF || !okT || okS == okX:
		a.err = "a range needs from, to and exactly one of step or factor"
		return
	case from < 1 || to < from || to > 1<<30:
		a.err = fmt.Sprintf("range from = %d, to = %d: need 1 <= from <= to <= %d", from, to, 1<<30)
		return
	case okS && (step < 1 || step > 1<<30):
		a.err = fmt.Sprintf("range step = %d: must be in [1, %d]", step, 1<<30)
		return
	case okX && (factor < 2 || factor > 1<<30):
		a.err = fmt.Sprintf("range factor = %d: must be in [2, %d]", factor, 1<<30)
		return
	}
	// from, to, step and factor are at most 2^30, so v stays below 2^61.
	for v := from; v <= to; {
		if len(a.vals) >= MaxSearchAxisValues {
			a.err = fmt.Sprintf("range from = %d to %d gives more than %d values", from, to, MaxSearchAxisValues)
			return
		}
		a.vals = append(a.vals, int(v))
		if okS {
			v += step
		} else {
			v *= factor
		}
	}
}

// searchTable reads [search] into sc.Search.
func (p *parser) searchTable(raw *rawFile, pools bool, sc *Scenario) {
	r := raw.Search
	if r == nil {
		return
	}
	if raw.Sweep != nil {
		p.addf("search", "[search] and [sweep] cannot be in one scenario: a search ranks layouts, a sweep runs every point")
	}
	s := &Search{GPU: r.GPU, PoolGPUs: r.PoolGPUs, Policies: r.Policies, Top: DefaultSearchTop, Eta: DefaultSearchEta, Margin: DefaultSearchMargin}
	ints := []struct {
		key    string
		axis   intAxis
		out    *[]int
		lo, hi int
	}{
		{"search.gpus", r.GPUs, &s.GPUs, 1, job.MaxGPUs},
		{"search.tp", r.TP, &s.TP, 1, job.MaxTP},
		{"search.pp", r.PP, &s.PP, 1, job.MaxPP},
		{"search.vpp", r.VPP, &s.VPP, 1, job.MaxVPP},
		{"search.ep", r.EP, &s.EP, 1, job.MaxGPUs},
	}
	for _, a := range ints {
		if a.axis.err != "" {
			p.addf(a.key, "%s: %s", a.key, a.axis.err)
			continue
		}
		for _, v := range a.axis.vals {
			if v < a.lo || v > a.hi {
				p.addf(a.key, "%s: value %d must be in [%d, %d]", a.key, v, a.lo, a.hi)
			}
		}
		if len(a.axis.vals) > MaxSearchAxisValues {
			p.addf(a.key, "%s: %d values; at most %d", a.key, len(a.axis.vals), MaxSearchAxisValues)
		}
		if hasDuplicates(a.axis.vals) {
			p.addf(a.key, "%s: values must be distinct", a.key)
		}
		*a.out = a.axis.vals
	}
	if pools && len(s.GPUs) > 0 {
		p.addf("search.gpus", "search.gpus: a mixed cluster (cluster.pools) cannot be searched by GPU count; write one scenario per pool size")
	}
	if pools && len(s.GPU) > 0 {
		p.addf("search.gpu", "search.gpu: a mixed cluster (cluster.pools) names its kinds per pool: use search.pool_gpus")
	}
	if !pools && len(s.PoolGPUs) > 0 {
		p.addf("search.pool_gpus", "search.pool_gpus: only for a mixed cluster (cluster.pools); a one-kind cluster uses search.gpu")
	}
	seen := map[string]bool{}
	for _, g := range s.GPU {
		if !slices.Contains(calib.ProfileNames(), g) {
			p.addf("search.gpu", "search.gpu: %q has no calibration profile; known: %s", g, strings.Join(calib.ProfileNames(), ", "))
		}
		if seen[g] {
			p.addf("search.gpu", "search.gpu: %q listed twice", g)
		}
		seen[g] = true
	}
	for i, kinds := range s.PoolGPUs {
		if len(kinds) != len(raw.Cluster.Pools) {
			p.addf("search.pool_gpus", "search.pool_gpus[%d]: names %d kinds for %d pools", i, len(kinds), len(raw.Cluster.Pools))
		}
		for _, g := range kinds {
			if !slices.Contains(calib.ProfileNames(), g) {
				p.addf("search.pool_gpus", "search.pool_gpus[%d]: %q has no calibration profile; known: %s", i, g, strings.Join(calib.ProfileNames(), ", "))
			}
		}
	}
	for _, b := range r.Budget {
		if !b.auto && (b.n < 1 || b.n > job.MaxBudgetTokens) {
			p.addf("search.budget_tokens", "search.budget_tokens: value %d must be in [1, %d] or %q", b.n, job.MaxBudgetTokens, AutoBudget)
		}
		sb := SearchBudget{Tokens: b.n, Auto: b.auto}
		if slices.Contains(s.Budgets, sb) {
			p.addf("search.budget_tokens", "search.budget_tokens: %s listed twice", sb)
		}
		s.Budgets = append(s.Budgets, sb)
	}
	for _, m := range r.Recompute {
		g := job.RecomputeGranularity(m)
		switch g {
		case job.RecomputeNone, job.RecomputeSelective, job.RecomputeFull:
		default:
			p.addf("search.recompute", "search.recompute: %q must be %q, %q or %q", m, job.RecomputeNone, job.RecomputeSelective, job.RecomputeFull)
		}
		if slices.Contains(s.Recompute, g) {
			p.addf("search.recompute", "search.recompute: %q listed twice", m)
		}
		s.Recompute = append(s.Recompute, g)
	}
	for _, m := range r.Precision {
		pr := job.Precision(m)
		switch pr {
		case job.PrecisionBF16, job.PrecisionFP8:
		default:
			p.addf("search.precision", "search.precision: %q must be %q or %q", m, job.PrecisionBF16, job.PrecisionFP8)
		}
		if slices.Contains(s.Precision, pr) {
			p.addf("search.precision", "search.precision: %q listed twice", m)
		}
		s.Precision = append(s.Precision, pr)
	}
	p.policyList("search.policies", s.Policies)
	if r.Top != nil {
		s.Top = *r.Top
		if s.Top < 1 || s.Top > 1000 {
			p.addf("search.top", "search.top = %d: must be in [1, 1000]", s.Top)
		}
	}
	if r.Eta != nil {
		s.Eta = *r.Eta
		if s.Eta < 2 || s.Eta > 16 {
			p.addf("search.eta", "search.eta = %d: must be in [2, 16]", s.Eta)
		}
	}
	if r.Margin != nil {
		s.Margin = *r.Margin
		if !(s.Margin >= 0 && s.Margin <= 1) {
			p.addf("search.margin", "search.margin = %v: must be in [0, 1]", s.Margin)
		}
	}
	s.PolicySpaces = p.policySpaces(r.Policy, s, raw.Run.Policies)
	sc.Search = s
}

// policySpaces reads [search.policy.<name>]: each a policy the search runs,
// each list a subset of the search's axis (or of the base value when the
// search leaves the axis alone).
func (p *parser) policySpaces(raw map[string]rawPolicySpace, s *Search, runPolicies []string) map[string]PolicySpace {
	if len(raw) == 0 {
		return nil
	}
	pols := s.Policies
	if len(pols) == 0 {
		pols = runPolicies
	}
	out := map[string]PolicySpace{}
	for _, name := range sortedKeys(raw) {
		at := "search.policy." + name
		if !slices.Contains(pols, name) {
			p.addf(at, "[%s]: %q is not among the search's policies %q", at, name, pols)
			continue
		}
		r := raw[name]
		var ps PolicySpace
		ints := []struct {
			key  string
			axis intAxis
			all  []int
			out  *[]int
		}{
			{"gpus", r.GPUs, s.GPUs, &ps.GPUs}, {"tp", r.TP, s.TP, &ps.TP}, {"pp", r.PP, s.PP, &ps.PP},
			{"vpp", r.VPP, s.VPP, &ps.VPP}, {"ep", r.EP, s.EP, &ps.EP},
		}
		for _, a := range ints {
			if a.axis.err != "" {
				p.addf(at+"."+a.key, "%s.%s: %s", at, a.key, a.axis.err)
				continue
			}
			for _, v := range a.axis.vals {
				if len(a.all) > 0 && !slices.Contains(a.all, v) {
					p.addf(at+"."+a.key, "%s.%s: %d is not in search.%s %v (a policy's space is a subset of the search's)", at, a.key, v, a.key, a.all)
				}
			}
			*a.out = a.axis.vals
		}
		for _, b := range r.Budget {
			sb := SearchBudget{Tokens: b.n, Auto: b.auto}
			if len(s.Budgets) > 0 && !slices.Contains(s.Budgets, sb) {
				p.addf(at+".budget_tokens", "%s.budget_tokens: %s is not in search.budget_tokens", at, sb)
			}
			ps.Budgets = append(ps.Budgets, sb)
		}
		for _, m := range r.Recompute {
			g := job.RecomputeGranularity(m)
			if len(s.Recompute) > 0 && !slices.Contains(s.Recompute, g) {
				p.addf(at+".recompute", "%s.recompute: %q is not in search.recompute", at, m)
			}
			ps.Recompute = append(ps.Recompute, g)
		}
		out[name] = ps
	}
	return out
}

// StageSplit returns the first and last pipeline stages' layer counts for
// layers layers over pp stages of vpp chunks each (0, 0: an even share), as
// Megatron's --decoder-first/last-pipeline-num-layers set them when the
// layer count does not split evenly: every stage's layers a multiple of vpp,
// the middle stages alike, the largest stage as small as possible, then the
// middle stages as large as possible (the lightest ends: the first stage
// keeps the most microbatches in flight under 1F1B, the last runs the LM
// head), and the first and last as equal as possible with the first no
// larger. It fails when no split exists (fewer than pp·vpp layers, or
// pp = 2 with an odd count of vpp-chunks... ).
func StageSplit(layers, pp, vpp int) (first, last int, err error) {
	if pp < 1 || vpp < 1 || layers < pp*vpp {
		return 0, 0, fmt.Errorf("%d layers cannot fill %d stages of %d chunks (at least one layer per chunk)", layers, pp, vpp)
	}
	if layers%(pp*vpp) == 0 {
		return 0, 0, nil
	}
	if pp == 1 {
		return 0, 0, fmt.Errorf("vpp = %d must divide the %d layers of the one stage", vpp, layers)
	}
	if pp == 2 {
		if layers%vpp != 0 {
			return 0, 0, fmt.Errorf("vpp = %d must divide the %d layers of two stages", vpp, layers)
		}
		chunks := layers / vpp
		return chunks / 2 * vpp, (chunks - chunks/2) * vpp, nil
	}
	mid := pp - 2
	// m is the middle stages' layers, a multiple of vpp; the ends share the
	// rest, each a positive multiple of vpp. The best split has the
	// smallest largest stage, then the largest middle (the lightest ends).
	best, bf, bl := 0, 0, 0
	for m := vpp; mid*m+2*vpp <= layers; m += vpp {
		ends := layers - mid*m
		if ends%vpp != 0 {
			continue
		}
		chunks := ends / vpp
		f, l := chunks/2*vpp, (chunks-chunks/2)*vpp
		if most := max(m, l); best == 0 || most <= best {
			best, bf, bl = most, f, l
		}
	}
	if best > 0 {
		return bf, bl, nil
	}
	return 0, 0, fmt.Errorf("no split of %d layers over %d stages has every stage a multiple of vpp = %d", layers, pp, vpp)
}

// Candidate is one point of a search space: a layout and a policy.
type Candidate struct {
	// ID is the candidate's index in the space's fixed order.
	ID int
	// Name identifies it, e.g. "gpus=4096/H800/tp1-pp8-vpp1-ep16-Bauto-full/hydra".
	Name string
	// Group is its (gpus, kinds, policy) group, e.g. "4096×H800/hydra":
	// candidates compete inside their group (same batches, same policy).
	Group string
	// Policy is the candidate's policy.
	Policy string
	// Scenario is the base scenario with the candidate applied (Run.Policies
	// = [Policy]); validated when Problem is empty. When the candidate is
	// invalid (Problem set) it is its layout's, shared by the layout's
	// candidates, and holds only the layout's Name, File and Job.
	Scenario *Scenario
	// OutOfMemory says the model states (or an automatic budget's every
	// token) do not fit; Problem then says where.
	OutOfMemory bool
	// Problem is why the candidate cannot run (empty: it can).
	Problem string
}

// Candidates expands the [search] of s into its candidates in a fixed order:
// gpus, kinds, tp, pp, vpp, ep, budget_tokens, recompute, precision, then policies, the
// last fastest; a policy with a [search.policy.<name>] space takes only the
// layouts inside it. Stage splits are derived (StageSplit); every candidate is
// validated as a scenario would be, and one that is not valid keeps its
// problem (never dropped). Memory comes first: a candidate whose model
// states do not fit is OutOfMemory without further checks.
func (s *Scenario) Candidates() ([]Candidate, error) {
	sr := s.Search
	if sr == nil {
		return nil, fmt.Errorf("scenario %s has no [search]", s.Name)
	}
	base := s.Job
	orInts := func(v []int, def int) []int {
		if len(v) == 0 {
			return []int{def}
		}
		return v
	}
	gpus := orInts(sr.GPUs, base.Cluster.GPUs)
	tps, pps := orInts(sr.TP, base.Parallel.TP), orInts(sr.PP, base.Parallel.PP)
	vpps, eps := orInts(sr.VPP, base.Parallel.VPP), orInts(sr.EP, base.Parallel.EP)
	budgets := sr.Budgets
	if len(budgets) == 0 {
		budgets = []SearchBudget{{Tokens: base.Parallel.BudgetTokens, Auto: base.Parallel.BudgetAuto}}
	}
	recs := sr.Recompute
	if len(recs) == 0 {
		recs = []job.RecomputeGranularity{base.Parallel.RecomputeMode()}
	}
	precs := sr.Precision
	if len(precs) == 0 {
		precs = []job.Precision{base.Parallel.Precision}
	}
	pols := sr.Policies
	if len(pols) == 0 {
		pols = s.Run.Policies
	}
	var kinds [][]string // per kind choice, the kinds of the pools (or the one kind)
	switch {
	case len(sr.PoolGPUs) > 0:
		kinds = sr.PoolGPUs
	case len(sr.GPU) > 0:
		for _, g := range sr.GPU {
			kinds = append(kinds, []string{g})
		}
	case base.Cluster.Mixed():
		var ks []string
		for _, p := range base.Cluster.Pools {
			ks = append(ks, p.GPU)
		}
		kinds = [][]string{ks}
	default:
		kinds = [][]string{{base.Cluster.GPU}}
	}
	n := 1
	for _, k := range []int{len(gpus), len(kinds), len(tps), len(pps), len(vpps), len(eps), len(budgets), len(recs), len(precs), len(pols)} {
		n *= k
		if n > MaxSearchCandidates {
			return nil, &Error{File: s.File, Problems: []Problem{{Line: lineOf(s.lines, "search"), Key: "search",
				Message: fmt.Sprintf("[search]: more than %d candidates (layouts × policies)", MaxSearchCandidates)}}}
		}
	}
	out := make([]Candidate, 0, n)
	mem := &memoryCheck{means: map[int]float64{}}
	for _, g := range gpus {
		for _, ks := range kinds {
			for _, tp := range tps {
				for _, pp := range pps {
					for _, vpp := range vpps {
						for _, ep := range eps {
							for _, b := range budgets {
								for _, rec := range recs {
									for _, prec := range precs {
										var layout *searchLayout
										for _, pol := range pols {
											if ps, ok := sr.PolicySpaces[pol]; ok && !ps.allows(g, tp, pp, vpp, ep, b, rec) {
												continue
											}
											if layout == nil {
												layout = s.searchLayout(g, ks, tp, pp, vpp, ep, b, rec, prec)
												layout.check(s, mem)
											}
											c := s.candidate(layout, pol)
											c.ID = len(out)
											out = append(out, c)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out, nil
}

// searchLayout is the base scenario with one layout of the space applied (no
// policy yet), its stage split derived; Problem-free until candidate checks it.
type searchLayout struct {
	sc      Scenario
	invalid *Scenario // the invalid candidates' scenario (candidate)
	name    string
	kinds   string
	split   error
	oom     bool
	problem string
}

func (s *Scenario) searchLayout(gpus int, kinds []string, tp, pp, vpp, ep int, b SearchBudget, rec job.RecomputeGranularity, prec job.Precision) *searchLayout {
	pt := *s
	pt.Search, pt.Sweep = nil, nil
	c := &pt.Job.Cluster
	if c.Mixed() {
		c.Pools = slices.Clone(c.Pools)
		for i := range c.Pools {
			if i < len(kinds) {
				c.Pools[i].GPU = kinds[i]
			}
		}
	} else {
		c.GPUs, c.GPU = gpus, kinds[0]
	}
	par := &pt.Job.Parallel
	par.TP, par.PP, par.VPP, par.EP = tp, pp, vpp, ep
	par.BudgetTokens, par.BudgetAuto = b.Tokens, b.Auto
	par.Recompute, par.RecomputeLayers = rec, 0
	par.Precision = prec
	var err error
	par.FirstStageLayers, par.LastStageLayers, err = StageSplit(pt.Job.Model.Layers, pp, vpp)
	if pt.Workload.BatchTokensPerGPU > 0 {
		pt.Workload.BatchTokens = pt.Workload.BatchTokensPerGPU * int64(c.GPUs)
	}
	budget := "B" + b.String()
	l := &searchLayout{sc: pt, split: err, kinds: c.Label()}
	l.name = fmt.Sprintf("gpus=%d/%s/tp%d-pp%d-vpp%d-ep%d-%s-%s", c.GPUs, strings.ReplaceAll(l.kinds, " ", ""), tp, pp, vpp, ep, budget, rec)
	if prec == job.PrecisionFP8 {
		l.name += "-fp8" // BF16 names stay as before the axis
	}
	return l
}

// memoryCheck caches the calibration profiles a search's candidates read.
type memoryCheck struct {
	profiles map[string]*calib.Profile
	means    map[int]float64
}

func (m *memoryCheck) profile(kind string) (*calib.Profile, error) {
	if p, ok := m.profiles[kind]; ok {
		return p, nil
	}
	p, err := calib.LookupProfile(kind)
	if err != nil {
		return nil, err
	}
	if m.profiles == nil {
		m.profiles = map[string]*calib.Profile{}
	}
	m.profiles[kind] = p
	return p, nil
}

// check validates the layout once for all its policies: the stage split,
// the job, then memory (states, then an automatic budget), then the batch
// and the per-kind budgets as a sweep point's are. It sets l.problem and
// l.oom.
func (l *searchLayout) check(s *Scenario, mc *memoryCheck) {
	pt := &l.sc
	if l.split != nil {
		l.problem = "parallel.pp = " + strconv.Itoa(pt.Job.Parallel.PP) + ": " + l.split.Error()
		return
	}
	if err := pt.Job.Validate(); err != nil {
		l.problem = problemText(err)
		return
	}
	if pt.ProfileFile == "" {
		if oom, problem := candidateMemory(pt, mc); problem != "" {
			l.oom, l.problem = oom, problem
			return
		}
	}
	pt.Name = s.Name + "/" + l.name
	p := &parser{file: s.File, lines: s.lines, meanLengths: mc.means}
	if !p.pointJob(pt) {
		l.problem = p.problemLine(pt.Name)
	}
}

// problemLine joins the parser's problems into one line, without the
// "sweep point NAME: " prefix the point checks put on them.
func (p *parser) problemLine(name string) string {
	msgs := make([]string, len(p.problems))
	for i, pr := range p.problems {
		msgs[i] = strings.Replace(strings.TrimPrefix(pr.Message, "sweep point "+name+": "), " at sweep point "+name, "", 1)
	}
	return strings.Join(msgs, "; ")
}

// candidate is one policy on a checked layout: the layout's problem, or the
// policy's options decoded.
func (s *Scenario) candidate(l *searchLayout, policy string) Candidate {
	c := Candidate{Name: l.name + "/" + policy, Group: l.kinds + "/" + policy, Policy: policy, OutOfMemory: l.oom, Problem: l.problem}
	if !l.sc.Job.Cluster.Mixed() {
		c.Group = fmt.Sprintf("%d×%s/%s", l.sc.Job.Cluster.GPUs, l.kinds, policy)
	}
	if c.Problem != "" {
		// A candidate that never runs keeps its layout's job, shared by the
		// layout's candidates, not a scenario of its own (a space of 198,400
		// invalid layouts took 2.2 GiB).
		if l.invalid == nil {
			l.invalid = &Scenario{Name: s.Name + "/" + l.name, File: s.File, Job: l.sc.Job}
		}
		c.Scenario = l.invalid
		return c
	}
	pt := l.sc
	pt.Run.Policies = []string{policy}
	pt.Name = s.Name + "/" + l.name + "/" + policy
	pt.optionTables = maps.Clone(s.optionTables)
	c.Scenario = &pt
	p := &parser{file: s.File, lines: s.lines}
	if !p.pointOptions(&pt, nil) {
		c.Problem = p.problemLine(pt.Name)
	}
	return c
}

// candidateMemory checks a valid candidate's memory: each kind holds the
// model states and the reserve, and with an automatic budget room for a
// token's activations. oom is false when the check itself failed (problem
// then says why).
func candidateMemory(sc *Scenario, mc *memoryCheck) (oom bool, problem string) {
	mem, err := memory.New(sc.Job, compute.FlashAttention)
	if err != nil {
		return false, err.Error()
	}
	for i, pool := range sc.Job.Cluster.Kinds() {
		prof, err := mc.profile(pool.GPU)
		if err != nil {
			return false, err.Error()
		}
		hbm := prof.HBMBytes.Value
		if err := mem.CheckStates(pool.GPU, hbm); err != nil {
			return true, err.Error()
		}
		auto := sc.Job.Parallel.BudgetAuto && (!sc.Job.Cluster.Mixed() || sc.Job.Cluster.Pools[i].BudgetTokens == 0)
		if auto {
			if _, err := mem.AutoBudgetTokens(pool.GPU, hbm, sc.Job.ContextTokens); err != nil {
				return true, err.Error()
			}
		}
	}
	return false, ""
}

// problemText joins a validation error's problems into one line, each with
// its key.
func problemText(err error) string {
	fields, others := job.FieldErrors(err)
	var msgs []string
	for _, f := range fields {
		msgs = append(msgs, fmt.Sprintf("%s = %v: %s", jobKey(f.Key), f.Value, f.Rule))
	}
	for _, o := range others {
		msgs = append(msgs, o.Error())
	}
	return strings.Join(msgs, "; ")
}

// searchPolicies are the policies a [search] adds to the scenario's (their
// options are decoded like run.policies').
func searchPolicies(r *rawSearch) []string {
	if r == nil {
		return nil
	}
	return r.Policies
}
