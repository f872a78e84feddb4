package costmodel

import (
	"fmt"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/workload"
)

// BenchmarkIteration times one iteration of DeepSeek-V3 on H800 (tp1 pp16 ep64,
// 3 + 4·14 + 2 layers, B = 8192, 256K context, 16,384 tokens per GPU of
// long-256k) planned by HyDra outside the timed loop: Simulate (the layout,
// every domain priced anew and the engine's run), from 8K GPUs to 131,072 (the
// next generation of clusters) and 1,048,576 (65,536 ranks per stage) at 8,192
// tokens per GPU: 16,384 would make a batch of 1.7·10^10 tokens and ~11.7M
// sequences, past workload.MaxTargetTokens and sched's MaxBatchTokens (10^10)
// and MaxBatchSequences (10^7). Beside the wall time per iteration it reports
// the process's CPU time per iteration (cpu-ms/iteration, the garbage
// collector's included), which other processes on a shared machine do not
// inflate.
func BenchmarkIteration(b *testing.B) {
	benchIterations(b, []int{8192, 16384, 40960, 131072, 1048576}, job.Fabric{})
}

// BenchmarkIterationSharedFabric is BenchmarkIteration at 131,072 GPUs on a
// fabric whose links contend (4 NICs per node, a 2:1 spine): every
// micro-batch's collectives are placed in their windows and the MBs with a
// stretched collective priced twice.
func BenchmarkIterationSharedFabric(b *testing.B) {
	benchIterations(b, []int{131072}, job.Fabric{NICsPerNode: 4, SpineOversubscription: 2})
}

func benchIterations(b *testing.B, sizes []int, fabric job.Fabric) {
	prof, err := calib.LookupProfile("H800")
	if err != nil {
		b.Fatal(err)
	}
	m, err := job.LookupModel(job.ModelDeepSeekV3)
	if err != nil {
		b.Fatal(err)
	}
	d, err := policies.Lookup(hydra.Name)
	if err != nil {
		b.Fatal(err)
	}
	for _, gpus := range sizes {
		perGPU := int64(16384)
		if gpus > 131072 {
			perGPU = 8192
		}
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			j := job.Job{Model: m, Cluster: job.Cluster{GPU: "H800", GPUs: gpus, GPUsPerNode: 8, Fabric: fabric},
				Parallel: job.Parallel{TP: 1, PP: 16, VPP: 1, EP: 64, BudgetTokens: 8192,
					FirstStageLayers: 3, LastStageLayers: 2}, ContextTokens: 262144}
			mod, err := New(j, prof, Options{})
			if err != nil {
				b.Fatal(err)
			}
			s, err := workload.NewSampler(workload.Long256K(), workload.BatchSpec{TargetTokens: perGPU * int64(gpus),
				ContextTokens: 262144, Overlong: workload.Split, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			lengths := s.Batch(0).Lengths
			in := sched.Inputs{PoolRanks: j.PoolRanks(), BudgetTokens: 8192, PP: 16, VPP: 1, ContextTokens: 262144,
				EP: 64, OverheadRatio: mod.Overhead().RatioSquareTokens}
			p, err := d.New(nil, sched.Env{})
			if err != nil {
				b.Fatal(err)
			}
			plan, err := p.Plan(lengths, in)
			if err != nil {
				b.Fatal(err)
			}
			exec := Exec{CP: d.Exec, OverlapAllToAll: d.OverlapAllToAll}
			var events uint64
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, cpuOK := processCPUSeconds()
			for b.Loop() {
				out, err := mod.Simulate(plan, lengths, exec, 0)
				if err != nil {
					b.Fatal(err)
				}
				events += out.Result.Events
			}
			sec := b.Elapsed().Seconds()
			if cpu1, ok := processCPUSeconds(); ok && cpuOK {
				b.ReportMetric((cpu1-cpu0)*1e3/float64(b.N), "cpu-ms/iteration")
			}
			b.ReportMetric(sec*1e3/float64(b.N), "ms/iteration")
			b.ReportMetric(float64(events)/sec, "events/s")
			b.ReportMetric(float64(len(plan.Microbatches)), "MBs")
		})
	}
}
