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
	byWork := newMBHeap(p.work)
	byTokens := newMBHeap(p.tokens)
	p.heapOps = 2 * int64(n) // heapify of both heaps: one push per microbatch each
	for i, s := range docs {
		p.visits++
		d := int64(s)
		j := byWork.top()
		if p.tokens[j]+d > smax {
			j = byTokens.top() // the most room: if it cannot take d, none can
			if p.tokens[j]+d > smax {
				p.carried = append(p.carried, i)
				continue
			}
		}
		p.mbs[j] = append(p.mbs[j], i)
		p.tokens[j] += d
		p.work[j] += workload(d, alpha)
		byWork.increased(j)
		byTokens.increased(j)
		p.heapOps += 2
	}
	return p
}

// mbHeap is a binary min-heap of microbatch indices keyed by (key[j], j), whose
// keys only grow.
type mbHeap struct {
	key  []int64
	heap []int32 // microbatch indices
	pos  []int32 // pos[j]: j's position in heap
}

// newMBHeap builds the heap over all microbatches; key must be all zero, so the
// identity order is already a heap.
func newMBHeap(key []int64) *mbHeap {
	h := &mbHeap{key: key, heap: make([]int32, len(key)), pos: make([]int32, len(key))}
	for j := range key {
		h.heap[j], h.pos[j] = int32(j), int32(j)
	}
	return h
}

func (h *mbHeap) less(a, b int32) bool {
	ka, kb := h.key[a], h.key[b]
	return ka < kb || ka == kb && a < b
}

// top returns the microbatch of least (key, index).
func (h *mbHeap) top() int { return int(h.heap[0]) }

// increased restores the heap after key[j] grew (sift down).
func (h *mbHeap) increased(j int) {
	i := int(h.pos[j])
	n := len(h.heap)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(h.heap[r], h.heap[c]) {
			c = r
		}
		if !h.less(h.heap[c], h.heap[i]) {
			break
		}
		h.heap[i], h.heap[c] = h.heap[c], h.heap[i]
		h.pos[h.heap[i]], h.pos[h.heap[c]] = int32(i), int32(c)
		i = c
	}
}
