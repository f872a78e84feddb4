package hydra

// One test per claim of the HyDra paper's §5.1 and of the derivation doc.go writes out,
// in the order they are made.

import (
	"cmp"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// plannedCases returns n random cases that have a plan, with their heap plans.
func plannedCases(t *testing.T, seed uint64, n int) ([]testCase, []*sched.Plan) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	pol, _ := New(DefaultOptions())
	var cases []testCase
	var plans []*sched.Plan
	for len(cases) < n {
		c := randomCase(rng)
		c.opts = Options{}
		p, err := pol.Plan(c.lengths, c.in)
		if err != nil {
			continue // engine limit below C_mem
		}
		cases, plans = append(cases, c), append(plans, p)
	}
	return cases, plans
}

// §5.1.1, spec §1: "Even at the cap, the longest sequence leaves s_max²/C on each
// of its ranks": Λ* = s_max²/C*, and in every plan the longest sequence runs alone
// on exactly C* ranks, each carrying exactly Λ*.
func TestPaperLoadTargetIsLongestAtCap(t *testing.T) {
	if got := LoadTarget(262144, 256); got != 262144.0*262144/256 {
		t.Fatalf("LoadTarget = %g", got)
	}
	cases, plans := plannedCases(t, 101, 300)
	for i, p := range plans {
		c, d := cases[i], p.Diagnostics.(*Diagnostics)
		if d.LoadTarget != LoadTarget(d.MaxTokens, d.Cap) {
			t.Fatalf("%v: Λ* = %g, s_max²/C* = %g", c, d.LoadTarget, LoadTarget(d.MaxTokens, d.Cap))
		}
		longest := slices.Index(c.lengths, d.MaxTokens)
		found := false
		for _, mb := range p.Microbatches {
			for _, g := range mb.Groups {
				if slices.Contains(g.Seqs, longest) {
					found = true
					if g.Size != d.Cap || len(g.Seqs) != 1 {
						t.Fatalf("%v: the longest sequence runs on %d ranks with %v, want alone on C* = %d", c, g.Size, g.Seqs, d.Cap)
					}
				}
			}
		}
		if !found {
			t.Fatalf("%v: longest sequence not placed", c)
		}
	}
}

// spec §2: M(C) = max(⌈S2·C/(G·s_max²)⌉, ⌈S1/(G·B)⌉), checked against exact
// rational arithmetic, with the regime of the larger term.
func TestPaperMicrobatchCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		n := 1 + rng.IntN(50)
		lengths := make([]int, n)
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(1<<(1+rng.IntN(30)))
		}
		sums := BatchSums(lengths)
		g, budget, capDegree := 1<<rng.IntN(14), 1+rng.IntN(1<<20), 1<<rng.IntN(14)
		ceilRat := func(num, den *big.Int) int64 {
			q, r := new(big.Int).QuoRem(num, den, new(big.Int))
			if r.Sign() > 0 {
				q.Add(q, big.NewInt(1))
			}
			return q.Int64()
		}
		var s2 big.Int
		for _, s := range lengths {
			s2.Add(&s2, new(big.Int).Mul(big.NewInt(int64(s)), big.NewInt(int64(s))))
		}
		sm := big.NewInt(int64(sums.MaxTokens))
		load := ceilRat(new(big.Int).Mul(&s2, big.NewInt(int64(capDegree))), new(big.Int).Mul(new(big.Int).Mul(sm, sm), big.NewInt(int64(g))))
		tokens := ceilRat(big.NewInt(sums.Tokens), big.NewInt(int64(g)*int64(budget)))
		m, tokenBound := MicrobatchTarget(sums, g, budget, capDegree)
		if int64(m) != max(load, tokens) || tokenBound != (tokens > load) {
			t.Fatalf("M(C=%d, G=%d, B=%d) = %d (token-bound %v), want max(%d, %d)", capDegree, g, budget, m, tokenBound, load, tokens)
		}
	}
}

// spec §3: C* minimises T(C) among the powers of two in [C_mem, engine limit].
// (a) The relaxed T of the derivation (M without ceilings) is convex in C, so its
// best power of two is one of the two around the continuous C*: brute force over
// every power of two in range agrees. (b) C* is the better of those two by the
// exact T, ties to the smaller. (c) When S2 is a multiple of G·s_max² and the load
// term wins, the ceilings vanish and C* is the brute-force minimiser of the exact T.
// (With ceilings, or token-bound M, T need not be convex; the spec rounds only
// between the two neighbours, and so does Solve.)
func TestPaperCapMinimisesT(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		g := 1 << (3 + rng.IntN(11))
		in := sched.Inputs{PoolRanks: g, BudgetTokens: 1024 << rng.IntN(4), PP: 1 + rng.IntN(8), VPP: 1 + rng.IntN(2),
			OverheadRatio: math.Pow(10, 12*rng.Float64())}
		sMax := in.BudgetTokens * (1 + rng.IntN(g))
		var sums Sums
		exact := rng.IntN(2) == 0
		if exact { // S2 = m·G·s_max², S1 = s_max: load-bound, no ceilings
			m := 1 + rng.IntN(1000)
			sums = Sums{Sequences: 1, Tokens: int64(sMax), MaxTokens: sMax,
				SquaredTokens: new(big.Int).Mul(big.NewInt(int64(m*g)), new(big.Int).Mul(big.NewInt(int64(sMax)), big.NewInt(int64(sMax))))}
		} else {
			lengths := []int{sMax}
			for range rng.IntN(2000) {
				lengths = append(lengths, 1+rng.IntN(sMax))
			}
			sums = BatchSums(lengths)
		}
		tg, err := Solve(sums, in, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, ratio := tg.Bubble, in.OverheadRatio
		relaxed := func(c int) float64 {
			s2, _ := new(big.Float).SetInt(sums.SquaredTokens).Float64()
			s := float64(sMax)
			return (s2*float64(c)/(float64(g)*s*s) + b) * (s*s/float64(c) + ratio)
		}
		exactT := func(c int) float64 { return IterationTime(sums, g, in.BudgetTokens, c, b, ratio) }
		bestRelaxed, bestExact := tg.MemoryCap, tg.MemoryCap
		for c := tg.MemoryCap; c <= tg.EngineLimit; c *= 2 {
			if relaxed(c) < relaxed(bestRelaxed) {
				bestRelaxed = c
			}
			if exactT(c) < exactT(bestExact) {
				bestExact = c
			}
		}
		if b > 0 && bestRelaxed != tg.LowerCap && bestRelaxed != tg.UpperCap &&
			relaxed(bestRelaxed) < 0.999999*min(relaxed(tg.LowerCap), relaxed(tg.UpperCap)) {
			t.Fatalf("relaxed T is least at C = %d, outside {%d, %d} (continuous %g)", bestRelaxed, tg.LowerCap, tg.UpperCap, float64(tg.ContinuousCap))
		}
		want := tg.LowerCap
		if exactT(tg.UpperCap) < exactT(tg.LowerCap) {
			want = tg.UpperCap
		}
		if tg.Cap != want {
			t.Fatalf("C* = %d, the better of {%d, %d} is %d", tg.Cap, tg.LowerCap, tg.UpperCap, want)
		}
		if exact && b > 0 && tg.Cap != bestExact && exactT(bestExact) < exactT(tg.Cap)*(1-1e-12) {
			t.Fatalf("exact case: C* = %d (T %g), brute force %d (T %g)", tg.Cap, exactT(tg.Cap), bestExact, exactT(bestExact))
		}
	}
}

// spec §4 worked example: 256K context, B = 8K (C_mem = 32), C* = 256:
// 256K -> 256, 128K -> 64, 64K -> 16, 32K -> 4, 16K -> 2, <= 8K -> 1.
func TestPaperDegreeWorkedExample(t *testing.T) {
	lengths := []int{262144, 131072, 65536, 32768, 16384, 8192, 4000, 1}
	in := sched.Inputs{PoolRanks: 512, BudgetTokens: 8192, PP: 4, VPP: 1, OverheadRatio: 1e9}
	tg, err := Solve(BatchSums(lengths), in, 256)
	if err != nil {
		t.Fatal(err)
	}
	if tg.MemoryCap != 32 || tg.Cap != 256 {
		t.Fatalf("C_mem %d, C* %d", tg.MemoryCap, tg.Cap)
	}
	want := []int{256, 64, 16, 4, 2, 1, 1, 1}
	for i, s := range lengths {
		if got := tg.Degree(s); got != want[i] {
			t.Errorf("cp(%d) = %d, want %d", s, got, want[i])
		}
	}
}

// spec §4: cp(s) is the smallest power of two meeting both Λ* and B, capped at
// C*, so never below the memory degree pow2ceil(s/B) (Mcore's rule); checked
// against the formula in exact rationals, for every length up to s_max.
func TestPaperDegreeNeverBelowMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 200 {
		budget := 1 + rng.IntN(9000)
		sMax := 1 + rng.IntN(200*budget)
		memCap := MemoryCap(sMax, budget)
		tg := Targets{MaxTokens: sMax, BudgetTokens: budget, Cap: memCap << rng.IntN(6)}
		step := max(1, sMax/500)
		for s := 1; s <= sMax; s += step {
			// Smallest power of two k with k >= s²·C*/s_max² and k·B >= s, capped.
			want := 1
			for want < tg.Cap && (big.NewInt(int64(want)*int64(sMax)*int64(sMax)).Cmp(new(big.Int).Mul(big.NewInt(int64(s)*int64(s)), big.NewInt(int64(tg.Cap)))) < 0 || want*budget < s) {
				want *= 2
			}
			got := tg.Degree(s)
			if got != want {
				t.Fatalf("cp(%d) with s_max %d, B %d, C* %d = %d, want %d", s, sMax, budget, tg.Cap, got, want)
			}
			if got < sched.MemoryDegree(s, budget) {
				t.Fatalf("cp(%d) = %d below the memory degree %d", s, got, sched.MemoryDegree(s, budget))
			}
		}
	}
}

// §5.1.2: "places sequences longest-first": the order is lengths descending,
// ties by lower id (a stable sort), and every group runs its sequences in that
// order; the longest sequence opens MB 0 at rank 0.
func TestPaperLongestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 200 {
		lengths := make([]int, 1+rng.IntN(3000))
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(1<<rng.IntN(31))
		}
		want := make([]int, len(lengths))
		for i := range want {
			want[i] = i
		}
		slices.SortStableFunc(want, func(a, b int) int { return cmp.Compare(lengths[b], lengths[a]) })
		order := sortLongestFirst(lengths)
		for i := range want {
			if id, tokens := seqAt(order[i]); id != want[i] || int(tokens) != lengths[want[i]] {
				t.Fatalf("position %d: id %d (%d tokens), want %d", i, id, tokens, want[i])
			}
		}
	}
	cases, plans := plannedCases(t, 15, 200)
	for i, p := range plans {
		checkPlan(t, cases[i], p) // includes "each group longest first"
		first := p.Microbatches[0].Groups[0]
		if first.FirstRank != 0 || first.Seqs[0] != slices.Index(cases[i].lengths, slices.Max(cases[i].lengths)) {
			t.Fatalf("%v: MB 0 opens with %+v", cases[i], first)
		}
	}
}

// planOf plans lengths with both policies and returns the (identical) plan.
func planOf(t *testing.T, lengths []int, in sched.Inputs) *sched.Plan {
	t.Helper()
	h, s, ok := planBoth(t, testCase{lengths: lengths, in: in})
	if !ok {
		t.Fatal("no plan")
	}
	if !reflect.DeepEqual(h.Microbatches, s.Microbatches) {
		t.Fatalf("heap %+v\nscan %+v", h.Microbatches, s.Microbatches)
	}
	return h
}

// groupOf returns the group of microbatch m that holds sequence id.
func groupOf(p *sched.Plan, m, id int) sched.Group {
	for _, g := range p.Microbatches[m].Groups {
		if slices.Contains(g.Seqs, id) {
			return g
		}
	}
	return sched.Group{}
}

// §5.1.2: "it first opens a new k-aligned group if enough free ranks are
// available": with G = 8, B = 8, pp = 1 (C* = 2), 16 and 12 open [0,2) and [2,4);
// 3 could join [2,4) but opens a group on the free rank 4.
func TestPaperNewGroupBeforePiggyback(t *testing.T) {
	p := planOf(t, []int{16, 12, 3}, sched.Inputs{PoolRanks: 8, BudgetTokens: 8, PP: 1, VPP: 1})
	if g := groupOf(p, 0, 2); g.FirstRank != 4 || !slices.Equal(g.Seqs, []int{2}) {
		t.Fatalf("sequence 2 in %+v, want its own group at rank 4", g)
	}
}

// §5.1.2: "Otherwise, it piggybacks on the smallest feasible open group of size at
// least k, breaking ties by load" (spec: then by lower start rank).
func TestPaperPiggybackSmallestThenLowestLoad(t *testing.T) {
	in8 := sched.Inputs{PoolRanks: 8, BudgetTokens: 8, PP: 1, VPP: 1}
	in4 := sched.Inputs{PoolRanks: 4, BudgetTokens: 8, PP: 1, VPP: 1}
	// Smallest: 3 fits [2,4) (size 2) and rank 7 (size 1): rank 7.
	if g := groupOf(planOf(t, []int{16, 12, 8, 8, 8, 5, 3}, in8), 0, 6); g.FirstRank != 7 || g.Size != 1 {
		t.Errorf("smallest: sequence 6 in %+v, want rank 7", g)
	}
	// Only a larger group fits: rank-1 groups full, 3 joins [2,4).
	if g := groupOf(planOf(t, []int{16, 12, 8, 8, 8, 8, 3}, in8), 0, 6); g.FirstRank != 2 || g.Size != 2 {
		t.Errorf("larger: sequence 6 in %+v, want [2,4)", g)
	}
	// Lowest load: 3 fits rank 2 (Σ s² = 25) and rank 3 (16): rank 3.
	if g := groupOf(planOf(t, []int{16, 5, 4, 3}, in4), 0, 3); g.FirstRank != 3 {
		t.Errorf("lowest load: sequence 3 in %+v, want rank 3", g)
	}
	// Equal loads: 2 goes to the lower start rank.
	if g := groupOf(planOf(t, []int{16, 3, 3, 2}, in4), 0, 3); g.FirstRank != 2 {
		t.Errorf("lowest rank: sequence 3 in %+v, want rank 2", g)
	}
	// Feasibility: a group that would pass B per rank is skipped (rank 3 holds 7 of
	// 8 tokens after taking 3, so the next 2 goes to rank 2).
	if g := groupOf(planOf(t, []int{16, 5, 4, 3, 2}, in4), 0, 4); g.FirstRank != 2 {
		t.Errorf("token budget: sequence 4 in %+v, want rank 2", g)
	}
}

// §5.1.2: "Alignment keeps every group within a prebuilt power-of-two rank chunk":
// every group of every plan is a power-of-two block at a multiple of its size.
func TestPaperGroupsAligned(t *testing.T) {
	cases, plans := plannedCases(t, 17, 500)
	for i, p := range plans {
		if err := sched.Validate(p, cases[i].lengths, cases[i].in, sched.Promises{Aligned: true}); err != nil {
			t.Fatalf("%v: %v", cases[i], err)
		}
	}
}

// §5.1.3 / spec §7 (MB-balance test): no rank of any MB carries more than Λ*,
// exactly (Σ s²·C* <= s_max²·size). The one sequence that reaches Λ* exactly is a
// sequence of length s_max alone on C* ranks.
func TestPaperNoRankAboveLoadTarget(t *testing.T) {
	cases, plans := plannedCases(t, 19, 500)
	for i, p := range plans {
		d := p.Diagnostics.(*Diagnostics)
		sm := int64(d.MaxTokens)
		for m, mb := range p.Microbatches {
			for _, g := range mb.Groups {
				var squares int64
				for _, id := range g.Seqs {
					squares += int64(cases[i].lengths[id]) * int64(cases[i].lengths[id])
				}
				if over(squares, int64(d.Cap), sm*sm, int64(g.Size)) {
					t.Fatalf("%v: MB %d group at %d: per-rank load %g > Λ* %g", cases[i], m, g.FirstRank, float64(squares)/float64(g.Size), d.LoadTarget)
				}
			}
		}
	}
}

// §5.1.2: "After closing each MB, HyDra backfills idle ranks": no group below C*
// is left next to a wholly free buddy block (checkPlan), and when one group is
// alone in an MB and C* = G, it grows to cover the whole pool.
func TestPaperBackfill(t *testing.T) {
	cases, plans := plannedCases(t, 23, 300)
	for i, p := range plans {
		checkPlan(t, cases[i], p)
	}
	// θ/c = 0, pp = 2: C* = G = 8, Λ* = 16/8 = 2. 4 takes the whole pool (16/2 = 8
	// ranks); 2 needs 4/2 = 2 ranks, alone in MB 1, and doubles to 4, then 8.
	p := planOf(t, []int{4, 2}, sched.Inputs{PoolRanks: 8, BudgetTokens: 8, PP: 2, VPP: 1})
	if len(p.Microbatches) != 2 {
		t.Fatalf("plan %+v", p.Microbatches)
	}
	if g := p.Microbatches[1].Groups; len(g) != 1 || g[0].FirstRank != 0 || g[0].Size != 8 {
		t.Fatalf("MB 1 %+v, want one group over all 8 ranks", g)
	}
	if err := sched.Validate(p, []int{4, 2}, sched.Inputs{PoolRanks: 8, BudgetTokens: 8, PP: 2, VPP: 1}, sched.Promises{CoversPool: true}); err != nil {
		t.Fatal(err)
	}
}

// spec §7: "With pp = 1 the bubble term vanishes and C* = C_mem (degrees equal
// Mcore's memory minimum)". The degrees equal pow2ceil(s/B) whenever s_max/B is
// a power of two; otherwise the load term can lift a sequence above it.
func TestPaperPPOneCapIsMemoryCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for range 300 {
		c := randomCase(rng)
		c.in.PP, c.in.MaxDegree = 1, 0
		tg, err := Solve(BatchSums(c.lengths), c.in, 0)
		if err != nil {
			t.Fatal(err)
		}
		if tg.ContinuousCap != 0 || tg.Cap != tg.MemoryCap {
			t.Fatalf("%v: continuous C* %g, C* %d, C_mem %d", c, float64(tg.ContinuousCap), tg.Cap, tg.MemoryCap)
		}
		if tg.MaxTokens == tg.MemoryCap*c.in.BudgetTokens {
			for _, s := range c.lengths {
				if tg.Degree(s) != sched.MemoryDegree(s, c.in.BudgetTokens) {
					t.Fatalf("%v: cp(%d) = %d, memory degree %d", c, s, tg.Degree(s), sched.MemoryDegree(s, c.in.BudgetTokens))
				}
			}
		}
	}
	// s_max/B = 17: C_mem = 32; s = 0.9·s_max has memory degree 16, but
	// s²·C*/s_max² = 25.9 lifts it to 32.
	tg, err := Solve(BatchSums([]int{17 * 1024, 15667}), sched.Inputs{PoolRanks: 64, BudgetTokens: 1024, PP: 1, VPP: 1, OverheadRatio: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Cap != 32 || tg.Degree(15667) != 32 || sched.MemoryDegree(15667, 1024) != 16 {
		t.Fatalf("C* %d, cp %d, memory %d", tg.Cap, tg.Degree(15667), sched.MemoryDegree(15667, 1024))
	}
}

// §5.1.3: "These structures reproduce the linear search's least-loaded placement
// and deterministic tie-breaking exactly": hydra and hydra-scan make identical
// plans, group for group, on 10^4 random batches (G = 8..8192, B = 1K..8K,
// pp 1..8, vpp 1..2, θ/c 0..1e9, preset and hand-made lengths), and both validate.
func TestPaperHeapEqualsScan(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	rng := rand.New(rand.NewPCG(31, 32))
	pol, _ := New(DefaultOptions())
	promises := pol.Promises()
	planned := 0
	for range n {
		c := randomCase(rng)
		h, s, ok := planBoth(t, c)
		if !ok {
			continue
		}
		planned++
		if !reflect.DeepEqual(h.Microbatches, s.Microbatches) {
			t.Fatalf("%v: hydra and hydra-scan differ", c)
		}
		for _, p := range []*sched.Plan{h, s} {
			if err := sched.Validate(p, c.lengths, c.in, promises); err != nil {
				t.Fatalf("%v: %s: %v", c, p.Policy, err)
			}
		}
	}
	if planned < n*3/4 {
		t.Fatalf("only %d of %d cases planned", planned, n)
	}
}
