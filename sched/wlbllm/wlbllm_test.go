package wlbllm

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// longTailBatch draws lengths log-uniformly up to maxLen until they hold
// tokens (the last one cut to fit).
func longTailBatch(rng *rand.Rand, tokens, maxLen int) []int {
	var out []int
	for tokens > 0 {
		s := int(float64(maxLen)/float64(uint64(1)<<rng.IntN(10))*rng.Float64()) + 1
		s = min(s, maxLen, tokens)
		out = append(out, s)
		tokens -= s
	}
	return out
}

// TestOptions: the defaults build; each bad value is refused naming its key.
func TestOptions(t *testing.T) {
	if _, err := New(DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Thresholds = []float64{0} }, "thresholds[0] = 0"},
		{func(o *Options) { o.Thresholds = []float64{0.5, 1.5} }, "thresholds[1] = 1.5"},
		{func(o *Options) { o.Thresholds = []float64{0.5, 0.5} }, "thresholds[1] = 0.5: must be larger"},
		{func(o *Options) { o.Thresholds = make([]float64, MaxQueues+1) }, "thresholds: 65 queues"},
		{func(o *Options) { o.Microbatches = -1 }, "microbatches = -1"},
		{func(o *Options) { o.Headroom = -0.5 }, "headroom = -0.5"},
		{func(o *Options) { o.SmaxTokens = -1 }, "smax_tokens = -1"},
		{func(o *Options) { o.CPDegree = 3 }, "cp_degree = 3"},
		{func(o *Options) { o.LinearTokens = MaxLinearTokens + 1 }, "linear_tokens = "},
	} {
		o := DefaultOptions()
		c.mod(&o)
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", o, err, c.want)
		}
	}
	// New copies the thresholds: changing the caller's slice changes nothing.
	o := DefaultOptions()
	p := mustNew(t, o)
	o.Thresholds[0] = 0.9
	if p.opts.Thresholds[0] != 0.25 {
		t.Error("New kept the caller's thresholds slice")
	}
}

// TestInputErrors: bad inputs wrap sched.ErrInvalidInput and name the limit.
func TestInputErrors(t *testing.T) {
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1, ContextTokens: 4096}
	for _, c := range []struct {
		o       Options
		in      sched.Inputs
		lengths []int
		want    string
	}{
		{Options{SmaxTokens: 5000}, in, []int{100}, "smax_tokens = 5000 exceeds cp·B = 4·1024"},
		{Options{SmaxTokens: 2000}, in, []int{2001}, "a WLB-LLM microbatch"},
		{Options{CPDegree: 16}, in, []int{100}, "CP degree 16"},
		{Options{}, sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1, ContextTokens: 4096, MaxDegree: 2}, []int{100}, "engine limit 2"},
		{Options{}, in, nil, "empty batch"},
	} {
		_, err := mustNew(t, c.o).Plan(c.lengths, c.in)
		if !errors.Is(err, sched.ErrInvalidInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: %v, want ErrInvalidInput with %q", c.o, c.lengths, err, c.want)
		}
	}
}

// TestDerivedSetup: the CP degree as static CP's, N_mb = dp·max(pp,
// ⌈1.25·T/(dp·Smax)⌉), raised to a legal count with vpp > 1, and the forced
// N_mb rounded up to whole EP units.
func TestDerivedSetup(t *testing.T) {
	for _, c := range []struct {
		in              sched.Inputs
		o               Options
		tokens          int
		cp, target, per int
	}{
		// testbed-256k: G 128, B 8K, 256K -> cp 32, dp 4, 4M tokens: m = ⌈1.25·4⌉ = 5.
		{sched.Inputs{PoolRanks: 128, BudgetTokens: 8192, PP: 4, VPP: 1, ContextTokens: 262144}, DefaultOptions(), 4 << 20, 32, 20, 5},
		// A small batch: m = pp.
		{sched.Inputs{PoolRanks: 128, BudgetTokens: 8192, PP: 4, VPP: 1, ContextTokens: 262144}, DefaultOptions(), 1 << 20, 32, 16, 4},
		// vpp 2, pp 4, N 4: m = 5 is illegal (5 mod 4 = 1 < 4), raised to 8.
		{sched.Inputs{PoolRanks: 128, BudgetTokens: 8192, PP: 4, VPP: 2, ContextTokens: 262144}, DefaultOptions(), 4 << 20, 32, 32, 8},
		// Forced N_mb 5 with ep 64 over cp 32: units of 2 replicas, rounded to 6.
		{sched.Inputs{PoolRanks: 128, BudgetTokens: 8192, PP: 4, VPP: 1, ContextTokens: 262144, EP: 64}, Options{Microbatches: 5}, 4 << 20, 32, 6, 0},
		// No context: the longest document sets cp.
		{sched.Inputs{PoolRanks: 16, BudgetTokens: 1000, PP: 1, VPP: 1}, DefaultOptions(), 3000, 4, 4, 1},
	} {
		p := mustNew(t, c.o)
		lengths := []int{c.tokens}
		if c.in.ContextTokens > 0 {
			lengths = repeat(c.tokens/1000, 1000)
		}
		su, err := p.derive(lengths, int64(c.tokens), 0, c.in)
		if err != nil {
			t.Fatal(err)
		}
		if su.cp != c.cp || su.target != c.target || su.perReplica != c.per {
			t.Errorf("%+v: cp %d N_mb %d per replica %d, want %d %d %d", c.in, su.cp, su.target, su.perReplica, c.cp, c.target, c.per)
		}
	}
}

// run plans batches in order with a fresh policy and returns the plans.
func run(t testing.TB, o Options, in sched.Inputs, batches [][]int) []*sched.Plan {
	p := mustNew(t, o)
	plans := make([]*sched.Plan, len(batches))
	for i, b := range batches {
		plans[i], _ = mustPlan(t, p, b, in)
	}
	return plans
}

func batchesFor(seed uint64, n, tokens, maxLen int) [][]int {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e37))
	out := make([][]int, n)
	for i := range out {
		out[i] = longTailBatch(rng, tokens, maxLen)
	}
	return out
}

// TestDeterministic: the same sequence of batches gives the same sequence of
// plans (byte for byte as JSON), on reruns and whatever GOMAXPROCS.
func TestDeterministic(t *testing.T) {
	in := sched.Inputs{PoolRanks: 64, BudgetTokens: 1024, PP: 4, VPP: 2, ContextTokens: 16384, EP: 8}
	batches := batchesFor(3, 60, 64*1024*4, 16384)
	encode := func(plans []*sched.Plan) []byte {
		b, err := json.Marshal(plans)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var want []byte
	for _, procs := range []int{1, 4, 1, 4} {
		runtime.GOMAXPROCS(procs)
		got := encode(run(t, DefaultOptions(), in, batches))
		if want == nil {
			want = got
			continue
		}
		if !slices.Equal(got, want) {
			t.Fatalf("GOMAXPROCS %d: plans differ from the first run", procs)
		}
	}
}

// TestConservation: over a long run every document of every batch is trained
// exactly once, with its own length, or still waits at the end; what waits
// stays bounded; every plan validates, with the EP groups' ranks running the
// same counts and every count legal with vpp > 1.
func TestConservation(t *testing.T) {
	for _, c := range []struct {
		name string
		in   sched.Inputs
		o    Options
	}{
		{"default", sched.Inputs{PoolRanks: 32, BudgetTokens: 1024, PP: 4, VPP: 1, ContextTokens: 16384}, DefaultOptions()},
		{"vpp-ep", sched.Inputs{PoolRanks: 64, BudgetTokens: 1024, PP: 2, VPP: 2, ContextTokens: 8192, EP: 16}, DefaultOptions()},
		{"three-queues", sched.Inputs{PoolRanks: 16, BudgetTokens: 2048, PP: 2, VPP: 1, ContextTokens: 16384},
			Options{Thresholds: []float64{0.125, 0.25, 0.5}, Headroom: 0.1, LinearTokens: 8192}},
		{"tight", sched.Inputs{PoolRanks: 16, BudgetTokens: 512, PP: 1, VPP: 1, ContextTokens: 4096}, Options{Thresholds: []float64{0.5}, LinearTokens: 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			p := mustNew(t, c.o)
			tokens := c.in.PoolRanks * c.in.BudgetTokens * c.in.PP
			var batches [][]int
			trained := map[Origin]int{}
			maxPending := 0
			for it := range 400 {
				b := longTailBatch(rng, tokens, c.in.ContextTokens)
				batches = append(batches, b)
				plan, d := mustPlan(t, p, b, c.in)
				for id, o := range d.Origins {
					trained[o]++
					if trained[o] > 1 || batches[o.Iteration][o.Seq] != plan.Lengths[id] {
						t.Fatalf("iteration %d: %v trained %d times, length %d (batch %d)", it, o, trained[o], plan.Lengths[id], batches[o.Iteration][o.Seq])
					}
				}
				if c.in.VPP > 1 {
					for r := range c.in.PoolRanks {
						if err := sched.CheckMicrobatchCount(c.in.PP, c.in.VPP, len(plan.RankMicrobatches(r)), 0); len(plan.RankMicrobatches(r)) > 0 && err != nil {
							t.Fatalf("iteration %d rank %d: %v", it, r, err)
						}
					}
				}
				maxPending = max(maxPending, d.PendingSequences)
			}
			pending := p.Pending()
			for _, o := range pending {
				if trained[o] != 0 {
					t.Fatalf("%v both trained and pending", o)
				}
				trained[o]++
			}
			for it, b := range batches {
				for seq := range b {
					if trained[Origin{it, seq}] != 1 {
						t.Fatalf("document %d of batch %d: trained or pending %d times", seq, it, trained[Origin{it, seq}])
					}
				}
			}
			// The queues release N_mb at a time: what waits is a few N_mb per queue.
			if bound := 4 * (len(c.o.Thresholds) + 1) * c.in.PoolRanks * c.in.PP; maxPending > bound {
				t.Errorf("up to %d documents waited (bound %d)", maxPending, bound)
			}
		})
	}
}

// TestEPUnitsRunEqualCounts: with ep spanning several replicas and too few
// documents for N_mb, the replicas of one EP group still run the same count
// (partial microbatches), and sched.Validate, given the EP size, agrees.
func TestEPUnitsRunEqualCounts(t *testing.T) {
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 1000, PP: 1, VPP: 1, ContextTokens: 2000, EP: 4} // cp 2, dp 8, u 2
	p := mustNew(t, Options{LinearTokens: 1000})
	plan, d := mustPlan(t, p, repeat(6, 500), in) // N_mb 8, 6 documents: 3 units of 2
	if d.EPCoupledReplicas != 2 || !slices.Equal(d.ReplicaMicrobatches, []int{1, 1, 1, 1, 1, 1, 0, 0}) || !plan.PartialMicrobatches {
		t.Fatalf("u %d counts %v partial %v", d.EPCoupledReplicas, d.ReplicaMicrobatches, plan.PartialMicrobatches)
	}
	// Seven documents: still 3 units of 2 (u must divide the count); two of
	// the documents share a microbatch.
	plan, d = mustPlan(t, mustNew(t, Options{LinearTokens: 1000}), repeat(7, 500), in)
	if !slices.Equal(d.ReplicaMicrobatches, []int{1, 1, 1, 1, 1, 1, 0, 0}) || len(plan.Lengths) != 7 {
		t.Fatalf("counts %v, trained %d of 7", d.ReplicaMicrobatches, len(plan.Lengths))
	}
	// One document cannot keep two coupled replicas in step.
	if _, err := mustNew(t, Options{LinearTokens: 1000}).Plan([]int{500}, in); !errors.Is(err, sched.ErrCannotPlan) {
		t.Errorf("one document over units of 2: %v, want ErrCannotPlan", err)
	}
}

// TestVPPCounts: with vpp > 1 every replica's count is legal; too few
// documents for even one unit's least legal count is ErrCannotPlan, and the
// queues release early before that.
func TestVPPCounts(t *testing.T) {
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 1000, PP: 2, VPP: 2, ContextTokens: 2000} // cp 2, dp 4, N 2
	// 5 documents: share 1 < N: two replicas run 2 each.
	plan, d := mustPlan(t, mustNew(t, Options{LinearTokens: 0}), repeat(5, 300), in)
	if !slices.Equal(d.ReplicaMicrobatches, []int{2, 2, 0, 0}) || len(plan.Lengths) != 5 {
		t.Fatalf("counts %v, trained %d", d.ReplicaMicrobatches, len(plan.Lengths))
	}
	// N = 4 (forced group size): 3 documents cannot give one replica 4.
	in4 := in
	in4.MicrobatchGroupSize = 4
	if _, err := mustNew(t, Options{}).Plan(repeat(3, 300), in4); !errors.Is(err, sched.ErrCannotPlan) {
		t.Errorf("3 documents, N 4: %v, want ErrCannotPlan", err)
	}
	// A lone short document and a queued outlier: the queue releases early.
	p := mustNew(t, DefaultOptions())
	plan, d = mustPlan(t, p, []int{100, 1500}, in)
	if d.EarlyPopped != 1 || len(plan.Lengths) != 2 || len(p.Pending()) != 0 {
		t.Errorf("early popped %d, trained %v, pending %v", d.EarlyPopped, plan.Lengths, p.Pending())
	}
	if !slices.Equal(d.ReplicaMicrobatches, []int{2, 0, 0, 0}) {
		t.Errorf("counts %v, want one replica with N = 2", d.ReplicaMicrobatches)
	}
}

// TestNewInputsStartANewState: other Inputs start afresh and count the
// dropped documents; θ/c alone changes nothing.
func TestNewInputsStartANewState(t *testing.T) {
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1, ContextTokens: 4096, OverheadRatio: 1}
	p := mustNew(t, DefaultOptions())
	mustPlan(t, p, append(repeat(30, 100), 3000, 2000), in)
	if len(p.Pending()) != 2 {
		t.Fatalf("pending %v", p.Pending())
	}
	in.OverheadRatio = 7
	_, d := mustPlan(t, p, repeat(30, 100), in)
	if d.Iteration != 1 || d.DiscardedPending != 0 || len(p.Pending()) != 2 {
		t.Fatalf("θ/c change: iteration %d discarded %d pending %v", d.Iteration, d.DiscardedPending, p.Pending())
	}
	in.PP = 2
	_, d = mustPlan(t, p, repeat(30, 100), in)
	if d.Iteration != 0 || d.DiscardedPending != 2 || len(p.Pending()) != 0 {
		t.Fatalf("pp change: iteration %d discarded %d pending %v", d.Iteration, d.DiscardedPending, p.Pending())
	}
}

// TestFailedPlanKeepsTheState: a refused batch leaves the queues and the
// carried documents as they were.
func TestFailedPlanKeepsTheState(t *testing.T) {
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 512, PP: 2, VPP: 1, ContextTokens: 4096}
	batches := batchesFor(9, 30, 16*512*2, 4096)
	want := run(t, DefaultOptions(), in, batches)
	p := mustNew(t, DefaultOptions())
	for i, b := range batches {
		if _, err := p.Plan([]int{5000}, in); err == nil { // longer than Smax = 4096
			t.Fatal("a 5000-token document planned")
		}
		got, _ := mustPlan(t, p, b, in)
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("batch %d: the failed plan before it changed the state", i)
		}
	}
}

// TestStallWork: the counted work of a small plan, by hand. No queues; 2
// microbatches; batch [300, 150, 600, 300, 300] (TestPaperMinLengthFallback):
// sequence visits = 5 classified + 5 sorted + 5 packed + 5 emitted; heap
// operations = 2·2 heapified + 2·5 placements.
func TestStallWork(t *testing.T) {
	p := mustNew(t, Options{Microbatches: 2})
	in := sched.Inputs{PoolRanks: 2, BudgetTokens: 1000, PP: 1, VPP: 1, ContextTokens: 1000}
	plan, d := mustPlan(t, p, []int{300, 150, 600, 300, 300}, in)
	if plan.StallWork != (sched.StallWork{SequenceVisits: 20, HeapOps: 14}) || d.SequenceVisits != 20 || d.HeapOps != 14 {
		t.Errorf("stall work %+v", plan.StallWork)
	}
	if plan.WorkUnits != 20+14+d.ShardingSteps || d.ShardingSteps == 0 {
		t.Errorf("work units %d, sharding steps %d", plan.WorkUnits, d.ShardingSteps)
	}
}

// TestDiagnostics: the summary names the setup, the JSON carries origins as
// [iteration, seq] pairs, and the chosen options are reported.
func TestDiagnostics(t *testing.T) {
	in := sched.Inputs{PoolRanks: 128, BudgetTokens: 8192, PP: 4, VPP: 1, ContextTokens: 262144}
	plan, d := mustPlan(t, mustNew(t, DefaultOptions()), append(repeat(500, 8192), 100000), in)
	var names []string
	for _, kv := range d.Summary() {
		names = append(names, kv.Name)
	}
	for _, want := range []string{"CP degree × DP replicas", "Smax (tokens)", "queue thresholds L_i", "N_mb (target)", "trained", "sharding"} {
		if !slices.Contains(names, want) {
			t.Errorf("summary lacks %q: %v", want, names)
		}
	}
	raw, err := json.Marshal(plan.Diagnostics)
	if err != nil || !strings.Contains(string(raw), `"origins":[[0,`) {
		t.Errorf("JSON %.200s: %v", raw, err)
	}
	// 4,196,000 tokens: m = ⌈1.25·4196000/(4·262144)⌉ = 6 per replica.
	for key, want := range map[string]float64{"cp_degree": 32, "microbatches": 24, "smax_tokens": 262144} {
		if v, ok := d.ChosenOption(key); !ok || v != want {
			t.Errorf("ChosenOption(%s) = %v, %v; want %v", key, v, ok, want)
		}
	}
	if _, ok := d.ChosenOption("headroom"); ok {
		t.Error("ChosenOption(headroom) reported")
	}
}
