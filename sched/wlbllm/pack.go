package wlbllm

// Algorithm 1's packing loop (lines 16-32): documents in order, each into the
// microbatch of least predicted workload if its token count stays within Smax,
// else into the microbatch of fewest tokens if it fits there, else carried.
//
// Arithmetic: a workload is Σ (d² + α·d) over a microbatch's documents, in
// int64. The documents of one plan hold at most the batch (sched.MaxBatchTokens
// = 10^10 < 2^34 tokens) plus what the state carried in (Plan refuses to keep
// more than 10^10 pending tokens), so under 2^35 tokens; with d and α at most
// 2^25, Σ d² <= 2^35·2^25 and α·Σ d <= 2^60: every sum stays below 2^61.

import "github.com/dcpsim/dcpsim/sched/internal/keyheap"

// packed is the outcome of one packing.
type packed struct {
	// mbs[j] lists the documents of microbatch j (indices into the doc set), in
	// the order they were placed.
	mbs [][]int
	// tokens[j] and work[j] are microbatch j's tokens and predicted workload.
	tokens, work []int64
	// carried lists the documents no microbatch could take, in order.
	carried []int
	// visits counts the documents read; heapOps the heap operations.
	visits, heapOps int64
}

// workload is the predicted workload of one document, W_a + W_l = d² + α·d.
func workload(d, alpha int64) int64 { return d*d + alpha*d }

// pack places docs (lengths in Alg. 1's order) into n >= 1 microbatches of at
// most smax tokens. Ties go to the lower microbatch index, so with n <= the
// number of documents the first n documents open the n microbatches in order
// (an empty microbatch has the least workload and room for any document of at
// most smax tokens) and none stays empty.
func pack(docs []int, n int, smax, alpha int64) packed {
	p := packed{mbs: make([][]int, n), tokens: make([]int64, n), work: make([]int64, n)}
	// All keys start at zero, so Full's heapify moves nothing; it counts one
	// operation per microbatch in each heap.
	byWork := keyheap.Full(p.work)
	byTokens := keyheap.Full(p.tokens)
	for i, s := range docs {
		p.visits++
		d := int64(s)
		j := byWork.Top()
		if p.tokens[j]+d > smax {
			j = byTokens.Top() // the most room: if it cannot take d, none can
			if p.tokens[j]+d > smax {
				p.carried = append(p.carried, i)
				continue
			}
		}
		p.mbs[j] = append(p.mbs[j], i)
		p.tokens[j] += d
		p.work[j] += workload(d, alpha)
		byWork.Fix(j)
		byTokens.Fix(j)
	}
	p.heapOps = byWork.Ops + byTokens.Ops
	return p
}
