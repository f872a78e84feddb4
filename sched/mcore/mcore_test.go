package mcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

func inputs(ranks, budget int) sched.Inputs {
	return sched.Inputs{PoolRanks: ranks, BudgetTokens: budget, PP: 1, VPP: 1}
}

// mb builds a micro-batch from (size, seqs...) groups laid out from rank 0.
func mb(closed string, groups ...[]int) sched.Microbatch {
	m := sched.Microbatch{Closed: closed}
	start := 0
	for _, g := range groups {
		m.Groups = append(m.Groups, sched.Group{FirstRank: start, Size: g[0], Seqs: g[1:]})
		start += g[0]
	}
	return m
}

// TestBaselineCases: research/baselines.md §1.7, cases A and B (R = 8, C = 4096).
func TestBaselineCases(t *testing.T) {
	for _, c := range []struct {
		name    string
		lengths []int
		want    []sched.Microbatch
	}{
		{
			// mb0 [16384]x4 | [8192]x2 | [6000, 2048]x2;
			// mb1 [4096]x2 | [3000, 1024]x2 | [2000, 1500, 512]x2 | [1000, 800]x2.
			"A", []int{16384, 8192, 6000, 4096, 3000, 2048, 2000, 1500, 1024, 1000, 800, 512},
			[]sched.Microbatch{
				mb("leftovers: no room", []int{4, 0}, []int{2, 1}, []int{2, 2, 5}),
				mb("all placed", []int{2, 3}, []int{2, 4, 8}, []int{2, 6, 7, 11}, []int{2, 9, 10}),
			},
		},
		{
			// mb0 [30000, 2500] on all 8; mb1 [9000, 3000, 2000, 1600, 700]x4 |
			// [7000, 4000, 3500, 1800]x4; mb2 [1200]x4 | [1000, 600]x2 | [900, 500]x2.
			"B", []int{30000, 9000, 7000, 4000, 3500, 3000, 2500, 2000, 1800, 1600, 1200, 1000, 900, 700, 600, 500},
			[]sched.Microbatch{
				mb("leftovers: no room", []int{8, 0, 6}),
				mb("leftovers: no room", []int{4, 1, 5, 7, 9, 13}, []int{4, 2, 3, 4, 8}),
				mb("all placed", []int{4, 10}, []int{2, 11, 14}, []int{2, 12, 15}),
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := mustPolicy(t, Options{MinCPSize: 1}).Plan(c.lengths, inputs(8, 4096))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plan.Microbatches, c.want) {
				t.Errorf("plan\n got %v\nwant %v", plan.Microbatches, c.want)
			}
		})
	}
}

// TestMegatronExtra: testdata/megatron-extra.jsonl holds batches planned by
// Megatron's own code (testdata/gen_megatron.py) beyond the conformance vectors:
// VPP alignment, min_cp_size > 1, pools that are not a power of two, and inputs
// on which Megatron fails. Every plan must equal Megatron's, every failure must
// be reported as the matching error.
func TestMegatronExtra(t *testing.T) {
	data, err := os.ReadFile("testdata/megatron-extra.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	fallbacks := 0
	for i, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var c struct {
			Ranks        int       `json:"ranks"`
			BudgetTokens int       `json:"budget_tokens"`
			MinCP        int       `json:"min_cp"`
			N            *int      `json:"n"`
			Lengths      []int     `json:"lengths"`
			Microbatches [][][]int `json:"microbatches"`
			Error        string    `json:"error"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		in := inputs(c.Ranks, c.BudgetTokens)
		if c.N != nil {
			in.VPP, in.MicrobatchGroupSize = 2, *c.N
		}
		name := fmt.Sprintf("line %d (R=%d C=%d min_cp=%d N=%v)", i+1, c.Ranks, c.BudgetTokens, c.MinCP, c.N)
		plan, err := mustPolicy(t, Options{MinCPSize: c.MinCP}).Plan(c.Lengths, in)
		kind := c.Error
		if kind == "" {
			kind = "ok"
		}
		kinds[kind]++
		switch kind {
		case "ok":
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if got := plan.PerRank(); !reflect.DeepEqual(got, c.Microbatches) {
				t.Errorf("%s: %s", name, firstDiff(got, c.Microbatches))
			}
			if err := sched.Validate(plan, c.Lengths, in, sched.Promises{WithinBudget: true, CoversPool: true}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			fallbacks += plan.Diagnostics.(*Diagnostics).Fallbacks
		case "cp", "align", "index", "grows", "hang":
			want := map[string]error{"cp": sched.ErrInvalidInput, "align": ErrCannotAlign, "index": ErrMegatronFails, "grows": ErrMegatronFails, "hang": ErrMegatronFails}[kind]
			if !errors.Is(err, want) || !errors.Is(err, sched.ErrInvalidInput) {
				t.Errorf("%s: Megatron fails (%s); got error %v, want one matching %v", name, kind, err, want)
			}
		default:
			t.Fatalf("%s: unknown error kind %q", name, kind)
		}
	}
	t.Logf("cases by outcome: %v; full-group fallbacks: %d", kinds, fallbacks)
	if kinds["ok"] < 50 || fallbacks == 0 {
		t.Errorf("testdata covers too little: %v, %d fallbacks", kinds, fallbacks)
	}
}

// checkShape checks what holds for power-of-two pools without a degree limit:
// every micro-batch covers the pool with aligned groups (sched.Validate), and
// every group's Seqs follow the descending-length order Megatron appends in.
func checkShape(t *testing.T, plan *sched.Plan, lengths []int, in sched.Inputs) {
	t.Helper()
	if err := sched.Validate(plan, lengths, in, sched.Promises{Aligned: true, WithinBudget: true, CoversPool: true}); err != nil {
		t.Fatal(err)
	}
	for m, mb := range plan.Microbatches {
		for _, g := range mb.Groups {
			for k := 1; k < len(g.Seqs); k++ {
				if lengths[g.Seqs[k]] > lengths[g.Seqs[k-1]] {
					t.Fatalf("micro-batch %d group at rank %d: sequences not in descending length: %v", m, g.FirstRank, g.Seqs)
				}
			}
		}
	}
}

// randomBatch draws a long-256k batch for a pool of r ranks with budget c; every
// sequence fits r·c (split at min(r·c, 256K)).
func randomBatch(t *testing.T, rng *rand.Rand, r, c int) []int {
	t.Helper()
	s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{
		TargetTokens:  int64(r*c) * int64(1+rng.IntN(4)) / 2,
		ContextTokens: min(r*c, 262144),
		Overlong:      workload.Split,
		Seed:          rng.Uint64(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s.Batch(0).Lengths
}

// TestRandomBatches: on 2,000 long-256k batches (R a power of two in 2..256, C
// in [1024, 8192]) the plans validate with the policy's promises, and, as the
// package doc argues, also cover the pool with aligned groups.
func TestRandomBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	p := mustPolicy(t, Options{MinCPSize: 1})
	pr := p.(sched.Promiser).Promises()
	var mbs, enlarged, widenings int
	for i := range 2000 {
		r := 2 << rng.IntN(8)
		c := 1024 + rng.IntN(8192-1024+1)
		lengths := randomBatch(t, rng, r, c)
		in := inputs(r, c)
		plan, err := p.Plan(lengths, in)
		if err != nil {
			t.Fatalf("case %d (R=%d C=%d n=%d): %v", i, r, c, len(lengths), err)
		}
		if err := sched.Validate(plan, lengths, in, pr); err != nil {
			t.Fatalf("case %d (R=%d C=%d): %v", i, r, c, err)
		}
		checkShape(t, plan, lengths, in)
		d := plan.Diagnostics.(*Diagnostics)
		if d.Microbatches != len(plan.Microbatches) || d.WorkUnits != plan.WorkUnits || plan.WorkUnits <= 0 {
			t.Fatalf("case %d: diagnostics %+v disagree with the plan (%d micro-batches, %d work units)", i, d, len(plan.Microbatches), plan.WorkUnits)
		}
		if d.Fallbacks != 0 || d.IdleRankSlots != 0 {
			t.Fatalf("case %d: power-of-two pool took %d fallbacks, %d idle slots", i, d.Fallbacks, d.IdleRankSlots)
		}
		mbs += d.Microbatches
		enlarged += d.Enlarged
		widenings += d.Widenings
	}
	t.Logf("%d micro-batches, %d enlarged items, %d widenings", mbs, enlarged, widenings)
	if enlarged == 0 || widenings == 0 {
		t.Error("the batches never exercised enlargement or widening")
	}
}

// TestVPPAlignment: with VPP the micro-batch count becomes a multiple of N, every
// sequence is still placed exactly once, the split micro-batches cover the pool
// with aligned groups, and the micro-batches before the split ones are untouched.
func TestVPPAlignment(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	p := mustPolicy(t, Options{MinCPSize: 1})
	splits := 0
	for i := range 300 {
		r := 4 << rng.IntN(5)
		c := 1024 << rng.IntN(4)
		n := 2 + rng.IntN(7)
		lengths := randomBatch(t, rng, r, c)
		base, err := p.Plan(lengths, inputs(r, c))
		if err != nil {
			t.Fatal(err)
		}
		in := inputs(r, c)
		in.PP, in.VPP = n, 2 // N defaults to PP
		plan, err := p.Plan(lengths, in)
		if errors.Is(err, ErrCannotAlign) {
			continue // Megatron asserts too
		}
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(plan.Microbatches)%n != 0 {
			t.Fatalf("case %d: %d micro-batches, not a multiple of N = %d", i, len(plan.Microbatches), n)
		}
		checkShape(t, plan, lengths, in)
		d := plan.Diagnostics.(*Diagnostics)
		if want := len(base.Microbatches) + d.VPPSplits; len(plan.Microbatches) != want {
			t.Fatalf("case %d: %d micro-batches, want %d + %d splits", i, len(plan.Microbatches), len(base.Microbatches), d.VPPSplits)
		}
		// A micro-batch is either untouched or split.
		for m := range base.Microbatches {
			if got := plan.Microbatches[m]; got.Closed != "vpp split" && !reflect.DeepEqual(got, base.Microbatches[m]) {
				t.Fatalf("case %d: micro-batch %d changed by alignment without a split", i, m)
			}
		}
		splits += d.VPPSplits
	}
	if splits == 0 {
		t.Error("no micro-batch was split")
	}
}

// TestVPPSplitRule pins align_sample_id_groups' rule on small hand-made cases
// (checked against Megatron's code): the cut is at the first group boundary at
// or after R/2, the part after it replaces the micro-batch, the part before is
// appended, and each refills by doubling the leftmost group of its trailing run
// of equal-size groups.
func TestVPPSplitRule(t *testing.T) {
	for _, c := range []struct {
		name       string
		in         sched.Microbatch
		tail       sched.Microbatch
		head       sched.Microbatch
		splittable bool
	}{
		{"4|2,1,1", mb("", []int{4, 0}, []int{2, 1}, []int{1, 2}, []int{1, 3}),
			mb("vpp split", []int{4, 1}, []int{2, 2}, []int{2, 3}), mb("vpp split", []int{8, 0}), true},
		{"2,2|2,2", mb("", []int{2, 0}, []int{2, 1}, []int{2, 2}, []int{2, 3}),
			mb("vpp split", []int{4, 2}, []int{4, 3}), mb("vpp split", []int{4, 0}, []int{4, 1}), true},
		{"1x8", mb("", []int{1, 0}, []int{1, 1}, []int{1, 2}, []int{1, 3}, []int{1, 4}, []int{1, 5}, []int{1, 6}, []int{1, 7}),
			mb("vpp split", []int{2, 4}, []int{2, 5}, []int{2, 6}, []int{2, 7}), mb("vpp split", []int{2, 0}, []int{2, 1}, []int{2, 2}, []int{2, 3}), true},
		{"one group", mb("", []int{8, 0, 1}), sched.Microbatch{}, sched.Microbatch{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			al := &aligner{ranks: 8, limit: 8, diag: &Diagnostics{}}
			tail, head, ok, err := al.split(c.in)
			if err != nil || ok != c.splittable {
				t.Fatalf("split: ok %v, err %v; want ok %v", ok, err, c.splittable)
			}
			if ok && (!reflect.DeepEqual(tail, c.tail) || !reflect.DeepEqual(head, c.head)) {
				t.Errorf("split:\n tail %v, want %v\n head %v, want %v", tail, c.tail, head, c.head)
			}
		})
	}
}

// TestNonPow2Pool: on R = 7 (checked against Megatron's code) a [4, 2] start
// cannot be widened (the CP2 group would overrun the pool), so the micro-batch
// becomes one full group; a lone CP4 group is widened to all 7 ranks.
func TestNonPow2Pool(t *testing.T) {
	p := mustPolicy(t, Options{MinCPSize: 1})
	for _, c := range []struct {
		lengths []int
		want    []sched.Microbatch
	}{
		{[]int{4096, 2048}, []sched.Microbatch{mb("fallback full group", []int{7, 0, 1})}},
		{[]int{4096, 2048, 900, 3000}, []sched.Microbatch{
			mb("leftovers: no room", []int{4, 0}, []int{2, 1}, []int{1, 2}),
			mb("all placed", []int{7, 3}),
		}},
	} {
		plan, err := p.Plan(c.lengths, inputs(7, 1024))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(plan.Microbatches, c.want) {
			t.Errorf("%v: got %v, want %v", c.lengths, plan.Microbatches, c.want)
		}
	}
}

// TestDegreeLimit: with Inputs.MaxDegree below G no group exceeds the limit (the
// package's one deviation: ranks stay idle instead); a limit at or above G
// changes nothing.
func TestDegreeLimit(t *testing.T) {
	p := mustPolicy(t, Options{MinCPSize: 1})
	in := inputs(8, 4096)
	in.MaxDegree = 2
	plan, err := p.Plan([]int{4096}, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []sched.Microbatch{mb("idle ranks: degree limit", []int{2, 0})}
	if !reflect.DeepEqual(plan.Microbatches, want) {
		t.Errorf("one sequence, limit 2: got %v, want %v", plan.Microbatches, want)
	}
	if d := plan.Diagnostics.(*Diagnostics); d.IdleRankSlots != 6 {
		t.Errorf("idle rank-slots %d, want 6", d.IdleRankSlots)
	}

	rng := rand.New(rand.NewPCG(1, 9))
	limitedRuns, idle := 0, 0
	for i := range 300 {
		r := 4 << rng.IntN(5)
		c := 1024 << rng.IntN(4)
		lengths := randomBatch(t, rng, r, c)
		in := inputs(r, c)
		free, err := p.Plan(lengths, in)
		if err != nil {
			t.Fatal(err)
		}
		in.MaxDegree = r + rng.IntN(3)
		same, err := p.Plan(lengths, in)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(same.Microbatches, free.Microbatches) {
			t.Fatalf("case %d: a limit >= G changed the plan", i)
		}
		in.MaxDegree = 1 + rng.IntN(r-1)
		if rng.IntN(2) == 0 {
			in.VPP, in.PP = 2, 2+rng.IntN(3)
		}
		lengths = capLengths(lengths, in.DegreeLimit()*c)
		limited, err := p.Plan(lengths, in)
		if errors.Is(err, ErrCannotAlign) {
			continue
		}
		var tooLong *sched.ErrSequenceTooLong
		if errors.As(err, &tooLong) && !sched.IsPow2(in.MaxDegree) {
			continue // needs a power-of-two group above a limit that is not one
		}
		if err != nil {
			t.Fatalf("case %d (R=%d limit %d): %v", i, r, in.MaxDegree, err)
		}
		if err := sched.Validate(limited, lengths, in, p.(sched.Promiser).Promises()); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for _, m := range limited.Microbatches {
			for _, g := range m.Groups {
				if g.Size > in.MaxDegree {
					t.Fatalf("case %d: group of %d ranks above the limit %d", i, g.Size, in.MaxDegree)
				}
			}
		}
		limitedRuns++
		idle += limited.Diagnostics.(*Diagnostics).IdleRankSlots
	}
	t.Logf("%d limited plans, %d idle rank-slots", limitedRuns, idle)
	if limitedRuns < 150 || idle == 0 {
		t.Errorf("only %d limited plans checked, %d idle rank-slots", limitedRuns, idle)
	}
}

func capLengths(lengths []int, most int) []int {
	out := make([]int, len(lengths))
	for i, s := range lengths {
		out[i] = min(s, most)
	}
	return out
}

// TestWorkUnits pins the count of the package doc on a two-rank example:
// sort 0 (n = 1), call 1 + 2, first item 1, fill scan 2, widen_once
// 2 + 1 + 1 + 1 (scans, one group examined) + 2 + 2·1 + 1 (rebuild), final scan 2.
func TestWorkUnits(t *testing.T) {
	plan, err := mustPolicy(t, Options{MinCPSize: 1}).Plan([]int{100}, inputs(2, 100))
	if err != nil {
		t.Fatal(err)
	}
	if plan.WorkUnits != 18 {
		t.Errorf("work units %d, want 18", plan.WorkUnits)
	}
	// Megatron's cost grows with the pool: the same batch on 4x the ranks costs more.
	lengths := randomBatch(t, rand.New(rand.NewPCG(2, 2)), 16, 4096)
	small, _ := mustPolicy(t, Options{MinCPSize: 1}).Plan(lengths, inputs(16, 4096))
	large, _ := mustPolicy(t, Options{MinCPSize: 1}).Plan(lengths, inputs(64, 4096))
	if small == nil || large == nil || large.WorkUnits <= small.WorkUnits {
		t.Errorf("work units do not grow with the pool: %v vs %v", small, large)
	}
}

// TestMinCPSize: min_cp_size floors every group's degree.
func TestMinCPSize(t *testing.T) {
	lengths := []int{4000, 3000, 100, 50, 20}
	plan, err := mustPolicy(t, Options{MinCPSize: 4}).Plan(lengths, inputs(8, 4096))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range plan.Microbatches {
		for _, g := range m.Groups {
			if g.Size < 4 {
				t.Errorf("group of %d ranks below min_cp_size 4: %v", g.Size, plan.Microbatches)
			}
		}
	}
}

// TestErrors: bad options and inputs are errors naming the key, sequence or
// limit.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want string
	}{{Options{MinCPSize: 3}, "min_cp_size = 3: must be a power of two in [1, 1048576]"},
		{Options{MinCPSize: 0}, "min_cp_size = 0"},
		{Options{MinCPSize: -2}, "min_cp_size = -2"}} {
		_, err := New(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): error %v, want %q", c.opts, err, c.want)
		}
	}
	if p, err := New(DefaultOptions()); err != nil || p.opts.MinCPSize != 1 {
		t.Errorf("New(DefaultOptions()): %v, %v; want min_cp_size 1", p, err)
	}

	p := mustPolicy(t, Options{MinCPSize: 1})
	for _, c := range []struct {
		name    string
		p       sched.Policy
		lengths []int
		in      sched.Inputs
		want    string
	}{
		{"longer than R·C", p, []int{10, 32769, 5}, inputs(8, 4096), "sequence 1 has 32769 tokens; the pool (G·B = 8·4096) holds at most 32768"},
		{"limit not a power of two", p, []int{10, 20000}, sched.Inputs{PoolRanks: 8, BudgetTokens: 4096, PP: 1, VPP: 1, MaxDegree: 6},
			"sequence 1 has 20000 tokens; Megatron's largest power-of-two CP group (4 ranks · B = 4096) holds at most 16384"},
		{"min_cp above R", mustPolicy(t, Options{MinCPSize: 16}), []int{10}, inputs(8, 4096), "min_cp_size = 16 exceeds the largest CP degree 8"},
		{"empty batch", p, nil, inputs(8, 4096), "empty batch"},
	} {
		_, err := c.p.Plan(c.lengths, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, sched.ErrInvalidInput) {
			t.Errorf("%s: error %v, want an invalid-input error containing %q", c.name, err, c.want)
		}
	}
}

// TestDiagnostics: the summary lists the counts in a fixed order and the JSON
// form names them.
func TestDiagnostics(t *testing.T) {
	lengths := []int{16384, 8192, 6000, 4096, 3000, 2048, 2000, 1500, 1024, 1000, 800, 512}
	plan, err := mustPolicy(t, Options{MinCPSize: 1}).Plan(lengths, inputs(8, 4096))
	if err != nil {
		t.Fatal(err)
	}
	d := plan.Diagnostics.(*Diagnostics)
	// Case A: 2048 joins the CP2 group of 6000 (enlarged from CP1); mb1 places
	// four CP1 groups on ranks 0-3 and widens each to CP2.
	if d.Microbatches != 2 || d.Fallbacks != 0 || d.Enlarged != 1 || d.Widenings != 4 || d.VPPSplits != 0 || d.IdleRankSlots != 0 {
		t.Errorf("diagnostics %+v", d)
	}
	var names []string
	for _, kv := range d.Summary() {
		names = append(names, kv.Name)
	}
	if want := []string{"micro-batches", "fallbacks", "widenings", "enlarged items", "vpp splits", "idle rank-slots", "work units", "pool-scan visits"}; !reflect.DeepEqual(names, want) {
		t.Errorf("summary names %v, want %v", names, want)
	}
	if got := d.Summary()[0].Value; got != "2" {
		t.Errorf("micro-batches %q, want 2", got)
	}
	js, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"diagnostics":{"microbatches":2,`)) || !bytes.Contains(js, []byte(`"work_units":`)) {
		t.Errorf("JSON %s", js)
	}
	if p := mustPolicy(t, Options{MinCPSize: 1}); p.Name() != Name || plan.Policy != Name {
		t.Errorf("names %q %q", p.Name(), plan.Policy)
	}
}

// FuzzPlan: arbitrary bytes make a small batch and inputs; Plan never panics, a
// power-of-two pool without VPP always plans, and every plan validates.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{3, 4, 0, 200, 100, 7, 255, 255, 1})
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{6, 1, 0x25, 10, 20, 30, 40, 50, 60, 70, 80, 90})
	f.Add([]byte{5, 2, 0x91, 255, 128, 64, 32, 16})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) < 4 {
			return
		}
		r := 1 << (raw[0] % 7)
		pow2 := raw[2]&0x80 == 0
		if !pow2 {
			r += int(raw[2] % 7) // not a power of two
		}
		c := 64 << (raw[1] % 5)
		minCP := 1 << (raw[2] >> 4 & 3)
		n := int(raw[2] & 7)
		lengths := make([]int, 0, len(raw)-3)
		for _, x := range raw[3:] {
			lengths = append(lengths, max(1, min(r*c, int(x)*r*c/255)))
		}
		in := inputs(r, c)
		if n > 1 {
			in.VPP, in.MicrobatchGroupSize = 2, n
		}
		p := mustPolicy(t, Options{MinCPSize: minCP})
		plan, err := p.Plan(lengths, in)
		if err != nil {
			if !errors.Is(err, sched.ErrInvalidInput) {
				t.Fatalf("error of an unknown kind: %v", err)
			}
			if pow2 && n <= 1 && minCP <= r {
				t.Fatalf("R=%d C=%d min_cp=%d %v: %v", r, c, minCP, lengths, err)
			}
			return
		}
		if err := sched.Validate(plan, lengths, in, sched.Promises{WithinBudget: true, CoversPool: true, Aligned: pow2}); err != nil {
			t.Fatalf("R=%d C=%d min_cp=%d N=%d %v: %v", r, c, minCP, n, lengths, err)
		}
	})
}
