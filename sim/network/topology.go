package network

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
)

// Topology is the network one pipeline stage's HDP pool sees: which of its ranks
// share an NVLink node, and the link bandwidths, latencies and efficiency curves
// of the calibration profile. Build it with NewTopology; the zero value is not
// usable. A Topology is a small value: copy it freely.
//
// Rank-to-GPU mapping (Megatron's order): tp fastest, then the HDP (DP×CP) ranks,
// pp outermost, so HDP rank r of stage s, TP rank t, is GPU
// s·G·tp + r·tp + t, and GPU n lives on node n / GPUsPerNode. One HDP rank's tp
// GPUs therefore share a node (tp divides GPUsPerNode), and a node holds
// RanksPerNode = GPUsPerNode/tp consecutive HDP ranks of a stage. CP, EP and DP
// collectives run among the GPUs of one TP rank t, each on its own NVLink port
// and its own NIC.
type Topology struct {
	// GPUsPerNode is the NVLink domain size (the cluster's, else the profile's).
	GPUsPerNode int
	// TP is the tensor-parallel degree; PP the number of pipeline stages.
	TP, PP int
	// PoolRanks is G = gpus/(tp·pp), the HDP ranks of one stage.
	PoolRanks int
	// RanksPerNode is g = GPUsPerNode/TP, the HDP ranks of a stage per node.
	RanksPerNode int
	// Stage is the pipeline stage whose pool this topology describes (see ForStage).
	Stage int

	// Links are the first kind's link constants: every rank's on a one-kind
	// cluster. A mixed cluster's ranks each have their kind's (KindOf).
	Links

	// Fabric is the cluster's scale-out network, its zero fields resolved
	// (job.Fabric.Resolved): what a Window shares.
	Fabric job.Fabric

	// kinds are a mixed cluster's GPU kinds in rank order, each a run of
	// consecutive HDP ranks filling whole nodes of every stage; nil for one
	// kind.
	kinds []kindSpan
}

// Links are one GPU kind's link constants: bandwidths, latencies and
// efficiency curves of its calibration profile.
type Links struct {
	// NVLinkBytesPerSecond and NICBytesPerSecond are the achieved unidirectional
	// bandwidths per GPU, before the efficiency curves.
	NVLinkBytesPerSecond, NICBytesPerSecond float64
	// IntraBaseSeconds, IntraHopSeconds, InterBaseSeconds and InterHopSeconds are
	// the NCCL-style latencies α = base + hops·hop inside a node and across nodes.
	IntraBaseSeconds, IntraHopSeconds float64
	InterBaseSeconds, InterHopSeconds float64
	// InterP2PSeconds is the latency of one send/recv across nodes (ring
	// steps, pipeline transfers); inside a node a send/recv costs one intra
	// base + hop.
	InterP2PSeconds float64
	// CollectiveIntra scales NVLink for every collective inside a node;
	// CollectiveInter the NIC for reduce-scatter and all-gather across nodes,
	// SendRecvInter for send/recv (ring steps, pipeline transfers) and
	// AllToAllInter for all-to-alls: the Max of the profile's curve of that
	// name, the only part applied (see the package doc).
	CollectiveIntra, CollectiveInter, SendRecvInter, AllToAllInter float64
	// AllToAllScale is A of the all-to-all's efficiency by the number of
	// nodes it spans (the profile's all_to_all_inter_scale): AllToAllInter
	// is multiplied by calib.ScaleCurve{A}.At(nodes).
	AllToAllScale float64
}

// kindSpan is one kind of a mixed cluster: HDP ranks [first, first+ranks) of
// every stage.
type kindSpan struct {
	first, ranks int
	links        Links
}

// NewTopology builds the topology of stage 0 from a profile and a cluster under
// tp and pp. The node size is cluster.GPUsPerNode, or the profile's when the
// cluster leaves it 0. It returns an error when tp does not divide the node size,
// tp·pp does not divide the GPU count, or the profile's links are unusable
// (bandwidth ≤ 0, latency < 0, efficiency Max outside (0, 1] or Half < 0).
func NewTopology(p calib.Profile, c job.Cluster, tp, pp int) (Topology, error) {
	gpn := c.GPUsPerNode
	if gpn <= 0 {
		gpn = int(p.GPUsPerNode.Value)
	}
	var errs []error
	switch {
	case gpn < 1:
		errs = append(errs, fmt.Errorf("network: gpus per node %d (cluster) / %g (profile %q) must be >= 1", c.GPUsPerNode, p.GPUsPerNode.Value, p.Name))
	case tp < 1 || gpn%tp != 0:
		errs = append(errs, fmt.Errorf("network: tp = %d must be >= 1 and divide gpus per node (%d)", tp, gpn))
	}
	if pp < 1 {
		errs = append(errs, fmt.Errorf("network: pp = %d must be >= 1", pp))
	} else if tp >= 1 && (c.GPUs < tp*pp || c.GPUs%(tp*pp) != 0) {
		errs = append(errs, fmt.Errorf("network: gpus = %d must be a positive multiple of tp·pp = %d", c.GPUs, tp*pp))
	}
	links, err := linksOf(p)
	if err != nil {
		errs = append(errs, err)
	}
	if err := c.Fabric.Validate(gpn); err != nil {
		errs = append(errs, fmt.Errorf("network: %w", err))
	}
	if len(errs) > 0 {
		return Topology{}, errors.Join(errs...)
	}
	return Topology{
		GPUsPerNode:  gpn,
		TP:           tp,
		PP:           pp,
		PoolRanks:    c.GPUs / (tp * pp),
		RanksPerNode: gpn / tp,
		Links:        links,
		Fabric:       c.Fabric.Resolved(gpn),
	}, nil
}

// NewMixedTopology builds the topology of stage 0 of a cluster that may mix
// GPU kinds: profiles[i] is the profile of c.Kinds()[i]. One kind gives
// NewTopology's topology. With pools, each kind's GPUs/(tp·pp) HDP ranks
// follow the previous kind's in every stage and must fill whole nodes (the
// node size is c.GPUsPerNode); a rank's links are its kind's.
func NewMixedTopology(profiles []calib.Profile, c job.Cluster, tp, pp int) (Topology, error) {
	kinds := c.Kinds()
	if len(profiles) != len(kinds) || len(profiles) == 0 {
		return Topology{}, fmt.Errorf("network: %d profiles for %d GPU kinds", len(profiles), len(kinds))
	}
	t, err := NewTopology(profiles[0], c, tp, pp)
	if err != nil || !c.Mixed() {
		return t, err
	}
	var errs []error
	first := 0
	for i, k := range kinds {
		links, err := linksOf(profiles[i])
		if err != nil {
			errs = append(errs, err)
		}
		if k.GPUs < 1 || k.GPUs%(t.GPUsPerNode*pp) != 0 {
			errs = append(errs, fmt.Errorf("network: pool %d (%s) has %d GPUs: must be a positive multiple of pp·gpus per node = %d",
				i, k.GPU, k.GPUs, t.GPUsPerNode*pp))
			continue
		}
		ranks := k.GPUs / (tp * pp)
		t.kinds = append(t.kinds, kindSpan{first: first, ranks: ranks, links: links})
		first += ranks
	}
	if len(errs) == 0 && first != t.PoolRanks {
		errs = append(errs, fmt.Errorf("network: the pools hold %d HDP ranks per stage, the cluster %d", first, t.PoolRanks))
	}
	if len(errs) > 0 {
		return Topology{}, errors.Join(errs...)
	}
	return t, nil
}

// linksOf checks a profile's link constants and returns them.
func linksOf(p calib.Profile) (Links, error) {
	var errs []error
	for _, b := range []struct {
		name string
		v    float64
	}{{"nvlink_bytes_per_second", p.NVLinkBytesPerSecond.Value}, {"nic_bytes_per_second", p.NICBytesPerSecond.Value}} {
		if !(b.v > 0) {
			errs = append(errs, fmt.Errorf("network: profile %q: %s = %g must be > 0", p.Name, b.name, b.v))
		}
	}
	for _, l := range []struct {
		name string
		v    float64
	}{
		{"intra_base_latency_seconds", p.IntraBaseLatencySeconds.Value},
		{"intra_hop_latency_seconds", p.IntraHopLatencySeconds.Value},
		{"inter_base_latency_seconds", p.InterBaseLatencySeconds.Value},
		{"inter_hop_latency_seconds", p.InterHopLatencySeconds.Value},
		{"inter_p2p_latency_seconds", p.InterP2PLatencySeconds.Value},
	} {
		if !(l.v >= 0) {
			errs = append(errs, fmt.Errorf("network: profile %q: %s = %g must be >= 0", p.Name, l.name, l.v))
		}
	}
	if a := p.AllToAllInterScale.Value; !(a >= 0) || math.IsInf(a, 0) {
		errs = append(errs, fmt.Errorf("network: profile %q: all_to_all_inter_scale = %g must be finite and >= 0", p.Name, a))
	}
	for _, cv := range []struct {
		name string
		c    calib.Curve
	}{{"collective_intra", p.CollectiveIntra}, {"collective_inter", p.CollectiveInter},
		{"send_recv_inter", p.SendRecvInter}, {"all_to_all_inter", p.AllToAllInter}} {
		if !(cv.c.Max.Value > 0 && cv.c.Max.Value <= 1) || !(cv.c.Half.Value >= 0) {
			errs = append(errs, fmt.Errorf("network: profile %q: %s max = %g, half = %g: need max in (0, 1] and half >= 0",
				p.Name, cv.name, cv.c.Max.Value, cv.c.Half.Value))
		}
	}
	if len(errs) > 0 {
		return Links{}, errors.Join(errs...)
	}
	return Links{
		NVLinkBytesPerSecond: p.NVLinkBytesPerSecond.Value,
		NICBytesPerSecond:    p.NICBytesPerSecond.Value,
		IntraBaseSeconds:     p.IntraBaseLatencySeconds.Value,
		IntraHopSeconds:      p.IntraHopLatencySeconds.Value,
		InterBaseSeconds:     p.InterBaseLatencySeconds.Value,
		InterHopSeconds:      p.InterHopLatencySeconds.Value,
		InterP2PSeconds:      p.InterP2PLatencySeconds.Value,
		CollectiveIntra:      p.CollectiveIntra.Max.Value,
		CollectiveInter:      p.CollectiveInter.Max.Value,
		SendRecvInter:        p.SendRecvInter.Max.Value,
		AllToAllInter:        p.AllToAllInter.Max.Value,
		AllToAllScale:        p.AllToAllInterScale.Value,
	}, nil
}

// Mixed reports whether the ranks are of more than one GPU kind.
func (t Topology) Mixed() bool { return len(t.kinds) > 1 }

// Kinds returns the number of GPU kinds (1 for a one-kind cluster).
func (t Topology) Kinds() int { return max(len(t.kinds), 1) }

// KindOf returns the index of HDP rank r's GPU kind (0 on a one-kind
// cluster). It panics if r is outside [0, PoolRanks).
func (t Topology) KindOf(r int) int {
	t.checkRank(r)
	for i := len(t.kinds) - 1; i > 0; i-- {
		if r >= t.kinds[i].first {
			return i
		}
	}
	return 0
}

// LinksOf returns HDP rank r's links (its kind's). It panics if r is outside
// [0, PoolRanks).
func (t Topology) LinksOf(r int) Links {
	if len(t.kinds) == 0 {
		t.checkRank(r)
		return t.Links
	}
	return t.kinds[t.KindOf(r)].links
}

// kindSegments returns the parts of g on each kind it touches, in rank order
// (g itself, with the one kind's links, on a one-kind cluster).
func (t Topology) kindSegments(g Ranks) []kindSegment {
	if len(t.kinds) <= 1 {
		return []kindSegment{{ranks: g, links: t.Links}}
	}
	var out []kindSegment
	for _, k := range t.kinds {
		lo, hi := max(g.First, k.first), min(g.Last(), k.first+k.ranks-1)
		if lo > hi {
			continue
		}
		// The members of g in [lo, hi]: the first at or after lo.
		a := (lo - g.First + g.Stride - 1) / g.Stride
		b := (hi - g.First) / g.Stride
		if a > b {
			continue
		}
		out = append(out, kindSegment{ranks: Ranks{First: g.First + a*g.Stride, Count: b - a + 1, Stride: g.Stride}, links: k.links})
	}
	return out
}

// kindSegment is the part of a rank set on one kind.
type kindSegment struct {
	ranks Ranks
	links Links
}

// ForStage returns the topology of pipeline stage s (0-based). Every stage has the
// same layout when G·tp is a multiple of GPUsPerNode (the usual case) or G·tp
// divides it (the whole pool inside one node); otherwise a stage may start part
// way through a node and its node boundaries shift. It panics if s is outside
// [0, PP).
func (t Topology) ForStage(s int) Topology {
	if s < 0 || s >= t.PP {
		panic(fmt.Sprintf("network: stage %d out of range [0, %d)", s, t.PP))
	}
	t.Stage = s
	return t
}

// WithTP returns the same stage's GPUs grouped tp at a time instead of t.TP:
// the view in which another degree's groups are the ranks (expert TP under
// MoE parallel folding: a stage's tp·G GPUs as G·t.TP/tp expert-TP groups).
// Links, fabric and stage are t's. It fails when tp does not divide the node
// or the stage's GPUs, or on a mixed cluster.
func (t Topology) WithTP(tp int) (Topology, error) {
	gpus := t.PoolRanks * t.TP
	switch {
	case tp < 1 || t.GPUsPerNode%tp != 0:
		return Topology{}, fmt.Errorf("network: tp = %d must be >= 1 and divide gpus per node (%d)", tp, t.GPUsPerNode)
	case gpus%tp != 0:
		return Topology{}, fmt.Errorf("network: tp = %d must divide a stage's %d GPUs", tp, gpus)
	case t.Mixed():
		return Topology{}, fmt.Errorf("network: regrouping a mixed cluster's ranks (tp %d → %d) is not modelled", t.TP, tp)
	}
	t.TP, t.PoolRanks, t.RanksPerNode = tp, gpus/tp, t.GPUsPerNode/tp
	return t, nil
}

// rankOffset is the position of HDP rank 0 of this stage inside its node, in
// HDP-rank slots: node(r) = (r + rankOffset) / RanksPerNode.
func (t Topology) rankOffset() int {
	return (t.Stage * t.PoolRanks) % t.RanksPerNode
}

// Node returns the node (0-based, counted from this stage's first node) that HDP
// rank r of the stage lives on. Nodes are monotone in r. It panics if r is
// outside [0, PoolRanks).
func (t Topology) Node(r int) int {
	t.checkRank(r)
	return (r + t.rankOffset()) / t.RanksPerNode
}

// SameNode reports whether HDP ranks a and b of the stage share an NVLink node.
func (t Topology) SameNode(a, b int) bool { return t.Node(a) == t.Node(b) }

func (t Topology) checkRank(r int) {
	if r < 0 || r >= t.PoolRanks {
		panic(fmt.Sprintf("network: rank %d out of range [0, %d)", r, t.PoolRanks))
	}
}

// Ranks is a set of HDP ranks of one stage: Count ranks First, First+Stride, …,
// First+(Count−1)·Stride. CP groups, EP groups and inner Ulysses groups are
// contiguous (Stride 1); the outer rings of inner-Ulysses×outer-ring are strided
// by the Ulysses degree, expert-DP groups by the EP degree.
type Ranks struct {
	// First is the lowest rank.
	First int
	// Count is the number of ranks.
	Count int
	// Stride is the distance between consecutive ranks (>= 1).
	Stride int
}

// Contiguous returns the ranks [first, first+count).
func Contiguous(first, count int) Ranks { return Ranks{First: first, Count: count, Stride: 1} }

// Last is the highest rank, First+(Count−1)·Stride.
func (g Ranks) Last() int { return g.First + (g.Count-1)*g.Stride }

// Span describes how a rank set lies on nodes.
type Span struct {
	// Nodes is the number of nodes the set touches.
	Nodes int
	// MinLocal and MaxLocal are the fewest and the most members on one of those
	// nodes.
	MinLocal, MaxLocal int
}

// Spans returns the Span of g. A contiguous set of k ranks starting at rank f
// spans ⌈((f+o) mod RanksPerNode + k) / RanksPerNode⌉ nodes (o the stage's
// offset, 0 when stages are node-aligned): one node iff it does not cross a
// multiple of RanksPerNode. It panics if g is empty, has Stride < 1 or leaves the
// pool.
func (t Topology) Spans(g Ranks) Span {
	if g.Count < 1 || g.Stride < 1 {
		panic(fmt.Sprintf("network: rank set %+v: need count >= 1 and stride >= 1", g))
	}
	t.checkRank(g.First)
	t.checkRank(g.Last())
	first, last := t.Node(g.First), t.Node(g.Last())
	if first == last {
		return Span{Nodes: 1, MinLocal: g.Count, MaxLocal: g.Count}
	}
	gpn, o := t.RanksPerNode, t.rankOffset()
	// count of members in [lo, hi] (ranks), members ≡ First mod Stride.
	members := func(lo, hi int) int {
		lo = max(lo, g.First)
		hi = min(hi, g.Last())
		if lo > hi {
			return 0
		}
		a := (lo - g.First + g.Stride - 1) / g.Stride
		b := (hi - g.First) / g.Stride
		return max(0, b-a+1)
	}
	s := Span{MinLocal: g.Count, MaxLocal: 0}
	if g.Stride == 1 {
		// First node, last node, and full nodes in between.
		firstCount := (first+1)*gpn - o - g.First
		lastCount := g.Last() - (last*gpn - o) + 1
		s.Nodes = last - first + 1
		s.MinLocal = min(firstCount, lastCount)
		s.MaxLocal = max(firstCount, lastCount)
		if s.Nodes > 2 {
			s.MinLocal = min(s.MinLocal, gpn)
			s.MaxLocal = max(s.MaxLocal, gpn)
		}
		return s
	}
	for n := first; n <= last; n++ {
		m := members(n*gpn-o, (n+1)*gpn-o-1)
		if m == 0 {
			continue
		}
		s.Nodes++
		s.MinLocal = min(s.MinLocal, m)
		s.MaxLocal = max(s.MaxLocal, m)
	}
	return s
}
