package hydra

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/pipeline"
)

// legalByPipeline is the simulator's own verdict: pipeline.New accepts m
// micro-batches for p stages, v chunks and group size n. (The layering rule
// keeps sim out of sched's non-test code only.)
func legalByPipeline(p, v, m, n int) bool {
	_, err := pipeline.New(p, v, m, n)
	return err == nil
}

// mbSpec is a hand-written MB: groups as {first rank, size, sequence ids...}.
type mbSpec struct {
	closed string // checked when not empty
	groups [][]int
}

func toMBs(specs []mbSpec) []sched.Microbatch {
	out := make([]sched.Microbatch, len(specs))
	for i, s := range specs {
		out[i].Closed = s.closed
		for _, g := range s.groups {
			out[i].Groups = append(out[i].Groups, sched.Group{FirstRank: g[0], Size: g[1], Seqs: slices.Clone(g[2:])})
		}
	}
	return out
}

// sameMBs compares groups always and Closed where the spec gives one.
func sameMBs(got []sched.Microbatch, want []mbSpec) bool {
	w := toMBs(want)
	if len(got) != len(w) {
		return false
	}
	for i := range w {
		if !reflect.DeepEqual(got[i].Groups, w[i].Groups) || w[i].Closed != "" && got[i].Closed != w[i].Closed {
			return false
		}
	}
	return true
}

// TestVPPAlignmentHandPlans checks whole aligned plans computed by hand, through
// both policies. Every case has θ/c = 0 and pp >= 2, so C* is the engine limit
// (here G) whatever vpp is.
func TestVPPAlignmentHandPlans(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lengths []int
		in      sched.Inputs
		packed  int // packed M
		want    []mbSpec
	}{
		{
			// G = 2, B = 4: C* = 2, Λ* = 64/2 = 32 (a rank holds Σ s² <= 32 and 4
			// tokens). 8 -> 2 ranks, 4 and 2 -> 1 rank. The two 8s fill MBs 0 and 1;
			// MB 2: 4 on rank 0 (full), 2 on rank 1, the second 2 joins rank 1.
			// M = 3, N = pp = 2: 3 mod 2 = 1 < 2, so 4. MB 2 (the only one with two
			// groups) splits into rank 0's group and rank 1's; each doubles into the
			// other's rank (C* = 2).
			name:    "pp2 vpp2 M 3->4",
			lengths: []int{8, 8, 4, 2, 2},
			in:      sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 2, VPP: 2},
			packed:  3,
			want: []mbSpec{
				{groups: [][]int{{0, 2, 0}}},
				{groups: [][]int{{0, 2, 1}}},
				{"vpp split of packed MB 2: even-position groups; backfill: 1 doublings, 0 idle ranks", [][]int{{0, 2, 2}}},
				{"vpp split of packed MB 2: odd-position groups; backfill: 1 doublings, 0 idle ranks", [][]int{{0, 2, 3, 4}}},
			},
		},
		{
			// As above with five 8s: M = 6, N = pp = 4: 6 mod 4 = 2 < 4, so 8. The
			// first split takes MB 5 (two groups); then every MB has one group and
			// only MB 6 (2, 2) holds two sequences: it splits by sequence, on its
			// ranks, nothing to backfill.
			name:    "pp4 vpp2 M 6->8",
			lengths: []int{8, 8, 8, 8, 8, 4, 2, 2},
			in:      sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 4, VPP: 2},
			packed:  6,
			want: []mbSpec{
				{groups: [][]int{{0, 2, 0}}},
				{groups: [][]int{{0, 2, 1}}},
				{groups: [][]int{{0, 2, 2}}},
				{groups: [][]int{{0, 2, 3}}},
				{groups: [][]int{{0, 2, 4}}},
				{"vpp split of packed MB 5: even-position groups; backfill: 1 doublings, 0 idle ranks", [][]int{{0, 2, 5}}},
				{"vpp split of packed MB 5: even-position sequences; backfill: 0 doublings, 0 idle ranks", [][]int{{0, 2, 6}}},
				{"vpp split of packed MB 5: odd-position sequences; backfill: 0 doublings, 0 idle ranks", [][]int{{0, 2, 7}}},
			},
		},
		{
			// N = 3 > pp = 2: M = 4, 4 mod 3 = 1 < 2, so 5 (5 mod 3 = 2 >= 2).
			name:    "pp2 N3 M 4->5",
			lengths: []int{8, 8, 8, 4, 2, 2},
			in:      sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 2, VPP: 3, MicrobatchGroupSize: 3},
			packed:  4,
			want: []mbSpec{
				{groups: [][]int{{0, 2, 0}}},
				{groups: [][]int{{0, 2, 1}}},
				{groups: [][]int{{0, 2, 2}}},
				{"vpp split of packed MB 3: even-position groups; backfill: 1 doublings, 0 idle ranks", [][]int{{0, 2, 3}}},
				{"vpp split of packed MB 3: odd-position groups; backfill: 1 doublings, 0 idle ranks", [][]int{{0, 2, 4, 5}}},
			},
		},
		{
			// G = 4, B = 4, C* = 4, Λ* = 64/4 = 16: a group of k ranks holds
			// Σ s² <= 16k, so 8 needs [0,4) alone, 4 and 2 one rank. MB 0: 8 (no
			// sequence can join: 64 + 4 > 64). MB 1: 4, 4, 4, 4 open ranks 0-3; the
			// 2s wait (ranks hold 4 tokens). MB 2: the 2s open ranks 0, 1, 2 (a new
			// group before piggybacking); backfill doubles rank 2 into rank 3. pp =
			// N = 4: M = 3 -> 4. MB 1 has the most groups (4 > 3): even groups
			// (ranks 0, 2) and odd (ranks 1, 3); in each half every group doubles
			// once into the freed neighbour.
			name:    "pp4 vpp2 M 3->4 most groups",
			lengths: []int{8, 4, 4, 4, 4, 2, 2, 2},
			in:      sched.Inputs{PoolRanks: 4, BudgetTokens: 4, PP: 4, VPP: 2},
			packed:  3,
			want: []mbSpec{
				{groups: [][]int{{0, 4, 0}}},
				{"vpp split of packed MB 1: even-position groups; backfill: 2 doublings, 0 idle ranks", [][]int{{0, 2, 1}, {2, 2, 3}}},
				{"vpp split of packed MB 1: odd-position groups; backfill: 2 doublings, 0 idle ranks", [][]int{{0, 2, 2}, {2, 2, 4}}},
				{groups: [][]int{{0, 1, 5}, {1, 1, 6}, {2, 2, 7}}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, factory := range []func(Options) (*Policy, error){New, NewScan} {
				pol, _ := factory(DefaultOptions())
				p, err := pol.Plan(tc.lengths, tc.in)
				if err != nil {
					t.Fatal(err)
				}
				if !sameMBs(p.Microbatches, tc.want) {
					t.Fatalf("%s:\n got %+v\nwant %+v", pol.Name(), p.Microbatches, toMBs(tc.want))
				}
				d := p.Diagnostics.(*Diagnostics)
				if d.Cap != tc.in.PoolRanks || d.VPPSplits != len(tc.want)-tc.packed || d.RealizedMicrobatches != len(tc.want) || d.AlignSteps <= 0 {
					t.Fatalf("%s: diagnostics %+v", pol.Name(), d)
				}
				if p.WorkUnits != d.HeapOps+d.SequenceVisits+d.ScanSteps+d.AlignSteps {
					t.Fatalf("%s: WorkUnits %d", pol.Name(), p.WorkUnits)
				}
				if !legalByPipeline(tc.in.PP, tc.in.VPP, len(p.Microbatches), tc.in.GroupSizeN()) {
					t.Fatalf("%s: M = %d illegal", pol.Name(), len(p.Microbatches))
				}
				checkPlan(t, testCase{lengths: tc.lengths, in: tc.in}, p)
			}
		})
	}
}

// TestVPPAlignmentLegalUnchanged: a legal packed count leaves the plan exactly as
// packed: with C* independent of vpp (θ/c = 0), the vpp = 2 plan equals the
// vpp = 1 plan in everything but the bubble.
func TestVPPAlignmentLegalUnchanged(t *testing.T) {
	for _, c := range []testCase{
		{lengths: []int{8, 4, 2, 2}, in: sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 2, VPP: 2}},                                     // M = 2
		{lengths: []int{8, 8, 8, 8, 8, 4, 2, 2}, in: sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 2, VPP: 4}},                         // M = 6
		{lengths: []int{8, 8, 8, 8, 8, 4, 2, 2}, in: sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 4, VPP: 2, MicrobatchGroupSize: 6}}, // M = N = 6
		{lengths: []int{8, 8, 8, 8, 8, 4, 2, 2}, in: sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 2, VPP: 2, MicrobatchGroupSize: 4}}, // 6 mod 4 = 2 >= 2
	} {
		for _, factory := range []func(Options) (*Policy, error){New, NewScan} {
			pol, _ := factory(DefaultOptions())
			p, err := pol.Plan(c.lengths, c.in)
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			flat := c.in
			flat.VPP, flat.MicrobatchGroupSize = 1, 0
			q, err := pol.Plan(c.lengths, flat)
			if err != nil {
				t.Fatal(err)
			}
			d, e := p.Diagnostics.(*Diagnostics), q.Diagnostics.(*Diagnostics)
			if d.VPPSplits != 0 || d.AlignSteps != 0 {
				t.Fatalf("%v: %s aligned a legal count: %+v", c, pol.Name(), d)
			}
			if d.Bubble == e.Bubble {
				t.Fatalf("%v: same bubble", c)
			}
			e.Bubble = d.Bubble
			if !reflect.DeepEqual(p, q) {
				t.Fatalf("%v: %s: vpp plan %+v differs from vpp = 1 plan %+v", c, pol.Name(), p, q)
			}
		}
	}
}

// TestVPPAlignmentErrors: too few sequences for the least legal count, and N < pp.
func TestVPPAlignmentErrors(t *testing.T) {
	for _, tc := range []struct {
		lengths []int
		in      sched.Inputs
		frags   []string
	}{
		{[]int{8, 8, 8}, sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 2, VPP: 2},
			[]string{"vpp = 2, pp = 2, N = 2", "packed M = 3", "least legal count is 4", "only 3 sequences"}},
		{[]int{100}, sched.Inputs{PoolRanks: 8, BudgetTokens: 4096, PP: 8, VPP: 2},
			[]string{"pp = 8, N = 8", "packed M = 1", "least legal count is 8", "only 1 sequences"}},
		{[]int{8, 4, 2, 2}, sched.Inputs{PoolRanks: 2, BudgetTokens: 4, PP: 4, VPP: 2, MicrobatchGroupSize: 2},
			[]string{"N = 2 < pp = 4", "no count is legal", "packed M = 2"}},
	} {
		for _, factory := range []func(Options) (*Policy, error){New, NewScan} {
			pol, _ := factory(DefaultOptions())
			_, err := pol.Plan(tc.lengths, tc.in)
			if !errors.Is(err, ErrCannotAlign) || !errors.Is(err, sched.ErrInvalidInput) {
				t.Fatalf("%v: %s: error %v", tc.in, pol.Name(), err)
			}
			for _, f := range tc.frags {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("%s: error %q lacks %q", pol.Name(), err, f)
				}
			}
		}
	}
}

// TestVPPSplitChoice pins the choice of the MB to split on hand-made plans
// (G = 8, C* = 8, pp = N = 2, so 3 MBs become 4): most groups, then the
// largest max per-rank load, then the latest MB.
func TestVPPSplitChoice(t *testing.T) {
	lengths := []int{0: 4, 1: 2, 2: 3, 3: 3, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1}
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 64, PP: 2, VPP: 2}
	tg := Targets{Cap: 8, MaxTokens: 4}
	for _, tc := range []struct {
		name  string
		mbs   []mbSpec
		split int // index of the MB that splits
	}{
		{"more groups beat more load", []mbSpec{
			{groups: [][]int{{0, 1, 0}, {1, 1, 1}}},                     // max load 16
			{groups: [][]int{{0, 2, 2}, {2, 2, 3}, {4, 4, 4, 5, 6, 7}}}, // 3 groups, max 4.5
			{groups: [][]int{{0, 8, 8}}}}, 1},
		{"equal groups: larger max per-rank load", []mbSpec{
			{groups: [][]int{{0, 2, 2}, {2, 2, 1}}},       // max 4.5
			{groups: [][]int{{0, 4, 0}, {4, 4, 3}}},       // max 4
			{groups: [][]int{{0, 8, 4, 5, 6, 7, 8}}}}, 0}, // one group
		{"equal top load: the later of the tied MBs", []mbSpec{
			{groups: [][]int{{0, 1, 2}, {1, 1, 4}}},      // max 9
			{groups: [][]int{{0, 1, 3}, {1, 1, 5}}},      // max 9
			{groups: [][]int{{0, 1, 1}, {1, 1, 6}}}}, 1}, // max 4
		{"ties everywhere: the latest", []mbSpec{
			{groups: [][]int{{0, 8, 0}}},
			{groups: [][]int{{0, 1, 2}, {1, 1, 1}}},      // max 9
			{groups: [][]int{{0, 1, 3}, {4, 1, 4}}}}, 2}, // max 9
		{"single groups: by load, sequences alternate", []mbSpec{
			{groups: [][]int{{0, 8, 0}}},
			{groups: [][]int{{0, 1, 2, 3}}},                  // load 18
			{groups: [][]int{{0, 2, 1, 4, 5, 6, 7, 8}}}}, 1}, // load 9/2
	} {
		t.Run(tc.name, func(t *testing.T) {
			mbs := toMBs(tc.mbs)
			got, splits, steps, err := AlignVPP(slices.Clone(mbs), lengths, in, tg)
			if err != nil || splits != 1 || steps <= 0 || len(got) != 4 {
				t.Fatalf("splits %d steps %d err %v: %+v", splits, steps, err, got)
			}
			for i := range 4 {
				j := i
				if i > tc.split {
					j = i - 1
				}
				if i == tc.split || i == tc.split+1 {
					if !strings.HasPrefix(got[i].Closed, "vpp split of packed MB ") {
						t.Fatalf("MB %d: %q, want a split of MB %d: %+v", i, got[i].Closed, tc.split, got)
					}
					continue
				}
				if !reflect.DeepEqual(got[i], mbs[j]) {
					t.Fatalf("MB %d: %+v, want MB %d unchanged: %+v", i, got[i], j, mbs[j])
				}
			}
		})
	}
	// The single-group split keeps the group's ranks and alternates its
	// sequences (longest first: 2, 1, 5 and 3, 4), then backfills each half:
	// ranks [2,4) double into [0,2), then [4,8). (The packer would have
	// backfilled it already; alignment runs the same backfill regardless.)
	mbs := toMBs([]mbSpec{{groups: [][]int{{0, 8, 0}}}, {groups: [][]int{{0, 8, 8}}}, {groups: [][]int{{2, 2, 2, 3, 1, 4, 5}}}})
	got, _, _, err := AlignVPP(mbs, lengths, in, tg)
	if err != nil {
		t.Fatal(err)
	}
	if !sameMBs(got[2:], []mbSpec{
		{"vpp split of packed MB 2: even-position sequences; backfill: 2 doublings, 0 idle ranks", [][]int{{0, 8, 2, 1, 5}}},
		{"vpp split of packed MB 2: odd-position sequences; backfill: 2 doublings, 0 idle ranks", [][]int{{0, 8, 3, 4}}},
	}) {
		t.Fatalf("%+v", got)
	}
	// The group split alternates groups in rank order and backfills each half.
	mbs = toMBs([]mbSpec{{groups: [][]int{{0, 8, 0}}}, {groups: [][]int{{0, 8, 8}}}, {groups: [][]int{{0, 1, 2}, {4, 1, 3}, {6, 2, 1}}}})
	got, _, _, err = AlignVPP(mbs, lengths, in, tg)
	if err != nil {
		t.Fatal(err)
	}
	// Even groups: rank 0 (3) and [6,8) (1): 0 -> [0,2) -> [0,4) -> [0,8)? [4,8)
	// holds [6,8), so [0,4); [6,8) -> [4,8). Odd group: rank 4 (3) -> [4,6) ->
	// [4,8) -> [0,8).
	if !sameMBs(got[2:], []mbSpec{
		{"vpp split of packed MB 2: even-position groups; backfill: 3 doublings, 0 idle ranks", [][]int{{0, 4, 2}, {4, 4, 1}}},
		{"vpp split of packed MB 2: odd-position groups; backfill: 3 doublings, 0 idle ranks", [][]int{{0, 8, 3}}},
	}) {
		t.Fatalf("%+v", got)
	}
}

// naiveBackfill is spec §5's backfill read literally: repeatedly double the
// smallest group (ties: lower first rank) below capDegree whose buddy block is
// wholly free and inside the pool.
func naiveBackfill(groups []sched.Group, poolRanks, capDegree int) int {
	busy := make([]bool, poolRanks)
	for _, g := range groups {
		for r := g.FirstRank; r <= g.LastRank(); r++ {
			busy[r] = true
		}
	}
	doublings := 0
	for {
		best := -1
		for i, g := range groups {
			buddy := g.FirstRank ^ g.Size
			if g.Size >= capDegree || buddy+g.Size > poolRanks || slices.Contains(busy[buddy:buddy+g.Size], true) {
				continue
			}
			if best < 0 || cmp.Or(cmp.Compare(g.Size, groups[best].Size), cmp.Compare(g.FirstRank, groups[best].FirstRank)) < 0 {
				best = i
			}
		}
		if best < 0 {
			return doublings
		}
		g := &groups[best]
		buddy := g.FirstRank ^ g.Size
		for r := buddy; r < buddy+g.Size; r++ {
			busy[r] = true
		}
		g.FirstRank &^= g.Size
		g.Size *= 2
		doublings++
	}
}

// TestBackfillEqualsSmallestFirst: the aligner's one-pass backfill reaches the
// plan of the literal smallest-first loop, on random aligned group layouts.
func TestBackfillEqualsSmallestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for range 20000 {
		g := 1 + rng.IntN(64)
		capDegree := 1 << rng.IntN(8)
		var groups []sched.Group
		busy := make([]bool, g)
		for range rng.IntN(2 * g) {
			size := 1 << rng.IntN(min(7, bitsLen(g)))
			first := rng.IntN(g) &^ (size - 1)
			if first+size > g || slices.Contains(busy[first:first+size], true) {
				continue
			}
			for r := first; r < first+size; r++ {
				busy[r] = true
			}
			groups = append(groups, sched.Group{FirstRank: first, Size: size})
		}
		slices.SortFunc(groups, func(a, b sched.Group) int { return cmp.Compare(a.FirstRank, b.FirstRank) })
		want := slices.Clone(groups)
		wantDoublings := naiveBackfill(want, g, capDegree)
		a := &aligner{poolRanks: g, cap: capDegree, busy: make([]bool, g)}
		doublings, idle := a.backfill(groups)
		covered := 0
		for _, x := range want {
			covered += x.Size
		}
		if !reflect.DeepEqual(groups, want) || doublings != wantDoublings || idle != g-covered {
			t.Fatalf("G=%d cap=%d: got %v (%d doublings, %d idle), want %v (%d, %d)", g, capDegree, groups, doublings, idle, want, wantDoublings, g-covered)
		}
	}
}

// TestVPPAlignmentRandom: thousands of random batches with pp 2..8, vpp 2..4,
// G 8..512 (a few not powers of two), N default or in [pp, 2pp]. Each plans with
// both policies to identical plans, or both fail with ErrCannotAlign for a reason
// the case explains; a plan's M is the least count >= the packed M that
// pipeline.New accepts, the plan validates against the promises and keeps
// HyDra's invariants (checkPlan: Λ*, C*, longest first, maximal backfill), the
// MBs not split are the packed ones in order, and WorkUnits includes the
// alignment's steps.
func TestVPPAlignmentRandom(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 800
	}
	rng := rand.New(rand.NewPCG(43, 44))
	pol, _ := New(DefaultOptions())
	promises := pol.Promises()
	planned, splits := 0, 0
	for range n {
		c := randomCase(rng)
		c.in.PoolRanks = []int{8, 16, 32, 64, 128, 256, 512, 12, 24, 48}[rng.IntN(10)]
		c.in.MaxDegree = 0
		c.in.PP, c.in.VPP = 2+rng.IntN(7), 2+rng.IntN(3)
		if rng.IntN(3) == 0 {
			c.in.MicrobatchGroupSize = c.in.PP + rng.IntN(c.in.PP+1)
		}
		if rng.IntN(4) == 0 {
			c.in.OverheadRatio = 0
		}
		c.opts = Options{}
		for i := range c.lengths {
			c.lengths[i] = 1 + c.lengths[i]%(pow2Floor(c.in.PoolRanks)*c.in.BudgetTokens)
		}
		if extra := rng.IntN(3); extra > 0 { // more short sequences: more splits possible
			for range rng.IntN(40 * extra) {
				c.lengths = append(c.lengths, 1+rng.IntN(c.in.BudgetTokens))
			}
		}
		h, s, ok := planBoth(t, c)
		if !ok {
			continue
		}
		planned++
		if !reflect.DeepEqual(h.Microbatches, s.Microbatches) {
			t.Fatalf("%v: hydra and hydra-scan differ", c)
		}
		tg, err := Solve(BatchSums(c.lengths), c.in, 0)
		if err != nil {
			t.Fatal(err)
		}
		packed, _ := packScan(c.lengths, c.in.PoolRanks, tg)
		m, nGroup := len(h.Microbatches), c.in.GroupSizeN()
		if !legalByPipeline(c.in.PP, c.in.VPP, m, nGroup) {
			t.Fatalf("%v: M = %d illegal for N = %d", c, m, nGroup)
		}
		for k := len(packed.mbs); k < m; k++ {
			if legalByPipeline(c.in.PP, c.in.VPP, k, nGroup) {
				t.Fatalf("%v: M = %d, but %d >= packed %d is legal", c, m, k, len(packed.mbs))
			}
		}
		for _, p := range []*sched.Plan{h, s} {
			if err := sched.Validate(p, c.lengths, c.in, promises); err != nil {
				t.Fatalf("%v: %s: %v", c, p.Policy, err)
			}
			d := p.Diagnostics.(*Diagnostics)
			if d.VPPSplits != m-len(packed.mbs) || d.RealizedMicrobatches != m || (d.VPPSplits > 0) != (d.AlignSteps > 0) ||
				p.WorkUnits != d.HeapOps+d.SequenceVisits+d.ScanSteps+d.AlignSteps {
				t.Fatalf("%v: %s: diagnostics %+v, work %d", c, p.Policy, d, p.WorkUnits)
			}
		}
		checkPlan(t, c, h)
		var kept []sched.Microbatch
		for _, mb := range h.Microbatches {
			if !strings.HasPrefix(mb.Closed, "vpp split") {
				kept = append(kept, mb)
			}
		}
		j := 0
		for _, mb := range packed.mbs {
			if j < len(kept) && reflect.DeepEqual(mb, kept[j]) {
				j++
			}
		}
		if j != len(kept) || len(kept) < len(packed.mbs)-(m-len(packed.mbs)) {
			t.Fatalf("%v: unsplit MBs changed", c)
		}
		splits += m - len(packed.mbs)
	}
	if planned < n/2 || splits < n/2 {
		t.Fatalf("only %d of %d cases planned, %d splits", planned, n, splits)
	}
	t.Logf("%d of %d planned, %d splits", planned, n, splits)
}

// TestVPPAlignmentPresetBatch: on a long-256k batch (G = 64, pp 2..8, vpp 2) the
// aligned plans are identical for both policies, keep HyDra's invariants, and M
// is the least multiple of pp >= the packed M.
func TestVPPAlignmentPresetBatch(t *testing.T) {
	const g, budget = 64, 8192
	lengths := benchBatch(t, g, budget)
	for pp := 2; pp <= 8; pp++ {
		c := testCase{lengths: lengths, in: sched.Inputs{PoolRanks: g, BudgetTokens: budget, PP: pp, VPP: 2, OverheadRatio: benchOverheadRatio}}
		h, s, ok := planBoth(t, c)
		if !ok {
			t.Fatalf("pp %d: no plan", pp)
		}
		if !reflect.DeepEqual(h.Microbatches, s.Microbatches) {
			t.Fatalf("pp %d: differ", pp)
		}
		checkPlan(t, c, h)
		d := h.Diagnostics.(*Diagnostics)
		if want, _ := sched.LegalMicrobatchCount(d.RealizedMicrobatches-d.VPPSplits, pp, pp); want != d.RealizedMicrobatches || d.RealizedMicrobatches%pp != 0 {
			t.Fatalf("pp %d: M %d after %d splits", pp, d.RealizedMicrobatches, d.VPPSplits)
		}
		t.Logf("pp=%d: C*=%d M*=%d packed=%d realized=%d align steps=%d", pp, d.Cap, d.Microbatches, d.RealizedMicrobatches-d.VPPSplits, d.RealizedMicrobatches, d.AlignSteps)
	}
}
