package hydrahetero

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
)

// oneKind is a one-kind planning cluster over c's pool (H100-like numbers;
// any do: with one kind and no linear term they cancel out).
func oneKind(c testCase) *sched.Cluster {
	return &sched.Cluster{Layers: 8, QBytesPerToken: 1, KVBytesPerToken: 1, OBytesPerToken: 1, KVHeads: 8, RanksPerNode: 8,
		Kinds: []sched.DeviceKind{{Name: "H100-SXM", Ranks: c.in.PoolRanks, BudgetTokens: c.in.BudgetTokens,
			AttentionSecondsPerToken2: 3.3e-12, LinearSecondsPerToken: 2.1e-6,
			NVLinkBytesPerSecond: 3e11, NICBytesPerSecond: 4e10, RingNICBytesPerSecond: 4.5e10}}}
}

// twoKinds splits c's pool into a fast half and a slow half (attention and
// linear work slower by slow×).
func twoKinds(c testCase, slow float64) *sched.Cluster {
	cl := oneKind(c)
	half := c.in.PoolRanks / 2
	fast := cl.Kinds[0]
	fast.Ranks = half
	sl := fast
	sl.Name, sl.Ranks = "A100-80G", c.in.PoolRanks-half
	sl.AttentionSecondsPerToken2 *= slow
	sl.LinearSecondsPerToken *= slow
	cl.Kinds = []sched.DeviceKind{fast, sl}
	return cl
}

// TestHeteroOneKindIsHydra: on a pool of one kind, hydra-hetero with its
// linear term off makes exactly HyDra's plans (microbatches, groups, close
// reasons), with and without a planning cluster: its loads are then s² on
// every rank, and every comparison of its packing is HyDra's; so is its
// plan-building stall work.
func TestHeteroOneKindIsHydra(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	compared := 0
	for range 300 {
		c := randomCase(rng)
		hp, _ := hydra.New(c.opts)
		want, err := hp.Plan(c.lengths, c.in)
		het, _ := New(Options{Cap: c.opts.Cap})
		for _, cl := range []*sched.Cluster{nil, oneKind(c)} {
			in := c.in
			in.Cluster = cl
			got, gerr := het.Plan(c.lengths, in)
			if (err == nil) != (gerr == nil) {
				t.Fatalf("%v (cluster %v): hydra error %v, hydra-hetero error %v", c, cl != nil, err, gerr)
			}
			if err != nil {
				continue
			}
			if !reflect.DeepEqual(got.Microbatches, want.Microbatches) {
				t.Fatalf("%v (cluster %v): hydra-hetero's plan differs from hydra's:\n%v\n%v", c, cl != nil, got.Microbatches, want.Microbatches)
			}
			// The same plan: the same plan-building work (hydra.PlanBuildWork).
			gw, ww := got.StallWork, want.StallWork
			gw.HeapOps, gw.SequenceVisits, gw.PoolVisits = 0, 0, 0
			ww.HeapOps, ww.SequenceVisits, ww.PoolVisits = 0, 0, 0
			if gw != ww || gw.BatchSlots == 0 {
				t.Fatalf("%v (cluster %v): plan-building work %+v, hydra's %+v", c, cl != nil, gw, ww)
			}
			compared++
		}
	}
	if compared < 300 {
		t.Errorf("only %d plans compared", compared)
	}
}

// heteroLoads returns, per kind, the mean over the busy (rank, MB) slots of
// its groups that lie in it (not those spanning kinds, which split evenly)
// of the per-rank load in seconds on the kind (Attention·Σs² + Linear·Σs)/k,
// and of the per-rank Σ s²/k.
func heteroLoads(p *sched.Plan, lengths []int, d *Diagnostics) (seconds, squares []float64) {
	n := len(d.Kinds)
	seconds, squares = make([]float64, n), make([]float64, n)
	count := make([]float64, n)
	for _, mb := range p.Microbatches {
		for _, g := range mb.Groups {
			var s1, s2 float64
			for _, id := range g.Seqs {
				s := float64(lengths[id])
				s1 += s
				s2 += s * s
			}
			k := -1 // the kind the group lies in; groups spanning kinds are skipped
			for i := range d.Kinds {
				if g.FirstRank >= d.Kinds[i].First && g.LastRank() < d.Kinds[i].First+d.Kinds[i].Ranks {
					k = i
				}
			}
			if k < 0 {
				continue
			}
			seconds[k] += float64(g.Size) * d.Kinds[k].load(s2, s1) / float64(g.Size)
			squares[k] += s2
			count[k] += float64(g.Size)
		}
	}
	for k := range n {
		seconds[k] /= max(count[k], 1)
		squares[k] /= max(count[k], 1)
	}
	return seconds, squares
}

// TestHeteroSlowKindGetsLessWork: with half the pool 3× slower, every rank's
// per-rank load in seconds on its own kind stays within Λ*, and the slow
// kind's ranks carry less attention work (Σ s²/k, over the groups that lie
// in one kind) than the fast kind's.
func TestHeteroSlowKindGetsLessWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for range 200 {
		c := randomCase(rng)
		if c.in.PoolRanks < 16 || len(c.lengths) < 50 || c.in.MaxDegree != 0 || c.opts.Cap != 0 {
			continue
		}
		c.in.Cluster = twoKinds(c, 3)
		pol, _ := New(DefaultOptions())
		p, err := pol.Plan(c.lengths, c.in)
		if err != nil {
			if !errorsIsAny(err, hydra.ErrEngineLimit, hydra.ErrCannotAlign) {
				t.Fatalf("%v: %v", c, err)
			}
			continue
		}
		if err := sched.Validate(p, c.lengths, c.in, pol.Promises()); err != nil {
			t.Fatalf("%v: Validate: %v", c, err)
		}
		d := p.Diagnostics.(*Diagnostics)
		if c.in.VPP == 1 {
			for m, mb := range p.Microbatches {
				for _, g := range mb.Groups {
					var s1, s2 float64
					for _, id := range g.Seqs {
						s := float64(c.lengths[id])
						s1, s2 = s1+s, s2+s*s
					}
					for _, k := range d.Kinds {
						if g.FirstRank < k.First+k.Ranks && g.LastRank() >= k.First && k.load(s2, s1) > d.LoadTarget*float64(g.Size)*(1+1e-9) {
							t.Fatalf("%v: MB %d group %+v: load %g on %s over Λ*·k = %g", c, m, g, k.load(s2, s1), k.Name, d.LoadTarget*float64(g.Size))
						}
					}
				}
			}
		}
		if c.in.VPP > 1 {
			checked++
			continue // VPP alignment splits MBs by s² loads, kind-blind (see the package doc)
		}
		_, squares := heteroLoads(p, c.lengths, d)
		if squares[1] > squares[0]*(1+1e-9) {
			t.Errorf("%v: slow kind's mean Σs²/k %g above the fast kind's %g", c, squares[1], squares[0])
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d cases checked", checked)
	}
}

func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// TestHeteroReference: Λ* is the longest sequence's load at C* on the block
// of C* ranks where it runs quickest, in units of that block's slowest kind
// (its weight exactly 1); θ is θ/c of the first kind in those units. When
// the fast kind's pool is too small to hold the longest sequence, every
// block holding it has a slow rank, and the slow kind is the reference.
func TestHeteroReference(t *testing.T) {
	c := testCase{lengths: []int{65536, 4096, 4096, 1000}, in: sched.Inputs{PoolRanks: 64, BudgetTokens: 8192, PP: 4, VPP: 1, OverheadRatio: 1e7}}
	c.in.Cluster = twoKinds(c, 3)
	ht, err := Solve(c.lengths, c.in, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ht.Reference != "H100-SXM" || ht.Kinds[0].Attention != 1 || math.Abs(ht.Kinds[1].Attention-3) > 1e-12 {
		t.Errorf("reference %s, weights %+v", ht.Reference, ht.Kinds)
	}
	s := 65536.0
	if want := ht.Kinds[0].load(s*s, s) / float64(ht.Cap); math.Abs(ht.LoadTarget-want) > 1e-9*want || ht.Cap > 32 {
		t.Errorf("Λ* = %g, want L_ref(s_max)/C* = %g; C* %d within the 32 H100s", ht.LoadTarget, want, ht.Cap)
	}
	if ht.OverheadRatio != 1e7 {
		t.Errorf("θ = %g, want θ/c of the first kind, the reference: 1e7", ht.OverheadRatio)
	}
	small := c
	small.in.Cluster = twoKinds(c, 3)
	small.in.Cluster.Kinds[0].Ranks, small.in.Cluster.Kinds[1].Ranks = 4, 60 // 4 H100s cannot hold 65,536 tokens at 8,192 a rank
	ht, err = Solve(small.lengths, small.in, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ht.Reference != "A100-80G" || ht.Kinds[1].Attention != 1 {
		t.Errorf("small fast pool: reference %s, weights %+v", ht.Reference, ht.Kinds)
	}
	if want := 1e7 / 3; math.Abs(ht.OverheadRatio-want) > 1e-9*want {
		t.Errorf("θ = %g ref units, want θ/c of the first kind / 3 = %g", ht.OverheadRatio, want)
	}
	ht, _ = Solve(c.lengths, c.in, true, 0)
	// Token parity: the slow kind's full ranks would run 3× the fast kind's
	// linear work, so it holds a third of the tokens in a multi-sequence group.
	if ht.Kinds[0].ParityTokens != 8192 || ht.Kinds[1].ParityTokens != 8192/3 {
		t.Errorf("parity tokens %d, %d; want 8192, %d", ht.Kinds[0].ParityTokens, ht.Kinds[1].ParityTokens, 8192/3)
	}
	off, err := Solve(c.lengths, c.in, false, 0)
	if err != nil || off.Kinds[1].ParityTokens != 8192 || off.Kinds[0].Linear != 0 {
		t.Errorf("linear off: %+v, %v", off.Kinds, err)
	}
}
