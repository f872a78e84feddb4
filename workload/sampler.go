package workload

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Overlong says what a Sampler does with a sequence longer than the context.
type Overlong int

const (
	// Split cuts an overlong sequence into context-sized pieces plus the remainder, in
	// order, as pretraining pipelines do.
	Split Overlong = iota
	// Drop discards an overlong sequence.
	Drop
)

// String returns "split" or "drop".
func (o Overlong) String() string {
	switch o {
	case Split:
		return "split"
	case Drop:
		return "drop"
	}
	return fmt.Sprintf("Overlong(%d)", int(o))
}

// ParseOverlong parses "split" or "drop" (case-insensitive).
func ParseOverlong(s string) (Overlong, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "split":
		return Split, nil
	case "drop":
		return Drop, nil
	}
	return 0, fmt.Errorf("workload: unknown overlong policy %q (allowed: split, drop)", s)
}

// ListOrder says how a Sampler built from a list of lengths walks it.
type ListOrder int

const (
	// Resample draws sequences uniformly with replacement, independently per iteration.
	Resample ListOrder = iota
	// Sequential walks the list in order, wrapping at the end; iteration k continues
	// where iteration k−1 stopped.
	Sequential
)

// String returns "resample" or "sequential".
func (o ListOrder) String() string {
	switch o {
	case Resample:
		return "resample"
	case Sequential:
		return "sequential"
	}
	return fmt.Sprintf("ListOrder(%d)", int(o))
}

// ParseListOrder parses "resample" or "sequential" (case-insensitive).
func ParseListOrder(s string) (ListOrder, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "resample":
		return Resample, nil
	case "sequential":
		return Sequential, nil
	}
	return 0, fmt.Errorf("workload: unknown list order %q (allowed: resample, sequential)", s)
}

// Batch is the global batch of one training iteration. Sequence id i has Lengths[i]
// tokens; after Split a piece of a sequence counts as a sequence of its own.
type Batch struct {
	// Iteration is the training iteration the batch is for (Sampler.Batch's argument).
	Iteration int
	// Lengths are the sequence lengths in tokens, in the order the sampler filled the batch.
	Lengths []int
}

// Tokens returns the number of tokens in the batch.
func (b Batch) Tokens() int64 {
	var n int64
	for _, l := range b.Lengths {
		n += int64(l)
	}
	return n
}

// Limits of a BatchSpec.
const (
	MaxTargetTokens  = 10_000_000_000 // largest BatchSpec.TargetTokens
	MaxContextTokens = 1 << 30        // largest BatchSpec.ContextTokens
)

// BatchSpec says how a Sampler fills batches.
type BatchSpec struct {
	TargetTokens  int64    // tokens per global batch, in [1, MaxTargetTokens]
	ContextTokens int      // context window: the longest sequence a batch may hold, in [1, MaxContextTokens]
	Overlong      Overlong // what to do with a sequence longer than ContextTokens
	Seed          uint64   // the run's seed; batches of different seeds are independent
}

// Validate checks every field.
func (s BatchSpec) Validate() error {
	if s.TargetTokens < 1 || s.TargetTokens > MaxTargetTokens {
		return fmt.Errorf("workload: BatchSpec.TargetTokens = %d out of range (allowed: [1, %d])", s.TargetTokens, int64(MaxTargetTokens))
	}
	if s.ContextTokens < 1 || s.ContextTokens > MaxContextTokens {
		return fmt.Errorf("workload: BatchSpec.ContextTokens = %d out of range (allowed: [1, %d])", s.ContextTokens, MaxContextTokens)
	}
	if s.Overlong != Split && s.Overlong != Drop {
		return fmt.Errorf("workload: BatchSpec.Overlong = %d (allowed: split, drop)", int(s.Overlong))
	}
	return nil
}

// Under Drop a distribution must keep at least minKeepFraction of its draws, which makes
// maxConsecutiveDrops rejections in a row a probability-(1−10⁻⁴)^(10⁶) ≈ e⁻¹⁰⁰ event.
const (
	minKeepFraction     = 1e-4
	maxConsecutiveDrops = 1_000_000
)

// Sampler produces the global batch of any iteration. It is immutable and safe for
// concurrent use; Batch(k) depends only on the sampler and k.
//
// Fill rule: sequences are drawn (and split or dropped, see Overlong) and their pieces
// appended while the batch holds fewer than TargetTokens tokens; the piece that would
// overshoot is cut so the batch holds exactly TargetTokens, as packed pretraining batches
// do. When drawing (from a distribution, or a list under Resample) the rest of a cut piece
// is discarded, so batches are independent; under Sequential it opens the next batch.
type Sampler struct {
	spec BatchSpec
	dist Distribution // distribution mode, nil for lists
	list []int        // list modes: the lengths, overlong ones removed under Drop
	seq  bool         // list mode, Sequential
	// Sequential: prefix[i] is the token offset where list[i] starts in the stream, and
	// prefix[len(list)] the stream's period.
	prefix []int64
}

// NewSampler returns a sampler drawing sequences from d. Under Drop, d must keep at least
// 10⁻⁴ of its draws (d.CDF(ContextTokens) >= 1e-4), which bounds the rejection loop.
func NewSampler(d Distribution, spec BatchSpec) (*Sampler, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("workload: NewSampler: nil distribution")
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("workload: distribution %v: %w", d, err)
	}
	if spec.Overlong == Drop {
		if keep := d.CDF(float64(spec.ContextTokens)); !(keep >= minKeepFraction) {
			return nil, fmt.Errorf("workload: overlong=drop keeps P(L <= ContextTokens = %d) = %g of the draws of %v (allowed: >= %g)",
				spec.ContextTokens, keep, d, minKeepFraction)
		}
	}
	return &Sampler{spec: spec, dist: d}, nil
}

// NewListSampler returns a sampler over a list of lengths (for instance from ReadLengths),
// walked in the given order. Every length must be in [1, MaxSequenceTokens]; under Drop at
// least one must fit the context. The list is copied. The seed matters only to Resample.
func NewListSampler(lengths []int, order ListOrder, spec BatchSpec) (*Sampler, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if order != Resample && order != Sequential {
		return nil, fmt.Errorf("workload: list order %d (allowed: resample, sequential)", int(order))
	}
	if len(lengths) == 0 {
		return nil, fmt.Errorf("workload: NewListSampler: no lengths (allowed: at least one)")
	}
	s := &Sampler{spec: spec, seq: order == Sequential, list: make([]int, 0, len(lengths))}
	shortest := lengths[0]
	for i, l := range lengths {
		if l < 1 || l > MaxSequenceTokens {
			return nil, fmt.Errorf("workload: lengths[%d] = %d out of range (allowed: [1, %d])", i, l, MaxSequenceTokens)
		}
		shortest = min(shortest, l)
		if spec.Overlong == Drop && l > spec.ContextTokens {
			continue
		}
		s.list = append(s.list, l)
	}
	if len(s.list) == 0 {
		return nil, fmt.Errorf("workload: overlong=drop drops all %d lengths: the shortest, %d, exceeds ContextTokens = %d",
			len(lengths), shortest, spec.ContextTokens)
	}
	if s.seq {
		s.prefix = make([]int64, len(s.list)+1)
		for i, l := range s.list {
			s.prefix[i+1] = s.prefix[i] + int64(l)
		}
	}
	return s, nil
}

// Spec returns the sampler's batch specification.
func (s *Sampler) Spec() BatchSpec { return s.spec }

// splitmix64 is the SplitMix64 finaliser, a bijective mixer of 64-bit words.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// iterationSource returns the PCG for one iteration, seeded from (seed, iteration) so that
// neighbouring iterations and seeds give unrelated streams.
func iterationSource(seed uint64, iteration int) *rand.PCG {
	a := splitmix64(seed)
	b := splitmix64(a ^ splitmix64(uint64(iteration)^0x6a09e667f3bcc909))
	return rand.NewPCG(b, splitmix64(b^a))
}

// Batch returns the global batch of the given iteration (>= 0; a negative one panics).
func (s *Sampler) Batch(iteration int) Batch {
	if iteration < 0 {
		panic(fmt.Sprintf("workload: Sampler.Batch: negative iteration %d", iteration))
	}
	b := Batch{Iteration: iteration}
	if s.seq {
		b.Lengths = s.sequential(iteration)
		return b
	}
	src := iterationSource(s.spec.Seed, iteration)
	var rng *rand.Rand
	if s.dist == nil {
		rng = rand.New(src)
	}
	ctx, target := s.spec.ContextTokens, s.spec.TargetTokens
	var total int64
	drops := 0
	for total < target {
		var l int
		if s.dist != nil {
			l = s.dist.Rand(src)
		} else {
			l = s.list[rng.IntN(len(s.list))]
		}
		if l > ctx && s.spec.Overlong == Drop {
			if drops++; drops > maxConsecutiveDrops {
				panic(fmt.Sprintf("workload: %d consecutive draws of %v exceeded ContextTokens = %d", drops, s.dist, ctx))
			}
			continue
		}
		drops = 0
		for l > 0 && total < target {
			piece := int64(min(l, ctx))
			l -= int(piece)
			piece = min(piece, target-total)
			b.Lengths = append(b.Lengths, int(piece))
			total += piece
		}
	}
	return b
}

// sequential returns the pieces covering tokens [k·T, (k+1)·T) of the list's token stream
// repeated end to end; pieces of a sequence start at multiples of the context from its
// beginning (under Split) and at the batch boundary.
func (s *Sampler) sequential(iteration int) []int {
	period := s.prefix[len(s.list)]
	target, ctx := s.spec.TargetTokens, int64(s.spec.ContextTokens)
	// start = iteration·target mod period, in 128 bits so that no iteration overflows.
	hi, lo := bits.Mul64(uint64(iteration), uint64(target))
	start := int64(bits.Rem64(hi, lo, uint64(period)))
	i := sort.Search(len(s.list), func(j int) bool { return s.prefix[j+1] > start })
	off := start - s.prefix[i] // offset inside list[i]
	var out []int
	var total int64
	for total < target {
		l := int64(s.list[i])
		for off < l && total < target {
			piece := min(l-off, ctx-off%ctx, target-total) // ctx-off%ctx >= l-off unless split
			out = append(out, int(piece))
			off += piece
			total += piece
		}
		if off == l {
			i, off = (i+1)%len(s.list), 0
		}
	}
	return out
}

// streamBytes bounds the lengths EachBatch holds at once (about 8 bytes each)
// when it draws batches in parallel.
const streamBytes = 64 << 20

// EachBatch calls f with batches 0..n-1 in order, drawing up to GOMAXPROCS of
// them at a time in parallel, but no more at a time than fit in about 64 MiB
// of lengths (judged by the batch before), so memory does not grow with n.
// Each batch depends only on (seed, k): the batches are those of Batch(k)
// whatever the parallelism.
func (s *Sampler) EachBatch(n int, f func(Batch)) {
	window := 1 // the first batch alone, to size the window
	buf := make([]Batch, runtime.GOMAXPROCS(0))
	for k := 0; k < n; {
		w := min(window, n-k, len(buf))
		var wg sync.WaitGroup
		for i := range w {
			wg.Go(func() { buf[i] = s.Batch(k + i) })
		}
		wg.Wait()
		longest := 1
		for i := range w {
			longest = max(longest, len(buf[i].Lengths))
			f(buf[i])
			buf[i] = Batch{}
		}
		window = max(1, streamBytes/(8*longest))
		k += w
	}
}
