package flexsp

import (
	"fmt"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/milp"
)

// mbProblem is the Parallelism Planner's problem for one microbatch (FlexSP
// §4.1): place the bucketed sequences on CP groups of candidate sizes over
// the pool, minimising the slowest group's time.
type mbProblem struct {
	buckets []bucket // ascending by boundary
	degrees []int    // candidate group sizes, ascending powers of two
	pool    int      // N, the ranks of the pool
	budget  int      // B, the most tokens a rank holds
	timing  timing
	// explicit is how many groups of each size the model holds one by one
	// (the paper's per-group variables); the rest of a size's groups form
	// one aggregated class (see the package doc, "Formulation").
	explicit int
	// fillPool asks for groups covering exactly the pool, every group
	// non-empty (the public code); false relaxes to at most the pool (the
	// paper's Σ d·m <= N).
	fillPool bool
}

// minDegree is FlexSP's minimum SP degree of a sequence: the smallest power
// of two k with s/k <= B (the code's calculate_min_sp), 1 for s <= B.
func minDegree(s, budget int) int {
	k := 1
	for int64(k)*int64(budget) < int64(s) {
		k *= 2
	}
	return k
}

// eligible reports whether bucket q may run on groups of size d: its
// minimum SP degree is at most d.
func (p *mbProblem) eligible(q, d int) bool { return minDegree(p.buckets[q].Boundary, p.budget) <= d }

// class is a set of CP groups of one size that the model decides on
// together. An explicit group is one group of the paper's
// formulation: a binary use and integer counts x_q, its own time and memory
// rows. The aggregated class of a size holds the n <= Max groups of that
// size the explicit ones leave (n in binary: n = Σ_j 2^j·bits[j]), the
// counts x_q of each bucket over all of them, and rows on their mean. See
// the package doc, "Formulation".
type class struct {
	Degree, Max int
	Explicit    bool
	bits        []milp.Var // explicit: {use}; aggregated: n's binary digits
	cbits       []milp.Var // aggregated: cbits[j] = C·bits[j]
	x           []milp.Var // per bucket; -1 where the bucket cannot go
}

// groups returns the class's number of groups in a solution.
func (c *class) groups(values []float64) int {
	n := 0
	for j, b := range c.bits {
		n += int(math.Round(values[b])) << j
	}
	return n
}

// formulation is the MILP of one microbatch and its variables.
type formulation struct {
	model   *milp.Model
	cmax    milp.Var
	classes []class
}

// build writes the model with C in [lower, upper]: lower a valid lower bound
// on the optimum (lowerBound), upper at least the optimum (a feasible
// solution's Cmax), which the linearisation of C·n needs. It returns nil
// when some bucket has no candidate size.
func (p *mbProblem) build(lower, upper float64) *formulation {
	m := &milp.Model{Name: fmt.Sprintf("flexsp microbatch: %d buckets, pool %d, sizes %v", len(p.buckets), p.pool, p.degrees)}
	fm := &formulation{model: m}
	fm.cmax = m.AddVar("cmax", milp.Continuous, lower, max(lower, upper))
	m.Minimize([]milp.Term{{Var: fm.cmax, Coef: 1}})
	assign := make([][]milp.Term, len(p.buckets))
	var ranks []milp.Term
	for _, d := range p.degrees {
		if !slices.ContainsFunc(p.buckets, func(b bucket) bool { return minDegree(b.Boundary, p.budget) <= d }) {
			continue // no sequence may run on this size
		}
		copies := p.pool / d
		explicit := min(p.explicit, copies)
		for e := range explicit {
			c := p.explicitGroup(m, fm.cmax, d, e, assign)
			ranks = append(ranks, milp.Term{Var: c.bits[0], Coef: float64(d)})
			if e > 0 { // interchangeable groups: order them by use and load
				prev := fm.classes[len(fm.classes)-1]
				m.AddConstraint(fmt.Sprintf("sym_use_d%d_e%d", d, e), []milp.Term{{Var: prev.bits[0], Coef: 1}, {Var: c.bits[0], Coef: -1}}, milp.GE, 0)
				var load []milp.Term
				for q := range p.buckets {
					if c.x[q] >= 0 {
						w := p.timing.seqSeconds(p.buckets[q].Boundary, d)
						load = append(load, milp.Term{Var: prev.x[q], Coef: w}, milp.Term{Var: c.x[q], Coef: -w})
					}
				}
				m.AddConstraint(fmt.Sprintf("sym_load_d%d_e%d", d, e), load, milp.GE, 0)
			}
			fm.classes = append(fm.classes, c)
		}
		if rest := copies - explicit; rest > 0 {
			c := p.aggregatedClass(m, fm.cmax, lower, max(lower, upper), d, rest, assign)
			for j, b := range c.bits {
				ranks = append(ranks, milp.Term{Var: b, Coef: float64(d << j)})
			}
			fm.classes = append(fm.classes, c)
		}
	}
	for q, bk := range p.buckets {
		if len(assign[q]) == 0 {
			return nil
		}
		m.AddConstraint(fmt.Sprintf("assign_q%d", q), assign[q], milp.EQ, float64(bk.Count))
	}
	sense := milp.LE
	if p.fillPool {
		sense = milp.EQ
	}
	m.AddConstraint("ranks", ranks, sense, float64(p.pool))
	return fm
}

// perGroupCap is the most bucket-q sequences one group of size d holds
// within B.
func (p *mbProblem) perGroupCap(q, d int) int {
	return min(p.buckets[q].Count, int(int64(d)*int64(p.budget)/int64(p.buckets[q].Boundary)))
}

// explicitGroup adds one group of size d with the paper's rows:
// b1·use + Σ_q w_q·x_q <= C, Σ_q (s_q/d)·x_q <= B·use, and with fillPool
// Σ_q x_q >= use.
func (p *mbProblem) explicitGroup(m *milp.Model, cmax milp.Var, d, e int, assign [][]milp.Term) class {
	name := fmt.Sprintf("d%d_e%d", d, e)
	c := class{Degree: d, Max: 1, Explicit: true, x: make([]milp.Var, len(p.buckets))}
	use := m.AddVar("use_"+name, milp.Binary, 0, 1)
	c.bits = []milp.Var{use}
	mem := []milp.Term{{Var: use, Coef: -float64(p.budget)}}
	tim := []milp.Term{{Var: use, Coef: p.timing.b1}, {Var: cmax, Coef: -1}}
	fill := []milp.Term{{Var: use, Coef: -1}}
	for q, bk := range p.buckets {
		c.x[q] = -1
		if !p.eligible(q, d) {
			continue
		}
		c.x[q] = m.AddVar(fmt.Sprintf("x_%s_q%d", name, q), milp.Integer, 0, float64(p.perGroupCap(q, d)))
		assign[q] = append(assign[q], milp.Term{Var: c.x[q], Coef: 1})
		mem = append(mem, milp.Term{Var: c.x[q], Coef: float64(bk.Boundary) / float64(d)})
		tim = append(tim, milp.Term{Var: c.x[q], Coef: p.timing.seqSeconds(bk.Boundary, d)})
		fill = append(fill, milp.Term{Var: c.x[q], Coef: 1})
	}
	m.AddConstraint("mem_"+name, mem, milp.LE, 0)
	m.AddConstraint("time_"+name, tim, milp.LE, 0)
	if p.fillPool {
		m.AddConstraint("fill_"+name, fill, milp.GE, 0)
	}
	return c
}

// maxCardinality is the largest k of the aggregated classes' cardinality
// rows (at most k sequences longer than B·d/(k+1) per group).
const maxCardinality = 8

// aggregatedClass adds the class of up to max groups of size d:
//
//	n = Σ_j 2^j·t_j <= max
//	Σ_q s_q·x_q <= B·d·n                          (memory, on the mean)
//	Σ_{q: s_q > B·d/(k+1)} x_q <= k·n, k = 1..8     (no group holds k+1 such)
//	Σ_q w_q·x_q + b1·n <= Σ_j 2^j·y_j <= C·n       (time, on the mean)
//	y_j <= U·t_j, y_j <= C − L·(1 − t_j)
//	Σ_q x_q >= n                                   (with fillPool)
//
// The rows on y_j are the upper half of McCormick's envelope of C·t_j: for
// binary t_j and L <= C <= U they say y_j <= C·t_j, and since y_j only
// gives the time row room, a solution may as well take y_j = C·t_j: the
// lower half (y_j >= C − U·(1 − t_j), y_j >= L·t_j) changes no optimum and
// is left out (half the rows).
func (p *mbProblem) aggregatedClass(m *milp.Model, cmax milp.Var, lower, upper float64, d, max int, assign [][]milp.Term) class {
	name := fmt.Sprintf("d%d_agg", d)
	c := class{Degree: d, Max: max, x: make([]milp.Var, len(p.buckets))}
	var count, mem, tim, fill []milp.Term
	for j := 0; 1<<j <= max; j++ {
		t := m.AddVar(fmt.Sprintf("t_%s_%d", name, j), milp.Binary, 0, 1)
		y := m.AddVar(fmt.Sprintf("y_%s_%d", name, j), milp.Continuous, 0, upper)
		c.bits, c.cbits = append(c.bits, t), append(c.cbits, y)
		w := float64(int(1) << j)
		count = append(count, milp.Term{Var: t, Coef: w})
		mem = append(mem, milp.Term{Var: t, Coef: -w * float64(d) * float64(p.budget)})
		tim = append(tim, milp.Term{Var: t, Coef: w * p.timing.b1}, milp.Term{Var: y, Coef: -w})
		fill = append(fill, milp.Term{Var: t, Coef: -w})
		m.AddConstraint(fmt.Sprintf("mc1_%s_%d", name, j), []milp.Term{{Var: y, Coef: 1}, {Var: t, Coef: -upper}}, milp.LE, 0)
		m.AddConstraint(fmt.Sprintf("mc2_%s_%d", name, j), []milp.Term{{Var: y, Coef: 1}, {Var: cmax, Coef: -1}, {Var: t, Coef: -lower}}, milp.LE, -lower)
	}
	if 2<<(len(c.bits)-1)-1 > max {
		m.AddConstraint("count_"+name, count, milp.LE, float64(max))
	}
	for q, bk := range p.buckets {
		c.x[q] = -1
		if !p.eligible(q, d) {
			continue
		}
		c.x[q] = m.AddVar(fmt.Sprintf("x_%s_q%d", name, q), milp.Integer, 0, float64(min(bk.Count, max*p.perGroupCap(q, d))))
		assign[q] = append(assign[q], milp.Term{Var: c.x[q], Coef: 1})
		mem = append(mem, milp.Term{Var: c.x[q], Coef: float64(bk.Boundary)})
		tim = append(tim, milp.Term{Var: c.x[q], Coef: p.timing.seqSeconds(bk.Boundary, d)})
		fill = append(fill, milp.Term{Var: c.x[q], Coef: 1})
	}
	m.AddConstraint("mem_"+name, mem, milp.LE, 0)
	m.AddConstraint("time_"+name, tim, milp.LE, 0)
	if p.fillPool {
		m.AddConstraint("fill_"+name, fill, milp.GE, 0)
	}
	capacity := int64(d) * int64(p.budget)
	last := -1
	for k := 1; k <= maxCardinality; k++ {
		var row []milp.Term
		first := len(p.buckets)
		for q := len(p.buckets) - 1; q >= 0; q-- {
			if c.x[q] >= 0 && int64(p.buckets[q].Boundary)*int64(k+1) > capacity {
				row = append(row, milp.Term{Var: c.x[q], Coef: 1})
				first = q
			}
		}
		if len(row) == 0 || first == last {
			continue // nothing that long, or the same set as for k−1 (weaker)
		}
		last = first
		for j, t := range c.bits {
			row = append(row, milp.Term{Var: t, Coef: -float64(k << j)})
		}
		m.AddConstraint(fmt.Sprintf("card_%s_%d", name, k), row, milp.LE, 0)
	}
	return c
}

// lowerBoundCounts is a valid lower bound on a microbatch's Cmax with
// counts[i] sequences of lengths[i] tokens: b1 plus the larger of (a) the
// most any one sequence costs alone on its best candidate size and (b) the
// least rank-seconds the sequences need, each on its best size, spread over
// the pool. Every plan pays at least both, so does the paper's MILP on
// these lengths; the model adds it as C's lower bound (valid for the paper's
// formulation, so the model stays a relaxation of it).
func (p *mbProblem) lowerBoundCounts(lengths, counts []int) float64 {
	var single, rankSeconds float64
	for i, s := range lengths {
		bestAlone, bestRanks := math.Inf(1), math.Inf(1)
		for _, d := range p.degrees {
			if minDegree(s, p.budget) > d {
				continue
			}
			w := p.timing.seqSeconds(s, d)
			bestAlone = min(bestAlone, w)
			bestRanks = min(bestRanks, w*float64(d))
		}
		single = max(single, bestAlone)
		rankSeconds += float64(counts[i]) * bestRanks
	}
	return p.timing.b1 + max(single, rankSeconds/float64(p.pool))
}

// lowerBound is lowerBoundCounts on the buckets (the lengths the MILP sees).
func (p *mbProblem) lowerBound() float64 {
	lengths := make([]int, len(p.buckets))
	counts := make([]int, len(p.buckets))
	for q, b := range p.buckets {
		lengths[q], counts[q] = b.Boundary, b.Count
	}
	return p.lowerBoundCounts(lengths, counts)
}

// lowerBoundLengths is lowerBoundCounts on true lengths, one each: a lower
// bound on any plan's Cmax for these sequences.
func (p *mbProblem) lowerBoundLengths(lengths []int) float64 {
	ones := make([]int, len(lengths))
	for i := range ones {
		ones[i] = 1
	}
	return p.lowerBoundCounts(lengths, ones)
}

// upperBound is a valid upper bound on the optimal Cmax when no start is
// known: no group of any feasible solution holds more than every sequence,
// each at its costliest candidate size.
func (p *mbProblem) upperBound() float64 {
	u := p.timing.b1
	for q, b := range p.buckets {
		worst := 0.0
		for _, d := range p.degrees {
			if p.eligible(q, d) {
				worst = max(worst, p.timing.seqSeconds(b.Boundary, d))
			}
		}
		u += float64(b.Count) * worst
	}
	return u
}

// perGroupVariables is the count variables of the paper's per-group
// formulation: every group of every candidate size times the buckets that
// may run on it.
func (p *mbProblem) perGroupVariables() int {
	n := 0
	for _, d := range p.degrees {
		for q := range p.buckets {
			if p.eligible(q, d) {
				n += p.pool / d
			}
		}
	}
	return n
}

// bestStart returns the better of the homogeneous and the proportional
// starts (nil when neither exists).
func (p *mbProblem) bestStart() ([]startGroup, int64) {
	m, o1 := p.proportionalStart()
	bar := math.Inf(1)
	if m != nil {
		bar = groupsCmax(m)
	}
	h, o2 := p.homogeneousStart(bar)
	if h != nil && (m == nil || groupsCmax(h) < groupsCmax(m)) {
		return h, o1 + o2
	}
	return m, o1 + o2
}
