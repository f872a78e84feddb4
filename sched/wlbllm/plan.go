package wlbllm

import (
	"fmt"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/internal/radix"
)

// Plan runs one iteration of Algorithm 1 on the batch, on top of the state the
// earlier plans left, and lays the microbatches out on the DP replicas. The
// state changes only when Plan succeeds.
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.Check(lengths); err != nil {
		return nil, fmt.Errorf("wlb-llm: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()

	key := in
	key.OverheadRatio = 0
	d := &Diagnostics{}
	st := p.st
	if !st.started || st.key != key {
		d.DiscardedPending, _ = st.pending()
		st = state{started: true, key: key, queues: make([][]doc, len(p.opts.Thresholds))}
	}
	var batchTokens int64
	for _, s := range lengths {
		batchTokens += int64(s)
	}
	su, err := p.derive(lengths, batchTokens, st.longest(), in)
	if err != nil {
		return nil, err
	}
	var visits int64

	// Lines 4-10: outliers to their queues (copies: the state changes only
	// on success), the rest to New_Docs.
	queues := make([][]doc, len(st.queues))
	for i, q := range st.queues {
		queues[i] = slices.Clone(q)
	}
	d.Queued = make([]int, len(queues))
	fresh := make([]doc, 0, len(lengths))
	for i, s := range lengths {
		visits++
		x := doc{tokens: s, origin: Origin{Iteration: st.iteration, Seq: i}}
		if q := queueOf(s, su.thresholds); q >= 0 {
			queues[q] = append(queues[q], x)
			d.Queued[q]++
			continue
		}
		fresh = append(fresh, x)
	}
	// Lines 11-15: a queue holding N_mb pops N_mb, oldest first.
	var released []doc
	d.Popped = make([]int, len(queues))
	for i, q := range queues {
		if len(q) >= su.target {
			released = append(released, q[:su.target]...)
			queues[i] = q[su.target:]
			d.Popped[i] = su.target
			visits += int64(su.target)
		}
	}
	// Too few documents for the smallest layout (an iteration must train
	// something): pop the queues early, lowest queue first, oldest first.
	need := minDocuments(su.epReplicas, in.VPP, in.GroupSizeN())
	for i := range queues {
		for len(st.carried)+len(released)+len(fresh) < need && len(queues[i]) > 0 {
			released = append(released, queues[i][0])
			queues[i] = queues[i][1:]
			d.EarlyPopped++
			visits++
		}
	}
	// Lines 16-17: the documents carried from the last iteration, then
	// New_Docs longest first.
	docSet := make([]doc, 0, len(st.carried)+len(released)+len(fresh))
	docSet = append(docSet, st.carried...)
	docSet = appendLongestFirst(docSet, released, fresh)
	visits += int64(len(released) + len(fresh))
	d.CarriedIn = len(st.carried)

	counts, err := layout(min(su.target, len(docSet)), su.dp, su.epReplicas, in)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	// Lines 18-32.
	docLengths := make([]int, len(docSet))
	for i, x := range docSet {
		docLengths[i] = x.tokens
	}
	pk := pack(docLengths, n, su.smax, su.alpha)
	visits += pk.visits

	carried := make([]doc, len(pk.carried))
	for i, k := range pk.carried {
		carried[i] = docSet[k]
	}
	next := state{started: true, key: key, iteration: st.iteration + 1, queues: queues, carried: carried}
	pendingDocs, pendingTokens := next.pending()
	if pendingTokens > sched.MaxBatchTokens {
		return nil, fmt.Errorf("%w: wlb-llm: %d documents of %d tokens would wait for later iterations, more than %d tokens (raise microbatches or smax_tokens)",
			sched.ErrCannotPlan, pendingDocs, pendingTokens, int64(sched.MaxBatchTokens))
	}

	plan := p.build(pk, docSet, counts, su, d)
	visits += int64(len(plan.Lengths))
	d.fill(su, counts, lengths, batchTokens, plan.Lengths, next, st.iteration)
	d.SequenceVisits, d.HeapOps = visits, pk.heapOps
	plan.StallWork = sched.StallWork{SequenceVisits: visits, HeapOps: pk.heapOps}
	plan.WorkUnits = visits + pk.heapOps + d.ShardingSteps
	p.st = next
	return plan, nil
}

// appendLongestFirst appends the released outliers and the fresh documents
// to dst, longest first; equal lengths keep their order in released then
// fresh, which is oldest first: a queue is FIFO, its releases are older than
// the batch, and two queues hold no equal lengths.
func appendLongestFirst(dst, released, fresh []doc) []doc {
	at := func(i int) doc {
		if i < len(released) {
			return released[i]
		}
		return fresh[i-len(released)]
	}
	// Key: (MaxSequenceTokens − tokens) above 38 bits of index: lengths are at
	// most 2^25 and the documents of one plan fewer than 2^38 (at most 10^7
	// in the batch and 10^10 tokens pending).
	keys := make([]uint64, len(released)+len(fresh))
	for i := range keys {
		keys[i] = uint64(sched.MaxSequenceTokens-at(i).tokens)<<38 | uint64(i)
	}
	keys = radix.SortIndexed(keys, make([]uint64, len(keys)), 38) // as slices.Sort: O(N)
	for _, k := range keys {
		dst = append(dst, at(int(k&(1<<38-1))))
	}
	return dst
}

// queueOf returns the queue of a document of s tokens: the largest i with
// thresholds[i] <= s, or -1 when s is below them all (not an outlier).
func queueOf(s int, thresholds []int) int {
	q := -1
	for i, l := range thresholds {
		if s >= l {
			q = i
		}
	}
	return q
}

// build lays the packed microbatches out on the replicas: round k holds the
// k-th microbatch of every replica that runs more than k, replica r's on
// ranks [r·cp, (r+1)·cp); packed microbatch j fills the j-th slot in round
// order. One plan microbatch per round keeps the replicas of an EP group in
// the same entries. Sequence ids number the trained documents in plan order.
func (p *Policy) build(pk packed, docSet []doc, counts []int, su setup, d *Diagnostics) *sched.Plan {
	plan := &sched.Plan{Policy: Name, PoolRanks: su.dp * su.cp, Lengths: make([]int, 0, len(docSet))}
	d.Origins = make([]Origin, 0, len(docSet))
	d.Sharding = make([]MBSharding, 0, len(pk.mbs))
	rounds := slices.Max(counts)
	plan.PartialMicrobatches = slices.Min(counts) != rounds
	sh := newSharder(su.cp)
	var docTokens []int64
	j := 0
	var maxWork, sumWork int64
	d.MinMBTokens = -1
	for k := range rounds {
		mb := sched.Microbatch{}
		perDoc := 0
		for r, c := range counts {
			if c <= k {
				continue
			}
			g := sched.Group{FirstRank: r * su.cp, Size: su.cp, Seqs: make([]int, len(pk.mbs[j]))}
			docTokens = docTokens[:0]
			for i, x := range pk.mbs[j] {
				g.Seqs[i] = len(plan.Lengths)
				plan.Lengths = append(plan.Lengths, docSet[x].tokens)
				d.Origins = append(d.Origins, docSet[x].origin)
				docTokens = append(docTokens, int64(docSet[x].tokens))
			}
			perSeq, perDocTime, steps := sh.predict(docTokens)
			d.ShardingSteps += steps
			choice := PerSequence
			if perDocTime < perSeq {
				choice = PerDocument
				perDoc++
			}
			d.Sharding = append(d.Sharding, MBSharding{Microbatch: k, Replica: r, Documents: len(g.Seqs),
				Tokens: pk.tokens[j], Workload: pk.work[j], Choice: choice, PerSequence: perSeq, PerDocument: perDocTime})
			maxWork = max(maxWork, pk.work[j])
			sumWork += pk.work[j]
			d.MaxMBTokens = max(d.MaxMBTokens, pk.tokens[j])
			if d.MinMBTokens < 0 || pk.tokens[j] < d.MinMBTokens {
				d.MinMBTokens = pk.tokens[j]
			}
			mb.Groups = append(mb.Groups, g)
			j++
		}
		d.PerDocumentGroups += perDoc
		mb.Closed = fmt.Sprintf("round %d: one packed microbatch on each of %d replicas; sharding per-document on %d, per-sequence on %d",
			k, len(mb.Groups), perDoc, len(mb.Groups)-perDoc)
		plan.Microbatches = append(plan.Microbatches, mb)
	}
	d.PerSequenceGroups = len(d.Sharding) - d.PerDocumentGroups
	if j > 0 && sumWork > 0 {
		d.Imbalance = float64(maxWork) * float64(j) / float64(sumWork)
	}
	plan.Diagnostics = d
	return plan
}
