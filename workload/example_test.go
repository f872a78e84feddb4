package workload_test

import (
	"fmt"

	"github.com/dcpsim/dcpsim/workload"
)

// A sampler over the long-256k preset fills 1M-token global batches for a 128K context;
// batch 7 is the same whenever and wherever it is asked for.
func ExampleSampler() {
	d, err := workload.Preset("long-256k")
	if err != nil {
		panic(err)
	}
	s, err := workload.NewSampler(d, workload.BatchSpec{
		TargetTokens:  1 << 20,
		ContextTokens: 128 << 10,
		Overlong:      workload.Split,
		Seed:          1,
	})
	if err != nil {
		panic(err)
	}
	b := s.Batch(7)
	fmt.Println(len(b.Lengths), "sequences,", b.Tokens(), "tokens")
	// Output:
	// 515 sequences, 1048576 tokens
}
