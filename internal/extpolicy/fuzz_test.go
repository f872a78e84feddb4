package extpolicy

import (
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// FuzzPlanLine: no plan line makes decoding it, turning it into a plan,
// validating the plan (sched.Validate) or reading a valid plan's statistics
// panic; a plan Validate accepts has every group inside the pool and every
// sequence of positive length.
func FuzzPlanLine(f *testing.F) {
	for _, s := range []string{
		`{"groups": [[{"first_rank": 0, "size": 8, "seqs": [0, 1]}]]}`,
		`{"groups": [[{"first_rank": 0, "size": 4, "seqs": [0]}, {"first_rank": 4, "size": 4, "seqs": [1]}]], "stall_work": {"pool_visits": 3}, "planner_seconds": 0.5}`,
		`{"groups": [[{"first_rank": 0, "size": 8, "seqs": [0]}]], "lengths": [-1000000]}`,
		`{"groups": [[{"first_rank": 0, "size": 8, "seqs": [0]}]], "lengths": [0]}`,
		`{"groups": [[{"first_rank": 9223372036854775000, "size": 1000, "seqs": [0, 1]}]]}`,
		`{"groups": [[{"first_rank": 0, "size": 8, "seqs": [0, 1]}]], "stall_work": {"pool_visits": 9000000000000000000}}`,
		`{"groups": [[{"first_rank": 0, "size": 8, "seqs": [0, 1]}]], "stall_work": {"heap_ops": -1000000000000000}}`,
		`{"groups": [[{"first_rank": 0, "size": 8, "seqs": [0, 1], "layout": {"hp_groups": [8], "shard_tokens": [4611686018427387904, 4611686018427387904, 4611686018427387904, 4611686018427387904, 0, 0, 0, 300], "heads": [1, 1, 1, 1, 1, 1, 1, 1]}}]]}`,
		`{"groups": [[{"first_rank": 0, "size": 8, "seqs": [0, 1], "offload": 0.5}]], "diagnostics": {"a": [1, {"b": null}]}}`,
		`{"groups": [[{"first_rank": 0, "size": 8, "seqs": [0, 1]}]], "microbatches": [[[0, 1], [0, 1], [0, 1], [0, 1], [0, 1], [0, 1], [0, 1], [0, 1]]]}`,
		`{"error": "no\u001b[2J"}`,
		`{"groups": null, "diagnostics": "x"}`,
	} {
		f.Add([]byte(s))
	}
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1, OffloadShare: 0.5}
	lengths := []int{100, 200}
	p := &Policy{spec: Spec{Name: "fuzz"}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := decodeResponse(raw)
		if err != nil {
			return
		}
		plan, err := p.toPlan(r, lengths, in)
		if err != nil {
			return
		}
		if plan.Diagnostics != nil {
			plan.Diagnostics.Summary()
		}
		if err := sched.Validate(plan, lengths, in, p.Promises()); err != nil {
			return
		}
		trained := plan.Trained(lengths)
		for _, s := range trained {
			if s < 1 {
				t.Fatalf("a valid plan trains a sequence of %d tokens", s)
			}
		}
		for _, mb := range plan.Microbatches {
			for _, g := range mb.Groups {
				if g.FirstRank < 0 || g.Size < 1 || g.FirstRank+g.Size > in.PoolRanks {
					t.Fatalf("a valid plan's group %+v is outside the pool", g)
				}
			}
		}
		sched.ComputeStats(plan, trained, 1)
		plan.PerRank()
	})
}
