// Package schedcase draws the random batches the HyDra packages' tests
// share (sched/hydra compares its heaps with its linear scan on them,
// sched/hydrahetero compares itself with HyDra on the same cases). It is for
// tests only (it draws with math/rand, which sched's own packages may not
// import).
package schedcase

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
)

// Case is one batch with its inputs and a forced cap (0: the closed form's).
type Case struct {
	Lengths []int
	In      sched.Inputs
	Cap     int
}

// String names the case for a failing test.
func (c Case) String() string {
	l := c.Lengths
	if len(l) > 12 {
		l = l[:12]
	}
	return fmt.Sprintf("G=%d B=%d pp=%d vpp=%d max_degree=%d θ/c=%g cap=%d N=%d lengths=%v...",
		c.In.PoolRanks, c.In.BudgetTokens, c.In.PP, c.In.VPP, c.In.MaxDegree, c.In.OverheadRatio, c.Cap, len(c.Lengths), l)
}

// Random draws a batch that fits its pool: G = 2^3..2^13, B in {1024..8192},
// pp in {1,2,4,8}, vpp in {1,2}, θ/c in {0} ∪ [1, 1e9], lengths from the paper
// presets (capped or rescaled to fit) or small hand-made shapes, sometimes an
// engine limit or a forced cap. Batches stay small at large G so the linear
// reference runs fast.
func Random(rng *rand.Rand) Case {
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
	c := Case{Lengths: lengths, In: in}
	if rng.IntN(10) == 0 {
		c.Cap = 1 << rng.IntN(bitsLen(limit)) // may be out of range: such cases are skipped
	}
	return c
}

func bitsLen(n int) int { return bits.Len(uint(n)) }
