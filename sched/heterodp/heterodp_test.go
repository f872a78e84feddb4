package heterodp

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/static"
)

// device is a kind of the given ranks and budget, slow times slower per
// rank than the reference (attention and linear alike).
func device(name string, ranks, budget int, slow float64) sched.DeviceKind {
	return sched.DeviceKind{Name: name, Ranks: ranks, BudgetTokens: budget,
		AttentionSecondsPerToken2: 4.8e-11 * slow, LinearSecondsPerToken: 1.9e-6 * slow,
		NVLinkBytesPerSecond: 3e11, NICBytesPerSecond: 4e10, RingNICBytesPerSecond: 4.4e10,
		IntraLatencySeconds: 1e-5, InterLatencySeconds: 5e-5}
}

// cluster is a pool of the kinds; in.PoolRanks and in.BudgetTokens (the
// smallest) follow from them.
func cluster(in *sched.Inputs, kinds ...sched.DeviceKind) {
	c := &sched.Cluster{Layers: 8, OverheadSeconds: 0.01, QBytesPerToken: 8192, KVBytesPerToken: 2048, OBytesPerToken: 8192,
		KVHeads: 8, RanksPerNode: 8, Kinds: kinds}
	in.PoolRanks, in.BudgetTokens = 0, math.MaxInt
	for _, k := range kinds {
		in.PoolRanks += k.Ranks
		in.BudgetTokens = min(in.BudgetTokens, k.BudgetTokens)
	}
	in.Cluster = c
}

func plan(t *testing.T, o Options, lengths []int, in sched.Inputs) (*sched.Plan, *Diagnostics) {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := p.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Validate(pl, lengths, in, p.Promises()); err != nil {
		t.Fatal(err)
	}
	return pl, pl.Diagnostics.(*Diagnostics)
}

func repeat(s, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// perKind forces the per-kind plan, whose rules the tests below check.
var perKind = Options{Proportional: true, Layout: LayoutPerKind}

// TestDegreePerKind: d_k is the smallest power of two with d_k·B_k >= the
// context on the kind's own budget, capped at its ranks and the engine's
// limit; replicas are ⌊ranks/d_k⌋ blocks from the kind's first rank.
func TestDegreePerKind(t *testing.T) {
	for _, c := range []struct {
		name      string
		kinds     []sched.DeviceKind
		context   int
		maxDegree int
		degrees   []int
		replicas  []int
		capped    []bool
		firsts    [][]int // each kind's groups' first ranks in the first microbatch
	}{
		{name: "budgets differ", kinds: []sched.DeviceKind{device("a", 16, 4096, 1), device("b", 16, 8192, 2)}, context: 32768,
			degrees: []int{8, 4}, replicas: []int{2, 4}, capped: []bool{false, false}, firsts: [][]int{{0, 8}, {16, 20, 24, 28}}},
		{name: "context fits one rank", kinds: []sched.DeviceKind{device("a", 4, 4096, 1), device("b", 4, 4096, 3)}, context: 4096,
			degrees: []int{1, 1}, replicas: []int{4, 4}, capped: []bool{false, false}},
		{name: "small kind capped at its ranks", kinds: []sched.DeviceKind{device("a", 4, 4096, 1), device("b", 28, 4096, 2)}, context: 32768,
			degrees: []int{4, 8}, replicas: []int{1, 3}, capped: []bool{true, false}, firsts: [][]int{{0}, {4, 12, 20}}},
		{name: "engine limit", kinds: []sched.DeviceKind{device("a", 16, 4096, 1), device("b", 16, 4096, 2)}, context: 32768, maxDegree: 4,
			degrees: []int{4, 4}, replicas: []int{4, 4}, capped: []bool{true, true}},
		{name: "kind not starting at a multiple of its degree", kinds: []sched.DeviceKind{device("a", 24, 4096, 1), device("b", 40, 4096, 2)}, context: 65536,
			degrees: []int{16, 16}, replicas: []int{1, 2}, capped: []bool{false, false}, firsts: [][]int{{0}, {24, 40}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := sched.Inputs{PP: 1, VPP: 1, ContextTokens: c.context, MaxDegree: c.maxDegree}
			cluster(&in, c.kinds...)
			// Enough short sequences that every replica of every kind gets some.
			var widest int
			for _, d := range c.degrees {
				widest = max(widest, d)
			}
			lengths := repeat(1000, 64*len(c.kinds)*widest)
			lengths[0] = min(c.context, c.degrees[0]*c.kinds[0].BudgetTokens)
			pl, d := plan(t, perKind, lengths, in)
			for i, k := range d.Kinds {
				if k.Degree != c.degrees[i] || k.Replicas != c.replicas[i] || k.Capped != c.capped[i] {
					t.Errorf("kind %s: degree %d × %d replicas (capped %v), want %d × %d (capped %v)",
						k.Name, k.Degree, k.Replicas, k.Capped, c.degrees[i], c.replicas[i], c.capped[i])
				}
			}
			if c.firsts == nil {
				return
			}
			got := make([][]int, len(c.kinds))
			for _, g := range pl.Microbatches[0].Groups {
				ki := in.Cluster.KindOf(g.FirstRank)
				if g.Size != c.degrees[ki] || in.Cluster.KindOf(g.LastRank()) != ki {
					t.Errorf("group %+v: size %d or crosses its kind %d", g, g.Size, ki)
				}
				got[ki] = append(got[ki], g.FirstRank)
			}
			if !reflect.DeepEqual(got, c.firsts) {
				t.Errorf("first ranks %v, want %v", got, c.firsts)
			}
		})
	}
}

// finishBound is the most one sequence adds to any kind's projected finish:
// the tolerance LPT's finish times end within.
func finishBound(lengths []int, in sched.Inputs, d *Diagnostics) float64 {
	var bound float64
	for i, k := range d.Kinds {
		dk := in.Cluster.Kinds[i]
		for _, s := range lengths {
			x := float64(s)
			t := float64(in.Cluster.Layers) * (dk.AttentionSecondsPerToken2*x*x + dk.LinearSecondsPerToken*x) / float64(k.Degree*k.Replicas)
			bound = max(bound, t)
		}
	}
	return bound
}

// finishSpread is max_k F_k − min_k F_k over the kinds that hold sequences
// the others could take.
func finishSpread(d *Diagnostics) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, k := range d.Kinds {
		lo, hi = min(lo, k.ProjectedSeconds), max(hi, k.ProjectedSeconds)
	}
	return hi - lo
}

// TestSplit: the table of the split's rules on two kinds of equal ranks.
func TestSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := make([]int, 400)
	for i := range random {
		random[i] = 1 + rng.IntN(16384)
	}
	for _, c := range []struct {
		name    string
		slow    float64 // the second kind's time per rank over the first's
		opts    Options
		lengths []int
		ratio   float64 // want tokens(first) / tokens(second)
		slack   int     // in sequences of the granularity
	}{
		{name: "twice as fast, equal lengths", slow: 2, opts: perKind, lengths: repeat(1024, 300), ratio: 2, slack: 2},
		{name: "three times as fast, equal lengths", slow: 3, opts: perKind, lengths: repeat(2048, 401), ratio: 3, slack: 2},
		{name: "equal kinds", slow: 1, opts: perKind, lengths: repeat(1024, 300), ratio: 1, slack: 0},
		{name: "twice as fast, speed weighting off", slow: 2, opts: Options{Layout: LayoutPerKind}, lengths: repeat(1024, 300), ratio: 1, slack: 0},
		{name: "twice as fast, random lengths", slow: 2, opts: perKind, lengths: random},
		{name: "equal kinds, random lengths", slow: 1, opts: perKind, lengths: random},
		{name: "twice as fast, chosen plan", slow: 2, opts: DefaultOptions(), lengths: random},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := sched.Inputs{PP: 1, VPP: 1, ContextTokens: 16384}
			cluster(&in, device("fast", 16, 8192, 1), device("slow", 16, 8192, c.slow))
			_, d := plan(t, c.opts, c.lengths, in)
			if d.Layout != LayoutPerKind {
				t.Fatalf("plan %q (per kind %.4g s, over the pool %.4g s), want per-kind", d.Layout, d.PerKindSeconds, d.PoolSeconds)
			}
			fast, slow := d.Kinds[0], d.Kinds[1]
			if fast.Sequences+slow.Sequences != len(c.lengths) || fast.Tokens+slow.Tokens != sum(c.lengths) {
				t.Fatalf("split %d + %d sequences, %d + %d tokens: not the batch", fast.Sequences, slow.Sequences, fast.Tokens, slow.Tokens)
			}
			if c.ratio > 0 {
				s := float64(c.lengths[0])
				if got := float64(fast.Tokens) - c.ratio*float64(slow.Tokens); math.Abs(got) > float64(c.slack)*c.ratio*s {
					t.Errorf("tokens %d fast, %d slow: off the ratio %g by %.0f tokens (> %d sequences)", fast.Tokens, slow.Tokens, c.ratio, got, c.slack)
				}
			}
			if c.opts.Proportional {
				if spread, bound := finishSpread(d), finishBound(c.lengths, in, d); spread > bound*(1+1e-9) {
					t.Errorf("projected finishes %.6g and %.6g s: apart by %.3g s, more than one sequence's %.3g s",
						fast.ProjectedSeconds, slow.ProjectedSeconds, spread, bound)
				}
			}
			if c.slow == 2 && c.opts.Proportional {
				if r := float64(fast.Tokens) / float64(slow.Tokens); r < 1.6 || r > 2.5 {
					t.Errorf("tokens fast/slow = %.2f, want about 2", r)
				}
			}
		})
	}
}

func sum(xs []int) int64 {
	var s int64
	for _, x := range xs {
		s += int64(x)
	}
	return s
}

// randomCluster draws 2 to 4 kinds of 1 to 40 ranks (not always a multiple
// of anything), budgets 256 to 8192 and speeds 1 to 4× slower, and a batch
// that fits.
func randomCluster(rng *rand.Rand) ([]int, sched.Inputs) {
	in := sched.Inputs{PP: 1 << rng.IntN(3), VPP: 1 + rng.IntN(2), EP: 1}
	n := 2 + rng.IntN(3)
	kinds := make([]sched.DeviceKind, n)
	for i := range kinds {
		kinds[i] = device(string(rune('a'+i)), 1+rng.IntN(40), 256<<rng.IntN(6), 1+3*rng.Float64())
	}
	cluster(&in, kinds...)
	widest := 0
	for _, k := range kinds {
		widest = max(widest, pow2Floor(k.Ranks)*k.BudgetTokens)
	}
	context := max(1, widest>>rng.IntN(4))
	if rng.IntN(2) == 0 {
		in.ContextTokens = context
	}
	lengths := make([]int, 1+rng.IntN(300))
	for i := range lengths {
		lengths[i] = max(1, int(float64(context)/float64(uint64(1)<<rng.IntN(10))*rng.Float64()))
	}
	return lengths, in
}

// TestRandomClustersKeepTheRules: on random clusters, every plan validates
// (each rank within its own kind's budget), each group lies in one kind's
// range at that kind's degree from a multiple of it past the kind's first
// rank, every rank of a kind runs its bins in order, and the kinds end
// within one sequence's projected time of each other when every kind holds
// every sequence.
func TestRandomClustersKeepTheRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p, _ := New(DefaultOptions())
	planned, pools := 0, 0
	for i := range 2000 {
		lengths, in := randomCluster(rng)
		pl, err := p.Plan(lengths, in)
		if errors.Is(err, sched.ErrCannotPlan) {
			continue
		}
		if err != nil {
			if errors.Is(err, sched.ErrInvalidInput) {
				continue // a sequence that fits no kind's groups
			}
			t.Fatalf("case %d: %v", i, err)
		}
		planned++
		if err := sched.Validate(pl, lengths, in, sched.Promises{WithinBudget: true}); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if pl.PartialMicrobatches {
			t.Fatalf("case %d: partial microbatches", i)
		}
		d := pl.Diagnostics.(*Diagnostics)
		if d.Layout == LayoutPool {
			pools++
			for m, mb := range pl.Microbatches {
				for _, g := range mb.Groups {
					if g.Size != d.Kinds[0].Degree || g.FirstRank%g.Size != 0 {
						t.Fatalf("case %d microbatch %d: group %d+%d not an aligned block of the pool's degree %d", i, m, g.FirstRank, g.Size, d.Kinds[0].Degree)
					}
				}
			}
			if d.PerKindRefused == "" && !(d.PoolSeconds < d.PerKindSeconds) {
				t.Fatalf("case %d: pool plan chosen at %.4g s over the per-kind plan's %.4g s", i, d.PoolSeconds, d.PerKindSeconds)
			}
			continue
		}
		if d.PoolRefused == "" && d.PoolSeconds < d.PerKindSeconds {
			t.Fatalf("case %d: per-kind plan chosen at %.4g s over the pool plan's %.4g s", i, d.PerKindSeconds, d.PoolSeconds)
		}
		for m, mb := range pl.Microbatches {
			for _, g := range mb.Groups {
				ki := in.Cluster.KindOf(g.FirstRank)
				k := d.Kinds[ki]
				if g.Size != k.Degree || in.Cluster.KindOf(g.LastRank()) != ki || (g.FirstRank-k.FirstRank)%k.Degree != 0 {
					t.Fatalf("case %d microbatch %d: group %d+%d not a block of kind %s (first %d, degree %d)", i, m, g.FirstRank, g.Size, k.Name, k.FirstRank, k.Degree)
				}
				var tokens int64
				for _, id := range g.Seqs {
					tokens += int64(lengths[id])
				}
				if tokens > int64(k.Degree)*int64(k.BudgetTokens) {
					t.Fatalf("case %d: group of %d tokens over d·B = %d·%d", i, tokens, k.Degree, k.BudgetTokens)
				}
			}
		}
		holdsAll := true
		for _, k := range d.Kinds {
			holdsAll = holdsAll && int64(slicesMax(lengths)) <= int64(k.Degree)*int64(k.BudgetTokens)
		}
		if holdsAll {
			if spread, bound := finishSpread(d), finishBound(lengths, in, d); spread > bound*(1+1e-9) {
				t.Fatalf("case %d: projected finishes apart by %.3g s, more than one sequence's %.3g s", i, spread, bound)
			}
		}
	}
	if planned < 1000 || pools == 0 || pools == planned {
		t.Errorf("planned %d of 2000 random clusters, %d over the pool: want at least 1000, and both plans", planned, pools)
	}
}

func slicesMax(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// TestDifferingMicrobatchCounts: a kind with fewer microbatches leaves its
// ranks out of the rest, which every rank still runs (not partial).
func TestDifferingMicrobatchCounts(t *testing.T) {
	in := sched.Inputs{PP: 1, VPP: 1, ContextTokens: 4096}
	cluster(&in, device("fast", 2, 4096, 1), device("slow", 2, 4096, 4))
	// Ten sequences of a full bin: fast takes 8 (4 microbatches), slow 2 (1).
	pl, d := plan(t, perKind, repeat(4096, 10), in)
	if d.Kinds[0].Microbatches != 4 || d.Kinds[1].Microbatches != 1 || len(pl.Microbatches) != 4 || pl.PartialMicrobatches {
		t.Fatalf("microbatches %d (fast %d, slow %d), partial %v; want 4 (4, 1), not partial",
			len(pl.Microbatches), d.Kinds[0].Microbatches, d.Kinds[1].Microbatches, pl.PartialMicrobatches)
	}
	for m, mb := range pl.Microbatches {
		want := 2
		if m == 0 {
			want = 4
		}
		if len(mb.Groups) != want {
			t.Errorf("microbatch %d: %d groups, want %d", m, len(mb.Groups), want)
		}
	}
}

// TestOneKindIsStatic: without a cluster, or with a cluster of one kind,
// hetero-dp's plans (microbatches, work counts) and refusals are static
// CP's, on random batches.
func TestOneKindIsStatic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	st, _ := static.New(static.DefaultOptions())
	p, _ := New(DefaultOptions())
	same := 0
	for i := range 3000 {
		g := 1 << rng.IntN(7)
		b := 64 << rng.IntN(7)
		in := sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1 << rng.IntN(4), VPP: 1 + rng.IntN(2)}
		maxLen := b << rng.IntN(8)
		if rng.IntN(2) == 0 {
			in.ContextTokens = maxLen
		}
		if rng.IntN(4) == 0 {
			in.MaxDegree = 1 << rng.IntN(7)
		}
		lengths := make([]int, 1+rng.IntN(300))
		for j := range lengths {
			lengths[j] = max(1, int(float64(maxLen)/float64(uint64(1)<<rng.IntN(12))*rng.Float64()))
		}
		if rng.IntN(3) == 0 { // longer than the context
			lengths[0] = maxLen + 1
		}
		for _, withCluster := range []bool{false, true} {
			in := in
			if withCluster {
				cluster(&in, device("only", g, b, 1))
			}
			want, wantErr := st.Plan(lengths, in)
			got, err := p.Plan(lengths, in)
			if (wantErr == nil) != (err == nil) {
				t.Fatalf("case %d (cluster %v): static %v, hetero-dp %v", i, withCluster, wantErr, err)
			}
			if err != nil {
				for _, sentinel := range []error{sched.ErrCannotPlan, sched.ErrInvalidInput, static.ErrNotEnoughToPad} {
					if errors.Is(err, sentinel) != errors.Is(wantErr, sentinel) {
						t.Fatalf("case %d: static %v, hetero-dp %v: not the same refusal", i, wantErr, err)
					}
				}
				var a, b *sched.ErrSequenceTooLong
				if errors.As(err, &a) != errors.As(wantErr, &b) || a != nil && (a.Seq != b.Seq || a.MaxTokens != b.MaxTokens) {
					t.Fatalf("case %d: static %v, hetero-dp %v: not the same sequence", i, wantErr, err)
				}
				continue
			}
			if !reflect.DeepEqual(got.Microbatches, want.Microbatches) || got.WorkUnits != want.WorkUnits ||
				got.StallWork != want.StallWork || got.PoolRanks != want.PoolRanks || got.PartialMicrobatches != want.PartialMicrobatches {
				t.Fatalf("case %d (cluster %v): plans differ\nstatic    %+v\nhetero-dp %+v", i, withCluster, want, got)
			}
			same++
		}
	}
	if same < 2000 {
		t.Errorf("only %d of 6000 cases planned", same)
	}
}

// TestDeterministic: the same batch gives the same plan.
func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p, _ := New(DefaultOptions())
	for range 50 {
		lengths, in := randomCluster(rng)
		a, errA := p.Plan(lengths, in)
		b, errB := p.Plan(lengths, in)
		if (errA == nil) != (errB == nil) || errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatal("two plans of one batch differ")
		}
	}
}

// TestStallWork: with several kinds, the sort, one visit per sequence and
// per kind scanned, then static's packing visits.
func TestStallWork(t *testing.T) {
	in := sched.Inputs{PP: 1, VPP: 1, ContextTokens: 4096}
	cluster(&in, device("a", 2, 4096, 1), device("b", 2, 4096, 2), device("c", 4, 4096, 3))
	lengths := repeat(1000, 40)
	pl, _ := plan(t, perKind, lengths, in)
	w := pl.StallWork
	// The sort, one scan of the 3 kinds per sequence, and at least one
	// visit per sequence for the split and one for the packing.
	if w.SortSteps != 40*6 || w.PoolVisits != 40*3 || w.SequenceVisits < 80 {
		t.Errorf("stall work %+v", w)
	}
	// WorkUnits adds the timing's bin visits (every bin once).
	if bins := int64(len(pl.Microbatches)); pl.WorkUnits < w.SortSteps+w.PoolVisits+w.SequenceVisits+bins {
		t.Errorf("work units %d below the stall work's %+v and the bins", pl.WorkUnits, w)
	}
}

// TestPoolPlan: when the context fits no kind's ranks, the plan is static
// CP over the pool, static's own plan; when one kind holds it, the faster
// of the two plans in the model runs.
func TestPoolPlan(t *testing.T) {
	st, _ := static.New(static.DefaultOptions())
	in := sched.Inputs{PP: 1, VPP: 1, ContextTokens: 1 << 17}
	cluster(&in, device("a", 16, 4096, 1), device("b", 16, 4096, 2))
	lengths := append(repeat(1<<17, 4), repeat(3000, 50)...)
	pl, d := plan(t, DefaultOptions(), lengths, in)
	want, err := st.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	if d.Layout != LayoutPool || d.PerKindRefused == "" || !reflect.DeepEqual(pl.Microbatches, want.Microbatches) || pl.StallWork != want.StallWork {
		t.Errorf("context past every kind: plan %q (per kind refused: %q), want static's over the pool", d.Layout, d.PerKindRefused)
	}
	if _, err := mustNew(t, perKind).Plan(lengths, in); !errors.Is(err, sched.ErrInvalidInput) {
		t.Errorf("forced per-kind plan of a context past every kind: %v, want a refusal", err)
	}
	for _, c := range []struct {
		slow float64
		want string
	}{
		// Kind a alone holds 64K (16 ranks of 4096); b's budget of 2048 needs
		// 32. Equal speeds: the pool's one replica of 32 ranks runs twice as
		// fast as a alone. b four times slower: a alone is faster.
		{slow: 1, want: LayoutPool},
		{slow: 4, want: LayoutPerKind},
	} {
		in := sched.Inputs{PP: 1, VPP: 1, ContextTokens: 1 << 16}
		cluster(&in, device("a", 16, 4096, 1), device("b", 16, 2048, c.slow))
		_, d := plan(t, DefaultOptions(), repeat(1<<16, 8), in)
		if d.Layout != c.want || d.PerKindSeconds == 0 || d.PoolSeconds == 0 {
			t.Errorf("b %g× slower: plan %q (per kind %.4g s, over the pool %.4g s), want %q", c.slow, d.Layout, d.PerKindSeconds, d.PoolSeconds, c.want)
		}
	}
}

func mustNew(t *testing.T, o Options) *Policy {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOptions: layout takes "", "per-kind" or "pool".
func TestOptions(t *testing.T) {
	for _, l := range []string{"", LayoutPerKind, LayoutPool} {
		if _, err := New(Options{Layout: l}); err != nil {
			t.Errorf("layout %q: %v", l, err)
		}
	}
	if _, err := New(Options{Layout: "kinds"}); err == nil || !strings.Contains(err.Error(), "layout") {
		t.Errorf("layout kinds: %v, want an error naming the key", err)
	}
}
