package hydrahetero

import (
	"math/rand/v2"

	"github.com/dcpsim/dcpsim/internal/schedcase"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
)

// testCase and randomCase are sched/hydra's random batches
// (internal/schedcase), so that hydra-hetero is compared with HyDra on
// the same cases.
type testCase struct {
	lengths []int
	in      sched.Inputs
	opts    hydra.Options
}

func (c testCase) String() string {
	return schedcase.Case{Lengths: c.lengths, In: c.in, Cap: c.opts.Cap}.String()
}

// randomCase is schedcase.Random as a testCase.
func randomCase(rng *rand.Rand) testCase {
	rc := schedcase.Random(rng)
	return testCase{lengths: rc.Lengths, in: rc.In, opts: hydra.Options{Cap: rc.Cap}}
}
