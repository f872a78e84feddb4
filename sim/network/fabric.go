package network

import (
	"cmp"
	"math"
	"slices"
)

// # Shared links (Window)
//
// The collectives above are priced alone. Collectives that run at the same
// time share the scale-out links they cross; a Window holds the flows of one
// such time window (one micro-batch's CP collectives on one stage, its MoE
// all-to-alls, one stage boundary's pipeline transfers, the iteration's
// gradient synchronisation) and gives each collective the stretch σ >= 1 by
// which sharing slows its NIC traffic.
//
// Links. Every node has NICsPerNode NICs (of the node's kind); the nodes of a
// leaf group (NodesPerLeaf consecutive nodes) hang off one leaf switch per
// rail, whose uplinks to the spine carry NodesPerLeaf·NICsPerNode /
// SpineOversubscription NICs' worth of bandwidth (rails summed: traffic is
// taken to spread evenly over the rails, as NCCL's PXN sends every message
// on the destination GPU's rail). A window has one pool per node (its NICs)
// and one per leaf group (its spine uplinks).
//
// Flows. Collective c puts flows on the pools it crosses, each of size v (its
// per-GPU NIC time alone, in NIC-seconds at the line rate of its own
// collective kind):
//
//   - all-to-all (a Ulysses group or EP block spanning nodes): every member
//     GPU one flow on its node; on its leaf the part of v bound for members in
//     other leaf groups, (n − M_L)/(n − m), M_L members in the leaf group, m on
//     the node;
//   - rings (a CP group's u outer rings, strided by u): min(m, u) flows per
//     node (a member whose successor is on another node), and on each leaf
//     group the flows of its last node (the ring, wrap included, leaves every
//     leaf group it visits once);
//   - NCCL rings (reduce-scatter, all-gather, the pipeline's send/recv):
//     every member GPU one flow on its node; the members of a leaf group's
//     last node on its leaf (for pipeline transfers, whose peers are a
//     stage apart, every member, when the peer's leaf group differs).
//
// Sharing. Each pool is shared max-min fairly (processor sharing: every flow
// in the pool at an equal rate, never above one NIC's, a finished flow's
// share going to the rest), with all of a window's flows starting together.
// On one pool of capacity κ NICs this gives a flow of size v the completion
// time
//
//	T(v) = Σ_j min(v_j, v) / κ   while at least κ flows run (at most one NIC each after)
//
// exactly (the classic processor-sharing order: the smaller flows finish
// first). A collective's stretch is σ = max(1, max over its pools of
// T/v), v its whole NIC time: its busiest link. This is the stated approximation of max-min fair sharing
// across several links: it prices each pool as if the others did not slow
// the flows it shares with. It is exact on one pool; across a node's NICs
// and a leaf's uplinks it mostly over-counts (a flow held back on an
// oversubscribed leaf uses less of its node's NICs than an equal share) and
// rarely under-counts: on 400 random two-tier windows it lies within 0.90x
// to 3.4x of an exact fluid max-min simulation (progressive filling,
// TestWindowAgainstFluidMaxMin), and exactly on every one-pool window.
//
// Scope, named: rx pools are taken to mirror tx (the patterns are
// symmetric); leaf groups shared by stages that run different micro-batches
// at once are priced per stage; windows start together (pessimistic: groups
// reach a layer's collectives at different times).
//
// With one NIC per GPU and a non-blocking spine no pool can hold more flows
// than it has NICs, so T(v) <= v and every σ is 1: Window.Reset reports such
// a fabric as uncontended and callers skip the window.

// Pattern is how a collective's flows lie on the links (see Window).
type Pattern uint8

const (
	// PatternAllToAll is an all-to-all: every member sends to every other.
	PatternAllToAll Pattern = iota
	// PatternRings is Rings rings of stride Rings through the members.
	PatternRings
	// PatternNCCLRing is NCCL's ring reduce-scatter or all-gather, one
	// channel leaving each node through each member's NIC.
	PatternNCCLRing
	// PatternPeerStage is a pipeline transfer: every member sends to the
	// same rank of the next stage.
	PatternPeerStage
)

// Demand is one collective of a window: its members (HDP ranks of the
// Window's stage, each rank's TP GPUs alike), how its flows lie, and v.
type Demand struct {
	// Ranks are the members.
	Ranks Ranks
	// Pattern is how the flows lie.
	Pattern Pattern
	// Rings is the number of rings of a PatternRings demand (its stride).
	Rings int
	// NICSeconds is v: one member GPU's NIC traffic alone, in seconds at its
	// NIC's line rate for the collective's kind.
	NICSeconds float64
}

// Window is the flows of collectives that run at the same time on one
// stage's links, shared max-min fairly (see the section "Shared links").
// The zero value is empty; Reset binds it to a topology. A Window reuses
// its storage from one Reset to the next.
type Window struct {
	t       Topology
	fab     fabricLinks
	entries []poolEntry // node pools (Add puts leaf pools in leaves)
	leaves  []poolEntry
	stretch []float64
	solved  bool
	force   bool // place flows even on a fabric that cannot contend (background load)
}

// fabricLinks are the resolved fabric constants of a topology.
type fabricLinks struct {
	nics, nodesPerLeaf int
	oversub            float64
}

// poolEntry is one demand's flows on one pool.
type poolEntry struct {
	pool   int // >= 0: node pool (global node); < 0: leaf pool −1−leaf
	demand int32
	flows  float64
	size   float64 // NIC-seconds per flow on this pool
	whole  float64 // the flow's whole NIC time (its demand's v)
}

// Contended reports whether the topology's fabric can slow a collective by
// sharing: fewer NICs than GPUs per node, or an oversubscribed spine.
func (t Topology) Contended() bool {
	return t.Fabric.NICsPerNode < t.GPUsPerNode || t.Fabric.SpineOversubscription > 1
}

// Reset empties the window for the collectives of topology t's stage and
// reports whether they can contend (Topology.Contended): when not, Add
// records nothing and every Stretch is 1.
func (w *Window) Reset(t Topology) bool {
	w.t = t
	w.fab = fabricLinks{nics: t.Fabric.NICsPerNode, nodesPerLeaf: t.Fabric.NodesPerLeaf, oversub: t.Fabric.SpineOversubscription}
	w.entries, w.leaves = w.entries[:0], w.leaves[:0]
	w.stretch = w.stretch[:0]
	w.solved, w.force = false, false
	return t.Contended()
}

// addBackground puts flows persistent flows (longer than any of the
// window's, here 1e6·v) on the node pool of every node g's members use.
func (w *Window) addBackground(g Ranks, flows, v float64) {
	t := w.t
	base := w.globalNode(t.Stage, 0)
	for node := t.Node(g.First); node <= t.Node(g.Last()); node++ {
		if t.membersOn(g, node) > 0 {
			w.entries = append(w.entries, poolEntry{pool: base + node, demand: -1, flows: flows, size: 1e6 * v})
		}
	}
}

// globalNode is the cluster-wide node of HDP rank r of the window's stage.
func (w *Window) globalNode(stage, r int) int {
	return (stage*w.t.PoolRanks + r) * w.t.TP / w.t.GPUsPerNode
}

// Add places demand d's flows and returns its index for Stretch. A demand
// inside one node, or with no NIC traffic, puts nothing on the fabric. It
// panics if d's ranks leave the pool.
func (w *Window) Add(d Demand) int {
	id := len(w.stretch)
	w.stretch = append(w.stretch, 1)
	w.solved = false
	if !(w.force || w.t.Contended()) || d.NICSeconds <= 0 || d.Ranks.Count <= 1 {
		return id
	}
	t := w.t
	s := t.Spans(d.Ranks)
	if s.Nodes <= 1 && d.Pattern != PatternPeerStage {
		return id
	}
	if d.Pattern == PatternPeerStage && t.Stage+1 >= t.PP {
		return id
	}
	tp := float64(t.TP)
	n := d.Ranks.Count
	first, last := t.Node(d.Ranks.First), t.Node(d.Ranks.Last())
	base := w.globalNode(t.Stage, 0) - t.Node(0) // global node of this stage's node 0
	npl := w.fab.nodesPerLeaf
	// Per node: its members (leaf sums follow).
	leafMembers, leafLastNode, leafLastMembers := 0, -1, 0
	flush := func(leaf int) {
		if leafMembers == 0 {
			return
		}
		var flows, frac float64
		switch d.Pattern {
		case PatternAllToAll:
			m := float64(s.MaxLocal)
			if n > leafMembers && float64(n)-m > 0 {
				flows, frac = float64(leafMembers), float64(n-leafMembers)/(float64(n)-m)
			}
		case PatternRings:
			if w.crossesLeaves(base+first, base+last) {
				flows, frac = float64(min(leafLastMembers, max(d.Rings, 1))), 1
			}
		case PatternNCCLRing:
			if w.crossesLeaves(base+first, base+last) {
				flows, frac = float64(leafLastMembers), 1
			}
		case PatternPeerStage:
			// The peers are the same ranks one stage on: G·tp GPUs later.
			if dst := (leafLastNode*t.GPUsPerNode + t.PoolRanks*t.TP) / t.GPUsPerNode; dst/npl != leaf {
				flows, frac = float64(leafMembers), 1
			}
		}
		if flows > 0 && frac > 0 {
			w.leaves = append(w.leaves, poolEntry{pool: -1 - leaf, demand: int32(id), flows: flows * tp, size: d.NICSeconds * min(frac, 1), whole: d.NICSeconds})
		}
		leafMembers, leafLastMembers = 0, 0
	}
	curLeaf := (base + first) / npl
	for node := first; node <= last; node++ {
		m := t.RanksPerNode // an inner node of a contiguous set is full
		if d.Ranks.Stride != 1 || node == first || node == last {
			m = t.membersOn(d.Ranks, node)
		}
		if m == 0 {
			continue
		}
		g := base + node
		if g/npl != curLeaf {
			flush(curLeaf)
			curLeaf = g / npl
		}
		flows := float64(m)
		if d.Pattern == PatternRings {
			flows = float64(min(m, max(d.Rings, 1)))
		}
		w.entries = append(w.entries, poolEntry{pool: g, demand: int32(id), flows: flows * tp, size: d.NICSeconds, whole: d.NICSeconds})
		leafMembers += m
		leafLastNode, leafLastMembers = g, m
	}
	flush(curLeaf)
	return id
}

// crossesLeaves reports whether global nodes [a, b] lie in more than one
// leaf group.
func (w *Window) crossesLeaves(a, b int) bool {
	return a/w.fab.nodesPerLeaf != b/w.fab.nodesPerLeaf
}

// membersOn counts g's members on node (of the stage).
func (t Topology) membersOn(g Ranks, node int) int {
	gpn, o := t.RanksPerNode, t.rankOffset()
	lo, hi := max(node*gpn-o, g.First), min((node+1)*gpn-o-1, g.Last())
	if lo > hi {
		return 0
	}
	a := (lo - g.First + g.Stride - 1) / g.Stride
	b := (hi - g.First) / g.Stride
	return max(0, b-a+1)
}

// Solve shares every pool among its flows (see the section "Shared links")
// and sets every demand's stretch. Add after Solve needs Solve again.
func (w *Window) Solve() {
	w.solved = true
	w.solveEntries(w.entries)
	w.solveEntries(w.leaves)
}

// solveEntries shares the pools of es. Callers add demands in rank order,
// so entries mostly come grouped by pool (node pools by node, leaf pools by
// leaf): runs of one pool are sorted by size, and the whole only when the
// pools come out of order.
func (w *Window) solveEntries(es []poolEntry) {
	byPool := func(a, b poolEntry) int { return cmp.Compare(poolOrder(a.pool), poolOrder(b.pool)) }
	bySize := func(a, b poolEntry) int {
		if c := cmp.Compare(a.size, b.size); c != 0 {
			return c
		}
		return cmp.Compare(a.demand, b.demand)
	}
	if !slices.IsSortedFunc(es, byPool) {
		slices.SortStableFunc(es, byPool)
	}
	for lo := 0; lo < len(es); {
		hi := lo + 1
		for hi < len(es) && es[hi].pool == es[lo].pool {
			hi++
		}
		run := es[lo:hi]
		if len(run) > 1 {
			slices.SortFunc(run, bySize)
		}
		w.sharePool(run)
		lo = hi
	}
}

// poolOrder orders pools as Add places them: leaf pools after every node
// pool, by leaf (a pool id −1−leaf), node pools by node.
func poolOrder(pool int) int {
	if pool < 0 {
		return math.MaxInt/2 - 1 - pool
	}
	return pool
}

// sharePool raises the stretch of every demand with flows in one pool's
// entries (sorted by size) to T(v)/v: processor sharing among the pool's
// flows, each also capped at one NIC (rate 1 in NIC-seconds). With sizes
// ascending and a flows still running after the smaller ones finished, the
// pool runs them at min(1, κ/a) each, so flow i finishes at
//
//	T_i = T_{i−1} + (s_i − s_{i−1}) / min(1, κ/a_i)
//
// (T(v) = Σ_j min(v_j, v)/κ while a_i >= κ), and its demand's stretch is
// T_i over the demand's whole NIC time (the part not on this pool runs
// alongside).
func (w *Window) sharePool(es []poolEntry) {
	pool := es[0].pool
	capacity := float64(w.fab.nics)
	if pool < 0 {
		capacity = float64(w.fab.nodesPerLeaf*w.fab.nics) / w.fab.oversub
	}
	var flowsLeft float64
	for _, e := range es {
		flowsLeft += e.flows
	}
	var done, prev float64 // time and size at which the previous size finished
	for i := 0; i < len(es); {
		j := i // entries of equal size finish together
		for j < len(es) && es[j].size == es[i].size {
			j++
		}
		done += (es[i].size - prev) / min(1, capacity/flowsLeft)
		prev = es[i].size
		for _, e := range es[i:j] {
			if e.whole > 0 && e.demand >= 0 {
				if s := done / e.whole; s > w.stretch[e.demand] {
					w.stretch[e.demand] = s
				}
			}
			flowsLeft -= e.flows
		}
		i = j
	}
}

// Demands is the number of demands added since Reset.
func (w *Window) Demands() int { return len(w.stretch) }

// Stretch returns demand id's σ >= 1 (1 before Solve and on an uncontended
// fabric). It panics if id is not a demand of the window.
func (w *Window) Stretch(id int) float64 {
	if !w.solved {
		return 1
	}
	return w.stretch[id]
}

// Slowed returns t with every kind's NIC bandwidth divided by σ >= 1: the
// topology a collective stretched by its window is priced on. σ <= 1 returns
// t itself.
func (t Topology) Slowed(sigma float64) Topology {
	if !(sigma > 1) {
		return t
	}
	t.NICBytesPerSecond /= sigma
	if len(t.kinds) > 0 {
		kinds := make([]kindSpan, len(t.kinds))
		copy(kinds, t.kinds)
		for i := range kinds {
			kinds[i].links.NICBytesPerSecond /= sigma
		}
		t.kinds = kinds
	}
	return t
}

// allToAllNICSeconds is AllToAllSeconds's NIC term: the bytes the rank with
// the fewest group members on its node sends off the node, at its kind's
// all-to-all rate (the slowest kind's on a mixed cluster); 0 inside a node.
func allToAllNICSeconds(t Topology, firstRank, ranks int, bytesPerRank float64) float64 {
	if ranks <= 1 || bytesPerRank <= 0 {
		return 0
	}
	g := Contiguous(firstRank, ranks)
	if t.Spans(g).Nodes <= 1 {
		return 0
	}
	peer := bytesPerRank / float64(ranks)
	s := t.Spans(g)
	if !t.Mixed() {
		return t.allToAllNICSeconds(float64(ranks-s.MinLocal)*peer, s.Nodes)
	}
	nodes := s.Nodes
	var worst float64
	for _, seg := range t.kindSegments(g) {
		ss := t.Spans(seg.ranks)
		worst = max(worst, seg.links.allToAllNICSeconds(float64(ranks-ss.MinLocal)*peer, nodes))
	}
	return worst
}

// sendRecvNICSeconds is SendRecvSeconds's NIC term: bytes at the slowest
// kind's send/recv rate when the ring crosses nodes, else 0.
func sendRecvNICSeconds(t Topology, g Ranks, bytes float64) float64 {
	if g.Count <= 1 || bytes <= 0 || t.Node(g.First) == t.Node(g.Last()) {
		return 0
	}
	if !t.Mixed() {
		return t.nicSeconds(bytes, t.SendRecvInter)
	}
	var worst float64
	for _, seg := range t.kindSegments(g) {
		worst = max(worst, seg.links.nicSeconds(bytes, seg.links.SendRecvInter))
	}
	return worst
}

// ringNICSeconds is ReduceScatterSeconds's NIC term: the (n−1)/n·bytes each
// rank sends around the ring, 1/m of it over its NIC (m members on the node
// with the fewest), at the slowest kind's CollectiveInter rate; 0 inside a
// node.
func ringNICSeconds(t Topology, g Ranks, bytes float64) float64 {
	if g.Count <= 1 || bytes <= 0 {
		return 0
	}
	s := t.Spans(g)
	if s.Nodes <= 1 {
		return 0
	}
	sent := float64(g.Count-1) / float64(g.Count) * bytes
	if !t.Mixed() {
		return t.nicSeconds(sent/float64(s.MinLocal), t.CollectiveInter)
	}
	var worst float64
	for _, seg := range t.kindSegments(g) {
		ss := t.Spans(seg.ranks)
		worst = max(worst, seg.links.nicSeconds(sent/float64(ss.MinLocal), seg.links.CollectiveInter))
	}
	return worst
}
