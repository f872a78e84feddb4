package experiment_test

import (
	"fmt"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/scenarios"
)

// Run a preset scenario with fewer iterations and read its summary: each
// policy's simulated step time and its throughput relative to the first
// policy's. The same scenario and seed give the same numbers on every
// machine.
func ExampleRun() {
	sc, err := scenarios.Preset("testbed-32k")
	if err != nil {
		panic(err)
	}
	sc.Run.Iterations, sc.Run.WarmupIterations = 3, 1
	out, err := experiment.Run(sc, experiment.Options{})
	if err != nil {
		panic(err)
	}
	for _, p := range out.Summary.Policies {
		fmt.Printf("%-6s %.3f s per step, %.2f× the first policy's step\n", p.Policy, p.StepSecondsMean, p.StepSecondsMean/out.Summary.Policies[0].StepSecondsMean)
	}
	// Output:
	// hydra  7.765 s per step, 1.00× the first policy's step
	// mcore  9.074 s per step, 1.17× the first policy's step
	// static 9.949 s per step, 1.28× the first policy's step
}
