package flexsp

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/milp"
	"github.com/dcpsim/dcpsim/milp/cbc"
	"github.com/dcpsim/dcpsim/sched"
)

// testSolver returns cbc from PATH, or skips the test.
func testSolver(t testing.TB) *cbc.Solver {
	t.Helper()
	s, err := cbc.Find()
	if err != nil {
		t.Skipf("cbc not installed (%v)", err)
	}
	return s
}

// tinyTiming has every term matter: attention, a linear term, a fixed cost
// and an all-to-all that grows with the group.
var tinyTiming = timing{a1: 1e-4, a2: 1e-2, b1: 0.5, u: map[int]float64{1: 0, 2: 1e-3, 4: 3e-3, 8: 6e-3}}

// bruteForce is the paper's per-group optimum by enumeration: every
// multiset of candidate group sizes with total at most the pool (exactly the
// pool when fill), every assignment of the sequences to those groups, each
// group within B and (when fill) non-empty; Cmax over the used groups.
// +Inf when nothing is feasible.
func bruteForce(lengths []int, pool, budget int, degrees []int, tm timing, fill bool) float64 {
	var tilings [][]int
	var rec func(left, largest int, cur []int)
	rec = func(left, largest int, cur []int) {
		if len(cur) > 0 && (!fill || left == 0) {
			tilings = append(tilings, slices.Clone(cur))
		}
		for i := len(degrees) - 1; i >= 0; i-- {
			if d := degrees[i]; d <= largest && d <= left && len(cur) < len(lengths) {
				rec(left-d, d, append(cur, d))
			}
		}
	}
	rec(pool, pool, nil)
	best := math.Inf(1)
	for _, sizes := range tilings {
		k := len(sizes)
		assign := make([]int, len(lengths))
		for {
			tokens := make([]int, k)
			load := make([]float64, k)
			used := make([]bool, k)
			ok := true
			for i, g := range assign {
				tokens[g] += lengths[i]
				load[g] += tm.seqSeconds(lengths[i], sizes[g])
				used[g] = true
			}
			cmax := 0.0
			for g := range k {
				if tokens[g] > budget*sizes[g] || fill && !used[g] {
					ok = false
					break
				}
				if used[g] {
					cmax = max(cmax, tm.b1+load[g])
				}
			}
			if ok {
				best = min(best, cmax)
			}
			i := 0
			for i < len(assign) && assign[i] == k-1 {
				assign[i] = 0
				i++
			}
			if i == len(assign) {
				break
			}
			assign[i]++
		}
	}
	return best
}

// tinyProblem draws a pool of 2 or 4 ranks (8 with few sequences) and a few
// sequences up to the pool's capacity, bucketed exactly (one bucket per
// distinct length).
func tinyProblem(rng *rand.Rand) ([]int, *mbProblem) {
	pool := []int{2, 4, 4, 8}[rng.IntN(4)]
	n := 1 + rng.IntN(4)
	if pool == 8 {
		n = 1 + rng.IntN(3)
	}
	budget := 100
	lengths := make([]int, n)
	for i := range lengths {
		lengths[i] = 1 + rng.IntN(budget*[]int{1, 2, pool}[rng.IntN(3)])
	}
	var degrees []int
	for d := 1; d <= pool; d *= 2 {
		degrees = append(degrees, d)
	}
	buckets, _ := bucketize(lengths, MaxBuckets, int64(pool*budget))
	return lengths, &mbProblem{buckets: buckets, degrees: degrees, pool: pool, budget: budget, timing: tinyTiming, fillPool: rng.IntN(2) == 0}
}

// solveTiny solves p's model to optimality.
func solveTiny(t *testing.T, s milp.Solver, p *mbProblem) (*formulation, *milp.Solution) {
	t.Helper()
	fm := p.build(p.lowerBound(), p.upperBound())
	if fm == nil {
		t.Fatalf("no model for %+v", p)
	}
	sol, err := s.Solve(context.Background(), fm.model, milp.Limits{TimeSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	return fm, sol
}

// TestMILPEqualsBruteForce: on tiny instances the MILP, posed as the paper's
// per-group formulation (every group explicit), has exactly the optimum of
// the brute-force enumeration of every tiling of the pool into power-of-two
// groups and every assignment of the sequences to them, with and without
// the code's fill rule; infeasible exactly when the enumeration finds
// nothing.
func TestMILPEqualsBruteForce(t *testing.T) {
	s := testSolver(t)
	rng := rand.New(rand.NewPCG(11, 12))
	feasible := 0
	for c := range 150 {
		lengths, p := tinyProblem(rng)
		p.explicit = p.pool
		want := bruteForce(lengths, p.pool, p.budget, p.degrees, p.timing, p.fillPool)
		_, sol := solveTiny(t, s, p)
		switch {
		case math.IsInf(want, 1):
			if sol.Status != milp.Infeasible {
				t.Fatalf("case %d %v pool %d fill %v: brute force finds nothing, MILP %s %v", c, lengths, p.pool, p.fillPool, sol.Status, sol.Objective)
			}
		case sol.Status != milp.Optimal || math.Abs(sol.Objective-want) > 1e-6*want:
			t.Fatalf("case %d %v pool %d fill %v: MILP %s %.9g, brute force %.9g", c, lengths, p.pool, p.fillPool, sol.Status, sol.Objective, want)
		default:
			feasible++
		}
	}
	if feasible < 75 {
		t.Errorf("only %d feasible cases of 150", feasible)
	}
}

// TestAggregatedSandwich: with every size aggregated (no explicit group),
// the model is a relaxation of the paper's, so its optimum is at most the
// brute-force optimum, and the plan decoded from it (sequences dealt onto
// each class's groups) is a real plan, so its Cmax is at least the optimum;
// when it packs, the gap is at most one sequence per class.
func TestAggregatedSandwich(t *testing.T) {
	s := testSolver(t)
	rng := rand.New(rand.NewPCG(13, 14))
	packed := 0
	for c := range 150 {
		lengths, p := tinyProblem(rng)
		want := bruteForce(lengths, p.pool, p.budget, p.degrees, p.timing, p.fillPool)
		fm, sol := solveTiny(t, s, p)
		if math.IsInf(want, 1) {
			continue // the relaxation may still find something: nothing to compare
		}
		if !sol.Status.HasSolution() || sol.Objective > want*(1+1e-6) {
			t.Fatalf("case %d %v pool %d: relaxation %s %v above the optimum %v", c, lengths, p.pool, sol.Status, sol.Objective, want)
		}
		pl := &planner{opts: DefaultOptions(), in: sched.Inputs{PoolRanks: p.pool, BudgetTokens: p.budget}, timing: p.timing, lengths: lengths}
		ids := make([]int, len(lengths))
		for i := range ids {
			ids[i] = i
		}
		groups, why, _, err := pl.decode(fm, p, sol.Values, ids)
		if err != nil {
			t.Fatal(err)
		}
		if why != "" {
			continue
		}
		packed++
		if got := planCmax(groups); got < want*(1-1e-9) {
			t.Fatalf("case %d %v: decoded plan Cmax %v below the optimum %v", c, lengths, got, want)
		}
	}
	if packed < 40 {
		t.Errorf("only %d decoded plans packed", packed)
	}
}

// TestBundleOfStartIsFeasible: the heuristic starts map onto model points
// that satisfy every row (the solver may start from them).
func TestStartIsFeasible(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for range 300 {
		_, p := tinyProblem(rng)
		p.explicit = rng.IntN(3)
		start, _ := p.bestStart()
		if start == nil {
			continue
		}
		fm := p.build(p.lowerBound(), groupsCmax(start))
		v := fm.start(start)
		if v == nil {
			t.Fatalf("start %v does not map onto %+v", start, p)
		}
		if x := fm.model.Violation(v); x > 1e-9 {
			t.Fatalf("start violates the model by %v", x)
		}
	}
}
