package wlbllm

// One test per behaviour the paper (WLB-LLM, OSDI 2025) states, in the order
// it states them: §4.1 variable-length packing by predicted workload, §4.2 the
// outlier delay queues, §4.3 Algorithm 1, §5 per-document sharding and its
// adaptive choice.

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// mustNew builds a policy or fails the test.
func mustNew(t testing.TB, o Options) *Policy {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustPlan plans and validates, or fails the test.
func mustPlan(t testing.TB, p *Policy, lengths []int, in sched.Inputs) (*sched.Plan, *Diagnostics) {
	t.Helper()
	plan, err := p.Plan(lengths, in)
	if err != nil {
		t.Fatalf("Plan(%v): %v", lengths, err)
	}
	if err := sched.Validate(plan, lengths, in, p.Promises()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return plan, plan.Diagnostics.(*Diagnostics)
}

// groupLengths returns each group's document lengths, in plan order.
func groupLengths(plan *sched.Plan) [][]int {
	var out [][]int
	for _, mb := range plan.Microbatches {
		for _, g := range mb.Groups {
			ls := make([]int, len(g.Seqs))
			for i, id := range g.Seqs {
				ls[i] = plan.Lengths[id]
			}
			out = append(out, ls)
		}
	}
	return out
}

func sum(ls []int) int {
	s := 0
	for _, l := range ls {
		s += l
	}
	return s
}

func repeat(n, s int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// §4.1, Eq. 2: "allows each micro-batch to have a different sequence length":
// the microbatch of short documents takes more tokens than the one with a long
// document, because their workloads (d² + α·d), not their token counts, are
// balanced; no microbatch passes Smax. Fixed-length packing would give both 800.
func TestPaperVariableLengthMicrobatches(t *testing.T) {
	p := mustNew(t, Options{Microbatches: 2, LinearTokens: 0})
	in := sched.Inputs{PoolRanks: 2, BudgetTokens: 1000, PP: 1, VPP: 1, ContextTokens: 1000}
	plan, d := mustPlan(t, p, append([]int{700}, repeat(9, 100)...), in)
	got := groupLengths(plan)
	if len(got) != 2 || sum(got[0]) != 700 || sum(got[1]) != 900 {
		t.Fatalf("microbatches %v, want [700] and nine 100s (700 and 900 tokens)", got)
	}
	if d.SmaxTokens != 1000 || d.MaxMBTokens != 900 || d.MinMBTokens != 700 {
		t.Errorf("Smax %d, MB tokens %d..%d", d.SmaxTokens, d.MinMBTokens, d.MaxMBTokens)
	}
}

// §4.1: token counts vary from microbatch to microbatch and are bounded by
// Smax (the memory bound, cp·B here), on random long-tailed batches over many
// iterations.
func TestPaperTokensBoundedBySmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 1024, PP: 2, VPP: 1, ContextTokens: 8192}
	p := mustNew(t, DefaultOptions())
	varied := false
	for range 200 {
		plan, d := mustPlan(t, p, longTailBatch(rng, 16*1024*2, 8192), in)
		if d.SmaxTokens != 8192 {
			t.Fatalf("Smax = %d, want cp·B = 8·1024", d.SmaxTokens)
		}
		for _, ls := range groupLengths(plan) {
			if int64(sum(ls)) > d.SmaxTokens {
				t.Fatalf("a microbatch holds %d tokens > Smax %d", sum(ls), d.SmaxTokens)
			}
		}
		varied = varied || d.MaxMBTokens > d.MinMBTokens
	}
	if !varied {
		t.Error("every microbatch held the same token count in 200 iterations")
	}
}

// §4.2: "documents with lengths greater than L_1 are considered as outliers
// and are added to the corresponding waiting queue i, where L_i <= d <
// L_{i+1}"; they are not trained while their queue holds fewer than N
// documents.
func TestPaperOutliersWaitInTheirQueue(t *testing.T) {
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1, ContextTokens: 2048} // cp 2, dp 4
	p := mustNew(t, Options{Thresholds: []float64{0.25, 0.5}, Microbatches: 4, Headroom: 0.25, LinearTokens: 1024})
	// L_1 = 512, L_2 = 1024: 511 is not an outlier, 512 and 1023 join queue 0,
	// 1024 and 2048 queue 1.
	batch := append(repeat(40, 100), 511, 512, 1023, 1024, 2048)
	plan, d := mustPlan(t, p, batch, in)
	if !slices.Equal(d.ThresholdTokens, []int{512, 1024}) || !slices.Equal(d.Queued, []int{2, 2}) ||
		!slices.Equal(d.QueueLengths, []int{2, 2}) || !slices.Equal(d.Popped, []int{0, 0}) {
		t.Fatalf("thresholds %v queued %v queue lengths %v popped %v", d.ThresholdTokens, d.Queued, d.QueueLengths, d.Popped)
	}
	if slices.Max(plan.Lengths) != 511 || len(plan.Lengths) != 41 {
		t.Fatalf("trained %d documents up to %d, want the 40 short ones and 511", len(plan.Lengths), slices.Max(plan.Lengths))
	}
	want := []Origin{{0, 41}, {0, 42}, {0, 43}, {0, 44}}
	if got := p.Pending(); !slices.Equal(got, want) {
		t.Errorf("pending %v, want %v (queue 0 then queue 1, oldest first)", got, want)
	}
}

// §4.2: "Once the queue size reaches the number of micro-batches in a global
// batch, the outlier documents are popped from the queue and added to each
// micro-batch": N at a time, oldest first (FIFO), one per microbatch; the rest
// keeps waiting.
func TestPaperQueuePopsNAtATimeOnePerMicrobatch(t *testing.T) {
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 1024, PP: 1, VPP: 1, ContextTokens: 2048}
	p := mustNew(t, Options{Thresholds: []float64{0.25}, Microbatches: 4, LinearTokens: 1024})
	// Iterations 0-1 bring 2 outliers each (queue: 2, then 4 -> pops 4);
	// iteration 2 brings 6 (queue 6 -> pops 4, keeps 2).
	outliers := [][]int{{600, 601}, {602, 603}, {604, 605, 606, 607, 608, 609}}
	for it, o := range outliers {
		batch := append(repeat(40, 100), o...)
		plan, d := mustPlan(t, p, batch, in)
		var popped []Origin
		for id, l := range plan.Lengths {
			if l >= 512 {
				popped = append(popped, d.Origins[id])
			}
		}
		slices.SortFunc(popped, func(a, b Origin) int { return (a.Iteration-b.Iteration)*1000 + a.Seq - b.Seq })
		switch it {
		case 0:
			if d.Popped[0] != 0 || len(popped) != 0 || d.QueueLengths[0] != 2 {
				t.Fatalf("iteration 0: popped %v, trained outliers %v, queue %d", d.Popped, popped, d.QueueLengths[0])
			}
		case 1:
			want := []Origin{{0, 40}, {0, 41}, {1, 40}, {1, 41}}
			if d.Popped[0] != 4 || !slices.Equal(popped, want) || d.QueueLengths[0] != 0 {
				t.Fatalf("iteration 1: popped %v, trained outliers %v (want %v), queue %d", d.Popped, popped, want, d.QueueLengths[0])
			}
		case 2:
			want := []Origin{{2, 40}, {2, 41}, {2, 42}, {2, 43}}
			if d.Popped[0] != 4 || !slices.Equal(popped, want) || d.QueueLengths[0] != 2 {
				t.Fatalf("iteration 2: popped %v, trained outliers %v (want the 4 oldest %v), queue %d", d.Popped, popped, want, d.QueueLengths[0])
			}
		}
		if d.Popped[0] > 0 {
			for gi, ls := range groupLengths(plan) {
				n := 0
				for _, l := range ls {
					if l >= 512 {
						n++
					}
				}
				if n != 1 {
					t.Fatalf("iteration %d: microbatch %d holds %d outliers, want one each: %v", it, gi, n, groupLengths(plan))
				}
			}
		}
	}
}

// Alg. 1 lines 23-30: a document goes to the microbatch of least workload if
// its token count stays within Smax, "else" to the microbatch of least length
// if it fits there.
func TestPaperMinLengthFallback(t *testing.T) {
	p := mustNew(t, Options{Microbatches: 2, LinearTokens: 0})
	in := sched.Inputs{PoolRanks: 2, BudgetTokens: 1000, PP: 1, VPP: 1, ContextTokens: 1000}
	// 600 opens MB 0, 300 MB 1; the next two 300s go to MB 1 (least workload,
	// 90000 and 180000 < 360000), filling it to 900; 150 would still go to MB 1
	// by workload (270000) but 900+150 > 1000, so it goes to MB 0, the shorter.
	plan, _ := mustPlan(t, p, []int{300, 150, 600, 300, 300}, in)
	got := groupLengths(plan)
	if !slices.Equal(got[0], []int{600, 150}) || !slices.Equal(got[1], []int{300, 300, 300}) {
		t.Fatalf("microbatches %v, want [600 150] [300 300 300]", got)
	}
}

// Alg. 1 line 29: "Documents that cannot fit within these constraints are
// saved for the next iteration", where line 17 packs them first.
func TestPaperDocumentThatFitsNowhereIsCarried(t *testing.T) {
	p := mustNew(t, Options{Microbatches: 2, LinearTokens: 0})
	in := sched.Inputs{PoolRanks: 2, BudgetTokens: 1000, PP: 1, VPP: 1, ContextTokens: 1000}
	plan, d := mustPlan(t, p, []int{1000, 500, 1000}, in)
	if d.CarriedOut != 1 || d.CarriedOutTokens != 500 || !slices.Equal(p.Pending(), []Origin{{0, 1}}) || len(plan.Lengths) != 2 {
		t.Fatalf("carried %d (%d tokens), pending %v, trained %v", d.CarriedOut, d.CarriedOutTokens, p.Pending(), plan.Lengths)
	}
	plan, d = mustPlan(t, p, []int{300, 600}, in)
	if d.CarriedIn != 1 || d.CarriedOut != 0 || len(p.Pending()) != 0 {
		t.Fatalf("carried in %d out %d, pending %v", d.CarriedIn, d.CarriedOut, p.Pending())
	}
	// The carried 500 comes first (MB 0), then 600 (MB 1), then 300 (MB 1 has
	// 600², MB 0 500²: MB 0).
	if got := groupLengths(plan); !slices.Equal(got[0], []int{500, 300}) || !slices.Equal(got[1], []int{600}) {
		t.Fatalf("microbatches %v, want [500 300] [600]", got)
	}
	if d.Origins[0] != (Origin{0, 1}) || d.TokenDelayIterations != 500.0/1400 {
		t.Errorf("origins %v, delay %v", d.Origins, d.TokenDelayIterations)
	}
}

// Alg. 1 lines 16-27: the documents go, longest first after the carried ones,
// each to the microbatch of least predicted workload (W_a + W_l, Eq. 2) when it
// has room: the heaps make exactly the placements of a linear scan.
func TestPaperLeastWorkloadPlacement(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		n := 1 + rng.IntN(40)
		docs := make([]int, n+rng.IntN(300))
		smax := int64(1 + rng.IntN(1<<16))
		for i := range docs {
			docs[i] = 1 + rng.IntN(int(smax))
		}
		alpha := int64(rng.IntN(1 << 16))
		got := pack(docs, n, smax, alpha)
		want := scanPack(docs, n, smax, alpha)
		if !slices.EqualFunc(got.mbs, want.mbs, slices.Equal) || !slices.Equal(got.carried, want.carried) {
			t.Fatalf("n %d smax %d α %d docs %v:\nheaps %v carried %v\nscan  %v carried %v", n, smax, alpha, docs, got.mbs, got.carried, want.mbs, want.carried)
		}
	}
	// α moves placements: with a large linear term a long microbatch of short
	// documents outweighs one long document.
	in := sched.Inputs{PoolRanks: 2, BudgetTokens: 4000, PP: 1, VPP: 1, ContextTokens: 4000}
	for _, c := range []struct {
		alpha int
		want  [][]int
	}{
		{0, [][]int{{1000}, {400, 400, 400, 400, 100}}},      // attention only: 1000² outweighs 1700 tokens of 400s
		{100000, [][]int{{1000, 400}, {400, 400, 400, 100}}}, // linear-heavy: tokens balance (1400, 1300)
	} {
		plan, _ := mustPlan(t, mustNew(t, Options{Microbatches: 2, LinearTokens: c.alpha}), []int{400, 400, 1000, 400, 100, 400}, in)
		if got := groupLengths(plan); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("α = %d: microbatches %v, want %v", c.alpha, got, c.want)
		}
	}
}

// scanPack is Algorithm 1's packing loop by linear scans (the reference the
// heaps must equal).
func scanPack(docs []int, n int, smax, alpha int64) packed {
	p := packed{mbs: make([][]int, n), tokens: make([]int64, n), work: make([]int64, n)}
	argmin := func(key []int64) int {
		j := 0
		for i := range key {
			if key[i] < key[j] {
				j = i
			}
		}
		return j
	}
	for i, s := range docs {
		d := int64(s)
		j := argmin(p.work)
		if p.tokens[j]+d > smax {
			if j = argmin(p.tokens); p.tokens[j]+d > smax {
				p.carried = append(p.carried, i)
				continue
			}
		}
		p.mbs[j] = append(p.mbs[j], i)
		p.tokens[j] += d
		p.work[j] += d*d + alpha*d
	}
	return p
}

// Alg. 1 lines 16-17: within every microbatch the carried documents come
// first, then the others longest first (the order they were placed in).
func TestPaperCarriedFirstThenLongestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 512, PP: 2, VPP: 1, ContextTokens: 4096}
	p := mustNew(t, Options{Thresholds: []float64{0.25}, Microbatches: 4, Headroom: 0, LinearTokens: 4096})
	carried := map[Origin]bool{} // what the last plan carried out
	sawCarried := false
	for it := range 300 {
		plan, d := mustPlan(t, p, longTailBatch(rng, 8*512*2, 4096), in)
		for _, mb := range plan.Microbatches {
			for _, g := range mb.Groups {
				inCarried, prev := true, math.MaxInt
				for _, id := range g.Seqs {
					if carried[d.Origins[id]] {
						sawCarried = true
						if !inCarried {
							t.Fatalf("iteration %d: a carried document after new ones in %v", it, g.Seqs)
						}
						continue
					}
					inCarried = false
					if plan.Lengths[id] > prev {
						t.Fatalf("iteration %d: group %v not longest first after the carried documents: %v", it, g.Seqs, plan.Lengths)
					}
					prev = plan.Lengths[id]
				}
			}
		}
		clear(carried)
		pending := p.Pending()
		queued := 0
		for _, n := range d.QueueLengths {
			queued += n
		}
		for _, o := range pending[queued:] {
			carried[o] = true
		}
	}
	if !sawCarried {
		t.Error("no document was carried in 300 tight iterations")
	}
}

// §5.1: per-document sharding gives every CP rank the same attention work for
// a microbatch of several documents of unequal length, where per-sequence
// sharding leaves the rank holding the tail of the long document slowest.
// §5.2-5.3: for many short documents the tile waste of per-document chunks
// makes per-sequence faster; the choice takes the faster.
func TestPaperAdaptiveSharding(t *testing.T) {
	s := newSharder(4)
	// One document divisible by 2·cp: both layouts are the same split (a tie,
	// kept per-sequence).
	if seq, doc, _ := s.predict([]int64{65536}); seq != doc {
		t.Errorf("one document: per-sequence %g, per-document %g, want equal", seq, doc)
	}
	// A long document and two shorter ones: per-document balances the ranks.
	seq, doc, _ := s.predict([]int64{16384, 4096, 4096})
	if !(doc < seq) {
		t.Errorf("16K+4K+4K at cp 4: per-document %g should beat per-sequence %g", doc, seq)
	}
	// Many short documents: chunks of 100/8 tokens waste most of each tile.
	short := make([]int64, 64)
	for i := range short {
		short[i] = 100
	}
	if seq, doc, _ := s.predict(short); !(seq < doc) {
		t.Errorf("64 documents of 100 tokens at cp 4: per-sequence %g should beat per-document %g", seq, doc)
	}
	// Through a plan: both choices recorded, one per microbatch.
	in := sched.Inputs{PoolRanks: 8, BudgetTokens: 16384, PP: 1, VPP: 1, ContextTokens: 65536}
	p := mustNew(t, Options{Microbatches: 2, LinearTokens: 32768})
	_, d := mustPlan(t, p, append([]int{49152, 8192, 8192}, repeat(600, 100)...), in)
	if len(d.Sharding) != 2 || d.PerDocumentGroups+d.PerSequenceGroups != 2 {
		t.Fatalf("sharding %+v", d.Sharding)
	}
	for _, sh := range d.Sharding {
		want := PerSequence
		if sh.PerDocument < sh.PerSequence {
			want = PerDocument
		}
		if sh.Choice != want {
			t.Errorf("microbatch %+v: choice %s, want %s", sh, sh.Choice, want)
		}
	}
}

// §5.1 (padding-free): each document's first ⌊d/2cp⌋·2cp tokens go in 2·cp
// chunks, the remainder tokens are dealt round-robin over the ranks,
// continuing across documents, so that Σ r divisible by 2·cp gives every rank
// as many of them.
func TestPaperPaddingFreeRemainders(t *testing.T) {
	s := newSharder(2)
	// 259 = 4·64 + 3 and 129 = 4·32 + 1: remainders at positions 256, 257, 258
	// (ranks 0, 1, 0) and 128 (rank 1).
	_, _, steps := s.predict([]int64{259, 129})
	// Per-sequence: 4 chunks of 97 tokens, the third straddling both documents
	// (5 segments); per-document: 2 documents and 2 ranks.
	if steps != 5+2+2 {
		t.Errorf("steps %d, want 9", steps)
	}
	// Token pairs of a one-token query at position p: p+1.
	if want := []int64{257 + 259, 258 + 129}; !slices.Equal(s.rankPairs, want) {
		t.Errorf("remainder pairs per rank %v, want %v", s.rankPairs, want)
	}
	// Against dealing token by token, on random documents.
	rng := rand.New(rand.NewPCG(13, 14))
	for range 500 {
		cp := 1 << rng.IntN(6)
		s := newSharder(cp)
		docs := make([]int64, 1+rng.IntN(30))
		want := make([]int64, cp)
		next := 0
		for i := range docs {
			docs[i] = 1 + rng.Int64N(int64(8*cp))
			for pos := docs[i] / int64(2*cp) * int64(2*cp); pos < docs[i]; pos++ {
				want[next] += pos + 1
				next = (next + 1) % cp
			}
		}
		s.predict(docs)
		if !slices.Equal(s.rankPairs, want) {
			t.Fatalf("cp %d docs %v: remainder pairs %v, want %v", cp, docs, s.rankPairs, want)
		}
	}
}
