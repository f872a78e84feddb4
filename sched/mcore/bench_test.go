package mcore

import (
	"fmt"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

// BenchmarkPlan plans one long-256k batch of G·B·8 tokens (B = 8192; at G = 4096
// about 180K sequences), as sched/policies' benchmark does.
func BenchmarkPlan(b *testing.B) {
	for _, g := range []int{512, 4096, 8192} {
		b.Run(fmt.Sprintf("G=%d", g), func(b *testing.B) {
			s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{
				TargetTokens: int64(g) * 8192 * 8, ContextTokens: 262144, Overlong: workload.Split, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			lengths := s.Batch(0).Lengths
			p := mustPolicy(b, Options{MinCPSize: 1})
			in := sched.Inputs{PoolRanks: g, BudgetTokens: 8192, PP: 4, VPP: 1}
			var plan *sched.Plan
			for b.Loop() {
				if plan, err = p.Plan(lengths, in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/plan")
			b.ReportMetric(float64(len(lengths)), "seqs")
			b.ReportMetric(float64(len(plan.Microbatches)), "MBs")
			b.ReportMetric(float64(plan.WorkUnits), "work/plan")
		})
	}
}
