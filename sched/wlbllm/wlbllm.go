package wlbllm

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/dcpsim/dcpsim/sched"
)

// Name is the registry name of the policy.
const Name = "wlb-llm"

// Bounds on the options, so a typo cannot make the planner allocate without
// bound or overflow.
const (
	// MaxQueues bounds the number of outlier queues.
	MaxQueues = 64
	// MaxLinearTokens bounds Options.LinearTokens (as sched.MaxSequenceTokens):
	// with it every workload sum stays below 2^61 (see pack.go).
	MaxLinearTokens = sched.MaxSequenceTokens
	// MaxHeadroom bounds Options.Headroom.
	MaxHeadroom = 10.0
)

// Options are the policy's scenario options ([run.options.wlb-llm]).
type Options struct {
	// Thresholds are the outlier queues' lower bounds L_1 < L_2 < ... < L_n
	// as fractions of the context (sched.Inputs.ContextTokens, or cp·B when it
	// is unset), each in (0, 1]: a document of d >= L_1 tokens waits in queue
	// i with L_i <= d < L_{i+1} (L_{n+1} = ∞). Empty: no outlier delay (plain
	// variable-length packing). Default [0.25, 0.5]: the paper's Table 2 finds
	// two queues as balanced as three (imbalance 1.05 both) and cheaper; it
	// tunes the values offline, and reports neither, so the defaults are the
	// quarter and the half of the context (its §2.2: documents shorter than
	// half the context hold over 75% of the tokens).
	Thresholds []float64 `toml:"thresholds"`
	// Microbatches is N_mb, the microbatches per iteration over all DP
	// replicas (the paper's "number of micro-batches per iteration N", the
	// size at which a queue pops); 0 derives it from the batch (see
	// Headroom). It is rounded up to a multiple of the DP replicas one EP
	// group couples.
	Microbatches int `toml:"microbatches"`
	// Headroom sets the derived N_mb when Microbatches is 0: every replica
	// runs m = max(pp, ⌈(1+Headroom)·T/(dp·Smax)⌉) microbatches (T the
	// batch's tokens), so the iteration can hold (1+Headroom) times the
	// batch. Default 0.25. The paper runs PP×DP microbatches whose bound Smax
	// exceeds the context window; here Smax is the memory bound cp·B, which
	// the context already fills, so the headroom of variable-length packing
	// comes from more microbatches instead (see the package doc).
	Headroom float64 `toml:"headroom"`
	// SmaxTokens is Smax, the most tokens of one microbatch; 0 means cp·B,
	// the memory bound (the paper's "maximum sequence length permitted by GPU
	// memory"). A larger value is refused: B bounds every rank's tokens.
	SmaxTokens int `toml:"smax_tokens"`
	// CPDegree forces the CP degree (a power of two dividing G); 0 takes
	// the smallest power of two whose cp·B holds the context, as static CP.
	CPDegree int `toml:"cp_degree"`
	// LinearTokens is α in the predicted workload of a document,
	// W(d) = W_a + W_l = d² + α·d (tokens²): the length at which its attention
	// costs as much as its linear part (GEMMs, collectives, element-wise).
	// Default 32768; see the package doc.
	LinearTokens int `toml:"linear_tokens"`
}

// DefaultOptions are the options of a scenario that gives none.
func DefaultOptions() Options {
	return Options{Thresholds: []float64{0.25, 0.5}, Headroom: 0.25, LinearTokens: 32768}
}

// New builds the policy from its options; an error names the key and the
// allowed range.
func New(o Options) (*Policy, error) {
	if len(o.Thresholds) > MaxQueues {
		return nil, fmt.Errorf("thresholds: %d queues: must be at most %d", len(o.Thresholds), MaxQueues)
	}
	for i, f := range o.Thresholds {
		if !(f > 0 && f <= 1) { // NaN fails
			return nil, fmt.Errorf("thresholds[%d] = %v: must be a fraction of the context in (0, 1]", i, f)
		}
		if i > 0 && f <= o.Thresholds[i-1] {
			return nil, fmt.Errorf("thresholds[%d] = %v: must be larger than thresholds[%d] = %v (L_1 < L_2 < ...)", i, f, i-1, o.Thresholds[i-1])
		}
	}
	switch {
	case o.Microbatches < 0 || o.Microbatches > sched.MaxBatchSequences:
		return nil, fmt.Errorf("microbatches = %d: must be in [0, %d] (0 = derived)", o.Microbatches, sched.MaxBatchSequences)
	case !(o.Headroom >= 0 && o.Headroom <= MaxHeadroom):
		return nil, fmt.Errorf("headroom = %v: must be in [0, %v]", o.Headroom, MaxHeadroom)
	case o.SmaxTokens < 0 || int64(o.SmaxTokens) > int64(sched.MaxPoolRanks)*sched.MaxBudgetTokens:
		return nil, fmt.Errorf("smax_tokens = %d: must be in [0, %d] (0 = cp·B)", o.SmaxTokens, int64(sched.MaxPoolRanks)*sched.MaxBudgetTokens)
	case o.CPDegree != 0 && (!sched.IsPow2(o.CPDegree) || o.CPDegree > sched.MaxPoolRanks):
		return nil, fmt.Errorf("cp_degree = %d: must be 0 (derived) or a power of two in [1, %d]", o.CPDegree, sched.MaxPoolRanks)
	case o.LinearTokens < 0 || o.LinearTokens > MaxLinearTokens:
		return nil, fmt.Errorf("linear_tokens = %d: must be in [0, %d]", o.LinearTokens, MaxLinearTokens)
	}
	o.Thresholds = slices.Clone(o.Thresholds)
	return &Policy{opts: o}, nil
}

// Policy is WLB-LLM's planner. It keeps the outlier queues and the carried
// documents from one Plan to the next (see the package doc); Plan is safe for
// concurrent use, but the plans are a function of the order of the calls.
type Policy struct {
	opts Options
	mu   sync.Mutex
	st   state
}

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
)

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
)

// Name returns "wlb-llm".
func (*Policy) Name() string { return Name }

// Promises: every group is a DP replica's aligned block of cp ranks (cp a
// power of two) and holds at most Smax <= cp·B tokens. Not CoversPool: a
// replica with fewer microbatches is in no group of the later ones.
func (*Policy) Promises() sched.Promises {
	return sched.Promises{Aligned: true, WithinBudget: true}
}

// doc is one document the policy holds: its length and where it came from.
type doc struct {
	tokens int
	origin Origin
}

// state is what the policy carries from one iteration to the next.
type state struct {
	// started is false before the first plan.
	started bool
	// key is the Inputs the state was built under (OverheadRatio, which the
	// policy does not use, cleared); other Inputs start a new state.
	key sched.Inputs
	// iteration counts the plans made under key.
	iteration int
	// queues[i] holds the outliers of queue i, oldest first.
	queues [][]doc
	// carried are the documents no microbatch could take, in Alg. 1's order.
	carried []doc
}

// pending returns the documents and tokens the state holds.
func (s *state) pending() (docs int, tokens int64) {
	for _, q := range s.queues {
		for _, d := range q {
			docs++
			tokens += int64(d.tokens)
		}
	}
	for _, d := range s.carried {
		docs++
		tokens += int64(d.tokens)
	}
	return docs, tokens
}

// longest returns the longest document the state holds (0 when none).
func (s *state) longest() int {
	l := 0
	for _, q := range s.queues {
		for _, d := range q {
			l = max(l, d.tokens)
		}
	}
	for _, d := range s.carried {
		l = max(l, d.tokens)
	}
	return l
}

// Pending returns the documents the policy holds after its last plan: those
// waiting in the outlier queues and those carried, each with its origin, in
// queue order then carried order. A run that ends leaves them untrained.
func (p *Policy) Pending() []Origin {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Origin
	for _, q := range p.st.queues {
		for _, d := range q {
			out = append(out, d.origin)
		}
	}
	for _, d := range p.st.carried {
		out = append(out, d.origin)
	}
	return out
}

// Origin names a document by the iteration whose batch brought it (counted
// from 0 in the policy's current state) and its index in that batch.
type Origin struct {
	Iteration int
	Seq       int
}

// MarshalJSON encodes an origin as [iteration, seq].
func (o Origin) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "[%d,%d]", o.Iteration, o.Seq), nil
}

// setup is what one Plan derives from the options and the Inputs.
type setup struct {
	cp, dp        int
	epReplicas    int   // u: DP replicas one EP group couples (lcm(cp, ep)/cp)
	smax          int64 // Smax, tokens
	contextTokens int   // the context the thresholds are fractions of
	thresholds    []int // L_i, tokens
	target        int   // N_mb: the queues' pop size and the most microbatches
	perReplica    int   // the derived per-replica count (0 when forced)
	alpha         int64 // α of W(d) = d² + α·d
}

// derive computes the setup of a plan of batch (lengths, batchTokens) given
// the longest pending document.
func (p *Policy) derive(lengths []int, batchTokens int64, pendingLongest int, in sched.Inputs) (setup, error) {
	var su setup
	g, b := in.PoolRanks, in.BudgetTokens
	context := in.ContextTokens
	if context == 0 {
		context = pendingLongest
		for _, s := range lengths {
			context = max(context, s)
		}
	}
	su.cp = p.opts.CPDegree
	if su.cp == 0 {
		su.cp = sched.MemoryDegree(context, b)
	}
	if su.cp > in.DegreeLimit() || g%su.cp != 0 {
		return su, fmt.Errorf("%w: wlb-llm: CP degree %d (cp·B >= context %d at B = %d, or cp_degree) must divide the pool G = %d and be <= the engine limit %d",
			sched.ErrInvalidInput, su.cp, context, b, g, in.DegreeLimit())
	}
	su.dp = g / su.cp
	ep := in.EPSize()
	su.epReplicas = lcm(su.cp, ep) / su.cp // both divide G, so lcm does and u divides dp
	capTokens := int64(su.cp) * int64(b)
	su.smax = capTokens
	if p.opts.SmaxTokens > 0 {
		if int64(p.opts.SmaxTokens) > capTokens {
			return su, fmt.Errorf("%w: wlb-llm: smax_tokens = %d exceeds cp·B = %d·%d = %d, the memory bound of a microbatch",
				sched.ErrInvalidInput, p.opts.SmaxTokens, su.cp, b, capTokens)
		}
		su.smax = int64(p.opts.SmaxTokens)
	}
	for i, s := range lengths {
		if int64(s) > su.smax {
			why := fmt.Sprintf("a WLB-LLM microbatch (Smax, cp·B = %d·%d)", su.cp, b)
			if p.opts.CPDegree == 0 && p.opts.SmaxTokens == 0 && in.ContextTokens > 0 && s > in.ContextTokens {
				// The degree came from a context shorter than the sequence: blame it.
				why = sched.ContextTooShortWhy(in.ContextTokens, "a WLB-LLM microbatch", su.cp, b)
			}
			return su, &sched.ErrSequenceTooLong{Seq: i, Tokens: s, MaxTokens: int(su.smax), Why: why}
		}
	}
	su.contextTokens = in.ContextTokens
	if su.contextTokens == 0 {
		su.contextTokens = int(capTokens)
	}
	su.thresholds = make([]int, len(p.opts.Thresholds))
	for i, f := range p.opts.Thresholds {
		su.thresholds[i] = max(1, int(math.Ceil(f*float64(su.contextTokens))))
	}
	su.alpha = int64(p.opts.LinearTokens)

	u := su.epReplicas
	if p.opts.Microbatches > 0 {
		su.target = sched.CeilDiv(p.opts.Microbatches, u) * u
		return su, nil
	}
	need := math.Ceil((1 + p.opts.Headroom) * float64(batchTokens) / (float64(su.dp) * float64(su.smax)))
	m := max(in.PP, int(min(need, float64(sched.MaxBatchSequences))))
	if in.VPP > 1 {
		legal, ok := sched.LegalMicrobatchCount(m, in.PP, in.GroupSizeN())
		if !ok {
			return su, fmt.Errorf("%w: wlb-llm: no microbatch count is legal for the interleaved schedule: N = %d < pp = %d",
				sched.ErrCannotPlan, in.GroupSizeN(), in.PP)
		}
		m = legal
	}
	su.perReplica = m
	su.target = su.dp * m
	return su, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }
