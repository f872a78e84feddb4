package experiment

import (
	"cmp"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/pipeline"
	"github.com/dcpsim/dcpsim/sim/step"
)

// timelineRanks picks the ranks a timeline draws: the requested ones inside
// the pool, or by default rank 0 plus the busiest and the idlest rank of stage
// 0 (the slowest and fastest ranks show the bubbles best), with roles naming
// those two ("busiest", "idlest"; nil for requested ranks).
func timelineRanks(res *step.Result, want []int) (ranks []int, roles map[int]string) {
	g := len(res.Stages[0].Ranks)
	if len(want) > 0 {
		for _, r := range want {
			if r >= 0 && r < g {
				ranks = append(ranks, r)
			}
		}
	} else {
		busiest, idlest := 0, 0
		for r, rr := range res.Stages[0].Ranks {
			if rr.Busy > res.Stages[0].Ranks[busiest].Busy {
				busiest = r
			}
			if rr.Busy < res.Stages[0].Ranks[idlest].Busy {
				idlest = r
			}
		}
		ranks = []int{0, busiest, idlest}
		if busiest != idlest {
			roles = map[int]string{busiest: "busiest", idlest: "idlest"}
		}
	}
	slices.Sort(ranks)
	return slices.Compact(ranks), roles
}

// buildTimeline draws one iteration of a plan for the chosen ranks: every op
// of every stage on those ranks, the planner stall, gradient sync and
// optimizer, and the p2p flows between stages (from the producing op's end to
// the consuming op's start, following Megatron's dependencies).
func buildTimeline(policy string, iteration int, plan *sched.Plan, res *step.Result, want []int) (*results.Timeline, error) {
	ranks, roles := timelineRanks(res, want)
	if len(ranks) == 0 {
		return nil, fmt.Errorf("no trace rank inside the pool [0, %d)", plan.PoolRanks)
	}
	pp, v := res.PP, res.VPP
	tl := &results.Timeline{Policy: policy, Iteration: iteration, IterationNanos: int64(res.Iteration),
		PlannerStallNanos: int64(res.PlannerStall), Stages: pp, Ranks: ranks, RankRoles: roles}
	var sch *pipeline.Schedule
	for _, r := range ranks {
		// The rank's domains in MB order.
		var doms []int
		for i := range res.Domains {
			if d := &res.Domains[i]; d.FirstRank <= r && r <= d.LastRank() {
				doms = append(doms, i)
			}
		}
		for s := range pp {
			if res.PlannerStall > 0 {
				tl.Slices = append(tl.Slices, results.Slice{Stage: s, Rank: r, Kind: results.PlannerStall, MB: -1, Chunk: -1,
					EndNanos: int64(res.PlannerStall)})
			}
			st := &res.Stages[s]
			tl.Slices = append(tl.Slices,
				results.Slice{Stage: s, Rank: r, Kind: results.GradSync, MB: -1, Chunk: -1,
					StartNanos: int64(st.GradSyncStart), EndNanos: int64(st.GradSyncEnd)},
				results.Slice{Stage: s, Rank: r, Kind: results.Optimizer, MB: -1, Chunk: -1,
					StartNanos: int64(st.GradSyncEnd), EndNanos: int64(st.OptimizerEnd)})
		}
		if len(doms) == 0 {
			continue
		}
		if sch == nil || sch.Microbatches() != len(doms) {
			var err error
			if sch, err = pipeline.New(pp, v, len(doms), 0); err != nil {
				return nil, err
			}
		}
		for s := range pp {
			for _, di := range doms {
				mb := res.Domains[di].MB
				for c := range v {
					for _, b := range []bool{false, true} {
						op := res.Ops[res.OpIndex(s, di, c, b)]
						kind := results.Forward
						if b {
							kind = results.Backward
						}
						tl.Slices = append(tl.Slices, results.Slice{Stage: s, Rank: r, Kind: kind, MB: mb, Chunk: c,
							StartNanos: int64(op.Start), EndNanos: int64(op.End), ExposedCommNanos: int64(op.ExposedComm)})
						ds, dop, ok := sch.Dep(s, pipeline.Op{Backward: b, Chunk: int32(c)})
						if !ok || ds == s {
							continue
						}
						from := res.Ops[res.OpIndex(ds, di, int(dop.Chunk), dop.Backward)]
						tl.Flows = append(tl.Flows, results.Flow{Rank: r, FromStage: ds, ToStage: s, MB: mb, Chunk: c, Backward: b,
							FromNanos: int64(from.End), ToNanos: int64(op.Start)})
					}
				}
			}
		}
	}
	slices.SortFunc(tl.Slices, func(a, b results.Slice) int {
		return cmp.Or(cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.StartNanos, b.StartNanos),
			cmp.Compare(b.EndNanos, a.EndNanos))
	})
	return tl, nil
}
