package flexsp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/milp"
	"github.com/dcpsim/dcpsim/sched"
)

// unusedSolver is a solver for tests that build a policy and never plan.
type unusedSolver struct{}

func (unusedSolver) Solve(context.Context, *milp.Model, milp.Limits) (*milp.Solution, error) {
	return nil, errors.New("unusedSolver: not for solving")
}

// TestOptionErrorsNameTheKey: every option out of range is refused with its
// key, its value and the allowed range; the defaults build.
func TestOptionErrorsNameTheKey(t *testing.T) {
	if _, err := New(DefaultOptions(), sched.Env{Solver: unusedSolver{}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Buckets = 0 }, "buckets = 0: must be in [1, 1024]"},
		{func(o *Options) { o.MicrobatchCounts = 65 }, "microbatch_counts = 65: must be in [1, 64]"},
		{func(o *Options) { o.NodeLimit = 0 }, "node_limit = 0: must be in [1, 1073741824]"},
		{func(o *Options) { o.TimeLimitSeconds = math.NaN() }, "time_limit_seconds = NaN: must be in (0, 3600]"},
		{func(o *Options) { o.TimeLimitSeconds = 0 }, "time_limit_seconds = 0"},
		{func(o *Options) { o.Gap = -0.1 }, "gap = -0.1: must be in [0, 1]"},
		{func(o *Options) { o.ExplicitGroups = -1 }, "explicit_groups = -1: must be in [0, 64]"},
		{func(o *Options) { o.MinGroupSize = 3 }, "min_group_size = 3: must be a power of two"},
		{func(o *Options) { o.Workers = 0 }, "workers = 0: must be in [1, 256]"},
	} {
		o := DefaultOptions()
		c.edit(&o)
		if _, err := New(o, sched.Env{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v, want %q", err, c.want)
		}
	}
}

// TestNoSolver: building without a solver fails with ErrNoSolver (which
// blames the environment, sched.ErrEnvMissing), never a policy that plans
// with a heuristic; bad options are still named first.
func TestNoSolver(t *testing.T) {
	if _, err := New(DefaultOptions(), sched.Env{}); !errors.Is(err, ErrNoSolver) || !errors.Is(err, sched.ErrEnvMissing) {
		t.Errorf("New without a solver: %v", err)
	}
	o := DefaultOptions()
	o.Gap = 2
	if _, err := New(o, sched.Env{}); err == nil || errors.Is(err, ErrNoSolver) || !strings.Contains(err.Error(), "gap = 2") {
		t.Errorf("bad options without a solver: %v, want the option named", err)
	}
}

// TestBadCosts: costs out of range are refused when the policy is built,
// naming the field.
func TestBadCosts(t *testing.T) {
	_, err := New(DefaultOptions(), sched.Env{Solver: unusedSolver{}, TokenCosts: &sched.TokenCosts{AttentionSecondsPerToken2: -1, LinearSecondsPerToken: 1}})
	if err == nil || !strings.Contains(err.Error(), "attention_seconds_per_token2 = -1") {
		t.Errorf("New with a negative a1: %v", err)
	}
}

// TestDeterministicAndWorkerFree: the same batch gives the same plan, and
// the number of parallel solves changes nothing.
func TestDeterministicAndWorkerFree(t *testing.T) {
	in := sched.Inputs{PoolRanks: 32, BudgetTokens: 2048, PP: 2, VPP: 1, EP: 4}
	lengths := longBatch(t, 32*2048*4, 32768, 21)
	a, _ := plan(t, newTestPolicy(t, func(o *Options) { o.Workers = 1 }), lengths, in)
	b, _ := plan(t, newTestPolicy(t, func(o *Options) { o.Workers = 1 }), lengths, in)
	c, _ := plan(t, newTestPolicy(t, func(o *Options) { o.Workers = 8 }), lengths, in)
	if !reflect.DeepEqual(a.Microbatches, b.Microbatches) || !reflect.DeepEqual(a.Microbatches, c.Microbatches) || a.StallWork != c.StallWork {
		t.Error("plans differ between runs or worker counts")
	}
	if a.PartialMicrobatches {
		t.Error("FlexSP's microbatches span the pool: every rank runs every one")
	}
}

// TestInterleavedCountsLegal: with vpp > 1 only counts Megatron's
// interleaved schedule runs are tried and chosen.
func TestInterleavedCountsLegal(t *testing.T) {
	p := newTestPolicy(t, nil)
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 2048, PP: 4, VPP: 2}
	lengths := longBatch(t, 16*2048*5, 16384, 23)
	pl, d := plan(t, p, lengths, in)
	for _, c := range d.Candidates {
		if err := sched.CheckMicrobatchCount(in.PP, in.VPP, c.Microbatches, 0); err != nil {
			t.Errorf("tried M = %d: %v", c.Microbatches, err)
		}
	}
	if err := sched.CheckMicrobatchCount(in.PP, in.VPP, len(pl.Microbatches), 0); err != nil {
		t.Error(err)
	}
}

// TestDealListScheduling: without a memory limit, dealing longest first to
// the least loaded group ends every group within one item of the mean.
func TestDealListScheduling(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for range 500 {
		n := 1 + rng.IntN(12)
		items := 1 + rng.IntN(60)
		w := make([]float64, items)
		tok := make([]int64, items)
		for i := range w {
			w[i] = rng.Float64()
		}
		// heaviest first, as deal's callers give them
		for i := range w {
			for j := i + 1; j < len(w); j++ {
				if w[j] > w[i] {
					w[i], w[j] = w[j], w[i]
				}
			}
		}
		g, ok, _ := deal(w, tok, n, 1)
		if !ok {
			t.Fatal("no memory limit, yet no deal")
		}
		load := make([]float64, n)
		var total float64
		for i, gi := range g {
			load[gi] += w[i]
			total += w[i]
		}
		for _, l := range load {
			if l > total/float64(n)+w[0]+1e-12 {
				t.Fatalf("group load %v > mean %v + largest %v", l, total/float64(n), w[0])
			}
		}
	}
}
