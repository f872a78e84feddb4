package scenarios

import (
	"testing"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/memory"
)

// TestShippedScenariosFit: every shipped scenario, and every point of its
// sweep, fits its GPUs at its token budget: on every stage and kind, model
// states + reserve + the budget's worst case (every rank holding B tokens in
// every microbatch, the pipeline full) is at most the kind's HBM. A plan
// that keeps to B then cannot run out of memory; where a scenario needed
// recomputation to fit, its header says why.
func TestShippedScenariosFit(t *testing.T) {
	checked := 0
	for _, name := range PresetNames() {
		sc, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		scs := []*Scenario{sc}
		if sc.Sweep != nil {
			pts, err := sc.Points()
			if err != nil {
				t.Fatal(err)
			}
			for _, pt := range pts {
				scs = append(scs, pt.Scenario)
			}
		}
		for _, s := range scs {
			profs, err := s.Profiles()
			if err != nil {
				t.Fatal(err)
			}
			budgets, err := s.KindBudgetTokens()
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			m, err := memory.New(s.Job, compute.FlashAttention)
			if err != nil {
				t.Fatal(err)
			}
			for k, prof := range profs {
				hbm := prof.HBMBytes.Value
				for st := range m.Stages() {
					need := m.States(st).Bytes() + memory.ReserveBytes + float64(budgets[k])*m.PeakPerToken(st, s.Job.ContextTokens)
					if need > hbm {
						t.Errorf("%s: stage %d on %s needs %.1f GiB at B = %d, more than its %.1f GiB",
							s.Name, st, prof.Name, need/memory.GiB, budgets[k], hbm/memory.GiB)
					}
					checked++
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("%d (scenario, stage, kind) checked: want at least 50", checked)
	}
}

// TestAutoBudgetPerPoint: budget_tokens = "auto" is resolved for the scenario
// and again for every sweep point and variant (its GPUs shard the optimizer
// differently, its recomputation keeps different activations): each B is the
// memory model's largest that fits, and one token more does not.
func TestAutoBudgetPerPoint(t *testing.T) {
	sc, err := Load("testdata/auto-budget-sweep.toml")
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sc.Points()
	if err != nil || len(pts) != 4 {
		t.Fatalf("%d points, %v", len(pts), err)
	}
	seen := map[int]bool{}
	for _, s := range append([]*Scenario{sc}, pts[0].Scenario, pts[1].Scenario, pts[2].Scenario, pts[3].Scenario) {
		p := s.Job.Parallel
		if !p.BudgetAuto || p.BudgetTokens < 1 {
			t.Fatalf("%s: budget %d, auto %v", s.Name, p.BudgetTokens, p.BudgetAuto)
		}
		m, err := memory.New(s.Job, compute.FlashAttention)
		if err != nil {
			t.Fatal(err)
		}
		fits := func(b int) bool {
			for st := range m.Stages() {
				if m.States(st).Bytes()+memory.ReserveBytes+float64(b)*m.PeakPerToken(st, s.Job.ContextTokens) > 80e9 {
					return false
				}
			}
			return true
		}
		if !fits(p.BudgetTokens) || fits(p.BudgetTokens+1) {
			t.Errorf("%s: B = %d is not the largest that fits", s.Name, p.BudgetTokens)
		}
		seen[p.BudgetTokens] = true
	}
	if len(seen) < 4 {
		t.Errorf("the points' budgets %v: want them to differ with GPUs and recomputation", seen)
	}
}
