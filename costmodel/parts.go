package costmodel

import (
	"fmt"
	"math"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
)

// This file breaks a priced chunk into what one GPU runs, layer by layer:
// its compute, the collectives it takes part in (their kind, group and bytes)
// and the time its sync domain holds it, for exporters of execution traces
// (experiment's Chakra traces). It prices nothing new: every number comes
// from the functions Price uses (pricer.compute, network.CPLayer and
// LayoutCPLayer, layerExtra, network.MoELayer, headSeconds, network.GradSync),
// and a chunk's parts sum to Iteration.ChunkSeconds.

// CollectiveKind is the type of a collective.
type CollectiveKind uint8

// The collectives the cost model prices.
const (
	AllToAll CollectiveKind = iota + 1
	AllGather
	ReduceScatter
	AllReduce
)

// String names the kind as NCCL does.
func (k CollectiveKind) String() string {
	switch k {
	case AllToAll:
		return "all-to-all"
	case AllGather:
		return "all-gather"
	case ReduceScatter:
		return "reduce-scatter"
	case AllReduce:
		return "all-reduce"
	}
	return fmt.Sprintf("CollectiveKind(%d)", int(k))
}

// GroupKind is the communicator a collective runs on.
type GroupKind uint8

// The communicators. Every one but GroupTP is a set of HDP ranks of one
// pipeline stage whose GPUs of one TP index take part.
const (
	// GroupCP is a CP group, the inner Ulysses block of a Ulysses × ring
	// group or one of its strided outer rings, or an HP group of a CP × HP
	// layout.
	GroupCP GroupKind = iota + 1
	// GroupTP is the tp GPUs of one HDP rank (Collective.Ranks: that rank).
	GroupTP
	// GroupEP is an EP block: ep consecutive, aligned HDP ranks.
	GroupEP
	// GroupDP is the whole pool: the dense gradients' data-parallel group.
	GroupDP
	// GroupExpertDP is an expert-DP group: the G/ep ranks e, e+ep, … holding
	// the same expert shard.
	GroupExpertDP
)

// Collective is one collective a GPU runs.
type Collective struct {
	// Name says what it moves: "cp-a2a" (Ulysses' Q, K, V and output
	// all-to-alls together), "cp-ring-ag" and "cp-ring-rs" (a ring's K/V and
	// dK/dV), "cp-ag-kv" and "cp-rs-dkv" (AllGatherKV), "tp-ag-attn",
	// "tp-rs-attn", "tp-ag-mlp", "tp-rs-mlp" (sequence parallelism) or
	// "tp-ar-attn", "tp-ar-mlp", "moe-dispatch", "moe-combine", "dp-rs",
	// "dp-ag", "dp-ar", "edp-rs", "edp-ag", "edp-ar".
	Name string
	// Kind is its type.
	Kind CollectiveKind
	// Group and Ranks are its communicator: HDP ranks of the GPU's stage.
	Group GroupKind
	Ranks network.Ranks
	// Bytes is the buffer per GPU as NCCL counts it: an all-to-all's send
	// buffer, an all-gather's output, a reduce-scatter's input, an
	// all-reduce's buffer. Every GPU of the communicator has the same.
	Bytes float64
	// Seconds is its part of the chunk's time: the exposed seconds the cost
	// model charges (less than the collective's own time when it hides
	// behind compute).
	Seconds float64
}

// Work is a span of computation on one GPU.
type Work struct {
	// Seconds is its time.
	Seconds float64
	// FLOPs counts its GEMMs' and core attention's floating-point operations
	// (a backward GEMM as two, core attention's backward at
	// job.Model.AttentionBwdFactor), Bytes its GEMMs' operands, memory-bound
	// ops' HBM traffic and core attention's inputs and outputs
	// (attentionBytes): a roofline's inputs, not the cost model's time
	// (which also counts launches). Work that computes has both above 0.
	FLOPs, Bytes float64
}

// LayerPart is one layer of a chunk (or its head) on one GPU in one pass,
// in the order the GPU runs it: the recomputed forward of a recomputed
// layer's backward and its collectives, then the pass's compute and its
// collectives (CP, then TP), then the MoE all-to-alls, then the time the
// GPU is held by its domain's slowest CP group. Its slices may be shared
// with other parts: do not modify them.
type LayerPart struct {
	// Layer is the model layer (0-based), -1 for the head (final norm, LM
	// head and loss) of the last stage's last chunk.
	Layer int
	// MoE is set on an MoE layer.
	MoE bool
	// Recomputed is set on the backward of a layer that runs its forward
	// again first: Recompute (the whole forward under full recomputation,
	// the core attention's under selective) and RecomputeComm (the
	// forward's CP and TP collectives again, full recomputation only).
	Recomputed    bool
	Recompute     Work
	RecomputeComm []Collective
	// Compute is the pass's compute: the layer's ops and core attention
	// (the group's, on its slowest device), or the head's.
	Compute Work
	// Comm is the pass's CP then TP collectives.
	Comm []Collective
	// MoEComm is the dispatch and combine all-to-alls on the GPU's EP block
	// (backward: combine then dispatch), empty on a dense layer or ep 1.
	MoEComm []Collective
	// HeldSeconds is the rest of the domain's layer time: the domain moves
	// in lock-step at its slowest CP group's pace and its slowest EP
	// block's all-to-alls (a GPU in no group is held the whole layer), and
	// on a fabric whose links contend the stretch of the GPU's own CP
	// collectives (priced here alone); and on a layer selective offload
	// moves, the domain's wait for its slowest group's host copies.
	HeldSeconds float64
}

// Seconds is the part's time: everything in it, held time included.
func (p *LayerPart) Seconds() float64 {
	s := p.Recompute.Seconds
	for _, c := range p.RecomputeComm {
		s += c.Seconds
	}
	s += p.Compute.Seconds
	for _, c := range p.Comm {
		s += c.Seconds
	}
	for _, c := range p.MoEComm {
		s += c.Seconds
	}
	return s + p.HeldSeconds
}

// Breakdown is a priced iteration that can say what each GPU runs: its
// Iteration answers the engine's questions, and LayerParts, P2PBytes and
// GradSyncParts break them down. It keeps the batch lengths it was priced
// for. It is not safe for concurrent use.
type Breakdown struct {
	*Iteration
	p pricer
	// rec is what the pricing recorded of every group: the breakdown reads
	// it instead of pricing a group again.
	rec *partsRecord
}

// Breakdown prices the layout as Price does, recording each group's
// pricing (its compute, exposed CP communication and the layer's extras)
// for LayerParts to read.
func (m *Model) Breakdown(l *step.Layout, lengths []int, exec Exec, stallSeconds float64) (*Breakdown, error) {
	s := m.getScratch()
	defer m.putScratch(s)
	rec := &partsRecord{}
	s.parts = rec
	defer func() { s.parts = nil }()
	it := new(Iteration)
	if err := s.price(it, l, lengths, exec, stallSeconds); err != nil {
		return nil, err
	}
	return &Breakdown{Iteration: it, p: pricer{m: m, lengths: lengths, exec: exec}, rec: rec}, nil
}

// passParts is one layer kind's parts on one GPU: forward, backward and the
// recomputed forward, and the GPU's own time of each (as raise counts it).
type passParts struct {
	fwd, bwd, rec          Work
	fwdComm, bwdComm       []Collective
	recComm                []Collective
	fwdSec, bwdSec, recSec float64 // own layer seconds: forward, backward, recomputed backward
}

// rankParts is what one GPU of a domain runs per layer kind.
type rankParts struct {
	kinds  [2]passParts // dense, MoE
	tokens int          // the GPU's HDP rank's tokens
	dev    int
	// moe is the EP block's all-to-alls, forward and backward, and their
	// seconds.
	moe    [2][]Collective
	moeSec [2]float64
}

// LayerParts returns the layers of chunk on stage for HDP rank rank of
// domain d, in the order the pass runs them (backward: the head first, then
// the last layer first). Their Seconds sum to ChunkSeconds (to rounding).
// It fails for a question outside the priced layout or a rank outside d.
func (b *Breakdown) LayerParts(stage, chunk int, d *step.Domain, rank int, backward bool) ([]LayerPart, error) {
	it := b.Iteration
	m := it.m
	dc, ck, ok := it.lookup(stage, chunk, d)
	if !ok {
		return nil, fmt.Errorf("costmodel: stage %d chunk %d domain %+v: outside the priced layout", stage, chunk, d)
	}
	if rank < d.FirstRank || rank > d.LastRank() {
		return nil, fmt.Errorf("costmodel: rank %d outside domain [%d, %d]", rank, d.FirstRank, d.LastRank())
	}
	class := 0
	if it.classes > 1 {
		class = stage
	}
	t := m.topo.ForStage(class)
	rp, err := b.rankParts(t, class, d, rank)
	if err != nil {
		return nil, err
	}
	first, n := m.devices[0].Compute.StageLayers(stage)
	lo, hi := m.job.Parallel.ChunkRange(stage, first, n, chunk)
	head := stage == len(m.layerKind)-1 && chunk == m.vpp-1 && dc.maxTokens > 0
	if got := ck.dense + ck.moe; got != hi-lo {
		return nil, fmt.Errorf("costmodel: chunk %d of stage %d: %d layers priced, %d found", chunk, stage, got, hi-lo)
	}
	pass := 0
	if backward {
		pass = 1
	}
	out := make([]LayerPart, 0, hi-lo+1)
	if head && backward {
		out = append(out, b.headPart(&dc, rp, pass))
	}
	for k := range hi - lo {
		l := lo + k
		if backward {
			l = hi - 1 - k
		}
		out = append(out, b.layerPart(&dc, rp, l, l-lo, memory.Offloadable(l-lo, hi-lo), backward))
	}
	if head && !backward {
		out = append(out, b.headPart(&dc, rp, pass))
	}
	return out, nil
}

// layerPart is layer l (position i in its chunk; offloadable: not one of
// the chunk's last two) of the GPU in one pass.
func (b *Breakdown) layerPart(dc *domainCost, rp *rankParts, l, i int, offloadable, backward bool) LayerPart {
	m := b.m
	kind := 0
	if m.job.Model.IsMoELayer(l) {
		kind = 1
	}
	pp := &rp.kinds[kind]
	lp := LayerPart{Layer: l, MoE: kind == 1}
	domain := [2]*[2]float64{&dc.dense, &dc.moe}[kind]
	var layerSec, own float64
	switch {
	case !backward:
		lp.Compute, lp.Comm = pp.fwd, pp.fwdComm
		layerSec, own = domain[0], pp.fwdSec
	case m.job.Parallel.Recomputed(i):
		lp.Recomputed = true
		lp.Recompute, lp.RecomputeComm = pp.rec, pp.recComm
		lp.Compute, lp.Comm = pp.bwd, pp.bwdComm
		layerSec, own = dc.recompute[kind], pp.recSec
	default:
		lp.Compute, lp.Comm = pp.bwd, pp.bwdComm
		layerSec, own = domain[1], pp.bwdSec
	}
	if kind == 1 {
		p := 0
		if backward {
			p = 1
		}
		lp.MoEComm = rp.moe[p]
		layerSec += dc.moeComm[p]
		own += rp.moeSec[p]
	}
	lp.HeldSeconds = max(0, layerSec-own)
	if offloadable {
		p := 0
		if backward {
			p = 1
		}
		lp.HeldSeconds += dc.offload[kind][p]
	}
	return lp
}

// headPart is the head of the last stage's last chunk on the GPU: its own
// tokens' head, held for the rest of the domain's (its fullest rank's).
func (b *Breakdown) headPart(dc *domainCost, rp *rankParts, pass int) LayerPart {
	lp := LayerPart{Layer: -1}
	if rp.tokens > 0 {
		f, bw := b.p.headSeconds(rp.dev, rp.tokens)
		sec := [2]float64{f, bw}[pass]
		var flops, bytes float64
		b.p.ops = b.m.devices[rp.dev].Compute.AppendHeadOps(b.p.ops[:0], rp.tokens)
		flops, bytes = opsWork(b.p.ops, pass)
		lp.Compute = Work{Seconds: sec, FLOPs: flops, Bytes: bytes}
	}
	lp.HeldSeconds = max(0, dc.head[pass]-lp.Compute.Seconds)
	return lp
}

// attentionBytes is core attention's HBM traffic on a GPU holding tokens
// tokens, forward and backward, as a roofline counts a fused kernel's: its
// inputs read and outputs written once (network.TokenBytes per token).
// Forward: Q, K and V read, O written; backward: Q, K, V, O and dO read, dQ,
// dK and dV written, twice the forward.
func attentionBytes(t network.Topology, model job.Model, tokens int) (fwd, bwd float64) {
	q, k, v, o := network.TokenBytes(t, model)
	fwd = float64(tokens) * (q + k + v + o)
	return fwd, 2 * fwd
}

// opsWork is the FLOPs and bytes of ops in one pass (0 forward, 1 backward):
// GEMMs by shape (the backward's two), memory-bound ops by their bytes.
func opsWork(ops []compute.Op, pass int) (flops, bytes float64) {
	gemms := float64(1 + pass) // the backward's dgrad and wgrad
	for _, o := range ops {
		switch o.Kind {
		case compute.OpKindGEMM:
			flops += gemms * o.Shape.FLOPs()
			bytes += gemms * o.Shape.Bytes()
		case compute.OpKindMemory:
			bytes += [2]float64{o.FwdBytes, o.BwdBytes}[pass]
		}
	}
	return flops, bytes
}

// rankParts is what HDP rank rank runs in domain d per layer kind, on the
// stages of class (topology t): its CP group's compute, CP and TP
// collectives as the pricing recorded them, and its EP block's all-to-alls.
func (b *Breakdown) rankParts(t network.Topology, class int, d *step.Domain, rank int) (*rankParts, error) {
	m, p := b.m, &b.p
	rp := &rankParts{}
	if m.rankDevice != nil {
		rp.dev = m.rankDevice[rank]
	}
	var g *sched.Group
	var gp *groupPrice
	for i := range d.Groups {
		if gr := &d.Groups[i]; gr.FirstRank <= rank && rank <= gr.LastRank() {
			g = gr
			at := int(b.rec.off[class*len(b.layout.Domains)+d.Index]) + i
			if at >= len(b.rec.groups) {
				return nil, fmt.Errorf("costmodel: microbatch %d group at rank %d: not recorded by the pricing", d.MB, gr.FirstRank)
			}
			gp = &b.rec.groups[at]
			break
		}
	}
	if len(d.Groups) == 0 {
		return rp, nil // an idle block: it runs the microbatch empty
	}
	if g != nil {
		per, total, err := p.groupTokens(*g)
		if err != nil {
			return nil, fmt.Errorf("costmodel: microbatch %d: %w", d.MB, err)
		}
		if g.Layout != nil {
			rp.tokens = g.Layout.ShardTokens[rank-g.FirstRank]
			if err := b.layoutParts(t, g, gp, rank, rp); err != nil {
				return nil, fmt.Errorf("costmodel: microbatch %d group at rank %d (degree %d): %w", d.MB, g.FirstRank, g.Size, err)
			}
		} else {
			rp.tokens = per
			if err := b.groupParts(t, g, gp, rank, per, total, rp); err != nil {
				return nil, fmt.Errorf("costmodel: microbatch %d group at rank %d (degree %d): %w", d.MB, g.FirstRank, g.Size, err)
			}
		}
	}
	if !m.opts.NoComm && m.moeLayer >= 0 && m.ep > 1 {
		first := rank / m.ep * m.ep
		tok := 0 // the block's fullest rank's tokens, as domain counts them
		for _, gr := range d.Groups {
			if gr.LastRank() < first || gr.FirstRank >= first+m.ep {
				continue
			}
			if gr.Layout != nil {
				for i, s := range gr.Layout.ShardTokens {
					if r := gr.FirstRank + i; r >= first && r < first+m.ep {
						tok = max(tok, s)
					}
				}
				continue
			}
			per, _, err := p.groupTokens(gr)
			if err != nil {
				return nil, err
			}
			tok = max(tok, per)
		}
		c := m.moeComm(t, first, tok)
		ranks := network.Contiguous(first, m.ep)
		disp := network.AllToAllSeconds(t, first, m.ep, c.DispatchPayloadBytes)
		rp.moeSec = [2]float64{c.FwdSeconds, c.BwdSeconds}
		dispatch := Collective{Name: "moe-dispatch", Kind: AllToAll, Group: GroupEP, Ranks: ranks, Bytes: c.DispatchPayloadBytes}
		combine := Collective{Name: "moe-combine", Kind: AllToAll, Group: GroupEP, Ranks: ranks, Bytes: c.CombinePayloadBytes}
		if c.DispatchPayloadBytes > 0 {
			f, bw := dispatch, dispatch
			f.Seconds, bw.Seconds = min(disp, c.FwdSeconds), min(disp, c.BwdSeconds)
			cf, cb := combine, combine
			cf.Seconds, cb.Seconds = c.FwdSeconds-f.Seconds, c.BwdSeconds-bw.Seconds
			rp.moe = [2][]Collective{{f, cf}, {cb, bw}}
		}
	}
	return rp, nil
}

// groupParts fills rp for rank of group g (even split: per tokens per rank
// of total) from what the pricing recorded of it (gp).
func (b *Breakdown) groupParts(t network.Topology, g *sched.Group, gp *groupPrice, rank, per, total int, rp *rankParts) error {
	m, p := b.m, &b.p
	model := m.job.Model
	tp := float64(max(m.topo.TP, 1))
	var attnFLOPs float64
	for _, id := range g.Seqs {
		attnFLOPs += model.AttentionFwdFLOPs(p.lengths[id])
	}
	attnFLOPs /= float64(g.Size) * tp
	c := gp.c
	for kind, l := range [2]int{m.denseLayer, m.moeLayer} {
		if l < 0 {
			continue
		}
		compF, compB := c.ops[kind][0]+c.attn[0], c.ops[kind][1]+c.attn[1]
		exposed, x := gp.exposed[kind], gp.x[kind]
		pp := &rp.kinds[kind]
		p.ops = m.devices[rp.dev].Compute.AppendLayerOps(p.ops[:0], l, per)
		ff, fb := opsWork(p.ops, 0)
		bf, bb := opsWork(p.ops, 1)
		af, ab := attentionBytes(t, model, per)
		pp.fwd = Work{Seconds: compF, FLOPs: ff + attnFLOPs, Bytes: fb + af}
		pp.bwd = Work{Seconds: compB, FLOPs: bf + attnFLOPs*model.AttentionBwdFactor(), Bytes: bb + ab}
		if gp.comm {
			pp.fwdComm = b.cpCollectives(t, gp.grp, rank, total, c.window[kind][0], exposed[0], false)
			pp.bwdComm = b.cpCollectives(t, gp.grp, rank, total, c.window[kind][1], exposed[1], true)
		}
		pp.fwdComm = append(pp.fwdComm, b.tpCollectives(rank, per, x.tpFwd)...)
		pp.bwdComm = append(pp.bwdComm, b.tpCollectives(rank, per, x.tpBwd)...)
		b.recompute(pp, x, Work{FLOPs: attnFLOPs, Bytes: af})
		b.ownSeconds(pp, [2]float64{compF, compB}, exposed, x)
	}
	return nil
}

// ownSeconds sets pp's own layer times, summed as raise sums them: the
// compute, its exposed CP communication and the layer's TP and FSDP
// extras, the recomputed backward adding the forward it runs again.
func (b *Breakdown) ownSeconds(pp *passParts, comp, exposed [2]float64, x layerExtra) {
	pp.fwdSec = comp[0] + exposed[0] + x.tpFwd + x.fsdpFwd
	pp.bwdSec = comp[1] + exposed[1] + x.tpBwd + x.fsdpBwd
	pp.recSec = pp.bwdSec + x.recomputeCompute + x.recomputeComm
}

// recompute fills pp's recomputed forward from x (layerExtra): under full
// recomputation the forward's work and all its collectives again, under
// selective the core attention's forward (attn: its FLOPs and bytes).
func (b *Breakdown) recompute(pp *passParts, x layerExtra, attn Work) {
	switch b.m.job.Parallel.RecomputeMode() {
	case job.RecomputeFull:
		pp.rec = pp.fwd
		pp.recComm = pp.fwdComm[:len(pp.fwdComm):len(pp.fwdComm)]
	case job.RecomputeSelective:
		pp.rec = attn
	}
	pp.rec.Seconds = x.recomputeCompute
}

// tpCollectives are one pass's TP collectives of a rank holding tokens
// tokens, seconds in all: sequence parallelism's all-gather and
// reduce-scatter around attention and the MLP, or the two all-reduces
// without it (network.TPLayerSeconds).
func (b *Breakdown) tpCollectives(rank, tokens int, seconds float64) []Collective {
	m := b.m
	if m.opts.NoComm || m.topo.TP <= 1 || tokens == 0 {
		return nil
	}
	bytes := float64(tokens) * float64(m.job.Model.Hidden) * 2
	r := network.Contiguous(rank, 1)
	if m.job.Parallel.SequenceParallel {
		s := seconds / 4
		return []Collective{
			{Name: "tp-ag-attn", Kind: AllGather, Group: GroupTP, Ranks: r, Bytes: bytes, Seconds: s},
			{Name: "tp-rs-attn", Kind: ReduceScatter, Group: GroupTP, Ranks: r, Bytes: bytes, Seconds: s},
			{Name: "tp-ag-mlp", Kind: AllGather, Group: GroupTP, Ranks: r, Bytes: bytes, Seconds: s},
			{Name: "tp-rs-mlp", Kind: ReduceScatter, Group: GroupTP, Ranks: r, Bytes: bytes, Seconds: seconds - 3*s},
		}
	}
	s := seconds / 2
	return []Collective{
		{Name: "tp-ar-attn", Kind: AllReduce, Group: GroupTP, Ranks: r, Bytes: bytes, Seconds: s},
		{Name: "tp-ar-mlp", Kind: AllReduce, Group: GroupTP, Ranks: r, Bytes: bytes, Seconds: seconds - s},
	}
}

// cpCollectives are rank's CP collectives in one pass of group grp (tokens
// in all, exposed seconds of them on the critical path, window the compute
// that may hide the Q/K/V all-to-alls):
//
//   - Ulysses: one all-to-all over the group, its four buffers together;
//   - Ring: the K/V ring as its collective equivalent, an all-gather of
//     every rank's K/V (each rank sends r−1 blocks, as the ring's steps do),
//     and in the backward also the reduce-scatter of dK/dV (the blocks that
//     travel with them);
//   - UlyssesRing: the all-to-all on the rank's inner block, then the ring
//     of its strided outer ring;
//   - AllGatherKV: the all-gather of K/V forward, the reduce-scatter of
//     dK/dV backward.
//
// The exposed seconds are split: the all-to-all takes what its own block's
// all-to-alls leave exposed (network.AllToAllSeconds, the overlap rule of
// network.CPLayer), the ring the rest, halves between all-gather and
// reduce-scatter backward.
func (b *Breakdown) cpCollectives(t network.Topology, grp network.CPGroup, rank, tokens int, window, exposed float64, backward bool) []Collective {
	m := b.m
	model := m.job.Model
	if tokens == 0 {
		return nil
	}
	q, k, v, o := network.TokenBytes(t, model)
	x := float64(tokens) / float64(grp.Degree)
	all := network.Contiguous(grp.FirstRank, grp.Degree)
	u := 1
	switch grp.Exec {
	case sched.Ulysses:
		u = grp.Degree
	case sched.UlyssesRing:
		u = grp.UlyssesDegree
	case sched.AllGatherKV:
		kv := float64(grp.Degree) * x * (k + v)
		if backward {
			return []Collective{{Name: "cp-rs-dkv", Kind: ReduceScatter, Group: GroupCP, Ranks: all, Bytes: kv, Seconds: exposed}}
		}
		return []Collective{{Name: "cp-ag-kv", Kind: AllGather, Group: GroupCP, Ranks: all, Bytes: kv, Seconds: exposed}}
	}
	r := grp.Degree / u
	rho := max(1, float64(u)/float64(max(model.KVHeads/t.TP, 1))) // network's K/V replication
	var out []Collective
	ringSec := exposed
	if u > 1 {
		first := grp.FirstRank + (rank-grp.FirstRank)/u*u
		a2a := func(bytes float64) float64 { return network.AllToAllSeconds(t, first, u, bytes) }
		qkv, oSec := a2a(x*q)+a2a(x*rho*k)+a2a(x*rho*v), a2a(x*o)
		sec := qkv + oSec
		if grp.OverlapAllToAll {
			sec = oSec + max(0, qkv-window)
		}
		if r == 1 {
			sec = exposed
		}
		sec = min(sec, exposed)
		ringSec = exposed - sec
		out = append(out, Collective{Name: "cp-a2a", Kind: AllToAll, Group: GroupCP, Ranks: network.Contiguous(first, u),
			Bytes: x * (q + rho*k + rho*v + o), Seconds: sec})
	}
	if r > 1 {
		ring := network.Ranks{First: grp.FirstRank + (rank-grp.FirstRank)%u, Count: r, Stride: u}
		kv := float64(r) * x * rho * (k + v)
		if !backward {
			return append(out, Collective{Name: "cp-ring-ag", Kind: AllGather, Group: GroupCP, Ranks: ring, Bytes: kv, Seconds: ringSec})
		}
		out = append(out,
			Collective{Name: "cp-ring-ag", Kind: AllGather, Group: GroupCP, Ranks: ring, Bytes: kv, Seconds: ringSec / 2},
			Collective{Name: "cp-ring-rs", Kind: ReduceScatter, Group: GroupCP, Ranks: ring, Bytes: kv, Seconds: ringSec - ringSec/2})
	}
	return out
}

// layoutParts fills rp for rank of group g with a CP × HP layout from what
// the pricing (layoutGroup) recorded of it (gp): the layer the slowest
// rank's ops plus the slowest rank's attention plus network.LayoutCPLayer's
// exposed communication; the collectives the all-to-all of the rank's HP
// group and the ring across the HP groups (as an all-gather, and a
// reduce-scatter backward, over the group).
func (b *Breakdown) layoutParts(t network.Topology, g *sched.Group, gp *groupPrice, rank int, rp *rankParts) error {
	m, p := b.m, &b.p
	l := g.Layout
	model := m.job.Model
	tp := float64(max(m.topo.TP, 1))
	i := rank - g.FirstRank
	// The rank's own share of the group's attention FLOPs: its heads of its
	// HP group's chunk of each sequence (layoutShare, as priced).
	_, total, err := p.groupTokens(*g)
	if err != nil {
		return err
	}
	var ownAttnFLOPs float64
	chunk := int64(l.Chunks()[l.HPGroupOf()[i]])
	if share := layoutShare(l.Heads[i], model.QueryHeads/max(m.topo.TP, 1), chunk, int64(total)); share > 0 {
		for _, id := range g.Seqs {
			if s := p.lengths[id]; s > 0 {
				ownAttnFLOPs += model.AttentionFwdFLOPs(s)
			}
		}
		ownAttnFLOPs *= share / tp
	}
	lm := gp.lm
	for kind, layer := range [2]int{m.denseLayer, m.moeLayer} {
		if layer < 0 {
			continue
		}
		exposed, x := gp.exposed[kind], gp.x[kind]
		comp := [2]float64{lm.ops[kind][0] + lm.attn[0], lm.ops[kind][1] + lm.attn[1]}
		pp := &rp.kinds[kind]
		p.ops = m.devices[rp.dev].Compute.AppendLayerOps(p.ops[:0], layer, l.ShardTokens[i])
		ff, fb := opsWork(p.ops, 0)
		bf, bb := opsWork(p.ops, 1)
		af, ab := attentionBytes(t, model, l.ShardTokens[i])
		pp.fwd = Work{Seconds: comp[0], FLOPs: ff + ownAttnFLOPs, Bytes: fb + af}
		pp.bwd = Work{Seconds: comp[1], FLOPs: bf + ownAttnFLOPs*model.AttentionBwdFactor(), Bytes: bb + ab}
		if gp.comm {
			pp.fwdComm = b.layoutCollectives(t, g, rank, exposed[0], false)
			pp.bwdComm = b.layoutCollectives(t, g, rank, exposed[1], true)
		}
		pp.fwdComm = append(pp.fwdComm, b.tpCollectives(rank, lm.most, x.tpFwd)...)
		pp.bwdComm = append(pp.bwdComm, b.tpCollectives(rank, lm.most, x.tpBwd)...)
		b.recompute(pp, x, Work{FLOPs: ownAttnFLOPs, Bytes: af})
		b.ownSeconds(pp, comp, exposed, x)
	}
	return nil
}

// layoutCollectives are rank's CP collectives in one pass of layout group g,
// exposed seconds in all: the all-to-all of its HP group (its fullest
// rank's buffers, Q, K/V for the heads the group's ranks need and the
// output, as network.LayoutCPLayer counts them) and, across HP groups, the
// K/V ring as an all-gather over the group (r blocks of the largest step,
// and the dK/dV reduce-scatter backward). The all-to-all takes its share of
// the exposed seconds in proportion to its bytes.
func (b *Breakdown) layoutCollectives(t network.Topology, g *sched.Group, rank int, exposed float64, backward bool) []Collective {
	m := b.m
	l := g.Layout
	model := m.job.Model
	heads := model.QueryHeads / max(m.topo.TP, 1)
	q, k, v, o := network.TokenBytes(t, model)
	kvLocal := max(model.KVHeads/t.TP, 1)
	kvShare := func(n int) float64 {
		if n == 0 {
			return 0
		}
		return float64((n*kvLocal+heads-1)/heads) / float64(kvLocal)
	}
	at, mine := 0, rank-g.FirstRank
	var a2a *Collective
	for _, u := range l.HPGroups {
		if mine >= at+u {
			at += u
			continue
		}
		if u > 1 {
			var hpTokens, kappa float64
			for j := at; j < at+u; j++ {
				hpTokens += float64(l.ShardTokens[j])
				kappa += kvShare(l.Heads[j])
			}
			var payload float64
			for j := at; j < at+u; j++ {
				x, eta := float64(l.ShardTokens[j]), float64(l.Heads[j])/float64(heads)
				payload = max(payload, x*q+x*(k+v)*kappa+hpTokens*eta*o)
			}
			a2a = &Collective{Name: "cp-a2a", Kind: AllToAll, Group: GroupCP, Ranks: network.Contiguous(g.FirstRank+at, u), Bytes: payload}
		}
		break
	}
	var out []Collective
	r := len(l.HPGroups)
	var ringBytes float64
	if r > 1 {
		lMax := 0
		for _, ch := range l.Chunks() {
			lMax = max(lMax, ch)
		}
		var share float64
		for _, n := range l.Heads {
			share = max(share, kvShare(n))
		}
		ringBytes = float64(r) * float64(lMax) * share * (k + v)
	}
	ringSec := exposed
	if a2a != nil {
		a2a.Seconds = exposed
		if ringBytes > 0 {
			a2a.Seconds = exposed * a2a.Bytes / (a2a.Bytes + 2*ringBytes)
		}
		ringSec = exposed - a2a.Seconds
		out = append(out, *a2a)
	}
	if r > 1 {
		all := network.Contiguous(g.FirstRank, g.Size)
		if !backward {
			return append(out, Collective{Name: "cp-ring-ag", Kind: AllGather, Group: GroupCP, Ranks: all, Bytes: ringBytes, Seconds: ringSec})
		}
		out = append(out,
			Collective{Name: "cp-ring-ag", Kind: AllGather, Group: GroupCP, Ranks: all, Bytes: ringBytes, Seconds: ringSec / 2},
			Collective{Name: "cp-ring-rs", Kind: ReduceScatter, Group: GroupCP, Ranks: all, Bytes: ringBytes, Seconds: ringSec - ringSec/2})
	}
	return out
}

// RankTokens is the tokens HDP rank rank holds in domain d: its CP group's
// per-rank share (its own shard under a CP × HP layout), 0 for a rank in no
// group.
func (b *Breakdown) RankTokens(d *step.Domain, rank int) int {
	for _, g := range d.Groups {
		if g.FirstRank <= rank && rank <= g.LastRank() {
			if g.Layout != nil {
				return g.Layout.ShardTokens[rank-g.FirstRank]
			}
			per, _, err := b.p.groupTokens(g)
			if err != nil {
				return 0
			}
			return per
		}
	}
	return 0
}

// P2PBytes is what one GPU of HDP rank rank sends across a stage boundary
// in domain d's microbatch: its own activations (network.P2PActivationBytes
// of RankTokens). The engine times the transfer for the domain's fullest
// rank (P2PSeconds).
func (b *Breakdown) P2PBytes(d *step.Domain, rank int) float64 {
	m := b.m
	if m.opts.NoComm {
		return 0
	}
	return network.P2PActivationBytes(m.topo, m.job.Model.Hidden, b.RankTokens(d, rank))
}

// GradSyncParts is the end of the iteration on stage for a GPU of HDP rank
// rank, in the order it runs, as the cost model priced it: under the
// distributed optimizer (and FSDP) the dense gradients' reduce-scatter over
// the pool, the expert gradients' over the rank's expert-DP group, then the
// parameters' all-gathers in the same order; under job.GradAllReduce the two
// all-reduces. Gradients travel at the job's bytes per element (FP32 under
// FSDP or job.Parallel.GradReduceFP32). The collectives are whole: with
// gradient-reduce overlap (or FSDP) GradSyncSeconds is only what they leave
// exposed after the last backward; without it their seconds sum to
// GradSyncSeconds (to rounding). Under job.GradFSDPReshard the gathers and
// reduce-scatters run with each layer, and there is nothing here. A group
// of one rank or no bytes is left out. The optimizer step that follows is
// OptimizerSeconds.
func (m *Model) GradSyncParts(stage, rank int) ([]Collective, error) {
	if stage < 0 || stage >= m.topo.PP || rank < 0 || rank >= m.topo.PoolRanks {
		return nil, fmt.Errorf("costmodel: stage %d rank %d outside [0, %d) × [0, %d)", stage, rank, m.topo.PP, m.topo.PoolRanks)
	}
	mode := m.job.Parallel.GradSyncMode()
	if m.opts.NoComm || mode == job.GradFSDPReshard {
		return nil, nil
	}
	g := m.topo.PoolRanks
	dense, expert := m.stageParams(stage)
	st := m.syncs[stage]
	dp := network.Contiguous(0, g)
	edp := network.Ranks{First: rank % m.ep, Count: g / m.ep, Stride: m.ep}
	var out []Collective
	add := func(c Collective) {
		if c.Ranks.Count > 1 && c.Bytes > 0 && !math.IsNaN(c.Bytes) {
			out = append(out, c)
		}
	}
	if mode == job.GradAllReduce {
		add(Collective{Name: "dp-ar", Kind: AllReduce, Group: GroupDP, Ranks: dp, Bytes: dense * network.GradBytesPerParam, Seconds: st.denseRS + st.denseAG})
		add(Collective{Name: "edp-ar", Kind: AllReduce, Group: GroupExpertDP, Ranks: edp, Bytes: expert * network.GradBytesPerParam, Seconds: st.expertRS + st.expertAG})
		return out, nil
	}
	gb := m.gradBytesPerParam()
	add(Collective{Name: "dp-rs", Kind: ReduceScatter, Group: GroupDP, Ranks: dp, Bytes: dense * gb, Seconds: st.denseRS})
	add(Collective{Name: "edp-rs", Kind: ReduceScatter, Group: GroupExpertDP, Ranks: edp, Bytes: expert * gb, Seconds: st.expertRS})
	add(Collective{Name: "dp-ag", Kind: AllGather, Group: GroupDP, Ranks: dp, Bytes: dense * network.ParamBytesPerParam, Seconds: st.denseAG})
	add(Collective{Name: "edp-ag", Kind: AllGather, Group: GroupExpertDP, Ranks: edp, Bytes: expert * network.ParamBytesPerParam, Seconds: st.expertAG})
	return out, nil
}

// OptimizerWork is the optimizer step that ends the iteration on a GPU of
// stage: OptimizerSeconds, and as its work the AdamW step over the
// parameters the GPU updates (steppedParams: compute.OptimizerFLOPsPerParam and
// compute.OptimizerBytesPerParam each) plus, under FP8 training, the recast of
// every weight it holds (compute.FP8WeightCastBytesPerParam).
func (m *Model) OptimizerWork(stage int) (Work, error) {
	if stage < 0 || stage >= len(m.optimizer) {
		return Work{}, fmt.Errorf("costmodel: stage %d outside [0, %d)", stage, len(m.optimizer))
	}
	dense, expert := m.stageParams(stage)
	stepped := m.steppedParams(dense, expert)
	w := Work{Seconds: m.optimizer[stage], FLOPs: stepped * compute.OptimizerFLOPsPerParam, Bytes: stepped * compute.OptimizerBytesPerParam}
	if m.job.Parallel.FP8() {
		w.Bytes += (dense + expert) * compute.FP8WeightCastBytesPerParam
	}
	return w, nil
}
