package costmodel

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
)

// Exec is the CP execution a policy's plans are priced under.
type Exec struct {
	// CP is how every group executes attention across its ranks.
	CP sched.CPExec
	// OverlapAllToAll hides the Q/K/V all-to-alls behind independent compute.
	OverlapAllToAll bool
}

// Iteration is the priced cost of one laid-out plan: a step.Costs (also a
// step.CommSplitter and a step.PlannerStaller) whose answers were all computed
// by Price. It is immutable.
type Iteration struct {
	m      *Model
	layout *step.Layout
	// cost[class·domains + domain]: class is the stage when stages differ in
	// their node layout (G·tp not node-aligned), else 0; classes of them.
	cost    []domainCost
	classes int
	// p2p[boundary·domains + domain] is P2PSeconds across the boundary
	// between stages boundary and boundary+1 (nil without P2P).
	p2p          []float64
	stallSeconds float64
	// shard[gOff[i]+g] is group g of domain i's per-rank shard (memory).
	gOff  []int32
	shard []groupShard
	// fallbackSlots counts the rank-slots of groups whose policy runs Ulysses
	// but whose degree exceeds the query heads per TP rank, priced as Ulysses ×
	// ring (Megatron's hierarchical a2a+p2p CP) instead.
	fallbackSlots int64
}

// FallbackSlots is the number of (rank, microbatch) slots whose group's degree
// exceeds the query heads per TP rank under a Ulysses execution, and that ran
// as Ulysses × ring instead: runs report it rather than switch silently.
func (it *Iteration) FallbackSlots() int64 { return it.fallbackSlots }

var (
	_ step.Costs                = (*Iteration)(nil)
	_ step.OverlappedGradSyncer = (*Iteration)(nil)
	_ step.CommSplitter         = (*Iteration)(nil)
	_ step.PlannerStaller       = (*Iteration)(nil)
)

// domainCost is a domain's per-layer times, forward and backward.
type domainCost struct {
	dense, moe [2]float64 // compute + exposed CP, max over groups
	// denseComm and moeCPComm are the exposed CP part of dense and moe (the
	// slowest group's).
	denseComm, moeCPComm [2]float64
	// recompute[kind] is the backward of a recomputed layer of the kind
	// (dense, MoE), its forward run again included, max over groups, and
	// recomputeComm its exposed CP and TP part.
	recompute, recomputeComm [2]float64
	// held[kind] is the GPU-seconds the domain's ranks spend per layer of
	// the kind held by its slowest group (the layer's time less their own
	// group's, summed over the ranks; a rank in no group is held the whole
	// layer): forward, backward, recomputed backward.
	held    [2][3]float64
	moeComm [2]float64 // EP dispatch + combine, max over blocks
	// offload[kind] is what an offloadable layer of the kind (dense, MoE)
	// waits for its host copies (offloadExposed), forward and backward, max
	// over groups.
	offload   [2][2]float64
	maxTokens int // the fullest rank's tokens
	// head is the last stage's head (final norm, LM head, loss), forward and
	// backward: the slowest device's for the most tokens a rank of it holds
	// (every rank on device 0: for maxTokens).
	head [2]float64
}

// Outcome is one iteration of a plan as Simulate priced and ran it.
type Outcome struct {
	// Result is the engine's timeline of the iteration; it is the caller's
	// (it shares no storage with the Model).
	Result *step.Result
	// FallbackSlots is the pricing's Iteration.FallbackSlots.
	FallbackSlots int64
	// Memory is the iteration's peak memory per GPU, stage by stage.
	Memory MemoryUse
	// OutOfMemory is set when a GPU's peak exceeds its HBM: the plan
	// cannot run (the result is still the timeline it would have had).
	OutOfMemory *OutOfMemoryError
	// HeldSeconds is the pricing's Iteration.HeldSeconds: rank-seconds held
	// by a slower CP group of the same domain (the EP barrier's wait).
	HeldSeconds float64
}

// Simulate lays plan out in sync domains for the job's EP (step.Layout),
// prices every domain for the batch lengths under exec with stallSeconds of
// planning at the head of the iteration (Price), and runs the iteration on the
// job's pipeline (step.Runner.Run, pp and vpp of the job): the result of
// step.NewLayout, Price and step.Run in one call, the same to the bit. It
// works in storage the Model keeps for its callers (the layout, the domains'
// costs, the engine's state, memoised layer ops), so an iteration costs a
// fixed number of allocations, most of them the Result's. It fails as
// step.NewLayout, Price and step.Run do.
func (m *Model) Simulate(plan *sched.Plan, lengths []int, exec Exec, stallSeconds float64) (Outcome, error) {
	s := m.getScratch()
	defer m.putScratch(s)
	return m.simulate(s, plan, lengths, exec, stallSeconds)
}

// Simulator is Simulate for one caller, in scratch storage of its own that
// it keeps for its life: a Model's pooled scratch may be dropped by any
// garbage collection (sync.Pool), and a caller whose planner allocates much
// (hexiseq, usp) then rebuilds the memo of layer ops every iteration. It
// gives exactly Simulate's results. A Simulator is not for concurrent use;
// each goroutine takes its own (Model.NewSimulator).
type Simulator struct {
	m *Model
	s *scratch
}

// NewSimulator returns a Simulator of the Model.
func (m *Model) NewSimulator() *Simulator { return &Simulator{m: m, s: &scratch{pricer: pricer{m: m}}} }

// Release hands the Simulator's memo of layer ops (up to 13 MiB a device)
// back, cleared, for the next Simulator of any Model to start from instead
// of allocating and zeroing its own: a search runs thousands of short runs,
// and paid more for their fresh memos than for what the memos saved. The
// Simulator stays usable (it grows a memo again); release it once its
// caller is done or waits.
func (r *Simulator) Release() {
	p := &r.s.pricer
	for dev, tab := range p.memo {
		putMemoTable(tab, p.memoSet[dev])
		p.memo[dev], p.memoSet[dev] = nil, p.memoSet[dev][:0]
	}
}

// Simulate is Model.Simulate in the Simulator's own scratch.
func (r *Simulator) Simulate(plan *sched.Plan, lengths []int, exec Exec, stallSeconds float64) (Outcome, error) {
	return r.m.simulate(r.s, plan, lengths, exec, stallSeconds)
}

// simulate is Simulate in scratch s.
func (m *Model) simulate(s *scratch, plan *sched.Plan, lengths []int, exec Exec, stallSeconds float64) (Outcome, error) {
	if err := s.layout.Reset(plan, m.ep); err != nil {
		return Outcome{}, err
	}
	it := &s.it
	if err := s.price(it, &s.layout, lengths, exec, stallSeconds); err != nil {
		return Outcome{}, err
	}
	res, err := s.run.Run(&s.layout, m.topo.PP, m.vpp, it)
	if err != nil {
		return Outcome{}, err
	}
	use, oom := m.memoryUse(res)
	return Outcome{Result: res, FallbackSlots: it.fallbackSlots, Memory: use, OutOfMemory: oom, HeldSeconds: it.HeldSeconds()}, nil
}

// scratch is the working storage of one Price or Simulate call. The Model
// pools them (sync.Pool): concurrent calls each take their own, a later call
// reuses one, and what a scratch holds never changes a result (its memo
// holds pure functions of the Model).
type scratch struct {
	pricer
	layout step.Layout
	it     Iteration // its cost and p2p storage reused
	run    step.Runner
}

func (m *Model) getScratch() *scratch {
	if s, ok := m.scratches.Get().(*scratch); ok {
		return s
	}
	return &scratch{pricer: pricer{m: m}}
}

// putScratch returns s to the pool, keeping nothing of the caller's (the
// plan's groups, the lengths).
func (m *Model) putScratch(s *scratch) {
	clear(s.layout.Domains[:cap(s.layout.Domains)])
	s.layout = step.Layout{Domains: s.layout.Domains[:0]}
	s.it = Iteration{cost: s.it.cost[:0], p2p: s.it.p2p[:0], gOff: s.it.gOff[:0], shard: s.it.shard[:0]}
	s.lengths = nil
	m.scratches.Put(s)
}

// Price prices every domain of the layout for the batch lengths under exec,
// with stallSeconds of planning at the head of the iteration. It fails when a
// group names a sequence outside the batch, the layout's EP differs from the
// job's, or the network cannot run a group.
func (m *Model) Price(l *step.Layout, lengths []int, exec Exec, stallSeconds float64) (*Iteration, error) {
	s := m.getScratch()
	defer m.putScratch(s)
	it := new(Iteration)
	if err := s.price(it, l, lengths, exec, stallSeconds); err != nil {
		return nil, err
	}
	return it, nil
}

// maxStallSeconds bounds the planner stall Price accepts: 10^9 s, far inside
// the engine's int64 nanoseconds (9.2·10^9 s) with the rest of an iteration.
const maxStallSeconds = 1e9

// price prices layout l into it, reusing the storage of its cost and p2p.
func (p *pricer) price(it *Iteration, l *step.Layout, lengths []int, exec Exec, stallSeconds float64) error {
	m := p.m
	costs, p2p, gOff, shard := it.cost[:0], it.p2p[:0], it.gOff[:0], it.shard[:0]
	*it = Iteration{cost: costs, p2p: p2p, gOff: gOff, shard: shard}
	switch {
	case l == nil || l.Plan == nil:
		return fmt.Errorf("costmodel: nil layout")
	case !exec.CP.Valid():
		return fmt.Errorf("costmodel: invalid CP exec %d", int(exec.CP))
	case l.EP != m.ep:
		return fmt.Errorf("costmodel: layout for ep = %d, job ep = %d", l.EP, m.ep)
	case l.Plan.PoolRanks != m.topo.PoolRanks:
		return fmt.Errorf("costmodel: plan spans %d ranks, the job's pool %d", l.Plan.PoolRanks, m.topo.PoolRanks)
	case !(stallSeconds >= 0 && stallSeconds <= maxStallSeconds):
		return fmt.Errorf("costmodel: planner stall %v s: need a value in [0, %g] (the engine's clock counts int64 nanoseconds)", stallSeconds, float64(maxStallSeconds))
	}
	classes := 1
	if m.topo.PoolRanks%m.topo.RanksPerNode != 0 {
		classes = m.topo.PP // stages start part way through a node
	}
	nd := len(l.Domains)
	costs = slices.Grow(costs, classes*nd)[:classes*nd]
	*it = Iteration{m: m, layout: l, stallSeconds: stallSeconds, classes: classes, cost: costs, p2p: p2p, gOff: gOff, shard: shard}
	p.lengths, p.exec = lengths, exec
	if exec.CP == sched.Ulysses {
		heads := network.MaxCPDegree(sched.Ulysses, m.topo, m.job.Model)
		for _, mb := range l.Plan.Microbatches {
			for _, g := range mb.Groups {
				if g.Layout == nil && g.Size > heads {
					it.fallbackSlots += int64(g.Size)
				}
			}
		}
	}
	// The first class records every group's shard for the memory model
	// (recordShard), domain by domain.
	it.gOff = append(it.gOff[:0], 0)
	p.shard, p.record = slices.Grow(it.shard[:0], groupsOf(l.Plan)), true
	if p.parts != nil {
		p.parts.off = make([]int32, classes*nd)
		p.parts.groups = p.parts.groups[:0]
	}
	for c := range classes {
		t := m.topo.ForStage(c)
		shared := !m.opts.NoComm && t.Contended()
		for i := 0; i < nd; {
			// The domains of one MB run at once: on a fabric that can
			// contend, their collectives share links (network.Window). The
			// first pass prices them alone and places their flows; when a
			// link is oversubscribed a second pass prices the MB's groups
			// stretched.
			j := i + 1
			for j < nd && l.Domains[j].MB == l.Domains[i].MB {
				j++
			}
			p.pass = passAlone
			if shared {
				p.cpWin.Reset(t)
				p.moeWin.Reset(t)
				p.pass = passRecord
			}
			for k := i; k < j; k++ {
				if p.parts != nil {
					p.parts.off[c*nd+k] = int32(len(p.parts.groups))
				}
				dc, err := p.domain(t, &l.Domains[k])
				if err != nil {
					p.record = false
					return err
				}
				costs[c*nd+k] = dc
				if p.record {
					it.gOff = append(it.gOff, int32(len(p.shard)))
				}
			}
			if shared && p.solveWindows() {
				rec := p.record
				p.record, p.pass, p.gi, p.bi = false, passStretched, 0, 0
				for k := i; k < j; k++ {
					dc, err := p.domain(t, &l.Domains[k])
					if err != nil {
						return err
					}
					costs[c*nd+k] = dc
				}
				p.record = rec
			}
			i = j
		}
		p.record = false
	}
	it.shard, p.shard = p.shard, nil
	if !m.opts.NoComm && m.topo.PP >= 2 {
		// Every boundary is crossed by every domain (forward and backward):
		// priced once here instead of at each crossing. A domain's fullest
		// rank is the same in every class.
		nb := m.topo.PP - 1
		p2p = slices.Grow(p2p, nb*nd)[:nb*nd]
		for b := range nb {
			for i := range l.Domains {
				bytes := network.P2PActivationBytes(m.topo, m.job.Model.Hidden, costs[i].maxTokens)
				p2p[b*nd+i] = network.P2PSeconds(m.topo, b, l.Domains[i].FirstRank, bytes)
			}
		}
		it.p2p = p2p
		if m.topo.Contended() {
			p.stretchP2P(it, l)
		}
	}
	return nil
}

// The passes of a micro-batch's pricing on a fabric that can contend.
const (
	passAlone     = iota // no window: every collective priced alone
	passRecord           // priced alone, flows placed in the windows
	passStretched        // priced on the topology its window slowed
)

// solveWindows shares the MB's windows and reports whether any collective
// is stretched (a second pass is needed).
func (p *pricer) solveWindows() bool {
	p.cpWin.Solve()
	p.moeWin.Solve()
	for _, w := range []*network.Window{&p.cpWin, &p.moeWin} {
		for id := range w.Demands() {
			if w.Stretch(id) > 1 {
				return true
			}
		}
	}
	return false
}

// cpTopology is the topology the next group's CP collectives are priced on
// in the current pass: t itself, or in the stretched pass t slowed by the
// group's stretch (groups are taken in the order the record pass placed
// them).
func (p *pricer) cpTopology(t network.Topology) network.Topology {
	if p.pass != passStretched {
		return t
	}
	sigma := p.cpWin.Stretch(p.gi)
	p.gi++
	return t.Slowed(sigma)
}

// stretchP2P reprices every pipeline transfer of the layout with the
// boundary's transfers of one MB sharing links (network.Window,
// PatternPeerStage): all the MB's domains send across the boundary at once.
func (p *pricer) stretchP2P(it *Iteration, l *step.Layout) {
	m := p.m
	nd := len(l.Domains)
	for b := range m.topo.PP - 1 {
		t := m.topo.ForStage(b)
		for i := 0; i < nd; {
			j := i + 1
			for j < nd && l.Domains[j].MB == l.Domains[i].MB {
				j++
			}
			p.cpWin.Reset(t)
			for k := i; k < j; k++ {
				d := &l.Domains[k]
				bytes := network.P2PActivationBytes(m.topo, m.job.Model.Hidden, it.cost[k].maxTokens)
				p.cpWin.Add(network.Demand{Ranks: network.Contiguous(d.FirstRank, d.Size), Pattern: network.PatternPeerStage,
					NICSeconds: network.P2PNICSeconds(m.topo, b, d.FirstRank, bytes)})
			}
			p.cpWin.Solve()
			for k := i; k < j; k++ {
				if sigma := p.cpWin.Stretch(k - i); sigma > 1 {
					d := &l.Domains[k]
					bytes := network.P2PActivationBytes(m.topo, m.job.Model.Hidden, it.cost[k].maxTokens)
					it.p2p[b*nd+k] = network.P2PSeconds(m.topo.Slowed(sigma), b, d.FirstRank, bytes)
				}
			}
			i = j
		}
	}
}

// groupsOf counts a plan's groups.
func groupsOf(plan *sched.Plan) int {
	n := 0
	for _, mb := range plan.Microbatches {
		n += len(mb.Groups)
	}
	return n
}

// pricer prices the domains of one plan, in storage reused from one plan to
// the next.
type pricer struct {
	m       *Model
	lengths []int
	exec    Exec
	blocks  []int // per EP block of a domain, the fullest rank's tokens
	// heads[dev] is the most tokens a rank of device dev holds in the domain
	// (mixed clusters).
	heads []int
	ops   []compute.Op // a layer's or the head's ops
	// own sums the rank-weighted own layer times of the domain's groups
	// being priced, [dense, moe][forward, backward, recomputed backward]
	// (raise, settleHeld).
	own [2][3]float64
	// record makes domain append each group's shard to shard.
	record bool
	shard  []groupShard
	// parts, when set (Model.Breakdown), records what the first pass priced
	// of every group, class by class and domain by domain, for the
	// breakdown to read instead of pricing again.
	parts *partsRecord
	// memo[dev][tokens] memoises a rank's layer ops and head on device dev
	// for tokens below memoTokens: many groups of a plan, and of the next,
	// hold the same per-rank tokens.
	memo [][]tokenCost
	// memoSet[dev] lists the entries of memo[dev] set so far, up to its
	// capacity, memoSetCap (Release clears only those, or all of memo[dev]
	// when the list is full).
	memoSet [][]int32
	// cpWin and moeWin are the current MB's CP and MoE windows; pass is
	// the pricing pass (passAlone, passRecord, passStretched) and gi, bi
	// the next group and EP block of the MB in the stretched pass.
	cpWin, moeWin network.Window
	pass, gi, bi  int
}

// partsRecord is what the pricer's first pass priced of every group of a
// layout, for Model.Breakdown: off[class·domains + domain] is the index in
// groups of the domain's first group, its groups following in order.
type partsRecord struct {
	off    []int32
	groups []groupPrice
}

// groupPrice is one group's pricing per layer kind [dense, moe], on the
// slowest device among its ranks, priced alone (the first pass): its
// compute (c; a CP × HP layout's slowest-rank maxima in lm), whether its CP
// collectives were priced (comm: a group of more than one rank with
// communication on) and how (grp, no layout), their exposed seconds
// [forward, backward] and the layer's TP, FSDP and recomputation extras.
type groupPrice struct {
	c       groupCompute
	lm      layoutMax
	comm    bool
	grp     network.CPGroup
	exposed [2][2]float64
	x       [2]layerExtra
}

// recordPart appends a group's record when the first pass records parts
// (nil otherwise); the record is filled as the group is priced.
func (p *pricer) recordPart() *groupPrice {
	if p.parts == nil || p.pass == passStretched {
		return nil
	}
	p.parts.groups = append(p.parts.groups, groupPrice{})
	return &p.parts.groups[len(p.parts.groups)-1]
}

// memoTokens bounds the token counts memo holds (a dense table per device up
// to the most tokens met, 104 bytes an entry: 13 MiB at most); more tokens
// are priced each time.
const memoTokens = 1 << 17

// tokenCost is what tokens tokens cost on one device: a rank's layer ops
// (when hasOps) and head (when hasHead) for them, and the core attention of
// a sequence of that length on one rank (when hasAttn).
type tokenCost struct {
	layer                    layerOpsCost
	head, attn               [2]float64
	hasOps, hasHead, hasAttn bool
}

// memoOf returns the memo entry of tokens on dev, nil when tokens is past
// memoTokens.
func (p *pricer) memoOf(dev, tokens int) *tokenCost {
	if tokens >= memoTokens {
		return nil
	}
	if p.memo == nil {
		p.memo = make([][]tokenCost, len(p.m.devices))
		p.memoSet = make([][]int32, len(p.m.devices))
		for dev := range p.memoSet {
			p.memoSet[dev] = make([]int32, 0, memoSetCap)
		}
	}
	tab := p.memo[dev]
	if tokens >= len(tab) {
		grown := memoTable(min(max(tokens+1, 2*len(tab), 1024), memoTokens))
		copy(grown, tab)
		p.memo[dev], tab = grown, grown
	}
	e := &tab[tokens]
	if set := p.memoSet[dev]; !e.hasOps && !e.hasHead && !e.hasAttn && len(set) < cap(set) {
		p.memoSet[dev] = append(set, int32(tokens)) // its caller sets it
	}
	return e
}

// memoSetCap bounds the entries of a memo table listed as set (pricer.memoSet):
// past an eighth of the largest table, clearing the whole table is as cheap.
const memoSetCap = memoTokens / 8

// memoTables pools cleared memo tables (*[]tokenCost, any length) that
// Simulators released. An entry holds nothing of the Model it served once
// cleared (its has* flags false), so any Model may take it.
var memoTables sync.Pool

// memoTable returns a cleared memo table of at least n entries: a pooled
// one at its full capacity when it is large enough (a pooled one too small
// is dropped), else a new one. Only released tables are pooled, so the pool
// holds about one table per Simulator released and not yet followed.
func memoTable(n int) []tokenCost {
	if p, ok := memoTables.Get().(*[]tokenCost); ok && cap(*p) >= n {
		return (*p)[:cap(*p)]
	}
	return make([]tokenCost, n)
}

// putMemoTable clears tab, whose entries set are listed in set (all of
// them unless set is full), and pools it.
func putMemoTable(tab []tokenCost, set []int32) {
	if cap(tab) == 0 {
		return
	}
	tab = tab[:cap(tab)]
	if len(set) == cap(set) || len(set) > len(tab)/8 {
		clear(tab)
	} else {
		for _, i := range set {
			tab[i] = tokenCost{}
		}
	}
	memoTables.Put(&tab)
}

// layerOpsCost is a rank's layer ops per layer kind: every op, the ops of
// the all-to-all overlap window (compute.AllToAllWindowOps) and the GEMMs
// (what TP communication overlap hides behind), [dense, moe][forward,
// backward].
type layerOpsCost struct{ ops, window, gemm [2][2]float64 }

// layerOpsSeconds prices the dense and MoE layer's ops for tokens tokens on
// device dev (memoised).
func (p *pricer) layerOpsSeconds(dev, tokens int) layerOpsCost {
	e := p.memoOf(dev, tokens)
	if e != nil && e.hasOps {
		return e.layer
	}
	m := p.m
	var c layerOpsCost
	for kind, l := range [2]int{m.denseLayer, m.moeLayer} {
		if l >= 0 {
			p.ops = m.devices[dev].Compute.AppendLayerOps(p.ops[:0], l, tokens)
			c.ops[kind][0], c.ops[kind][1] = compute.OpsSeconds(p.ops)
			c.gemm[kind][0], c.gemm[kind][1] = compute.OpsSeconds(p.ops, compute.OpKindGEMM)
			for _, o := range p.ops {
				if slices.Contains(compute.AllToAllWindowOps, o.Name) {
					c.window[kind][0] += o.FwdSeconds
					c.window[kind][1] += o.BwdSeconds
				}
			}
		}
	}
	if e != nil {
		e.layer, e.hasOps = c, true
	}
	return c
}

// headSeconds prices the head for tokens tokens on device dev (memoised):
// compute.Compute.HeadSeconds.
func (p *pricer) headSeconds(dev, tokens int) (fwd, bwd float64) {
	e := p.memoOf(dev, tokens)
	if e != nil && e.hasHead {
		return e.head[0], e.head[1]
	}
	p.ops = p.m.devices[dev].Compute.AppendHeadOps(p.ops[:0], tokens)
	fwd, bwd = compute.OpsSeconds(p.ops)
	if e != nil {
		e.head, e.hasHead = [2]float64{fwd, bwd}, true
	}
	return fwd, bwd
}

// groupTokens is a group's per-rank tokens ⌈Σ s / k⌉ and its total Σ s.
func (p *pricer) groupTokens(g sched.Group) (perRank, total int, err error) {
	if g.Size < 1 {
		return 0, 0, fmt.Errorf("group at rank %d has %d ranks", g.FirstRank, g.Size)
	}
	for _, id := range g.Seqs {
		if id < 0 || id >= len(p.lengths) {
			return 0, 0, fmt.Errorf("group at rank %d names sequence %d outside the batch [0, %d)", g.FirstRank, id, len(p.lengths))
		}
		total += p.lengths[id]
	}
	return (total + g.Size - 1) / g.Size, total, nil
}

// recordShard appends group g's shard (memory) to p.shard: its per-rank
// tokens (the fullest rank's under a CP × HP layout) and, when the memory
// model counts them, Σ s²/k. Its sequences were checked by groupTokens.
func (p *pricer) recordShard(g sched.Group, perRank int) {
	sh := groupShard{tokens: float64(perRank)}
	if p.m.scores { // only a kernel that keeps the scores needs them
		for _, id := range g.Seqs {
			s := float64(p.lengths[id])
			sh.scores += s * s
		}
		sh.scores /= float64(g.Size)
	}
	if g.Layout != nil {
		var most int
		for _, t := range g.Layout.ShardTokens {
			most = max(most, t)
		}
		sh.tokens = float64(most)
	}
	p.shard = append(p.shard, sh)
}

// cpExec returns the execution of a group of degree k and its ring degree
// (decided on stage 0's layout).
func (p *pricer) cpExec(k int) (sched.CPExec, int) {
	m := p.m
	e := p.exec.CP
	if e == sched.Ulysses && k > network.MaxCPDegree(sched.Ulysses, m.topo, m.job.Model) {
		e = sched.UlyssesRing
	}
	switch e {
	case sched.Ring, sched.AllGatherKV:
		// AllGatherKV: each rank's two zigzag query chunks meet the gathered
		// K/V, the ring's kernel shapes.
		return e, k
	case sched.UlyssesRing:
		return e, k / network.UlyssesDegreeWithin(m.topo, m.job.Model, k, m.opts.UlyssesAcrossNodes)
	}
	return e, 1
}

// groupCompute is a group's attention seconds and its layer ops' seconds
// (GEMMs, memory-bound ops, launch gaps) per layer kind on the slowest device
// among its ranks, with the part the Q/K/V all-to-alls may hide behind: the
// ops that neither wait for nor feed them (HyDra §5.2.2: the KV down- and
// up-projections, RoPE and concatenation, the gate projection). The rest of
// the layer (the query path, attention itself, the output projection and the
// MoE experts) depends on attention's inputs or output and cannot hide them.
type groupCompute struct {
	attn   [2]float64    // forward, backward
	ops    [2][2]float64 // [dense, moe][forward, backward], every op of the layer
	window [2][2]float64 // [dense, moe][forward, backward], the overlap window
	gemm   [2][2]float64 // [dense, moe][forward, backward], the GEMMs
}

func (p *pricer) compute(g sched.Group, per, ring int) groupCompute {
	m := p.m
	var out groupCompute
	seen := -1
	for r := g.FirstRank; r <= g.LastRank(); r++ {
		dev := 0
		if m.rankDevice != nil {
			dev = m.rankDevice[r]
		}
		if dev == seen {
			continue
		}
		seen = dev
		comp := m.devices[dev].Compute
		var c groupCompute
		for _, id := range g.Seqs {
			s := p.lengths[id]
			if s == 0 {
				continue
			}
			f, b := p.attention(comp, dev, s, g.Size, ring)
			c.attn[0] += f
			c.attn[1] += b
		}
		lc := p.layerOpsSeconds(dev, per)
		c.ops, c.window, c.gemm = lc.ops, lc.window, lc.gemm
		if c.attn[0]+c.ops[1][0]+c.ops[0][0] > out.attn[0]+out.ops[1][0]+out.ops[0][0] {
			out = c
		}
		if m.rankDevice == nil {
			break // every other rank is on device 0 too
		}
	}
	return out
}

// attention is the core attention of one sequence of s tokens on device dev
// (comp) in a group of k ranks with a ring of ring, at the kernel block the
// ring implies, forward and backward: memoised by s for k = ring = 1, the
// one-rank groups that hold most of a batch's sequences.
func (p *pricer) attention(comp *compute.Compute, dev, s, k, ring int) (fwd, bwd float64) {
	var e *tokenCost
	if k == 1 && ring == 1 {
		if e = p.memoOf(dev, s); e != nil && e.hasAttn {
			return e.attn[0], e.attn[1]
		}
	}
	blk := compute.KernelBlockTokens(s, ring)
	fwd, bwd = comp.AttentionFwdSeconds(s, k, blk), comp.AttentionBwdSeconds(s, k, blk)
	if e != nil {
		e.attn, e.hasAttn = [2]float64{fwd, bwd}, true
	}
	return fwd, bwd
}

// domain prices one domain on the stages of topology t.
func (p *pricer) domain(t network.Topology, d *step.Domain) (domainCost, error) {
	m := p.m
	var dc domainCost
	if len(d.Groups) == 0 {
		// An idle block of a global MB: it runs the MB empty, in no collective
		// with anyone (its EP block holds no token).
		return dc, nil
	}
	nb := d.Size / m.ep
	p.blocks = append(p.blocks[:0], make([]int, nb)...)
	p.own = [2][3]float64{}
	p.heads = append(p.heads[:0], make([]int, len(m.devices))...)
	for _, g := range d.Groups {
		per, total, err := p.groupTokens(g)
		if err != nil {
			return dc, fmt.Errorf("costmodel: microbatch %d: %w", d.MB, err)
		}
		if p.record {
			p.recordShard(g, per)
		}
		gp := p.recordPart()
		if g.Layout != nil {
			if err := p.layoutGroup(t, d, g, int64(total), &dc, gp); err != nil {
				return dc, fmt.Errorf("costmodel: microbatch %d group at rank %d (degree %d): %w", d.MB, g.FirstRank, g.Size, err)
			}
			continue
		}
		dc.maxTokens = max(dc.maxTokens, per)
		if m.rankDevice != nil {
			for r := g.FirstRank; r <= g.LastRank(); r++ {
				p.heads[m.rankDevice[r]] = max(p.heads[m.rankDevice[r]], per)
			}
		}
		for b := (g.FirstRank - d.FirstRank) / m.ep; b <= (g.LastRank()-d.FirstRank)/m.ep; b++ {
			p.blocks[b] = max(p.blocks[b], per)
		}
		exec, ring := p.cpExec(g.Size)
		c := p.compute(g, per, ring)
		if gp != nil {
			gp.c = c
		}
		tg := t
		if !m.opts.NoComm && g.Size > 1 {
			tg = p.cpTopology(t)
		}
		placed := false
		for kind, l := range [2]int{m.denseLayer, m.moeLayer} {
			if l < 0 {
				continue
			}
			wf, wb := c.window[kind][0], c.window[kind][1]
			compF, compB := c.ops[kind][0]+c.attn[0], c.ops[kind][1]+c.attn[1]
			f, b := compF, compB
			if !m.opts.NoComm && g.Size > 1 {
				grp := network.CPGroup{Exec: exec, FirstRank: g.FirstRank, Degree: g.Size,
					UlyssesDegree: g.Size / ring, OverlapAllToAll: p.exec.OverlapAllToAll}
				cp, err := network.CPLayer(tg, m.job.Model, grp, total,
					network.CPOverlap{AttentionFwdSeconds: c.attn[0], AttentionBwdSeconds: c.attn[1],
						IndependentFwdSeconds: wf, IndependentBwdSeconds: wb})
				if err != nil {
					return dc, fmt.Errorf("costmodel: microbatch %d group at rank %d (degree %d): %w", d.MB, g.FirstRank, g.Size, err)
				}
				if p.pass == passRecord && !placed {
					p.cpWin.Add(network.CPDemand(t, m.job.Model, grp, cp.Fwd))
					placed = true
				}
				if gp != nil {
					gp.comm, gp.grp = true, grp
				}
				f += cp.Fwd.ExposedSeconds
				b += cp.Bwd.ExposedSeconds
			}
			x := m.layerExtra(t, layerIn{kind: kind, perRank: per, ops: c.ops[kind], attn: c.attn, gemm: c.gemm[kind], cpFwd: f - compF}) // TP, FSDP and recomputation (layer.go)
			p.raise(&dc, kind, g.Size, [2]float64{compF, compB}, [2]float64{f - compF, b - compB}, x)
			if gp != nil {
				gp.exposed[kind], gp.x[kind] = [2]float64{f - compF, b - compB}, x
			}
			if g.Offload > 0 {
				o, err := p.offloadExposed(g, kind, per, f+x.tpFwd+x.fsdpFwd, b+x.tpBwd+x.fsdpBwd)
				if err != nil {
					return dc, fmt.Errorf("costmodel: microbatch %d: %w", d.MB, err)
				}
				for k := range 2 {
					dc.offload[kind][k] = max(dc.offload[kind][k], o[k])
				}
			}
		}
	}
	p.settleHeld(&dc, d.Size)
	if !m.opts.NoComm && m.moeLayer >= 0 && m.ep > 1 {
		for b, tok := range p.blocks {
			tb := t
			if p.pass == passStretched {
				tb = t.Slowed(p.moeWin.Stretch(p.bi))
				p.bi++
			}
			first := d.FirstRank + b*m.ep
			c := m.moeComm(tb, first, tok)
			if p.pass == passRecord {
				p.moeWin.Add(network.Demand{Ranks: network.Contiguous(first, m.ep), Pattern: network.PatternAllToAll, NICSeconds: c.NICSeconds})
			}
			dc.moeComm[0], dc.moeComm[1] = max(dc.moeComm[0], c.FwdSeconds), max(dc.moeComm[1], c.BwdSeconds)
		}
		if m.job.Parallel.OverlapMoEComm {
			// Hidden behind the other microbatch's compute of the layer.
			for k := range 2 {
				dc.moeComm[k] = max(0, dc.moeComm[k]-(dc.moe[k]-dc.moeCPComm[k]))
			}
		}
	}
	if dc.maxTokens > 0 {
		if m.rankDevice == nil {
			dc.head[0], dc.head[1] = p.headSeconds(0, dc.maxTokens)
		} else {
			for dev, tok := range p.heads {
				if tok > 0 {
					df, db := p.headSeconds(dev, tok)
					dc.head[0], dc.head[1] = max(dc.head[0], df), max(dc.head[1], db)
				}
			}
		}
	}
	return dc, nil
}

// lookup returns domain d's per-layer costs on stage and the layers of chunk;
// ok is false for a question outside the priced layout (an engine bug).
func (it *Iteration) lookup(stage, chunk int, d *step.Domain) (domainCost, chunkLayers, bool) {
	m := it.m
	if stage < 0 || stage >= len(m.layerKind) || chunk < 0 || chunk >= m.vpp || d == nil ||
		d.Index < 0 || d.Index >= len(it.layout.Domains) || it.layout.Domains[d.Index].FirstRank != d.FirstRank ||
		it.layout.Domains[d.Index].MB != d.MB {
		return domainCost{}, chunkLayers{}, false
	}
	class := 0
	if it.classes > 1 {
		class = stage
	}
	return it.cost[class*len(it.layout.Domains)+d.Index], m.layerKind[stage][chunk], true
}

// times is a chunk's forward and backward seconds from the domain's
// per-layer ones (comm: their exposed communication parts): dense layers ×
// dense, MoE layers × (moe + the EP dispatch and combine moeComm), with a
// recomputed layer's backward at recompute.
func (ck chunkLayers) times(dc *domainCost, comm bool) [2]float64 {
	dense, moe, rec := dc.dense, dc.moe, dc.recompute
	if comm {
		dense, moe, rec = dc.denseComm, dc.moeCPComm, dc.recomputeComm
	}
	fwd := float64(ck.dense)*dense[0] + float64(ck.moe)*(moe[0]+dc.moeComm[0])
	bwd := float64(ck.dense-ck.rdense)*dense[1] + float64(ck.rdense)*rec[0] +
		float64(ck.moe-ck.rmoe)*(moe[1]+dc.moeComm[1]) + float64(ck.rmoe)*(rec[1]+dc.moeComm[1])
	if o := dc.offload; o != ([2][2]float64{}) { // host copies: data movement, counted with the exposed communication
		fwd += float64(ck.odense)*o[0][0] + float64(ck.omoe)*o[1][0]
		bwd += float64(ck.odense)*o[0][1] + float64(ck.omoe)*o[1][1]
	}
	return [2]float64{fwd, bwd}
}

// ChunkSeconds returns the chunk's layers × the domain's per-layer times (see
// the package doc), plus the head (final norm, LM head, loss) on the last
// stage's last chunk. A
// question outside the priced layout gets NaN, which the engine refuses.
func (it *Iteration) ChunkSeconds(stage, chunk int, d *step.Domain) (forward, backward float64) {
	dc, ck, ok := it.lookup(stage, chunk, d)
	if !ok {
		return math.NaN(), math.NaN()
	}
	out := ck.times(&dc, false)
	if stage == len(it.m.layerKind)-1 && chunk == it.m.vpp-1 && dc.maxTokens > 0 {
		out[0] += dc.head[0]
		out[1] += dc.head[1]
	}
	return out[0], out[1]
}

// HeldSeconds is the GPU-seconds (HDP rank-seconds, every stage) the
// iteration's ranks spend held by their domain's slowest CP group: at each
// layer, the domain's time less their own group's, the MoE all-to-all being
// the barrier that binds an EP block (a rank in no group is held the whole
// layer). It is part of the engine's busy time.
func (it *Iteration) HeldSeconds() float64 {
	m := it.m
	nd := len(it.layout.Domains)
	var sum float64
	for s := range m.layerKind {
		class := 0
		if it.classes > 1 {
			class = s
		}
		for _, ck := range m.layerKind[s] {
			for i := range nd {
				h := &it.cost[class*nd+i].held
				sum += float64(ck.dense)*h[0][0] + float64(ck.moe)*h[1][0] +
					float64(ck.dense-ck.rdense)*h[0][1] + float64(ck.rdense)*h[0][2] +
					float64(ck.moe-ck.rmoe)*h[1][1] + float64(ck.rmoe)*h[1][2]
			}
		}
	}
	return sum
}

// ChunkExposedCommSeconds is the part of ChunkSeconds spent in exposed
// communication: per layer, the slowest group's exposed CP communication plus,
// on MoE layers, the EP dispatch and combine (step.CommSplitter).
func (it *Iteration) ChunkExposedCommSeconds(stage, chunk int, d *step.Domain) (forward, backward float64) {
	dc, ck, ok := it.lookup(stage, chunk, d)
	if !ok {
		return math.NaN(), math.NaN()
	}
	out := ck.times(&dc, true)
	return out[0], out[1]
}

// PlannerStallSeconds returns the stall Price was given (step.PlannerStaller).
func (it *Iteration) PlannerStallSeconds() float64 { return it.stallSeconds }

// P2PSeconds is the fullest rank's activations (or gradients, the same size)
// sent over the boundary between the two stages (network.P2PSeconds from the
// lower one; the interleaved wrap from the last stage to the first is priced
// as the last boundary).
func (it *Iteration) P2PSeconds(fromStage, toStage, _ int, d *step.Domain, _ bool) float64 {
	m := it.m
	if m.opts.NoComm || m.topo.PP < 2 {
		return 0
	}
	if _, _, ok := it.lookup(fromStage, 0, d); !ok || toStage < 0 || toStage >= m.topo.PP {
		return math.NaN()
	}
	lo := min(min(fromStage, toStage), m.topo.PP-2)
	return it.p2p[lo*len(it.layout.Domains)+d.Index]
}

// ChunkGradSync is chunk's overlapped reduce-scatter on stage and its last
// bucket's (step.OverlappedGradSyncer); ok is false without
// job.Parallel.OverlapGradReduce.
func (it *Iteration) ChunkGradSync(stage, chunk int) (seconds, lastBucketSeconds float64, ok bool) {
	cs := it.m.chunkSync
	if stage < 0 || stage >= len(cs) || chunk < 0 || chunk >= len(cs[stage]) {
		return 0, 0, false
	}
	c := cs[stage][chunk]
	return c.seconds, c.last, true
}

// GradSyncSeconds is network.GradSync of the stage's parameters per GPU
// (with overlap_grad_reduce, the part the chunks' overlapped
// reduce-scatters leave: the all-gather, or its first bucket's with
// overlap_param_gather).
func (it *Iteration) GradSyncSeconds(stage int) float64 {
	if stage < 0 || stage >= len(it.m.gradSync) {
		return math.NaN()
	}
	return it.m.gradSync[stage]
}

// OptimizerSeconds is the optimizer step over this GPU's shard of the stage's
// parameters: dense/G + expert/(G/ep).
func (it *Iteration) OptimizerSeconds(stage int) float64 {
	if stage < 0 || stage >= len(it.m.optimizer) {
		return math.NaN()
	}
	return it.m.optimizer[stage]
}

// layoutGroup prices group g of domain d, which runs total tokens under its
// CP × HP layout (see the package doc), into dc: every rank's layer ops on
// its own device for its shard, its core attention for its heads over its HP
// group's chunk of every sequence (kernel blocks of the chunk's length), the
// layer's time the slowest rank's ops plus the slowest rank's attention plus
// the exposed communication of network.LayoutCPLayer.
func (p *pricer) layoutGroup(t network.Topology, d *step.Domain, g sched.Group, total int64, dc *domainCost, gp *groupPrice) error {
	m := p.m
	l := g.Layout
	heads := m.job.Model.QueryHeads / max(m.topo.TP, 1)
	if err := l.Check(g, total, heads); err != nil {
		return err
	}
	lm := p.layoutRanks(g, total, heads, func(r, dev, tok int) {
		if m.rankDevice != nil {
			p.heads[dev] = max(p.heads[dev], tok)
		}
		dc.maxTokens = max(dc.maxTokens, tok)
		if b := (r - d.FirstRank) / m.ep; b >= 0 && b < len(p.blocks) {
			p.blocks[b] = max(p.blocks[b], tok)
		}
	})
	ops, window, gemm, attn, most := lm.ops, lm.window, lm.gemm, lm.attn, lm.most
	if gp != nil {
		gp.lm = lm
	}
	var cp network.CPLayerCost
	if !m.opts.NoComm && g.Size > 1 {
		var err error
		for kind, layer := range [2]int{m.denseLayer, m.moeLayer} {
			if layer < 0 {
				continue
			}
			cp, err = network.LayoutCPLayer(t, m.job.Model, g.FirstRank, l, total, heads, network.LayoutOverlap{
				AttentionFwdSeconds: attn[0], AttentionBwdSeconds: attn[1],
				IndependentFwdSeconds: window[kind][0], IndependentBwdSeconds: window[kind][1],
				OverlapAllToAll: p.exec.OverlapAllToAll})
			if err != nil {
				return err
			}
			exposed := [2]float64{cp.Fwd.ExposedSeconds, cp.Bwd.ExposedSeconds}
			x := m.layerExtra(t, layerIn{kind: kind, perRank: most, ops: ops[kind], attn: attn, gemm: gemm[kind], cpFwd: exposed[0]})
			p.raise(dc, kind, g.Size, [2]float64{ops[kind][0] + attn[0], ops[kind][1] + attn[1]}, exposed, x)
			if gp != nil {
				gp.comm, gp.exposed[kind], gp.x[kind] = true, exposed, x
			}
		}
		return nil
	}
	for kind, layer := range [2]int{m.denseLayer, m.moeLayer} {
		if layer >= 0 {
			x := m.layerExtra(t, layerIn{kind: kind, perRank: most, ops: ops[kind], attn: attn, gemm: gemm[kind]})
			p.raise(dc, kind, g.Size, [2]float64{ops[kind][0] + attn[0], ops[kind][1] + attn[1]}, [2]float64{}, x)
			if gp != nil {
				gp.x[kind] = x
			}
		}
	}
	return nil
}

// layoutMax is what layoutRanks finds over a layout group's ranks: the
// slowest rank's layer ops and attention ([dense, moe][fwd, bwd] and [fwd,
// bwd]), the narrowest independent-op window (the all-to-alls' overlap
// room) and the fullest rank's tokens.
type layoutMax struct {
	ops, window, gemm [2][2]float64
	attn              [2]float64
	most              int
}

// layoutRanks is the per-rank pass of a CP × HP layout group g (layout
// checked) for its pricing (layoutGroup): each rank's layer ops on its own
// device at its shard's tokens and its attention, its share of the heads
// and of its HP group's chunk of each sequence (layoutShare). visit, when
// not nil, sees every rank with its device and tokens.
func (p *pricer) layoutRanks(g sched.Group, total int64, heads int, visit func(r, dev, tok int)) layoutMax {
	m := p.m
	l := g.Layout
	chunks := l.Chunks()
	hp := l.HPGroupOf()
	var lm layoutMax
	first := true
	for i, tok := range l.ShardTokens {
		lm.most = max(lm.most, tok)
		r := g.FirstRank + i
		dev := 0
		if m.rankDevice != nil {
			dev = m.rankDevice[r]
		}
		lc := p.layerOpsSeconds(dev, tok)
		for kind := range 2 {
			for k := range 2 {
				lm.ops[kind][k] = max(lm.ops[kind][k], lc.ops[kind][k])
				if first || lc.gemm[kind][k] < lm.gemm[kind][k] {
					lm.gemm[kind][k] = lc.gemm[kind][k]
				}
				if first || lc.window[kind][k] < lm.window[kind][k] {
					lm.window[kind][k] = lc.window[kind][k]
				}
			}
		}
		first = false
		if visit != nil {
			visit(r, dev, tok)
		}
		if l.Heads[i] == 0 || total == 0 {
			continue
		}
		comp := m.devices[dev].Compute
		chunk := int64(chunks[hp[i]])
		share := layoutShare(l.Heads[i], heads, chunk, total)
		var a [2]float64
		for _, id := range g.Seqs {
			s := int64(p.lengths[id])
			if s == 0 {
				continue
			}
			blk := int(max(1, (s*chunk+total-1)/total))
			a[0] += comp.AttentionFwdSeconds(int(s), 1, blk)
			a[1] += comp.AttentionBwdSeconds(int(s), 1, blk)
		}
		lm.attn[0] = max(lm.attn[0], share*a[0])
		lm.attn[1] = max(lm.attn[1], share*a[1])
	}
	return lm
}

// layoutShare is the share of a CP × HP layout group's attention that a
// rank computes: its rankHeads of the TP rank's heads, of its HP group's
// chunk of each sequence (total the group's tokens; 0 without heads).
func layoutShare(rankHeads, heads int, chunk, total int64) float64 {
	if rankHeads == 0 || total == 0 {
		return 0
	}
	return float64(rankHeads) / float64(heads) * float64(chunk) / float64(total)
}

// raise raises dc's per-layer times of one layer kind (0 dense, 1 MoE) to
// a group of ranks ranks, when the group is slower: its compute (ops +
// attention) and exposed CP communication in each pass, plus the TP
// collectives and, for a recomputed layer's backward, the forward run again
// (x, layer.go). It adds the group's own times to p.own for held.
func (p *pricer) raise(dc *domainCost, kind, ranks int, comp, exposed [2]float64, x layerExtra) {
	dst, comm := &dc.dense, &dc.denseComm
	if kind == 1 {
		dst, comm = &dc.moe, &dc.moeCPComm
	}
	tp := [2]float64{x.tpFwd + x.fsdpFwd, x.tpBwd + x.fsdpBwd}
	r := float64(ranks)
	for k := range 2 {
		sec := comp[k] + exposed[k] + tp[k]
		p.own[kind][k] += r * sec
		if sec > dst[k] {
			dst[k], comm[k] = sec, exposed[k]+tp[k]
		}
	}
	sec := comp[1] + exposed[1] + tp[1] + x.recomputeCompute + x.recomputeComm
	p.own[kind][2] += r * sec
	if sec > dc.recompute[kind] {
		dc.recompute[kind], dc.recomputeComm[kind] = sec, exposed[1]+tp[1]+x.recomputeComm
	}
}

// settleHeld fills dc.held once dc's layer times are final, for a domain of
// size ranks: every rank spends the layer's time, its group's own
// (p.own, rank-weighted) less, a rank in no group all of it.
func (p *pricer) settleHeld(dc *domainCost, size int) {
	m := p.m
	for kind, layer := range [2]int{m.denseLayer, m.moeLayer} {
		if layer < 0 {
			continue
		}
		full := [3]float64{dc.dense[0], dc.dense[1], dc.recompute[0]}
		if kind == 1 {
			full = [3]float64{dc.moe[0], dc.moe[1], dc.recompute[1]}
		}
		for k := range 3 {
			dc.held[kind][k] = max(0, float64(size)*full[k]-p.own[kind][k])
		}
	}
}
