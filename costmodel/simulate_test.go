package costmodel

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/sim/step"
)

// simModel is DeepSeek-V2-Lite on gpus H20 GPUs (8 per node) at tp1, pp, vpp
// and ep, B = 8192.
func simModel(t testing.TB, gpus, pp, vpp, ep int, opts Options) *Model {
	t.Helper()
	return simModelWith(t, gpus, pp, vpp, ep, opts, nil)
}

// simModelWith is simModel with edit applied to the job first (nil: none).
func simModelWith(t testing.TB, gpus, pp, vpp, ep int, opts Options, edit func(*job.Job)) *Model {
	t.Helper()
	prof, err := calib.LookupProfile("H20")
	if err != nil {
		t.Fatal(err)
	}
	m, err := job.LookupModel(job.ModelDeepSeekV2Lite)
	if err != nil {
		t.Fatal(err)
	}
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: "H20", GPUs: gpus, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: 1, PP: pp, VPP: vpp, EP: ep, BudgetTokens: 8192}, ContextTokens: 65536}
	if edit != nil {
		edit(&j)
	}
	mod, err := New(j, prof, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// batch is about tokens tokens of pseudo-random lengths in [64, 32768].
func batch(seed uint64, tokens int) []int {
	x := seed
	var out []int
	for n := 0; n < tokens; {
		x = x*6364136223846793005 + 1442695040888963407
		s := 64 + int(x>>33)%(1<<15)
		if x>>62 != 0 { // three in four short
			s = 64 + int(x>>40)%2048
		}
		out = append(out, s)
		n += s
	}
	return out
}

// simCase is a plan of one policy for one model, with the CP execution the
// policy declares.
type simCase struct {
	name    string
	mod     *Model
	plan    *sched.Plan
	lengths []int
	exec    Exec
}

// simCases plans a few batches with every registered policy that can plan
// them (those needing an external program or a mixed cluster drop out) on
// mods.
func simCases(t *testing.T, mods map[string]*Model) []simCase {
	t.Helper()
	var out []simCase
	for _, mname := range slices.Sorted(maps.Keys(mods)) {
		mod := mods[mname]
		j := mod.Job()
		in := sched.Inputs{PoolRanks: j.PoolRanks(), BudgetTokens: 8192, PP: max(j.Parallel.PP, 1), VPP: max(j.Parallel.VPP, 1),
			EP: j.Parallel.EP, ContextTokens: j.ContextTokens, OverheadRatio: mod.Overhead().RatioSquareTokens,
			QueryHeads: j.Model.QueryHeads, Cluster: mod.PlanningCluster()}
		for _, name := range policies.Names() {
			d, err := policies.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			pol, err := d.New(nil, sched.Env{})
			if err != nil {
				continue
			}
			for seed := range uint64(2) {
				lengths := batch(seed+1, in.PoolRanks*8192*3/2)
				plan, err := pol.Plan(lengths, in)
				if err != nil {
					continue
				}
				out = append(out, simCase{name: mname + "/" + name, mod: mod, plan: plan, lengths: plan.Trained(lengths),
					exec: Exec{CP: d.Exec, OverlapAllToAll: d.OverlapAllToAll}})
			}
		}
	}
	return out
}

// TestSimulateIsLayoutPriceRun: Simulate gives exactly the Result and the
// fallback slots of step.NewLayout, Price and step.Run, and their errors, on
// the policies' plans for stages on whole nodes, stages part way through a
// node (each stage priced on its own layout), pp·vpp > 1, NoComm and a
// planner stall, with one Model's scratch reused throughout.
func TestSimulateIsLayoutPriceRun(t *testing.T) {
	mods := map[string]*Model{
		"pp3-vpp2":  simModel(t, 96, 3, 2, 8, Options{UlyssesAcrossNodes: true}),
		"straddle":  simModel(t, 36, 3, 1, 4, Options{}), // 12 ranks a stage: stages start part way through a node
		"nocomm":    simModel(t, 48, 3, 1, 8, Options{NoComm: true}),
		"one-stage": simModel(t, 32, 1, 1, 8, Options{FP8Dispatch: true}),
	}
	cases := simCases(t, mods)
	policiesSeen := map[string]bool{}
	sims := map[*Model]*Simulator{} // one per model, reused across every case: its scratch and memo carry over
	for _, m := range mods {
		sims[m] = m.NewSimulator()
	}
	for i, c := range cases {
		stall := float64(i%3) * 1e-3
		j := c.mod.Job()
		l, err := step.NewLayout(c.plan, j.Parallel.EP)
		if err != nil {
			t.Fatal(err)
		}
		it, err := c.mod.Price(l, c.lengths, c.exec, stall)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, werr := step.Run(l, j.Parallel.PP, j.Parallel.VPP, it)
		got, gerr := c.mod.Simulate(c.plan, c.lengths, c.exec, stall)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("%s: error %v, want %v", c.name, gerr, werr)
		}
		if werr != nil {
			continue
		}
		policiesSeen[c.name] = true
		if !reflect.DeepEqual(got.Result, want) || got.FallbackSlots != it.FallbackSlots() {
			t.Errorf("%s: Simulate differs from NewLayout, Price and Run (fallback slots %d, want %d)", c.name, got.FallbackSlots, it.FallbackSlots())
		}
		if own, err := sims[c.mod].Simulate(c.plan, c.lengths, c.exec, stall); err != nil || !reflect.DeepEqual(own, got) {
			t.Errorf("%s: a reused Simulator differs from Simulate (%v)", c.name, err)
		}
	}
	t.Logf("%d (model, policy) pairs compared", len(policiesSeen))
	if len(policiesSeen) < 20 {
		t.Errorf("%d (model, policy) pairs simulated, want at least 20: %v", len(policiesSeen), policiesSeen)
	}
	// Errors: the layout's, Price's and the engine's, in that order.
	mod := mods["pp3-vpp2"]
	i := slices.IndexFunc(cases, func(c simCase) bool { return c.mod == mod })
	if i < 0 {
		t.Fatal("no plan for pp3-vpp2")
	}
	c := cases[i]
	bad := *c.plan
	bad.PoolRanks = 3
	for _, e := range []struct {
		plan  *sched.Plan
		exec  Exec
		stall float64
		want  string
	}{
		{&bad, c.exec, math.NaN(), "does not divide"},
		{c.plan, Exec{CP: sched.CPExec(99)}, 0, "invalid CP exec"},
		{c.plan, c.exec, math.Inf(1), "planner stall"},
		{&sched.Plan{PoolRanks: 32}, c.exec, 0, "no microbatch"},
	} {
		if _, err := mod.Simulate(e.plan, c.lengths, e.exec, e.stall); err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("error %v, want one containing %q", err, e.want)
		}
	}
}

// TestSimulateConcurrent: goroutines sharing one Model get, each call, the
// Result a lone caller gets (run under -race by make test).
func TestSimulateConcurrent(t *testing.T) {
	mod := simModel(t, 96, 3, 2, 8, Options{UlyssesAcrossNodes: true})
	cases := simCases(t, map[string]*Model{"pp3-vpp2": mod})
	want := make([]Outcome, len(cases))
	for i, c := range cases {
		var err error
		if want[i], err = mod.Simulate(c.plan, c.lengths, c.exec, 0); err != nil {
			want[i] = Outcome{}
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for k := range len(cases) {
				i := (k + w*len(cases)/4) % len(cases) // each goroutine in its own order
				c := cases[i]
				got, err := mod.Simulate(c.plan, c.lengths, c.exec, 0)
				if err != nil {
					got = Outcome{}
				}
				if !reflect.DeepEqual(got, want[i]) {
					t.Errorf("goroutine %d, %s: Result differs from a lone call's", w, c.name)
				}
			}
		})
	}
	wg.Wait()
}

// TestSimulateAllocationsDoNotGrow: once its scratch is warm, a Simulate
// allocates the same few times for HyDra's plan on 32 ranks as on 512
// (allocations per domain, microbatch, group or rank would show).
func TestSimulateAllocationsDoNotGrow(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops the scratch at random")
	}
	allocs := map[int]float64{}
	for _, g := range []int{32, 512} {
		mod := simModel(t, 3*g, 3, 1, 8, Options{})
		d, err := policies.Lookup(hydra.Name)
		if err != nil {
			t.Fatal(err)
		}
		pol, err := d.New(nil, sched.Env{})
		if err != nil {
			t.Fatal(err)
		}
		lengths := batch(3, g*8192*4)
		plan, err := pol.Plan(lengths, sched.Inputs{PoolRanks: g, BudgetTokens: 8192, PP: 3, VPP: 1, EP: 8,
			ContextTokens: 65536, OverheadRatio: mod.Overhead().RatioSquareTokens})
		if err != nil {
			t.Fatal(err)
		}
		exec := Exec{CP: d.Exec, OverlapAllToAll: d.OverlapAllToAll}
		var simErr error
		allocs[g] = testing.AllocsPerRun(3, func() {
			_, simErr = mod.Simulate(plan, lengths, exec, 0)
		})
		if simErr != nil {
			t.Fatal(simErr)
		}
		t.Logf("G = %d: %d microbatches, %.0f allocations per Simulate", g, len(plan.Microbatches), allocs[g])
	}
	if allocs[512] != allocs[32] || allocs[512] > 30 {
		t.Errorf("allocations per Simulate: %v at G = 32, %v at G = 512; want the same, at most 30", allocs[32], allocs[512])
	}
}

// TestSimulatorRelease: a Simulator released after every case, its memo
// tables cleared and pooled for the next Simulator of any Model, gives
// exactly Simulate's outcomes, and a released table holds nothing.
func TestSimulatorRelease(t *testing.T) {
	mods := map[string]*Model{
		"pp3-vpp2": simModel(t, 96, 3, 2, 8, Options{UlyssesAcrossNodes: true}),
		"pp1":      simModel(t, 32, 1, 1, 8, Options{FP8Dispatch: true}),
	}
	cases := simCases(t, mods)
	compared, set := 0, 0
	for _, c := range cases {
		want, werr := c.mod.Simulate(c.plan, c.lengths, c.exec, 0)
		sim := c.mod.NewSimulator() // its memo from the pool: the last case's, of either model
		got, gerr := sim.Simulate(c.plan, c.lengths, c.exec, 0)
		if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: a Simulator with a released memo differs from Simulate (%v, %v)", c.name, gerr, werr)
		}
		if werr == nil {
			compared++
		}
		var tabs [][]tokenCost
		for dev, tab := range sim.s.memo {
			tabs = append(tabs, tab[:cap(tab)])
			set += len(sim.s.memoSet[dev])
		}
		sim.Release()
		for _, tab := range tabs {
			if i := slices.IndexFunc(tab, func(e tokenCost) bool { return e != tokenCost{} }); i >= 0 {
				t.Fatalf("%s: released memo entry %d not cleared: %+v", c.name, i, tab[i])
			}
		}
	}
	if compared < 10 || set == 0 {
		t.Errorf("%d cases compared (want at least 10), %d memo entries set (want some)", compared, set)
	}
}
