package report

import (
	"strings"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
)

// TestPlanTableTrainedSet: a plan that trains its own set (Plan.Lengths, a
// policy with state between iterations) is described by that set, whose ids
// its groups use, not by the batch.
func TestPlanTableTrainedSet(t *testing.T) {
	sc := &scenarios.Scenario{Name: "x"}
	in := sched.Inputs{PoolRanks: 2, BudgetTokens: 1000, PP: 1, VPP: 1}
	// The batch is [10, 20, 30]; the plan trains a carried 900 (id 0) and the
	// batch's 30 (id 1), delaying 10 and 20.
	plan := &sched.Plan{Policy: "p", PoolRanks: 2, Lengths: []int{900, 30},
		Microbatches: []sched.Microbatch{{Groups: []sched.Group{{FirstRank: 0, Size: 1, Seqs: []int{0}}, {FirstRank: 1, Size: 1, Seqs: []int{1}}}}}}
	var b strings.Builder
	if err := WritePlanTable(&b, sc, 0, []int{10, 20, 30}, in, "", plan, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// The MB row: max tokens 900 (id 0 of the trained set), min 30; the
	// longest-sequences table lists 900 as sequence 0.
	for _, want := range []string{"3 sequences, 60 tokens", "trained: 2 sequences, 930 tokens", "900          30", "0     900"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
