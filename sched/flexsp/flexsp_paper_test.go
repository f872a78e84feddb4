package flexsp

// One test per behaviour FlexSP's paper (Wang et al., ASPLOS 2025, arXiv
// 2412.01523) and its public solver state, in the paper's order.

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

// newTestPolicy is the policy with defaults and cbc, or skips.
func newTestPolicy(t testing.TB, edit func(*Options)) *Policy {
	t.Helper()
	return buildTestPolicy(t, edit, sched.Env{Solver: testSolver(t)})
}

// buildTestPolicy is the policy of the default options after edit, built
// with env.
func buildTestPolicy(t testing.TB, edit func(*Options), env sched.Env) *Policy {
	t.Helper()
	o := DefaultOptions()
	if edit != nil {
		edit(&o)
	}
	p, err := New(o, env)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// plan plans and validates.
func plan(t testing.TB, p *Policy, lengths []int, in sched.Inputs) (*sched.Plan, *Diagnostics) {
	t.Helper()
	pl, err := p.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Validate(pl, lengths, in, p.Promises()); err != nil {
		t.Fatal(err)
	}
	return pl, pl.Diagnostics.(*Diagnostics)
}

// longBatch samples a long-256k-shaped batch of tokens tokens with context
// ctx.
func longBatch(t testing.TB, tokens int64, ctx int, seed uint64) []int {
	t.Helper()
	s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{TargetTokens: tokens, ContextTokens: ctx, Overlong: workload.Split, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return s.Batch(0).Lengths
}

// §4.1.2, Eq. 12-13 and the code's flexSPCostModel: a sequence of s tokens
// on an SP group of d ranks costs (a1·s² + a2·s)/d + bytes(s)/(d·v_d), with
// the code's defaults in milliseconds (a1 = 5.128e-6, a2 = 0.1839576,
// all-to-all 4·2·32·4096·s·2 bytes, in MiB over "GB/s" taken as ms) and b1 =
// 629.3563 ms per group.
func TestPaperCostModelForm(t *testing.T) {
	tm := newTiming(DefaultTokenCosts(64))
	for _, c := range []struct{ s, d int }{{4096, 8}, {65536, 16}, {1000, 1}, {262144, 64}} {
		s := float64(c.s)
		computeMs := (5.128e-6*s*s + 0.1839576*s) / float64(c.d)
		a2aMs := 0.0
		if c.d > 1 {
			a2aMs = 4 * 2 * 32 * 4096 * s * 2 / 1024 / 1024 / float64(c.d) / defaultBandwidthGBs[c.d]
		}
		want := (computeMs + a2aMs) / 1e3
		if got := tm.seqSeconds(c.s, c.d); math.Abs(got-want) > 1e-12*want {
			t.Errorf("s %d d %d: %v s, the code's model %v s", c.s, c.d, got, want)
		}
	}
	if tm.b1 != 0.6293563 {
		t.Errorf("b1 = %v", tm.b1)
	}
	if got := tm.groupSeconds([]int{100, 200}, 2); math.Abs(got-(tm.b1+tm.seqSeconds(100, 2)+tm.seqSeconds(200, 2))) > 1e-15 {
		t.Errorf("a group's time is b1 plus its sequences': %v", got)
	}
}

// §4.1.1: "each sequence ... is assigned to an SP group whose degree is at
// least its minimum" (code: calculate_min_sp = 2^⌈log2 ⌈s/capacity⌉⌉): every
// sequence of every plan runs on at least that many ranks.
func TestPaperMinimumSPDegree(t *testing.T) {
	if minDegree(8192, 8192) != 1 || minDegree(8193, 8192) != 2 || minDegree(262144, 8192) != 32 || minDegree(3*8192, 8192) != 4 {
		t.Fatal("minDegree is not 2^⌈log2 ⌈s/B⌉⌉")
	}
	p := newTestPolicy(t, nil)
	in := sched.Inputs{PoolRanks: 64, BudgetTokens: 1024, PP: 2, VPP: 1}
	lengths := longBatch(t, 64*1024*3, 32768, 3)
	pl, _ := plan(t, p, lengths, in)
	for _, mb := range pl.Microbatches {
		for _, g := range mb.Groups {
			for _, id := range g.Seqs {
				if need := minDegree(lengths[id], in.BudgetTokens); g.Size < need {
					t.Fatalf("sequence %d (%d tokens) on %d ranks, minimum %d", id, lengths[id], g.Size, need)
				}
			}
		}
	}
}

// §4.1, Table 3: one batch mixes SP groups of several sizes, e.g.
// <32, 16, 8×2> on 64 GPUs. Sequences of 32K, 16K, 8K and 8K tokens at a
// budget of 1K tokens per rank fill a 64-rank pool exactly, so the only
// plan is that mix, one sequence per group.
func TestPaperMixedGroupSizes(t *testing.T) {
	p := newTestPolicy(t, nil)
	in := sched.Inputs{PoolRanks: 64, BudgetTokens: 1024, PP: 1, VPP: 1}
	lengths := []int{8192, 32768, 8192, 16384}
	pl, d := plan(t, p, lengths, in)
	if len(pl.Microbatches) != 1 {
		t.Fatalf("%d microbatches, want 1", len(pl.Microbatches))
	}
	var sizes []int
	for _, g := range pl.Microbatches[0].Groups {
		sizes = append(sizes, g.Size)
		if len(g.Seqs) != 1 {
			t.Errorf("group %+v holds %d sequences", g, len(g.Seqs))
		}
	}
	if !slices.Equal(sizes, []int{32, 16, 8, 8}) || d.Chosen[0].Groups != "1x32 1x16 2x8" {
		t.Errorf("groups %v (%s), want <32, 16, 8x2>", sizes, d.Chosen[0].Groups)
	}
}

// §4.1 (and the FlexSP-BatchAda ablation it beats): sequences of very
// different lengths in one microbatch get different SP degrees. With
// attention dominating the long sequence and an all-to-all that costs more
// than a medium sequence's attention saves, the best plan of one 64K and
// eight 20K sequences on 16 ranks splits the long one over 8 ranks and runs
// each medium one unsplit: Cmax 6.26/8 = 0.78 s, where one 16-rank group
// for all takes 0.89 s and pairs of mediums on 2 ranks 1 s.
func TestPaperDifferentDegreesInOneMicrobatch(t *testing.T) {
	p := buildTestPolicy(t, nil, sched.Env{Solver: testSolver(t), TokenCosts: &sched.TokenCosts{AttentionSecondsPerToken2: 1e-9, LinearSecondsPerToken: 1e-5,
		AllToAll: []sched.DegreeSeconds{{Degree: 2, SecondsPerToken: 2e-5}, {Degree: 4, SecondsPerToken: 2e-5},
			{Degree: 8, SecondsPerToken: 2e-5}, {Degree: 16, SecondsPerToken: 2e-5}}}})
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 65536, PP: 1, VPP: 1}
	lengths := []int{65536}
	for range 8 {
		lengths = append(lengths, 20000)
	}
	pl, d := plan(t, p, lengths, in)
	if len(pl.Microbatches) != 1 || d.Chosen[0].Groups != "1x8 8x1" {
		t.Fatalf("plan %+v (%s), want <8, 1x8>", pl.Microbatches, d.Chosen[0].Groups)
	}
	for _, g := range pl.Microbatches[0].Groups {
		if want := map[bool]int{true: 8, false: 1}[lengths[g.Seqs[0]] == 65536]; g.Size != want || len(g.Seqs) != 1 {
			t.Errorf("group %+v", g)
		}
	}
	if want := (1e-9*65536*65536 + 3e-5*65536) / 8; math.Abs(d.Chosen[0].CmaxSeconds-want) > 1e-9 {
		t.Errorf("Cmax %v, want %v", d.Chosen[0].CmaxSeconds, want)
	}
}

// §4.1 (code: Σ m_p·d_p = N, every used group non-empty): when the
// sequences allow it, the groups of a microbatch cover the whole pool; the
// paper's Σ d_p·m_p <= N is the fallback (Diagnostics.Chosen[i].FillsPool).
func TestPaperGroupsCoverThePool(t *testing.T) {
	p := newTestPolicy(t, nil)
	in := sched.Inputs{PoolRanks: 32, BudgetTokens: 2048, PP: 2, VPP: 1}
	lengths := longBatch(t, 32*2048*4, 32768, 5)
	pl, d := plan(t, p, lengths, in)
	for m, mb := range pl.Microbatches {
		ranks := 0
		for _, g := range mb.Groups {
			ranks += g.Size
		}
		if d.Chosen[m].FillsPool && ranks != in.PoolRanks {
			t.Errorf("microbatch %d fills the pool by its diagnostics but covers %d of %d ranks", m, ranks, in.PoolRanks)
		}
		if !d.Chosen[m].FillsPool && len(mb.Groups) > 1 && d.Chosen[m].Sequences >= in.PoolRanks {
			t.Logf("microbatch %d fell back to the paper's <= N (%s)", m, d.Chosen[m].Status)
		}
	}
	// Too few sequences to cover the pool with non-empty groups of at most
	// 2 ranks: the paper's rule applies.
	pl, d = plan(t, p, []int{100, 200, 300}, sched.Inputs{PoolRanks: 8, BudgetTokens: 2048, MaxDegree: 2, PP: 1, VPP: 1})
	if d.Chosen[0].FillsPool || len(pl.Microbatches[0].Groups) > 3 {
		t.Errorf("three sequences on 8 ranks in groups of at most 2: %+v, %+v", pl.Microbatches, d.Chosen[0])
	}
}

// §4.2: the Sequence Blaster sorts the batch by length and cuts it into M
// consecutive chunks (longest first); M starts at ⌈tokens/(N·B)⌉, raised
// until every chunk fits the pool (M_min), the counts M_min ... M_min+M'−1
// are tried, and the one with the least predicted time Σ Cmax is kept.
func TestPaperSequenceBlaster(t *testing.T) {
	p := newTestPolicy(t, nil)
	in := sched.Inputs{PoolRanks: 32, BudgetTokens: 2048, PP: 2, VPP: 1}
	lengths := longBatch(t, 32*2048*5, 32768, 7)
	pl, d := plan(t, p, lengths, in)
	var total int64
	for _, s := range lengths {
		total += int64(s)
	}
	capacity := int64(in.PoolRanks * in.BudgetTokens)
	if want := int((total + capacity - 1) / capacity); d.TokenBoundMicrobatches != want || d.MinMicrobatches < want {
		t.Errorf("M bounds %d/%d, want ⌈%d/%d⌉ = %d", d.TokenBoundMicrobatches, d.MinMicrobatches, total, capacity, want)
	}
	if len(d.Candidates) != DefaultOptions().MicrobatchCounts || d.Candidates[0].Microbatches != d.MinMicrobatches {
		t.Fatalf("candidates %+v", d.Candidates)
	}
	best := math.Inf(1)
	for i, c := range d.Candidates {
		if c.Microbatches != d.MinMicrobatches+i {
			t.Errorf("candidate %d is M = %d", i, c.Microbatches)
		}
		if c.Outcome == "planned" {
			best = min(best, c.PredictedSeconds)
		}
	}
	if d.PredictedSeconds != best || len(pl.Microbatches) != d.Microbatches {
		t.Errorf("chose M = %d at %v, best predicted %v", d.Microbatches, d.PredictedSeconds, best)
	}
	// Consecutive chunks of the sorted batch, longest first.
	order := sortedOrder(lengths)
	pos := make([]int, len(lengths))
	for i, id := range order {
		pos[id] = i
	}
	next := 0
	for m, mb := range pl.Microbatches {
		var ps []int
		for _, g := range mb.Groups {
			for _, id := range g.Seqs {
				ps = append(ps, pos[id])
			}
		}
		slices.Sort(ps)
		if ps[0] != next || ps[len(ps)-1] != next+len(ps)-1 {
			t.Fatalf("microbatch %d holds sorted positions %d..%d (%d of them), want a chunk from %d", m, ps[0], ps[len(ps)-1], len(ps), next)
		}
		next += len(ps)
	}
}

// App. A: the chunking minimises the largest chunk's tokens over every way
// to cut the sorted sequence into M non-empty consecutive chunks (checked
// by enumerating every cut).
func TestPaperChunkingMinimisesMaxTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for range 500 {
		n := 1 + rng.IntN(12)
		items := make([]int, n)
		for i := range items {
			items[i] = 1 + rng.IntN(1000)
		}
		slices.SortFunc(items, func(a, b int) int { return b - a })
		m := 1 + rng.IntN(n)
		cuts := chunk(items, m)
		got := int64(0)
		for k := range m {
			if cuts[k+1] <= cuts[k] {
				t.Fatalf("empty chunk %d in %v", k, cuts)
			}
			got = max(got, sum(items[cuts[k]:cuts[k+1]]))
		}
		best := int64(math.MaxInt64)
		var rec func(start, left int, worst int64)
		rec = func(start, left int, worst int64) {
			if left == 1 {
				best = min(best, max(worst, sum(items[start:])))
				return
			}
			for end := start + 1; end <= n-left+1; end++ {
				rec(end, left-1, max(worst, sum(items[start:end])))
			}
		}
		rec(0, m, 0)
		if got != best {
			t.Fatalf("items %v m %d: largest chunk %d, optimum %d", items, m, got, best)
		}
	}
}

func sum(xs []int) int64 {
	var s int64
	for _, x := range xs {
		s += int64(x)
	}
	return s
}

// §4.1.3: the bucketing DP minimises the rounding error Σ (boundary − s)
// (checked by enumerating every split of the sorted distinct lengths), and
// the code's rule grows Q until the rounded tokens are at most half way from
// the true tokens to the pool's capacity.
func TestPaperBucketingOptimalAndBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for range 300 {
		n := 1 + rng.IntN(10)
		lengths := make([]int, n)
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(500)
		}
		values, counts := distinct(lengths)
		k := 1 + rng.IntN(len(values))
		b := newBucketer(values, counts)
		for range k {
			b.grow()
		}
		got := roundingError(b.buckets(k), lengths)
		best := int64(math.MaxInt64)
		var rec func(start, left int, acc int64)
		rec = func(start, left int, acc int64) {
			if left == 1 {
				best = min(best, acc+bucketErr(values[start:], counts[start:]))
				return
			}
			for end := start + 1; end <= len(values)-left+1; end++ {
				rec(end, left-1, acc+bucketErr(values[start:end], counts[start:end]))
			}
		}
		rec(0, k, 0)
		if got != best {
			t.Fatalf("lengths %v k %d: error %d, optimum %d", lengths, k, got, best)
		}
		capacity := int64(rng.IntN(3000)) + sum(lengths)
		bs, _ := bucketize(lengths, 1+rng.IntN(4), capacity)
		var rounded int64
		for _, bk := range bs {
			rounded += int64(bk.Boundary) * int64(bk.Count)
		}
		if rounded > (sum(lengths)+capacity)/2 && len(bs) < len(values) {
			t.Fatalf("rounded %d tokens > (%d + %d)/2 with %d of %d buckets", rounded, sum(lengths), capacity, len(bs), len(values))
		}
	}
}

func bucketErr(values, counts []int) int64 {
	var e int64
	top := values[len(values)-1]
	for i, v := range values {
		e += int64(counts[i]) * int64(top-v)
	}
	return e
}

func roundingError(bs []bucket, lengths []int) int64 {
	var r int64
	for _, b := range bs {
		r += int64(b.Boundary) * int64(b.Count)
	}
	return r - sum(lengths)
}

// §4.1.3: on real microbatches the DP's buckets never round more than
// equal-width buckets of the same count (the code's even_dist): an
// equal-width bucket's boundary is at least the longest sequence in it, and
// the DP is optimal over every split. The paper reports 0.5-2.3% of the
// tokens against 8.8-22% on its datasets; the numbers here are logged.
func TestPaperBucketingBeatsNaive(t *testing.T) {
	lengths := longBatch(t, 1<<22, 262144, 9)
	order := sortedOrder(lengths)
	items := make([]int, len(order))
	for i, id := range order {
		items[i] = lengths[id]
	}
	cuts := chunk(items, 4)
	for k := range 4 {
		mb := items[cuts[k]:cuts[k+1]]
		values, counts := distinct(mb)
		q := min(16, len(values))
		b := newBucketer(values, counts)
		for range q {
			b.grow()
		}
		dp := float64(roundingError(b.buckets(q), mb)) / float64(sum(mb))
		width := (values[len(values)-1] + q - 1) / q
		var naive int64
		for _, s := range mb {
			naive += int64((s+width-1)/width*width - s)
		}
		ratio := float64(naive) / float64(sum(mb))
		if dp > ratio {
			t.Errorf("microbatch %d: DP rounds %.2f%% of the tokens, equal width %.2f%%", k, 100*dp, 100*ratio)
		}
		grown, _ := bucketize(mb, 16, 2*sum(mb))
		t.Logf("microbatch %d (%d sequences): 16 DP buckets round %.2f%% of the tokens, 16 equal-width %.2f%%; the code's rule grows to %d buckets, %.2f%%",
			k, len(mb), 100*dp, 100*ratio, len(grown), 100*float64(roundingError(grown, mb))/float64(sum(mb)))
	}
}

// §4.2 (the code's mp_microbatch_worker): a microbatch count is feasible
// only if every one of its microbatches has a plan; an infeasible count is
// passed over. A sequence that fills the widest group alone, in every
// chunk, makes the smallest counts infeasible when the groups' width is
// capped below the pool.
func TestPaperInfeasibleCountsPassedOver(t *testing.T) {
	p := newTestPolicy(t, nil)
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 1000, MaxDegree: 4, PP: 1, VPP: 1}
	// Five 4,000-token sequences: each needs a group of 4 to itself, so at
	// most 4 fit one microbatch although the pool holds 16,000 tokens.
	lengths := []int{4000, 4000, 4000, 4000, 4000}
	pl, d := plan(t, p, lengths, in)
	if d.MinMicrobatches != 2 || len(pl.Microbatches) < 2 {
		t.Errorf("M_min %d, chose %d", d.MinMicrobatches, len(pl.Microbatches))
	}
	in.MaxDegree = 2
	if _, err := p.Plan(lengths, in); err == nil {
		t.Error("4,000 tokens on groups of at most 2 ranks of 1,000: planned")
	}
}
