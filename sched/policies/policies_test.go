package policies

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dcpsim/dcpsim/milp/cbc"
	"github.com/dcpsim/dcpsim/sched"
)

// newPolicy builds the named policy with its defaults and what it requires
// (a MILP solver: cbc), as experiment does; ok is false when a required
// program is not installed (the test then skips that policy).
func newPolicy(t testing.TB, name string) (p sched.Policy, ok bool) {
	t.Helper()
	d, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	var env sched.Env
	if d.Requires.Program != "" {
		s, err := cbc.Find()
		if err != nil {
			t.Logf("%s skipped: %v", name, err)
			return nil, false
		}
		env.Solver = s
	}
	p, err = d.New(nil, env)
	if err != nil {
		t.Fatal(err)
	}
	return p, true
}

// randomCase draws a small random batch and inputs that every policy can plan:
// G a power of two in [2, 64], B in [64, 4096], lengths long-tailed up to the
// pool's capacity.
func randomCase(rng *rand.Rand) ([]int, sched.Inputs) {
	g := 2 << rng.IntN(6)
	b := 64 << rng.IntN(7)
	in := sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1 << rng.IntN(4), VPP: 1 + rng.IntN(2),
		OverheadRatio: float64(rng.IntN(4)) * float64(b) * float64(b)}
	maxLen := g * b
	if rng.IntN(2) == 0 {
		maxLen = b * (1 << rng.IntN(6))
		maxLen = min(maxLen, g*b)
	}
	in.ContextTokens = maxLen
	n := 1 + rng.IntN(300)
	lengths := make([]int, n)
	for i := range lengths {
		// Log-uniform in [1, maxLen], so lengths span orders of magnitude.
		lengths[i] = max(1, min(maxLen, int(float64(maxLen)/float64(uint64(1)<<rng.IntN(12))*rng.Float64())+1))
	}
	return lengths, in
}

// TestEveryPolicyValidates: every registered policy's plans pass sched.Validate
// with the promises it declares, on 10^4 random batches.
func TestEveryPolicyValidates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	for _, name := range Names() {
		p, ok := newPolicy(t, name)
		if !ok {
			continue
		}
		pr := sched.Promises{}
		if ps, ok := p.(sched.Promiser); ok {
			pr = ps.Promises()
		}
		cases := n
		if d, _ := Lookup(name); d.Requires.Program != "" {
			cases = n / 100 // a subprocess per MILP: fewer cases, the same generator
		}
		planned := 0
		for i := range cases {
			lengths, in := randomCase(rng)
			plan, err := p.Plan(lengths, in)
			if errors.Is(err, sched.ErrCannotPlan) {
				continue // Megatron asserts too: too few sequences for dp·N bins or VPP alignment
			}
			if err != nil {
				t.Fatalf("%s case %d (G=%d B=%d n=%d): %v", name, i, in.PoolRanks, in.BudgetTokens, len(lengths), err)
			}
			if err := sched.Validate(plan, lengths, in, pr); err != nil {
				t.Fatalf("%s case %d (G=%d B=%d): %v\nlengths %v", name, i, in.PoolRanks, in.BudgetTokens, err, lengths)
			}
			planned++
		}
		if planned < cases/2 {
			t.Errorf("%s planned only %d of %d cases", name, planned, cases)
		}
	}
}

// TestEveryPolicyValidatesMixed: on pools of two GPU kinds (the second
// slower, its budget larger or smaller), every policy's plans keep their
// promises, each rank within its own kind's budget; policies that treat
// every device alike plan with the smaller budget (Inputs.BudgetTokens).
func TestEveryPolicyValidatesMixed(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, name := range Names() {
		p, ok := newPolicy(t, name)
		if !ok {
			continue
		}
		pr := sched.Promises{}
		if ps, ok := p.(sched.Promiser); ok {
			pr = ps.Promises()
		}
		cases, want := 300, 100
		if d, _ := Lookup(name); d.Requires.Program != "" {
			cases, want = 30, 10 // a subprocess per MILP
		}
		planned := 0
		for i := range cases {
			lengths, in := randomCase(rng)
			if in.PoolRanks < 4 {
				continue
			}
			in.Cluster = mixedCluster(rng, &in)
			plan, err := p.Plan(lengths, in)
			if errors.Is(err, sched.ErrCannotPlan) || errors.Is(err, sched.ErrInvalidInput) {
				continue
			}
			if err != nil {
				t.Fatalf("%s case %d (G=%d B=%d n=%d): %v", name, i, in.PoolRanks, in.BudgetTokens, len(lengths), err)
			}
			if err := sched.Validate(plan, lengths, in, pr); err != nil {
				t.Fatalf("%s case %d (G=%d B=%d): %v", name, i, in.PoolRanks, in.BudgetTokens, err)
			}
			planned++
		}
		if planned < want {
			t.Errorf("%s planned only %d of %d mixed cases", name, planned, cases)
		}
	}
}

// mixedCluster splits in's pool into two kinds, the second 2-4× slower with
// a budget of 0.5-1.5× the first's; in.BudgetTokens becomes the smaller.
func mixedCluster(rng *rand.Rand, in *sched.Inputs) *sched.Cluster {
	slow := 2 + 2*rng.Float64()
	b2 := max(1, int(float64(in.BudgetTokens)*(0.5+rng.Float64())))
	k := func(name string, ranks, budget int, f float64) sched.DeviceKind {
		return sched.DeviceKind{Name: name, Ranks: ranks, BudgetTokens: budget, AttentionSecondsPerToken2: 4.8e-11 * f,
			LinearSecondsPerToken: 1.9e-6 * f, NVLinkBytesPerSecond: 3e11, NICBytesPerSecond: 4e10 / f, RingNICBytesPerSecond: 4.4e10 / f,
			IntraLatencySeconds: 1e-5, InterLatencySeconds: 5e-5}
	}
	first := in.PoolRanks / 2
	c := &sched.Cluster{Layers: 8, OverheadSeconds: 0.01, QBytesPerToken: 8192, KVBytesPerToken: 2048, OBytesPerToken: 8192, KVHeads: 8, RanksPerNode: 8,
		Kinds: []sched.DeviceKind{k("fast", first, in.BudgetTokens, 1), k("slow", in.PoolRanks-first, b2, slow)}}
	in.BudgetTokens = min(in.BudgetTokens, b2)
	return c
}

// FuzzPolicies feeds arbitrary small batches to every policy: each either
// returns an error wrapping sched.ErrInvalidInput (sched.ErrCannotPlan
// included) or a plan that validates.
func FuzzPolicies(f *testing.F) {
	f.Add(uint8(3), uint16(64), []byte{10, 200, 3, 255, 1})
	f.Add(uint8(0), uint16(1), []byte{1})
	f.Add(uint8(6), uint16(4096), []byte{255, 255, 255, 0, 7})
	f.Fuzz(func(t *testing.T, logG uint8, budget uint16, raw []byte) {
		g := 1 << (logG % 8)
		b := int(budget)
		in := sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1 + int(logG%4), VPP: 1 + int(logG/4%2), OverheadRatio: float64(b) * float64(b)}
		lengths := make([]int, len(raw))
		for i, x := range raw {
			lengths[i] = int(x) * max(1, b/64)
		}
		for _, name := range Names() {
			p, ok := newPolicy(t, name)
			if !ok {
				continue
			}
			plan, err := p.Plan(lengths, in)
			if err != nil {
				if !errors.Is(err, sched.ErrInvalidInput) {
					t.Fatalf("%s: unexpected error kind: %v", name, err)
				}
				continue
			}
			pr := sched.Promises{}
			if ps, ok := p.(sched.Promiser); ok {
				pr = ps.Promises()
			}
			if err := sched.Validate(plan, lengths, in, pr); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
	})
}
