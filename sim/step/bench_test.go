package step

import (
	"fmt"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/workload"
)

// BenchmarkIteration times one iteration of DeepSeek-V3 on H800 (tp1 pp16 ep64,
// 3 + 4·14 + 2 layers, B = 8192, 256K context, 16,384 tokens per GPU of
// long-256k) planned by HyDra outside the timed loop: ModelCosts (built anew
// each time, so its per-domain cache is cold) and Simulate.
func BenchmarkIteration(b *testing.B) {
	prof, err := calib.LookupProfile("H800")
	if err != nil {
		b.Fatal(err)
	}
	m, err := job.LookupModel(job.ModelDeepSeekV3)
	if err != nil {
		b.Fatal(err)
	}
	for _, gpus := range []int{8192, 16384, 40960} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			j := job.Job{Model: m, Cluster: job.Cluster{GPU: "H800", GPUs: gpus, GPUsPerNode: 8},
				Parallel: job.Parallel{TP: 1, PP: 16, VPP: 1, EP: 64, BudgetTokens: 8192,
					FirstStageLayers: 3, LastStageLayers: 2}, ContextTokens: 262144}
			comp, err := calib.NewCompute(prof, j)
			if err != nil {
				b.Fatal(err)
			}
			topo, err := network.NewTopology(*prof, j.Cluster, 1, 16)
			if err != nil {
				b.Fatal(err)
			}
			s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{TargetTokens: 16384 * int64(gpus),
				ContextTokens: 262144, Overlong: workload.Split, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			lengths := s.Batch(0).Lengths
			in := sched.Inputs{PoolRanks: j.PoolRanks(), BudgetTokens: 8192, PP: 16, VPP: 1, ContextTokens: 262144,
				OverheadRatio: comp.OverheadRatio(sched.MemoryDegree(262144, 8192), 8192)}
			p, err := hydra.New(nil)
			if err != nil {
				b.Fatal(err)
			}
			plan, err := p.Plan(lengths, in)
			if err != nil {
				b.Fatal(err)
			}
			exec, overlap := ExecFor(hydra.Name)
			var events uint64
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				mc, err := NewModelCosts(comp, topo, lengths, exec, overlap)
				if err != nil {
					b.Fatal(err)
				}
				res, err := Simulate(plan, 16, 1, 64, mc)
				if err != nil {
					b.Fatal(err, mc.Err())
				}
				events += res.Events
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(sec*1e3/float64(b.N), "ms/iteration")
			b.ReportMetric(float64(events)/sec, "events/s")
			b.ReportMetric(float64(len(plan.Microbatches)), "MBs")
		})
	}
}
