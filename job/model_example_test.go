package job_test

import (
	"fmt"

	"github.com/dcpsim/dcpsim/job"
)

func ExampleLookupModel() {
	m, err := job.LookupModel("deepseek-v2-lite")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d layers (%d dense), %s, %d experts top-%d + %d shared\n",
		m.Name, m.Layers, m.DenseLayers, m.Attention, m.RoutedExperts, m.TopK, m.SharedExperts)
	fmt.Printf("params: %.1fB total, %.2fB active\n", m.TotalParams()/1e9, m.ActiveParams()/1e9)
	fmt.Printf("train GEMM: %.1f GFLOP/token; attention c = %.0f FLOP/token²/layer\n",
		m.LinearTrainFLOPsPerToken()/1e9, m.AttentionFwdFLOPsPerSquareToken())

	_, err = job.LookupModel("gpt-5")
	fmt.Println(err)
	// Output:
	// deepseek-v2-lite: 27 layers (1 dense), mla, 64 experts top-6 + 2 shared
	// params: 15.7B total, 2.66B active
	// train GEMM: 14.7 GFLOP/token; attention c = 5120 FLOP/token²/layer
	// job: unknown model "gpt-5" (known: bytescale-llama-7b, deepseek-v2-lite, deepseek-v3, gpt-7b, hy3, llama-2-7b, llama-3-70b, llama-3-8b, paper-mla, qwen3-235b-a22b, qwen3-30b-a3b)
}
