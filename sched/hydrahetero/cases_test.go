package hydrahetero

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/workload"
)

// testCase and randomCase are sched/hydra's random batches (a copy of its
// test helpers, which a test in another package cannot import), so that
// hydra-hetero is compared with HyDra on the same cases.
type testCase struct {
	lengths []int
	in      sched.Inputs
	opts    hydra.Options
}

func (c testCase) String() string {
	l := c.lengths
	if len(l) > 12 {
		l = l[:12]
	}
	return fmt.Sprintf("G=%d B=%d pp=%d vpp=%d max_degree=%d θ/c=%g cap=%d N=%d lengths=%v...",
		c.in.PoolRanks, c.in.BudgetTokens, c.in.PP, c.in.VPP, c.in.MaxDegree, c.in.OverheadRatio, c.opts.Cap, len(c.lengths), l)
}

// randomCase draws a batch that fits its pool: G = 2^3..2^13, B in {1024..8192},
// pp in {1,2,4,8}, vpp in {1,2}, θ/c in {0} ∪ [1, 1e9], lengths from the paper
// presets (capped or rescaled to fit) or small hand-made shapes, sometimes an
// engine limit or a forced cap. Batches stay small at large G so the linear
// reference runs fast.
func randomCase(rng *rand.Rand) testCase {
	g := 1 << (3 + rng.IntN(11))
	in := sched.Inputs{
		PoolRanks:    g,
		BudgetTokens: 1024 << rng.IntN(4),
		PP:           []int{1, 2, 4, 8}[rng.IntN(4)],
		VPP:          1 + rng.IntN(2),
	}
	if rng.IntN(8) > 0 {
		in.OverheadRatio = math.Pow(10, 9*rng.Float64())
	}
	maxN := max(1, min(200, 20000/g))
	n := 1 + rng.IntN(maxN)
	// The longest sequence may use up to limit ranks.
	limit := g
	if rng.IntN(4) == 0 {
		in.MaxDegree = 1 << rng.IntN(bitsLen(g)) // may be below C_mem: such cases are skipped
		limit = in.DegreeLimit()
	}
	maxTokens := min(limit*in.BudgetTokens, sched.MaxSequenceTokens) // sched.Inputs.Check's bound
	lengths := make([]int, n)
	src := rand.NewPCG(rng.Uint64(), rng.Uint64())
	switch rng.IntN(6) {
	case 0, 1: // a preset, capped to the pool
		var d workload.Distribution = workload.Long256K()
		if rng.IntN(2) == 0 {
			d = workload.BytedLike()
		}
		for i := range lengths {
			lengths[i] = min(d.Rand(src), maxTokens)
		}
	case 2: // a preset, rescaled so that 256K maps to the pool's limit
		d := workload.Long256K()
		for i := range lengths {
			lengths[i] = max(1, int(int64(d.Rand(src))*int64(maxTokens)/262144))
		}
	case 3: // all equal
		s := 1 + rng.IntN(maxTokens)
		for i := range lengths {
			lengths[i] = s
		}
	case 4: // a few distinct values
		vals := []int{1 + rng.IntN(maxTokens), 1 + rng.IntN(in.BudgetTokens), 1 + rng.IntN(16), maxTokens}
		for i := range lengths {
			lengths[i] = vals[rng.IntN(len(vals))]
		}
	default: // uniform up to a random ceiling
		ceil := 1 + rng.IntN(maxTokens)
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(ceil)
		}
	}
	c := testCase{lengths: lengths, in: in}
	if rng.IntN(10) == 0 {
		c.opts.Cap = 1 << rng.IntN(bitsLen(limit)) // may be out of range: such cases are skipped
	}
	return c
}

func bitsLen(n int) int { return bits.Len(uint(n)) }
