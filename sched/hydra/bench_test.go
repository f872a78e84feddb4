package hydra

import (
	"fmt"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

// benchOverheadRatio is the θ/c of the benchmarks, in tokens² (2^24, as in
// sched/policies' BenchmarkPlan): with b = 3 it puts the continuous C* near 540
// on long-256k batches of 8 MBs' worth of tokens, so C* = 512 (capped by G at 256).
const benchOverheadRatio = 1 << 24

// benchBatch is a long-256k batch of G·B·8 tokens (about 44 sequences per rank).
func benchBatch(b testing.TB, poolRanks, budgetTokens int) []int {
	s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{
		TargetTokens: int64(poolRanks * budgetTokens * 8), ContextTokens: 262144, Overlong: workload.Split, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return s.Batch(0).Lengths
}

// BenchmarkPlan plans one long-256k batch at B = 8K, pp = 4 for G from 512 to
// 8192 ranks, at the same per-rank load. Targets: <= 50 ms per plan at G = 4096 on
// 2 cores, and ns/seq at G = 4096 within 1.5× of G = 512.
func BenchmarkPlan(b *testing.B) {
	for _, g := range []int{512, 2048, 4096, 8192} {
		b.Run(fmt.Sprintf("G=%d", g), func(b *testing.B) {
			const budget = 8192
			lengths := benchBatch(b, g, budget)
			in := sched.Inputs{PoolRanks: g, BudgetTokens: budget, PP: 4, VPP: 1, OverheadRatio: benchOverheadRatio}
			policy, _ := New(DefaultOptions())
			var plan *sched.Plan
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if plan, err = policy.Plan(lengths, in); err != nil {
					b.Fatal(err)
				}
			}
			perPlan := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			d := plan.Diagnostics.(*Diagnostics)
			b.ReportMetric(perPlan/1e6, "ms/plan")
			b.ReportMetric(perPlan/float64(len(lengths)), "ns/seq")
			b.ReportMetric(float64(d.HeapOps), "heap-ops/plan")
			b.ReportMetric(float64(d.SequenceVisits)/float64(len(lengths)), "visits/seq")
			b.ReportMetric(float64(len(plan.Microbatches)), "MBs")
		})
	}
}

// BenchmarkSortLongestFirst sorts the G = 4096 batch of BenchmarkPlan (181K
// sequences).
func BenchmarkSortLongestFirst(b *testing.B) {
	lengths := benchBatch(b, 4096, 8192)
	b.ReportAllocs()
	for b.Loop() {
		sortLongestFirst(lengths)
	}
}
