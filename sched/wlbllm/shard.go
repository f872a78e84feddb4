package wlbllm

// Adaptive CP sharding (§5.3): for each microbatch, predict the attention
// kernel time of the slowest CP rank under per-sequence and under per-document
// sharding, and keep the faster. With all-gather KV every rank holds the whole
// sequence's keys and values, so a rank's attention is the sum over its query
// segments; a segment of q query tokens at positions [a, a+q) of its document
// attends causally to keys [0, a+q) and does Σ_{t=a}^{a+q-1} (t+1) =
// q·a + q(q+1)/2 token pairs. The kernel model (§5.2):
//
//   - tile waste: query rows are computed in tiles of TileTokens = 128
//     (FlashAttention's forward tile), so a segment costs its pairs times
//     ⌈q/128⌉·128/q;
//   - TMA multicast: a segment of fewer than TMAMinQueryTokens = 256 query
//     tokens runs at SmallQueryEfficiency of the large-segment throughput.
//
// The predicted time is in tile-padded token pairs over that relative
// efficiency: only the comparison of the two layouts of one microbatch uses it.

const (
	// TileTokens is the attention kernel's query tile (FlashAttention forward:
	// 128 rows; the paper's Fig. 10, left, is flat from 16 to 128 query tokens).
	TileTokens = 128
	// TMAMinQueryTokens is the query length from which thread blocks share K/V
	// loads by TMA multicast (the paper's §5.2: "Q_len >= 256").
	TMAMinQueryTokens = 256
	// SmallQueryEfficiency is the kernel's throughput below TMAMinQueryTokens
	// relative to above it. Assumption: the paper's Fig. 10 (right) shows the
	// achieved TFLOP/s rising "significantly" from 128 to 256 query tokens and
	// gives no number; 0.6 is our reading of that rise.
	SmallQueryEfficiency = 0.6
)

// Sharding names the two layouts.
const (
	PerSequence = "per-sequence"
	PerDocument = "per-document"
)

// segmentTime is the predicted kernel time of q >= 1 query tokens at positions
// [a, a+q) of their document.
func segmentTime(a, q int64) float64 {
	pairs := float64(q)*float64(a) + float64(q)*float64(q+1)/2
	tiles := (q + TileTokens - 1) / TileTokens
	t := pairs * float64(tiles*TileTokens) / float64(q)
	if q < TMAMinQueryTokens {
		t /= SmallQueryEfficiency
	}
	return t
}

// remainderTime is the predicted time of one remainder token at position pos
// of its document, per pair (segmentTime(pos, 1) = (pos+1)·this): a query of
// one token pads to a whole tile and runs below the TMA threshold.
const remainderTime = float64(TileTokens) / SmallQueryEfficiency

// sharder predicts both layouts for the microbatches of one plan (cp fixed),
// reusing its scratch.
type sharder struct {
	cp    int
	chunk []float64 // per-sequence: time of each of the 2·cp chunks
	// Per-document remainders: rank j's token pairs are Σ over the ranges
	// added of (base + j), kept as difference arrays (constant, count).
	baseDiff, countDiff []int64
	rankPairs           []int64 // per rank, after predict
	starts              []int64 // document start offsets in the packed sequence
}

func newSharder(cp int) *sharder {
	return &sharder{cp: cp, chunk: make([]float64, 2*cp),
		baseDiff: make([]int64, cp+1), countDiff: make([]int64, cp+1), rankPairs: make([]int64, cp)}
}

// addRemainders deals r < 2·cp remainder tokens at positions e, e+1, ... of a
// document round-robin from rank next: token t goes to rank (next+t) mod cp
// and has e+1+t pairs, which for the ranks of one pass is base + j with j the
// rank (the wrapped part of a pass adds cp).
func (s *sharder) addRemainders(e, r int64, next int) {
	cp := int64(s.cp)
	add := func(lo, hi, base int64) {
		s.baseDiff[lo] += base
		s.baseDiff[hi] -= base
		s.countDiff[lo]++
		s.countDiff[hi]--
	}
	pass := func(start, n, base int64) {
		if hi := start + n; hi <= cp {
			add(start, hi, base)
		} else {
			add(start, cp, base)
			add(0, hi-cp, base+cp)
		}
	}
	nx := int64(next)
	pass(nx, min(r, cp), e+1-nx)
	if r > cp {
		pass(nx, r-cp, e+1+cp-nx)
	}
}

// predict returns the slowest rank's predicted kernel time of the documents
// (lengths, in packed order) under per-sequence and per-document sharding,
// and the steps it took (chunk segments, documents and ranks visited).
func (s *sharder) predict(docs []int64) (perSeq, perDoc float64, steps int64) {
	cp := s.cp
	c2 := int64(2 * cp)

	// Per-sequence: the packed sequence of S tokens in 2·cp chunks, rank i
	// taking chunks i and 2·cp−1−i; chunk c is [⌊c·S/2cp⌋, ⌊(c+1)·S/2cp⌋).
	var total int64
	s.starts = s.starts[:0]
	for _, d := range docs {
		s.starts = append(s.starts, total)
		total += d
	}
	j := 0
	for c := range c2 {
		lo, hi := c*total/c2, (c+1)*total/c2
		var t float64
		for lo < hi {
			for s.starts[j]+docs[j] <= lo {
				j++
			}
			end := min(hi, s.starts[j]+docs[j])
			t += segmentTime(lo-s.starts[j], end-lo)
			steps++
			lo = end
		}
		s.chunk[c] = t
	}
	for i := range cp {
		perSeq = max(perSeq, s.chunk[i]+s.chunk[2*cp-1-i])
	}

	// Per-document, padding-free (§5.1): each document's first e = ⌊d/2cp⌋·2cp
	// tokens in 2·cp chunks of k = ⌊d/2cp⌋, rank i taking chunks i and
	// 2·cp−1−i (the same pairs, k²·(2cp−1) + k(k+1), on every rank); the
	// remaining d − e tokens dealt round-robin over the ranks, continuing
	// from document to document, each a query of one token.
	clear(s.baseDiff)
	clear(s.countDiff)
	var even float64
	next := 0
	for _, d := range docs {
		steps++
		k := d / c2
		if k > 0 {
			// Chunks i and 2cp−1−i start at i·k and (2cp−1−i)·k: their pairs sum
			// to the same value for every i, so one rank's value serves all.
			even += segmentTime(0, k) + segmentTime((c2-1)*k, k)
		}
		if r := d - k*c2; r > 0 {
			s.addRemainders(k*c2, r, next)
			next = int((int64(next) + r) % int64(cp))
		}
	}
	var base, count int64
	for r := range cp {
		base += s.baseDiff[r]
		count += s.countDiff[r]
		s.rankPairs[r] = base + count*int64(r)
		perDoc = max(perDoc, even+float64(s.rankPairs[r])*remainderTime)
		steps++
	}
	return perSeq, perDoc, steps
}
