package experiment

import (
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sim"
	"github.com/dcpsim/dcpsim/sim/step"
)

// TestOutOfMemoryIsReported: with a budget far past what the H20 holds, a
// policy whose plan does not fit is that policy's out-of-memory, reported
// with the iteration, stage, rank, kind and bytes, never timed; a policy
// that fits reports a peak within the HBM, per stage.
func TestOutOfMemoryIsReported(t *testing.T) {
	src := strings.NewReplacer("budget_tokens = 8192", "budget_tokens = 131072",
		"context_tokens = 32768", "context_tokens = 131072", "batch_tokens = 131072", "batch_tokens = 524288").Replace(tiny)
	out, err := Run(parse(t, src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	oom, fit := 0, 0
	for _, p := range out.Summary.Policies {
		switch o := p.OutOfMemory; {
		case o != nil:
			oom++
			if !strings.Contains(p.Error, "out of memory: stage") || p.StepSecondsMean != 0 ||
				o.NeededBytes <= o.AvailableBytes || o.Kind != "H20" || o.AvailableBytes != 96e9 ||
				o.NeededBytes != o.StatesBytes+o.ReserveBytes+o.ActivationBytes {
				t.Errorf("%s: out of memory %+v, error %q", p.Policy, o, p.Error)
			}
		case p.Error == "":
			fit++
			if p.PeakMemoryMaxBytes <= 0 || p.PeakMemoryMaxBytes > p.HBMBytes || len(p.PeakMemoryByStageBytes) != 3 {
				t.Errorf("%s: peak %v of %v, by stage %v", p.Policy, p.PeakMemoryMaxBytes, p.HBMBytes, p.PeakMemoryByStageBytes)
			}
		}
	}
	if oom == 0 {
		t.Errorf("no policy ran out of memory at B = 131072 on 96 GB H20s: %+v", out.Summary.Policies)
	}
	t.Logf("%d out of memory, %d fit", oom, fit)
	// At the scenario's own budget every policy fits.
	out, err = Run(parse(t, tiny), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range out.Summary.Policies {
		if p.Error != "" || p.PeakMemoryMaxBytes <= 0 || p.PeakMemoryMaxBytes > p.HBMBytes {
			t.Errorf("%s at B = 8192: error %q, peak %v of %v", p.Policy, p.Error, p.PeakMemoryMaxBytes, p.HBMBytes)
		}
	}
}

// TestDPStraggler: per stage the slowest rank's span over the median's,
// from the end of the planner's stall, averaged over the stages; ranks in
// no microbatch are left out.
func TestDPStraggler(t *testing.T) {
	rank := func(end sim.Nanos, mbs int) step.RankResult {
		return step.RankResult{Microbatches: mbs, LastBackwardEnd: end}
	}
	res := &step.Result{PlannerStall: 1, Stages: []step.StageResult{
		{Ranks: []step.RankResult{rank(2, 1), rank(3, 1), rank(4, 1), rank(11, 1), rank(0, 0)}}, // spans 1 2 3 10: 10/2.5
		{Ranks: []step.RankResult{rank(3, 1), rank(3, 1), rank(5, 1)}},                          // spans 2 2 4: 4/2
	}}
	if got, want := dpStraggler(res), (4.0+2.0)/2; got != want {
		t.Errorf("dp straggler %v, want %v", got, want)
	}
}
