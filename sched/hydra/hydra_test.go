package hydra

import (
	"encoding/json"
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dcpsim/dcpsim/internal/schedcase"
	"github.com/dcpsim/dcpsim/sched"
)

// testCase is one batch with its inputs and options.
type testCase struct {
	lengths []int
	in      sched.Inputs
	opts    Options
}

func (c testCase) String() string {
	return schedcase.Case{Lengths: c.lengths, In: c.in, Cap: c.opts.Cap}.String()
}

// randomCase is schedcase.Random as a testCase.
func randomCase(rng *rand.Rand) testCase {
	rc := schedcase.Random(rng)
	return testCase{lengths: rc.Lengths, in: rc.In, opts: Options{Cap: rc.Cap}}
}

func bitsLen(n int) int { return bits.Len(uint(n)) }

// planBoth plans c with both policies; ok is false when no plan exists (an
// engine limit below C_mem or a forced cap out of range), which both must agree on.
func planBoth(t testing.TB, c testCase) (heapPlan, scanPlan *sched.Plan, ok bool) {
	t.Helper()
	hp, err := New(c.opts)
	if err != nil {
		t.Fatalf("%v: New: %v", c, err)
	}
	sp, err := NewScan(c.opts)
	if err != nil {
		t.Fatalf("%v: NewScan: %v", c, err)
	}
	heapPlan, herr := hp.Plan(c.lengths, c.in)
	scanPlan, serr := sp.Plan(c.lengths, c.in)
	if (herr == nil) != (serr == nil) {
		t.Fatalf("%v: heap error %v, scan error %v", c, herr, serr)
	}
	if herr != nil {
		if herr.Error() != serr.Error() {
			t.Fatalf("%v: heap error %v, scan error %v", c, herr, serr)
		}
		if !errors.Is(herr, sched.ErrInvalidInput) || !errors.Is(herr, ErrEngineLimit) && !strings.Contains(herr.Error(), "cap = ") && !cannotAlign(c, herr) {
			t.Fatalf("%v: unexpected error %v", c, herr)
		}
		return nil, nil, false
	}
	return heapPlan, scanPlan, true
}

// cannotAlign reports whether err is ErrCannotAlign for a reason the case
// explains: VPP with N < pp, or fewer sequences than the least legal MB count
// above the packed count (recomputed here with the linear reference).
func cannotAlign(c testCase, err error) bool {
	if !errors.Is(err, ErrCannotAlign) || c.in.VPP < 2 {
		return false
	}
	n := c.in.GroupSizeN()
	if n < c.in.PP {
		return true
	}
	tg, serr := Solve(BatchSums(c.lengths), c.in, c.opts.Cap)
	if serr != nil {
		return false
	}
	b, _ := packScan(c.lengths, c.in.PoolRanks, tg)
	want, _ := sched.LegalMicrobatchCount(len(b.mbs), c.in.PP, n)
	return want > len(c.lengths)
}

// checkPlan validates a plan against its promises and the invariants every
// HyDra plan keeps: degrees are powers of two in [memory degree, C*], every rank
// stays within Λ* (exactly: Σ s²·C* <= s_max²·size), each group runs its
// sequences longest first, and backfill left no group below C* with a free buddy.
func checkPlan(t testing.TB, c testCase, p *sched.Plan) {
	t.Helper()
	pol, _ := New(DefaultOptions())
	if err := sched.Validate(p, c.lengths, c.in, pol.Promises()); err != nil {
		t.Fatalf("%v: %s: Validate: %v", c, p.Policy, err)
	}
	d := p.Diagnostics.(*Diagnostics)
	if d.RealizedMicrobatches != len(p.Microbatches) {
		t.Fatalf("%v: realized M %d, plan has %d", c, d.RealizedMicrobatches, len(p.Microbatches))
	}
	sMax := int64(d.MaxTokens)
	for m, mb := range p.Microbatches {
		busy := make([]bool, c.in.PoolRanks)
		for _, g := range mb.Groups {
			for r := g.FirstRank; r <= g.LastRank(); r++ {
				busy[r] = true
			}
		}
		for _, g := range mb.Groups {
			if g.Size > d.Cap {
				t.Fatalf("%v: MB %d group at %d has size %d > C* = %d", c, m, g.FirstRank, g.Size, d.Cap)
			}
			var squares int64
			for i, id := range g.Seqs {
				s := int64(c.lengths[id])
				squares += s * s
				if k := sched.MemoryDegree(c.lengths[id], c.in.BudgetTokens); g.Size < k {
					t.Fatalf("%v: MB %d: sequence %d (%d tokens) on %d ranks, below its memory degree %d", c, m, id, s, g.Size, k)
				}
				if deg := d.Degree(c.lengths[id]); g.Size < deg {
					t.Fatalf("%v: MB %d: sequence %d on %d ranks, below cp(s) = %d", c, m, id, g.Size, deg)
				}
				if i > 0 {
					prev := g.Seqs[i-1]
					if c.lengths[prev] < c.lengths[id] || c.lengths[prev] == c.lengths[id] && prev > id {
						t.Fatalf("%v: MB %d group at %d: sequences %v not longest first", c, m, g.FirstRank, g.Seqs)
					}
				}
			}
			if over(squares, int64(d.Cap), sMax*sMax, int64(g.Size)) {
				t.Fatalf("%v: MB %d group at %d: per-rank load %g > Λ* = %g", c, m, g.FirstRank, float64(squares)/float64(g.Size), d.LoadTarget)
			}
			if buddy := g.FirstRank ^ g.Size; g.Size < d.Cap && buddy+g.Size <= c.in.PoolRanks {
				free := true
				for r := buddy; r < buddy+g.Size; r++ {
					free = free && !busy[r]
				}
				if free {
					t.Fatalf("%v: MB %d group at %d (size %d) left with a free buddy at %d", c, m, g.FirstRank, g.Size, buddy)
				}
			}
		}
	}
}

// over reports a·b > c·d for non-negative operands, exactly (128-bit products).
func over(a, b, c, d int64) bool {
	hi1, lo1 := bits.Mul64(uint64(a), uint64(b))
	hi2, lo2 := bits.Mul64(uint64(c), uint64(d))
	return hi1 > hi2 || hi1 == hi2 && lo1 > lo2
}

// TestRandomCasesValidate plans random batches with both policies: identical
// microbatches, and every plan valid.
func TestRandomCasesValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 1000 {
		c := randomCase(rng)
		h, s, ok := planBoth(t, c)
		if !ok {
			continue
		}
		if !reflect.DeepEqual(h.Microbatches, s.Microbatches) {
			t.Fatalf("%v: hydra and hydra-scan differ", c)
		}
		checkPlan(t, c, h)
	}
}

// TestWideKeys: the longest sequence sched.Inputs.Check admits (2^25,
// s² = 2^50) on 2^15 ranks (keys that would not pack with a 15-bit rank into
// 64 bits); the plan must still equal the scan's.
func TestWideKeys(t *testing.T) {
	s := sched.MaxSequenceTokens
	c := testCase{
		lengths: []int{s, s / 2, s / 3, s / 5, s / 7, 1 << 20, 3, 2, 1},
		in:      sched.Inputs{PoolRanks: 1 << 15, BudgetTokens: 1 << 13, PP: 4, VPP: 1, OverheadRatio: 1e15},
	}
	h, sc, ok := planBoth(t, c)
	if !ok {
		t.Fatal("no plan")
	}
	if !reflect.DeepEqual(h.Microbatches, sc.Microbatches) {
		t.Fatalf("heap %+v\nscan %+v", h.Microbatches, sc.Microbatches)
	}
	checkPlan(t, c, h)
}

// TestNonPowerOfTwoPool: G = 12 keeps every group inside [0, 12).
func TestNonPowerOfTwoPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		c := randomCase(rng)
		c.in.PoolRanks = 12
		c.in.MaxDegree = 0
		c.opts = Options{}
		for i := range c.lengths {
			c.lengths[i] = 1 + c.lengths[i]%(8*c.in.BudgetTokens)
		}
		h, s, ok := planBoth(t, c)
		if !ok {
			if c.in.VPP > 1 { // planBoth accepted the error: too few sequences to align
				continue
			}
			t.Fatalf("%v: no plan", c)
		}
		if !reflect.DeepEqual(h.Microbatches, s.Microbatches) {
			t.Fatalf("%v: differ", c)
		}
		checkPlan(t, c, h)
	}
}

// TestHandPlans checks whole plans computed by hand.
func TestHandPlans(t *testing.T) {
	type grp = sched.Group
	for _, tc := range []struct {
		name    string
		lengths []int
		in      sched.Inputs
		want    []sched.Microbatch
		cap     int
	}{
		{
			// G=8, B=4, pp=1: C* = C_mem = pow2ceil(16/4) = 4, Λ* = 256/4 = 64, so a group
			// of k ranks holds Σ s² <= 64k and Σ s <= 4k. Degrees: 16 -> 4, 8 -> 2
			// (8²/64 = 1, 8/4 = 2), the rest -> 1.
			// MB 0: 16 opens [0,4); 8 opens [4,6); 4 opens rank 6; 3 opens rank 7. No
			// rank is free. 2 fits nowhere: [0,4) and [4,6) are full in tokens, rank 6
			// holds 4 (+2 > 4), rank 7 holds 3 (+2 > 4). 1 joins rank 7 (3+1 <= 4).
			// MB 1: 2 opens rank 0; backfill doubles it to [0,2) (buddy 1 free), then
			// to [0,4) (buddy [2,4) free), and stops at C* = 4.
			name:    "G8 B4 pp1",
			lengths: []int{16, 8, 4, 3, 2, 1},
			in:      sched.Inputs{PoolRanks: 8, BudgetTokens: 4, PP: 1, VPP: 1},
			cap:     4,
			want: []sched.Microbatch{
				{Groups: []grp{{FirstRank: 0, Size: 4, Seqs: []int{0}}, {FirstRank: 4, Size: 2, Seqs: []int{1}}, {FirstRank: 6, Size: 1, Seqs: []int{2}}, {FirstRank: 7, Size: 1, Seqs: []int{3, 5}}},
					Closed: "full: sequence 4 (2 tokens, degree 1) and 0 more wait: no free 1-aligned block and no open group of size >= 1 can take it within Λ* and B; backfill: 0 doublings, 0 idle ranks"},
				{Groups: []grp{{FirstRank: 0, Size: 4, Seqs: []int{4}}},
					Closed: "last: every sequence placed; backfill: 2 doublings, 4 idle ranks"},
			},
		},
		{
			// G=8, B=8, pp=1: C* = C_mem = 2, Λ* = 128; size-1 groups hold Σ s² <= 128,
			// Σ s <= 8; size-2 groups Σ s² <= 256, Σ s <= 16. Degrees: 16 -> 2,
			// 12 -> 2 (144/128 > 1), the rest -> 1.
			// 16 opens [0,2), 12 opens [2,4), 8, 8 and 8 open ranks 4, 5, 6 (full), 5
			// opens rank 7. 3 could join [2,4) (15 <= 16 tokens, 153 <= 256) or rank 7
			// (8 <= 8, 34 <= 128): the smallest group wins, rank 7.
			name:    "smallest feasible group first",
			lengths: []int{16, 12, 8, 8, 8, 5, 3},
			in:      sched.Inputs{PoolRanks: 8, BudgetTokens: 8, PP: 1, VPP: 1},
			cap:     2,
			want: []sched.Microbatch{
				{Groups: []grp{{FirstRank: 0, Size: 2, Seqs: []int{0}}, {FirstRank: 2, Size: 2, Seqs: []int{1}}, {FirstRank: 4, Size: 1, Seqs: []int{2}}, {FirstRank: 5, Size: 1, Seqs: []int{3}}, {FirstRank: 6, Size: 1, Seqs: []int{4}}, {FirstRank: 7, Size: 1, Seqs: []int{5, 6}}},
					Closed: "last: every sequence placed; backfill: 0 doublings, 0 idle ranks"},
			},
		},
		{
			// G=4, B=8, pp=1: C* = 2, Λ* = 128. 16 opens [0,2); 5 opens rank 2; 4
			// opens rank 3. 3 fits both size-1 groups: the lower load (rank 3, Σ s² =
			// 16 < 25) wins. 2: rank 3 now holds 7 tokens (+2 > 8), rank 2 takes it
			// (Σ s = 7). The last 2 fits nowhere: MB 1 opens it on rank 0 and backfill
			// doubles it to [0,2) (C* = 2).
			name:    "lowest load among equal sizes",
			lengths: []int{16, 5, 4, 3, 2, 2},
			in:      sched.Inputs{PoolRanks: 4, BudgetTokens: 8, PP: 1, VPP: 1},
			cap:     2,
			want: []sched.Microbatch{
				{Groups: []grp{{FirstRank: 0, Size: 2, Seqs: []int{0}}, {FirstRank: 2, Size: 1, Seqs: []int{1, 4}}, {FirstRank: 3, Size: 1, Seqs: []int{2, 3}}},
					Closed: "full: sequence 5 (2 tokens, degree 1) and 0 more wait: no free 1-aligned block and no open group of size >= 1 can take it within Λ* and B; backfill: 0 doublings, 0 idle ranks"},
				{Groups: []grp{{FirstRank: 0, Size: 2, Seqs: []int{5}}},
					Closed: "last: every sequence placed; backfill: 1 doublings, 2 idle ranks"},
			},
		},
		{
			// Equal loads: 3 and 3 open ranks 2 and 3 (Σ s² = 9 each); 2 goes to the
			// lower first rank, 2.
			name:    "lowest first rank among equal loads",
			lengths: []int{16, 3, 3, 2},
			in:      sched.Inputs{PoolRanks: 4, BudgetTokens: 8, PP: 1, VPP: 1},
			cap:     2,
			want: []sched.Microbatch{
				{Groups: []grp{{FirstRank: 0, Size: 2, Seqs: []int{0}}, {FirstRank: 2, Size: 1, Seqs: []int{1, 3}}, {FirstRank: 3, Size: 1, Seqs: []int{2}}},
					Closed: "last: every sequence placed; backfill: 0 doublings, 0 idle ranks"},
			},
		},
		{
			// A new group before piggybacking: 3 could join [2,4) (12+3 <= 16 tokens,
			// 153 <= 256), but rank 4 is free, so it opens a group there. Backfill: rank
			// 4's buddy 5 is free (-> [4,6), C* = 2 stops it); ranks 6-7 stay idle.
			name:    "new aligned group before piggyback",
			lengths: []int{16, 12, 3},
			in:      sched.Inputs{PoolRanks: 8, BudgetTokens: 8, PP: 1, VPP: 1},
			cap:     2,
			want: []sched.Microbatch{
				{Groups: []grp{{FirstRank: 0, Size: 2, Seqs: []int{0}}, {FirstRank: 2, Size: 2, Seqs: []int{1}}, {FirstRank: 4, Size: 2, Seqs: []int{2}}},
					Closed: "last: every sequence placed; backfill: 1 doublings, 2 idle ranks"},
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
				if d := p.Diagnostics.(*Diagnostics); d.Cap != tc.cap {
					t.Fatalf("%s: C* = %d, want %d", pol.Name(), d.Cap, tc.cap)
				}
				if !reflect.DeepEqual(p.Microbatches, tc.want) {
					t.Fatalf("%s:\n got %+v\nwant %+v", pol.Name(), p.Microbatches, tc.want)
				}
			}
		})
	}
}

// TestHandTargets checks the closed form of the first hand plan: S1 = 34,
// S2 = 256+64+16+9+4+1 = 350; M* = max(⌈350·4/(8·256)⌉, ⌈34/(8·4)⌉) = max(1, 2) = 2,
// token-bound.
func TestHandTargets(t *testing.T) {
	pol, _ := New(DefaultOptions())
	p, err := pol.Plan([]int{16, 8, 4, 3, 2, 1}, sched.Inputs{PoolRanks: 8, BudgetTokens: 4, PP: 1, VPP: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := p.Diagnostics.(*Diagnostics)
	if d.MemoryCap != 4 || d.Cap != 4 || d.LoadTarget != 64 || d.Microbatches != 2 || d.Regime != TokenBound || d.RealizedMicrobatches != 2 || d.Bubble != 0 {
		t.Fatalf("targets %+v", d)
	}
}

// TestPlanErrors: bad options, a forced cap out of range, an engine limit below
// C_mem (the error names both), and sched.Inputs.Check's errors, wrapped.
func TestPlanErrors(t *testing.T) {
	if _, err := New(Options{Cap: 3}); err == nil {
		t.Error("cap = 3 accepted")
	}
	if _, err := NewScan(Options{Cap: 1 << 30}); err == nil || !strings.Contains(err.Error(), "cap = 1073741824") {
		t.Errorf("cap = 2^30 accepted: %v", err)
	}
	in := sched.Inputs{PoolRanks: 64, BudgetTokens: 8192, PP: 4, VPP: 1, OverheadRatio: 1e8}
	lengths := []int{262144, 1000, 50}
	forced, _ := New(Options{Cap: 16})
	if _, err := forced.Plan(lengths, in); !errors.Is(err, sched.ErrInvalidInput) || !strings.Contains(err.Error(), "cap = 16") || !strings.Contains(err.Error(), "C_mem = 32") {
		t.Errorf("forced cap below C_mem: %v", err)
	}
	pol, _ := New(DefaultOptions())
	for _, maxDegree := range []int{16, 24} {
		lim := in
		lim.MaxDegree = maxDegree
		_, err := pol.Plan(lengths, lim)
		if !errors.Is(err, ErrEngineLimit) || !errors.Is(err, sched.ErrInvalidInput) || !strings.Contains(err.Error(), "C_mem = 32") || !strings.Contains(err.Error(), "at most 16") {
			t.Errorf("max_degree %d: %v", maxDegree, err)
		}
	}
	// s_max/B = 40 needs C_mem = 64 ranks, but a 48-rank pool holds groups of 32.
	_, err := pol.Plan([]int{40 * 1024}, sched.Inputs{PoolRanks: 48, BudgetTokens: 1024, PP: 1, VPP: 1})
	if !errors.Is(err, ErrEngineLimit) || !errors.Is(err, sched.ErrInvalidInput) || !strings.Contains(err.Error(), "C_mem = 64") || !strings.Contains(err.Error(), "at most 32") {
		t.Errorf("non-power-of-two pool: %v", err)
	}
	if _, err := pol.Plan(nil, in); !errors.Is(err, sched.ErrInvalidInput) || !strings.Contains(err.Error(), "empty batch") {
		t.Errorf("empty batch: %v", err)
	}
	var tooLong *sched.ErrSequenceTooLong
	if _, err := pol.Plan([]int{64*8192 + 1}, in); !errors.As(err, &tooLong) {
		t.Errorf("too long: %v", err)
	}
}

// TestDiagnostics: Summary has every quantity in a fixed order, and the JSON of a
// θ/c = 0 plan (continuous C* = +Inf) encodes.
func TestDiagnostics(t *testing.T) {
	pol, _ := New(DefaultOptions())
	p, err := pol.Plan([]int{262144, 100000, 5000, 30}, sched.Inputs{PoolRanks: 512, BudgetTokens: 8192, PP: 4, VPP: 2})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, kv := range p.Diagnostics.Summary() {
		names = append(names, kv.Name)
	}
	// pp = 4, vpp = 2: the packed 2 MBs are split into 4 (N = 4).
	want := "θ/c (tokens²),b (MB-times),C_mem,engine limit,continuous C*,C*,Λ* (tokens²),M*,realized M,regime,heap ops,sequence visits,vpp splits,align steps"
	if strings.Join(names, ",") != want {
		t.Errorf("Summary names %q", names)
	}
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`"continuous_cap":"+Inf"`, `"cap":512`, `"bubble_mb_times":1.5`, `"regime":"load-bound"`, `"closed":"full: sequence 1`,
		`"closed":"vpp split of packed MB 1: even-position groups`, `"realized_microbatches":4`, `"vpp_splits":2`} {
		if !strings.Contains(string(js), frag) {
			t.Errorf("JSON lacks %s: %s", frag, js)
		}
	}
	d := p.Diagnostics.(*Diagnostics)
	if p.WorkUnits != d.HeapOps+d.SequenceVisits+d.AlignSteps || d.AlignSteps <= 0 || p.WorkUnits <= 0 {
		t.Errorf("WorkUnits %d", p.WorkUnits)
	}
	// Without VPP there is no alignment: no rows, no JSON fields.
	p, err = pol.Plan([]int{262144, 100000, 5000, 30}, sched.Inputs{PoolRanks: 512, BudgetTokens: 8192, PP: 4, VPP: 1})
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, kv := range p.Diagnostics.Summary() {
		names = append(names, kv.Name)
	}
	if want := "θ/c (tokens²),b (MB-times),C_mem,engine limit,continuous C*,C*,Λ* (tokens²),M*,realized M,regime,heap ops,sequence visits"; strings.Join(names, ",") != want {
		t.Errorf("vpp = 1: Summary names %q", names)
	}
	if js, _ := json.Marshal(p); strings.Contains(string(js), "vpp_splits") || strings.Contains(string(js), "align_steps") {
		t.Errorf("vpp = 1: JSON has alignment fields: %s", js)
	}
	if d := p.Diagnostics.(*Diagnostics); p.WorkUnits != d.HeapOps+d.SequenceVisits || p.WorkUnits <= 0 {
		t.Errorf("vpp = 1: WorkUnits %d", p.WorkUnits)
	}
}

// FuzzPlan plans fuzzed batches with both policies: no panic, identical plans,
// every plan valid.
func FuzzPlan(f *testing.F) {
	f.Add(uint8(3), uint8(0), uint8(2), uint8(0), uint16(300), []byte{200, 10, 3, 3, 250, 1})
	f.Add(uint8(6), uint8(3), uint8(1), uint8(1), uint16(0), []byte{255, 255, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint8(2), uint8(1), uint8(3), uint8(0), uint16(9000), []byte{7, 7, 7, 7, 7})
	f.Fuzz(fuzzOnce)
}

// fuzzOnce is one FuzzPlan input: pool, budget, pp, vpp, θ/c and lengths decoded
// from the arguments.
func fuzzOnce(t *testing.T, gExp, bExp, ppExp, vppExp uint8, ratio uint16, raw []byte) {
	if len(raw) == 0 || len(raw) > 400 {
		return
	}
	g := 1 << (gExp % 10)
	if gExp%7 == 0 {
		g += int(gExp % 5) // some pools that are not powers of two
	}
	in := sched.Inputs{
		PoolRanks:     g,
		BudgetTokens:  1 << (bExp % 14),
		PP:            1 << (ppExp % 4),
		VPP:           1 + int(vppExp%2),
		OverheadRatio: math.Pow(10, float64(ratio%1000)/100) - 1,
	}
	lengths := make([]int, 0, len(raw)/2+1)
	for i := 0; i < len(raw); i += 2 {
		v := int(raw[i])
		if i+1 < len(raw) {
			v = v<<8 | int(raw[i+1])
		}
		lengths = append(lengths, 1+v%(g*in.BudgetTokens))
	}
	c := testCase{lengths: lengths, in: in}
	h, s, ok := planBoth(t, c)
	if !ok {
		return
	}
	if !reflect.DeepEqual(h.Microbatches, s.Microbatches) {
		t.Fatalf("%v: hydra and hydra-scan differ", c)
	}
	checkPlan(t, c, h)
}

// TestHeapEqualsScanOnPresetBatch compares the two policies on a full long-256k
// batch (G = 256, B = 8K, pp = 4: about 11K sequences over ~10 MBs), where the
// skips, demotions and re-admissions all happen many times.
func TestHeapEqualsScanOnPresetBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("the linear reference takes a few tenths of a second")
	}
	const g, budget = 256, 8192
	c := testCase{lengths: benchBatch(t, g, budget),
		in: sched.Inputs{PoolRanks: g, BudgetTokens: budget, PP: 4, VPP: 1, OverheadRatio: benchOverheadRatio}}
	h, s, ok := planBoth(t, c)
	if !ok {
		t.Fatal("no plan")
	}
	if !reflect.DeepEqual(h.Microbatches, s.Microbatches) {
		t.Fatal("hydra and hydra-scan differ")
	}
	checkPlan(t, c, h)
	d := h.Diagnostics.(*Diagnostics)
	t.Logf("N=%d C*=%d M*=%d realized=%d regime=%s heap ops=%d visits=%d", len(c.lengths), d.Cap, d.Microbatches, d.RealizedMicrobatches, d.Regime, d.HeapOps, d.SequenceVisits)
}

// TestPackScratchReuse: the heap packer's pooled scratch (packScratch)
// changes no plan. Cases of growing and shrinking pools and batches are
// planned with whatever scratch the last case left, and each plan is
// compared with the same case planned from an empty pool and with the
// linear reference, which uses no scratch.
func TestPackScratchReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 1))
	var cases []testCase
	for len(cases) < 40 {
		c := randomCase(rng)
		if len(c.lengths) <= 5000 {
			cases = append(cases, c)
		}
	}
	cases = append(cases, testCase{lengths: benchBatch(t, 64, 4096),
		in: sched.Inputs{PoolRanks: 64, BudgetTokens: 4096, PP: 4, VPP: 1, OverheadRatio: benchOverheadRatio}})
	cases = append(cases, cases[0], cases[len(cases)-2])
	planned := 0
	for _, c := range cases {
		reused, scan, ok := planBoth(t, c)
		if !ok {
			continue
		}
		packScratches = sync.Pool{} // the next plan's scratch is new
		pol, _ := New(c.opts)
		fresh, err := pol.Plan(c.lengths, c.in)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if !reflect.DeepEqual(reused.Microbatches, fresh.Microbatches) || !reflect.DeepEqual(reused.Microbatches, scan.Microbatches) {
			t.Fatalf("%v: the plan with a reused scratch differs from a new scratch's or the linear reference's", c)
		}
		planned++
	}
	if planned < 20 {
		t.Errorf("%d of %d cases planned, want at least 20", planned, len(cases))
	}
}
