package hexiseq

import (
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

// BenchmarkPlanMixed plans one long-256k batch of 2M tokens (capped at 128K)
// on 32 H100-like and 32 A100-like ranks (B = 8192): the 64-GPU mixed
// setting. Metrics: ms/plan and the descent's evaluations per plan.
func BenchmarkPlanMixed(b *testing.B) {
	s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{TargetTokens: 1 << 21, ContextTokens: 1 << 17, Overlong: workload.Split, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	lengths := s.Batch(0).Lengths
	in := mixedInputs(64, 8192)
	p, _ := New(DefaultOptions())
	var plan *sched.Plan
	for b.Loop() {
		if plan, err = p.Plan(lengths, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/plan")
	b.ReportMetric(float64(plan.Diagnostics.(*Diagnostics).Evaluations), "evals/plan")
}
