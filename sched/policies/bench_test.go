package policies

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/workload"
)

// benchBudgetTokens and benchContextTokens are the paper's 256K setting.
const (
	benchBudgetTokens  = 8192
	benchContextTokens = 262144
)

var (
	benchMu      sync.Mutex
	benchBatches = map[int][]int{}
)

// benchBatch is a long-256k batch of G·B·8 tokens (the same per-rank load at
// every G: 8 microbatches' worth of budget), cached per G.
func benchBatch(b *testing.B, g int) []int {
	benchMu.Lock()
	defer benchMu.Unlock()
	if l, ok := benchBatches[g]; ok {
		return l
	}
	s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{
		TargetTokens: int64(g) * benchBudgetTokens * 8, ContextTokens: benchContextTokens, Overlong: workload.Split, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	l := s.Batch(0).Lengths
	benchBatches[g] = l
	return l
}

// BenchmarkPlan plans one long-256k batch of G·B·8 tokens (B = 8192, pp 4) with
// every registered policy at G = 512, 2048, 4096 and 8192 (G = 4096 is 16K GPUs
// at tp1 pp4; its batch is ~268M tokens, ~180K sequences). Metrics: ms/plan,
// ns/seq and the policy's own elementary work units per plan.
func BenchmarkPlan(b *testing.B) {
	// The linear reference at G >= 2048 passes its step bound (minutes a plan):
	// the benchmark measures it unbounded.
	defer func(old int64) { hydra.ScanStepLimit = old }(hydra.ScanStepLimit)
	hydra.ScanStepLimit = 0
	for _, name := range Names() {
		for _, g := range []int{512, 2048, 4096, 8192} {
			b.Run(fmt.Sprintf("%s/G=%d", name, g), func(b *testing.B) {
				lengths := benchBatch(b, g)
				p, ok := newPolicy(b, name)
				if !ok {
					b.Skip("a required program is not installed")
				}
				in := sched.Inputs{PoolRanks: g, BudgetTokens: benchBudgetTokens, PP: 4, VPP: 1,
					ContextTokens: benchContextTokens, OverheadRatio: 1 << 24}
				var plan *sched.Plan
				var err error
				for b.Loop() {
					if plan, err = p.Plan(lengths, in); err != nil {
						b.Fatal(err)
					}
				}
				perPlan := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(perPlan*1e3, "ms/plan")
				b.ReportMetric(perPlan*1e9/float64(len(lengths)), "ns/seq")
				b.ReportMetric(float64(plan.WorkUnits), "work/plan")
				b.ReportMetric(float64(len(lengths)), "seqs")
				b.ReportMetric(float64(len(plan.Microbatches)), "MBs")
			})
		}
	}
}
