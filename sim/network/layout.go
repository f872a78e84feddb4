package network

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
)

// RaggedAllToAllSeconds is the time of an uneven all-to-all among the
// contiguous ranks [first, first+len(x)) in which rank i sends rank j
// x[i]·y[j]·unit bytes (i ≠ j; its own share stays home): the product form of
// a CP × HP layout's all-to-alls, where x is what a rank holds (its tokens)
// and y what a rank takes of each (its share of the heads), or the reverse for
// the output. Each rank's NVLink carries what it sends to and receives from
// the members of its node and its NIC what it sends to and receives from the
// others, each at its own kind's rate; the busiest endpoint sets the time
// (the largest of sent and received on either link), plus one hop of latency
// (the slowest kind's, inter-node when the ranks span nodes):
//
//	T = max_i max(out_i^nvl, in_i^nvl)/R_nvl(i) ∨ max(out_i^nic, in_i^nic)/R_a2a(i) + α
//
// With x[i] = S and y[j] = 1/n it is AllToAllSeconds. No bytes cost 0. It
// panics if the ranks leave the pool or x and y differ in length.
func RaggedAllToAllSeconds(t Topology, first int, x, y []float64, unit float64) float64 {
	n := len(x)
	if len(y) != n {
		panic(fmt.Sprintf("network: ragged all-to-all with %d senders and %d receivers", n, len(y)))
	}
	if n <= 1 || !(unit > 0) {
		return 0
	}
	g := Contiguous(first, n)
	s := t.Spans(g) // range check
	var xAll, yAll float64
	for i := range n {
		xAll += x[i]
		yAll += y[i]
	}
	// Per node: Σ x and Σ y of its members.
	var worst, alpha float64
	for lo := 0; lo < n; {
		node := t.Node(first + lo)
		hi := lo
		var xNode, yNode float64
		for hi < n && t.Node(first+hi) == node {
			xNode += x[hi]
			yNode += y[hi]
			hi++
		}
		l := t.LinksOf(first + lo) // one node, one kind
		alpha = max(alpha, l.oneHopSeconds(s.Nodes > 1))
		for i := lo; i < hi; i++ {
			outIntra, inIntra := x[i]*(yNode-y[i])*unit, y[i]*(xNode-x[i])*unit
			outInter, inInter := x[i]*(yAll-yNode)*unit, y[i]*(xAll-xNode)*unit
			worst = max(worst, l.nvlinkSeconds(max(outIntra, inIntra)), l.nicSeconds(max(outInter, inInter), l.AllToAllInter))
		}
		lo = hi
	}
	if worst == 0 {
		return 0
	}
	return worst + alpha
}

// LayoutOverlap is the compute a layout group offers to hide its CP
// communication behind: the slowest rank's core attention (ring steps
// overlap its blocks) and, with OverlapAllToAll, the compute independent of
// the Q/K/V all-to-alls.
type LayoutOverlap struct {
	// AttentionFwdSeconds and AttentionBwdSeconds are the slowest rank's core
	// attention for the layer: the ring advances at its pace.
	AttentionFwdSeconds, AttentionBwdSeconds float64
	// IndependentFwdSeconds and IndependentBwdSeconds hide the Q/K/V
	// all-to-alls when OverlapAllToAll is set.
	IndependentFwdSeconds, IndependentBwdSeconds float64
	// OverlapAllToAll hides the Q/K/V all-to-alls behind the independent
	// compute, as CPGroup.OverlapAllToAll.
	OverlapAllToAll bool
}

// LayoutCPLayer prices the CP communication of one layer of a group that
// runs tokens tokens with the CP × HP layout l (sched.Layout) on ranks
// [first, first+size), heads query heads per TP rank, forward and backward:
//
//   - in each HP group h, with shards ℓ_i and head shares η_j = n_j/H, four
//     ragged all-to-alls (RaggedAllToAllSeconds) per pass: queries
//     (x = ℓ, y = η, Q bytes per token), keys and values (y = κ_j, the share
//     of the K/V heads rank j needs, ⌈n_j·n_kv/H⌉/n_kv, K and V bytes), and
//     the output back (x = η, y = ℓ, O bytes); the slowest HP group sets the
//     time. Exposed: all of it, or with OverlapAllToAll the output all-to-all
//     plus what the independent compute does not hide of the rest.
//   - across the r HP groups, r−1 ring steps: at each step every rank
//     receives the K/V of one chunk for its heads, at most L_max·κ_j·(K+V)
//     bytes (twice that backward, dK/dV travel with K/V), over the group's
//     links (NVLink when the group sits in one node, else the NIC at the
//     slowest kind's send/recv rate). Exposed: (r−1)·max(0, step − the
//     slowest rank's attention/r).
//
// With equal shards, equal heads and HP groups of u ranks it prices what
// CPLayer prices for UlyssesRing of inner degree u (ragged all-to-alls cost
// what even ones do). It fails when the layout does not fit the group (see
// sched.Layout.Check), the ranks leave the pool or the overlap is negative.
func LayoutCPLayer(t Topology, m job.Model, first int, l *sched.Layout, tokens int64, heads int, ov LayoutOverlap) (CPLayerCost, error) {
	if l == nil {
		return CPLayerCost{}, errors.New("network: nil layout")
	}
	size := len(l.ShardTokens)
	if first < 0 || size < 1 || first+size > t.PoolRanks {
		return CPLayerCost{}, fmt.Errorf("network: layout group [%d, %d) outside the pool [0, %d)", first, first+size, t.PoolRanks)
	}
	if heads < 1 {
		return CPLayerCost{}, fmt.Errorf("network: %d query heads per TP rank: must be >= 1", heads)
	}
	if err := l.Check(sched.Group{FirstRank: first, Size: size}, tokens, heads); err != nil {
		return CPLayerCost{}, fmt.Errorf("network: %w", err)
	}
	for _, v := range []float64{ov.AttentionFwdSeconds, ov.AttentionBwdSeconds, ov.IndependentFwdSeconds, ov.IndependentBwdSeconds} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return CPLayerCost{}, fmt.Errorf("network: overlap times %+v must be finite and >= 0", ov)
		}
	}
	var c CPLayerCost
	if size == 1 || tokens == 0 {
		return c, nil
	}
	b := tokenBytes(t, m)
	kvLocal := max(m.KVHeads/t.TP, 1)
	kvShare := func(n int) float64 {
		if n == 0 {
			return 0
		}
		return float64((n*kvLocal+heads-1)/heads) / float64(kvLocal)
	}
	// Ulysses part: the slowest HP group.
	var worst a2aPass
	at := 0
	chunks := l.Chunks()
	for _, u := range l.HPGroups {
		if u > 1 {
			x, eta, kappa := make([]float64, u), make([]float64, u), make([]float64, u)
			var payload, sent float64
			for i := range u {
				x[i] = float64(l.ShardTokens[at+i])
				eta[i] = float64(l.Heads[at+i]) / float64(heads)
				kappa[i] = kvShare(l.Heads[at+i])
			}
			var hpTokens float64
			for i := range u {
				hpTokens += x[i]
			}
			for i := range u {
				// What rank i holds before (its tokens, all heads) and after (all
				// the chunk's tokens, its heads) the all-to-alls, and what it sends.
				q, kv := x[i]*b.q, x[i]*(b.k+b.v)
				mine := q + kv*kappaSum(kappa) + hpTokens*eta[i]*b.o
				payload = max(payload, mine)
				sent = max(sent, x[i]*(1-eta[i])*b.q+x[i]*(kappaSum(kappa)-kappa[i])*(b.k+b.v)+eta[i]*(hpTokens-x[i])*b.o)
			}
			p := a2aPass{
				payloadBytes: payload,
				sentBytes:    sent,
				qkvSeconds: RaggedAllToAllSeconds(t, first+at, x, eta, b.q) +
					RaggedAllToAllSeconds(t, first+at, x, kappa, b.k) + RaggedAllToAllSeconds(t, first+at, x, kappa, b.v),
				oSeconds: RaggedAllToAllSeconds(t, first+at, eta, x, b.o),
			}
			if p.qkvSeconds+p.oSeconds > worst.qkvSeconds+worst.oSeconds {
				worst = p
			}
		}
		at += u
	}
	if worst.qkvSeconds+worst.oSeconds > 0 {
		addA2A(&c, worst, ov.OverlapAllToAll, CPOverlap{IndependentFwdSeconds: ov.IndependentFwdSeconds, IndependentBwdSeconds: ov.IndependentBwdSeconds})
	}
	// Ring part across the HP groups.
	r := len(l.HPGroups)
	if r > 1 {
		lMax := 0
		for _, ch := range chunks {
			lMax = max(lMax, ch)
		}
		var share float64
		for _, n := range l.Heads {
			share = max(share, kvShare(n))
		}
		stepBytes := float64(lMax) * share * (b.k + b.v)
		g := Contiguous(first, size)
		spans := t.Spans(g).Nodes > 1
		steps := float64(r - 1)
		for _, p := range []struct {
			cost      *CPCost
			bytes     float64
			attention float64
		}{{&c.Fwd, stepBytes, ov.AttentionFwdSeconds}, {&c.Bwd, 2 * stepBytes, ov.AttentionBwdSeconds}} {
			var step float64
			if spans {
				for _, seg := range t.kindSegments(g) {
					ll := seg.links
					step = max(step, ll.nicSeconds(p.bytes, ll.SendRecvInter)+ll.p2pSeconds(true))
				}
			} else {
				ll := t.LinksOf(first)
				step = ll.nvlinkSeconds(p.bytes) + ll.p2pSeconds(false)
			}
			p.cost.PayloadBytes += steps * p.bytes
			p.cost.SentBytes += steps * p.bytes
			p.cost.CommSeconds += steps * step
			p.cost.ExposedSeconds += steps * max(0, step-p.attention/float64(r))
		}
	}
	return c, nil
}

// kappaSum is Σ κ: the K/V a rank holds for all ranks of its HP group, in
// units of its tokens' K/V.
func kappaSum(kappa []float64) float64 {
	var s float64
	for _, k := range kappa {
		s += k
	}
	return s
}
