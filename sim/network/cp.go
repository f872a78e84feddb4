package network

import (
	"errors"
	"fmt"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
)

// headsPerTP is n_h/tp, the query heads one TP rank holds.
func headsPerTP(t Topology, m job.Model) int { return m.QueryHeads / t.TP }

// MaxCPDegree is the largest CP degree exec can run (the engine limit a policy's
// MaxDegree comes from): Ulysses at most n_h/tp (one query head per rank at
// least) and at most G; Ring, UlyssesRing and AllGatherKV are not bounded by
// heads, only by the pool G. It returns 0 for an invalid exec.
func MaxCPDegree(e sched.CPExec, t Topology, m job.Model) int {
	switch e {
	case sched.Ulysses:
		return min(headsPerTP(t, m), t.PoolRanks)
	case sched.Ring, sched.UlyssesRing, sched.AllGatherKV:
		return t.PoolRanks
	}
	return 0
}

// UlyssesDegreeFor picks the inner Ulysses degree u of a UlyssesRing group of
// degree P: the largest power of two that divides P and is at most
// min(P, RanksPerNode, n_h/tp), so the all-to-all stays inside NVLink and every
// rank keeps a query head; the ring degree is P/u. It returns 1 when P < 1 or no
// larger power of two qualifies (a plain ring).
func UlyssesDegreeFor(t Topology, m job.Model, degree int) int {
	return UlyssesDegreeWithin(t, m, degree, false)
}

// UlyssesDegreeWithin is UlyssesDegreeFor, except that with acrossNodes the
// all-to-all may leave the node: u is the largest power of two dividing P and
// at most min(P, n_h/tp), so the outer ring shrinks as P grows (a what-if:
// the inner all-to-all then crosses the NICs).
func UlyssesDegreeWithin(t Topology, m job.Model, degree int, acrossNodes bool) int {
	limit := min(degree, headsPerTP(t, m))
	if !acrossNodes {
		limit = min(limit, t.RanksPerNode)
	}
	u := 1
	for 2*u <= limit && degree%(2*u) == 0 {
		u *= 2
	}
	return u
}

// CPGroup is one CP group executing a sequence piece: its exec, its contiguous HDP
// ranks [FirstRank, FirstRank+Degree) and the execution choices.
type CPGroup struct {
	// Exec is the CP execution.
	Exec sched.CPExec
	// FirstRank is the lowest HDP rank of the group.
	FirstRank int
	// Degree is P, the number of ranks.
	Degree int
	// UlyssesDegree is u for UlyssesRing (it must divide Degree); 0 picks
	// UlyssesDegreeFor. Ignored by Ulysses (u = P) and Ring (u = 1).
	UlyssesDegree int
	// OverlapAllToAll hides the Q, K, V all-to-alls (and their backward
	// counterparts dQ, dK, dV) behind compute that does not depend on them, as
	// HyDra §5.2.2 does; false leaves every all-to-all exposed, as Megatron-Core
	// DCP does (HyDra §3.1, Fig. 9).
	OverlapAllToAll bool
}

// CPOverlap is the compute, per rank and per layer, that the caller offers to hide
// CP communication behind.
type CPOverlap struct {
	// AttentionFwdSeconds and AttentionBwdSeconds are the rank's core-attention
	// time for the piece. Ring steps overlap with it: with zigzag each of the r
	// ring steps computes an equal 1/r of it (costmodel §4.2).
	AttentionFwdSeconds, AttentionBwdSeconds float64
	// IndependentFwdSeconds and IndependentBwdSeconds are the compute that does
	// not wait for the Q, K, V all-to-alls (the projections, RoPE, gate of HyDra
	// §5.2.2, and their adjoints); used only when OverlapAllToAll is set.
	IndependentFwdSeconds, IndependentBwdSeconds float64
}

// CPCost is the CP communication of one pass (forward or backward) of one layer
// on the slowest rank of a group.
type CPCost struct {
	// PayloadBytes is what the rank's collectives carry: the all-to-all buffers of
	// its own tokens (its local 1/u share included, as costmodel §4.8 counts) plus
	// the ring blocks it sends.
	PayloadBytes float64
	// SentBytes is what leaves the rank: (u−1)/u of the all-to-all buffers plus the
	// ring blocks (costmodel §4.1–§4.3).
	SentBytes float64
	// CommSeconds is the time the communication itself takes.
	CommSeconds float64
	// ExposedSeconds is the part of CommSeconds on the critical path, given the
	// overlappable compute (at most CommSeconds).
	ExposedSeconds float64
	// NICSeconds is the part of CommSeconds's transfers on the rank's NIC
	// alone, at the line rate of each collective's kind: the size of the
	// rank's flow in a Window (CPDemand). It is computed only on a topology
	// whose fabric can contend (Topology.Contended), else 0.
	NICSeconds float64
}

// CPLayerCost is the CP communication of one layer, forward and backward.
type CPLayerCost struct {
	// Fwd and Bwd are the two passes.
	Fwd, Bwd CPCost
}

// perTokenBytes is the bytes one token contributes per layer on one GPU, after
// the TP split: query, key, value and attention output (Ulysses), and key+value
// (ring). K/V heads are split over tp as n_kv/tp when n_kv >= tp and replicated
// (one per TP rank) otherwise.
type perTokenBytes struct{ q, k, v, o float64 }

func tokenBytes(t Topology, m job.Model) perTokenBytes {
	tp := float64(t.TP)
	nh, nkv := float64(m.QueryHeads), float64(m.KVHeads)
	kvShare := 1 / nkv // per K/V head when replicated over TP
	if m.KVHeads >= t.TP {
		kvShare = 1 / tp
	}
	dqk, dv := float64(m.HeadDimQK), float64(m.HeadDimV)
	return perTokenBytes{
		q: 2 * nh * dqk / tp,
		k: 2 * nkv * dqk * kvShare,
		v: 2 * nkv * dv * kvShare,
		o: 2 * nh * dv / tp,
	}
}

// TokenBytes returns what one token contributes per layer and GPU to CP
// collectives, after the TP split: its queries and attention output over the
// TP rank's query heads, and its keys and values over its K/V heads (see
// CPLayer).
func TokenBytes(t Topology, m job.Model) (q, k, v, o float64) {
	b := tokenBytes(t, m)
	return b.q, b.k, b.v, b.o
}

// kvReplication is ρ = max(1, u / (n_kv per TP rank)): when the Ulysses degree
// exceeds the K/V heads a TP rank holds, K/V heads are replicated so every rank
// owns one, and K/V bytes grow by ρ (costmodel §4.1).
func kvReplication(t Topology, m job.Model, u int) float64 {
	kvLocal := max(m.KVHeads/t.TP, 1)
	return max(1, float64(u)/float64(kvLocal))
}

// CPLayer prices the CP communication of one layer for a sequence piece of tokens
// tokens (one sequence, or the packed sequences of the group, which then share one
// ring pass) run by group g, forward and backward, on the group's slowest rank.
// With x = tokens/P tokens per rank and per-GPU per-token bytes Q, K, V, O (and
// K_ring = K+V), ρ the K/V replication factor:
//
//   - Ulysses (u = P): forward all-to-alls of x·Q, x·ρK, x·ρV before attention and
//     x·O after; backward the same four (dO, dQ, dK, dV). Exposed: all of it, or
//     with OverlapAllToAll, the O (dO) all-to-all plus max(0, t_Q+t_K+t_V −
//     Independent{Fwd,Bwd}Seconds).
//   - Ring (u = 1, r = P): r−1 steps of SendRecvSeconds(x·K_ring) forward and
//     r−1 of SendRecvSeconds(2·x·K_ring) backward (K/V and dK/dV travel
//     together). Exposed = (r−1)·max(0, step − Attention{Fwd,Bwd}Seconds/r).
//   - UlyssesRing (P = u·r): the Ulysses part on the worst of the r inner blocks
//     of u contiguous ranks, plus the ring part on the worst of the u rings of r
//     ranks strided by u, moving ρ·x·K_ring per step; the costs add.
//   - AllGatherKV: forward an all-gather of the group's K and V, P·x·K_ring
//     bytes every rank ends with; backward a reduce-scatter of dK and dV of the
//     same size (the gathered K/V are kept from the forward, not gathered
//     again). Both exposed: attention waits for the gathered K/V and the
//     layer's input gradient for dK/dV (Llama 3 §3.3.2, WLB-LLM §5).
//
// It returns an error when the exec is invalid, the group leaves the pool, the
// degree exceeds MaxCPDegree, the Ulysses degree is not a divisor of P within
// n_h/tp, or tokens or overlap times are negative. A degree of 1 or no tokens
// costs nothing.
func CPLayer(t Topology, m job.Model, g CPGroup, tokens int, ov CPOverlap) (CPLayerCost, error) {
	if err := checkCP(t, m, g, tokens, ov); err != nil {
		return CPLayerCost{}, err
	}
	if g.Degree == 1 || tokens == 0 {
		return CPLayerCost{}, nil
	}
	u := 1
	switch g.Exec {
	case sched.Ulysses:
		u = g.Degree
	case sched.UlyssesRing:
		u = g.UlyssesDegree
		if u == 0 {
			u = UlyssesDegreeFor(t, m, g.Degree)
		}
	}
	r := g.Degree / u
	x := float64(tokens) / float64(g.Degree)
	var c CPLayerCost
	if g.Exec == sched.AllGatherKV {
		b := tokenBytes(t, m)
		addAllGather(&c, t, Contiguous(g.FirstRank, g.Degree), x*(b.k+b.v))
		return c, nil
	}
	if u > 1 {
		a := worstUlyssesBlock(t, m, g.FirstRank, u, r, x)
		addA2A(&c, a, g.OverlapAllToAll, ov)
	}
	if r > 1 {
		stepBytes := x * kvReplication(t, m, u) * (tokenBytes(t, m).k + tokenBytes(t, m).v)
		ring := worstRing(t, g.FirstRank, u, r)
		if t.Mixed() {
			// Rings on different kinds differ: the slowest sets the pace.
			worst := SendRecvSeconds(t, ring, stepBytes)
			for i := range u {
				cand := Ranks{First: g.FirstRank + i, Count: r, Stride: u}
				if sec := SendRecvSeconds(t, cand, stepBytes); sec > worst {
					ring, worst = cand, sec
				}
			}
		}
		addRing(&c, t, ring, r, stepBytes, ov)
	}
	return c, nil
}

func checkCP(t Topology, m job.Model, g CPGroup, tokens int, ov CPOverlap) error {
	var errs []error
	if !g.Exec.Valid() {
		errs = append(errs, fmt.Errorf("network: invalid CP exec %d", int(g.Exec)))
	}
	if g.Degree < 1 || g.FirstRank < 0 || g.FirstRank+g.Degree > t.PoolRanks {
		errs = append(errs, fmt.Errorf("network: CP group [%d, %d) outside the pool [0, %d)", g.FirstRank, g.FirstRank+g.Degree, t.PoolRanks))
	} else if limit := MaxCPDegree(g.Exec, t, m); g.Exec.Valid() && g.Degree > limit {
		errs = append(errs, fmt.Errorf("network: CP degree %d exceeds %s's limit %d (query heads %d / tp %d, pool %d)",
			g.Degree, g.Exec, limit, m.QueryHeads, t.TP, t.PoolRanks))
	}
	if g.Exec == sched.UlyssesRing && g.UlyssesDegree != 0 {
		u := g.UlyssesDegree
		if u < 1 || g.Degree < 1 || g.Degree%u != 0 || u > headsPerTP(t, m) {
			errs = append(errs, fmt.Errorf("network: sched.Ulysses degree %d must divide the CP degree %d and be at most query heads/tp = %d",
				u, g.Degree, headsPerTP(t, m)))
		}
	}
	if tokens < 0 {
		errs = append(errs, fmt.Errorf("network: tokens = %d must be >= 0", tokens))
	}
	if !(ov.AttentionFwdSeconds >= 0 && ov.AttentionBwdSeconds >= 0 && ov.IndependentFwdSeconds >= 0 && ov.IndependentBwdSeconds >= 0) {
		errs = append(errs, fmt.Errorf("network: overlap times %+v must be >= 0", ov))
	}
	return errors.Join(errs...)
}

// a2aPass is the four all-to-alls of one Ulysses pass on one block.
type a2aPass struct {
	payloadBytes, sentBytes float64
	qkvSeconds, oSeconds    float64
	nicSeconds              float64 // the four all-to-alls' NIC terms (contended fabrics only)
}

// ulyssesBlock prices one pass (forward and backward are alike) of the Ulysses
// all-to-alls on the u ranks starting at first, x tokens per rank.
func ulyssesBlock(t Topology, m job.Model, first, u int, x float64) a2aPass {
	b := tokenBytes(t, m)
	rho := kvReplication(t, m, u)
	q, k, v, o := x*b.q, x*rho*b.k, x*rho*b.v, x*b.o
	payload := q + k + v + o
	a := a2aPass{
		payloadBytes: payload,
		sentBytes:    float64(u-1) / float64(u) * payload,
		qkvSeconds:   AllToAllSeconds(t, first, u, q) + AllToAllSeconds(t, first, u, k) + AllToAllSeconds(t, first, u, v),
		oSeconds:     AllToAllSeconds(t, first, u, o),
	}
	if t.Contended() {
		a.nicSeconds = allToAllNICSeconds(t, first, u, payload)
	}
	return a
}

// worstUlyssesBlock is the slowest of the r inner blocks [first+j·u, first+(j+1)·u).
// On one kind a block's cost depends only on its start modulo RanksPerNode, so
// at most RanksPerNode blocks are priced; on a mixed cluster every block is.
func worstUlyssesBlock(t Topology, m job.Model, first, u, r int, x float64) a2aPass {
	worst := ulyssesBlock(t, m, first, u, x)
	blocks := min(r, t.RanksPerNode)
	if t.Mixed() {
		blocks = r
	}
	for j := 1; j < blocks; j++ {
		a := ulyssesBlock(t, m, first+j*u, u, x)
		if a.qkvSeconds+a.oSeconds > worst.qkvSeconds+worst.oSeconds {
			worst = a
		}
	}
	return worst
}

// worstRing returns one of the u outer rings {first+i, first+i+u, …} that crosses
// nodes if any does (all rings carry the same bytes), else the first.
func worstRing(t Topology, first, u, r int) Ranks {
	for i := range u {
		ring := Ranks{First: first + i, Count: r, Stride: u}
		if !t.SameNode(ring.First, ring.Last()) {
			return ring
		}
	}
	return Ranks{First: first, Count: r, Stride: u}
}

func addA2A(c *CPLayerCost, a a2aPass, overlap bool, ov CPOverlap) {
	for _, p := range []struct {
		cost   *CPCost
		hiding float64
	}{{&c.Fwd, ov.IndependentFwdSeconds}, {&c.Bwd, ov.IndependentBwdSeconds}} {
		comm := a.qkvSeconds + a.oSeconds
		exposed := comm
		if overlap {
			exposed = a.oSeconds + max(0, a.qkvSeconds-p.hiding)
		}
		p.cost.PayloadBytes += a.payloadBytes
		p.cost.SentBytes += a.sentBytes
		p.cost.CommSeconds += comm
		p.cost.ExposedSeconds += exposed
		p.cost.NICSeconds += a.nicSeconds
	}
}

func addRing(c *CPLayerCost, t Topology, ring Ranks, r int, stepBytes float64, ov CPOverlap) {
	steps := float64(r - 1)
	for _, p := range []struct {
		cost      *CPCost
		bytes     float64
		attention float64
	}{{&c.Fwd, stepBytes, ov.AttentionFwdSeconds}, {&c.Bwd, 2 * stepBytes, ov.AttentionBwdSeconds}} {
		step := SendRecvSeconds(t, ring, p.bytes)
		p.cost.PayloadBytes += steps * p.bytes
		p.cost.SentBytes += steps * p.bytes
		p.cost.CommSeconds += steps * step
		p.cost.ExposedSeconds += steps * max(0, step-p.attention/float64(r))
		if t.Contended() {
			p.cost.NICSeconds += steps * sendRecvNICSeconds(t, ring, p.bytes)
		}
	}
}

// addAllGather prices AllGatherKV on group g where every rank holds share
// bytes of K and V: forward the all-gather of g.Count·share bytes, backward
// the reduce-scatter of dK and dV of the same size, all exposed. A rank sends
// its share to each of the Count−1 others (NCCL's ring forwards (Count−1)
// shares per rank).
func addAllGather(c *CPLayerCost, t Topology, g Ranks, share float64) {
	total := float64(g.Count) * share
	for _, p := range []struct {
		cost    *CPCost
		seconds float64
	}{{&c.Fwd, AllGatherSeconds(t, g, total)}, {&c.Bwd, ReduceScatterSeconds(t, g, total)}} {
		p.cost.PayloadBytes += total
		p.cost.SentBytes += float64(g.Count-1) * share
		p.cost.CommSeconds += p.seconds
		p.cost.ExposedSeconds += p.seconds
		if t.Contended() {
			p.cost.NICSeconds += ringNICSeconds(t, g, total)
		}
	}
}

// CPDemand is group g's flows in a Window, from its priced pass c (CPLayer
// on a contended topology): an all-to-all over the group for Ulysses, and
// for Ring and UlyssesRing whose inner blocks leave the node; NCCL's ring
// for AllGatherKV; else the group's u outer rings (u = 1: a plain ring).
func CPDemand(t Topology, m job.Model, g CPGroup, c CPCost) Demand {
	d := Demand{Ranks: Contiguous(g.FirstRank, g.Degree), NICSeconds: c.NICSeconds}
	u := 1
	switch g.Exec {
	case sched.Ulysses:
		d.Pattern = PatternAllToAll
		return d
	case sched.AllGatherKV:
		d.Pattern = PatternNCCLRing
		return d
	case sched.UlyssesRing:
		u = g.UlyssesDegree
		if u == 0 {
			u = UlyssesDegreeFor(t, m, g.Degree)
		}
	}
	if u > 1 && (u > t.RanksPerNode || t.Spans(Contiguous(g.FirstRank, u)).Nodes > 1) {
		d.Pattern = PatternAllToAll
		return d
	}
	d.Pattern, d.Rings = PatternRings, u
	return d
}
