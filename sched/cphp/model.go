// Package cphp is what the CP × HP policies (sched/usp, sched/hexiseq) share:
// a planning model of a group's layer time under a sched.Layout on the
// pool's GPU kinds (sched.Cluster), equal-share layouts, integer
// apportionment, and the packing of a batch's sequences into microbatches of
// data-parallel replicas. It is a planner's model, simpler than the
// simulator's cost model (costmodel), as a real planner's is: each kind's
// attention and linear work at one efficiency, its links at their achieved
// rates, one hop of latency per collective.
//
// # The planning model
//
// A group of ranks runs S1 = Σ s tokens with Σ s² = S2 under a layout of HP
// groups h, rank shards x_i (tokens) and head counts n_i (of H). Per layer,
// forward plus backward, with a_k and l_k kind k's attention (per token²) and
// linear (per token) seconds:
//
//	linear     max_i l_k(i)·x_i                          (the slowest rank: barriers at the all-to-alls)
//	attention  max_i a_k(i)·(n_i/H)·(L_h/S1)·S2          (L_h = Σ_{i∈h} x_i)
//	all-to-all 2·max_h Σ_{Q,K,V,O} max_i max(sent, received on NVLink / on the NIC)/rate + 8 hops of latency
//	ring       (r−1)·[max(0, σ − A_f/r) + max(0, 2σ − A_b/r)],  σ = L_max·κ_max·KV/rate + latency
//
// with r the HP groups, κ_i = ⌈n_i·n_kv/H⌉/n_kv the K/V share a rank needs,
// A_f and A_b the attention split 1 : 2.5 into forward and backward, and the
// ring's rate the slowest kind's NIC (send/recv) when the group spans nodes,
// else its node's NVLink. A microbatch adds θ (Cluster.OverheadSeconds); the
// stage is Cluster.Layers layers. Without a Cluster every rank is a unit kind
// (attention 1e-12 s per token², no linear work, free links) and θ is
// Inputs.OverheadRatio of it.
package cphp

import (
	"math"

	"github.com/dcpsim/dcpsim/sched"
)

// attentionFwdShare is the forward part of core attention's forward plus
// backward time (backward = 2.5 × forward, costmodel §2).
const attentionFwdShare = 1 / 3.5

// unitAttentionSeconds is the attention time per token² of the unit kind
// (no Cluster): sim/step's load-mode constant.
const unitAttentionSeconds = 1e-12

// Model is the planning model of one pool. It serves one plan at a time
// (it keeps scratch space): build one per Plan call.
type Model struct {
	// Heads is H, the query heads of a TP rank.
	Heads int
	// Kinds are the pool's kinds (a unit kind without a Cluster).
	Kinds []sched.DeviceKind
	// Layers multiplies the per-layer times.
	Layers float64
	// Overhead is θ, the fixed seconds of one microbatch.
	Overhead float64
	// RanksPerNode is the HDP ranks of an NVLink node (0: every rank its own).
	RanksPerNode int
	// PoolRanks is G.
	PoolRanks int

	q, kv, o float64 // bytes per token per layer
	kvHeads  int
	free     bool // links cost nothing (no Cluster)
	kindOf   []int
	// scratch for hpAllToAll (a Model serves one plan, in one goroutine)
	eta, kappa []float64
}

// NewModel builds the planning model of the pool of in.
func NewModel(in sched.Inputs) *Model {
	m := &Model{Heads: in.HeadsPerRank(), PoolRanks: in.PoolRanks}
	c := in.Cluster
	if c == nil {
		m.Kinds = []sched.DeviceKind{{Name: "unit", Ranks: in.PoolRanks, BudgetTokens: in.BudgetTokens,
			AttentionSecondsPerToken2: unitAttentionSeconds, NVLinkBytesPerSecond: 1, NICBytesPerSecond: 1, RingNICBytesPerSecond: 1}}
		m.Layers, m.Overhead, m.free, m.kvHeads, m.RanksPerNode = 1, in.OverheadRatio*unitAttentionSeconds, true, m.Heads, 1
	} else {
		m.Kinds = c.Kinds
		m.Layers, m.Overhead = float64(c.Layers), c.OverheadSeconds
		m.q, m.kv, m.o, m.kvHeads, m.RanksPerNode = c.QBytesPerToken, c.KVBytesPerToken, c.OBytesPerToken, c.KVHeads, c.RanksPerNode
	}
	m.kindOf = make([]int, in.PoolRanks)
	r := 0
	for k, kind := range m.Kinds {
		for range kind.Ranks {
			if r < len(m.kindOf) {
				m.kindOf[r] = k
			}
			r++
		}
	}
	return m
}

// Kind returns rank r's kind.
func (m *Model) Kind(r int) *sched.DeviceKind { return &m.Kinds[m.kindOf[r]] }

// KindIndex returns the index of rank r's kind.
func (m *Model) KindIndex(r int) int { return m.kindOf[r] }

// node returns rank r's NVLink node.
func (m *Model) node(r int) int {
	if m.RanksPerNode < 1 {
		return r
	}
	return r / m.RanksPerNode
}

// KVShare is κ(n) = ⌈n·n_kv/H⌉/n_kv: the share of a TP rank's K/V heads a
// rank running n of its H query heads needs (0 for no heads).
func (m *Model) KVShare(n float64) float64 {
	if n <= 0 {
		return 0
	}
	kv := float64(m.kvHeads)
	return math.Ceil(n*kv/float64(m.Heads)-1e-9) / kv
}

// Parts are a group's per-layer times under a layout, before they are
// combined (Seconds): each scales in its own way with the group's tokens.
type Parts struct {
	// Linear and Attention are the slowest rank's linear and core-attention
	// seconds.
	Linear, Attention float64
	// AllToAll is one pass's four all-to-alls of the slowest HP group
	// (bandwidth terms); AllToAllLatency their latency.
	AllToAll, AllToAllLatency float64
	// Step is one forward ring step's transfer (bandwidth term);
	// StepLatency its latency; Steps = r−1.
	Step, StepLatency float64
	Steps             int
}

// View is a group's layout as the model reads it: HP group sizes, each
// rank's tokens (or token share) and heads.
type View struct {
	// First is the group's first rank.
	First int
	// HPGroups are the HP group sizes.
	HPGroups []int
	// Tokens[i] is rank First+i's tokens (or its share of one token).
	Tokens []float64
	// Heads[i] is its query heads.
	Heads []float64
}

// Parts prices the view when the group's tokens are s1 and Σ s² is s2 (with
// Tokens in shares of one token, s1 = 1 gives per-token terms).
func (m *Model) Parts(v View, s1, s2 float64) Parts {
	var p Parts
	n := len(v.Tokens)
	hf := float64(m.Heads)
	at := 0
	var lMax, kMax float64
	crossNodes := false
	for _, u := range v.HPGroups {
		var chunk float64
		for i := at; i < at+u; i++ {
			chunk += v.Tokens[i]
		}
		lMax = max(lMax, chunk)
		for i := at; i < at+u; i++ {
			k := m.Kind(v.First + i)
			p.Linear = max(p.Linear, k.LinearSecondsPerToken*v.Tokens[i])
			if s1 > 0 {
				p.Attention = max(p.Attention, k.AttentionSecondsPerToken2*v.Heads[i]/hf*chunk/s1*s2)
			}
			kMax = max(kMax, m.KVShare(v.Heads[i]))
		}
		if u > 1 && !m.free {
			a2a, lat, cross := m.hpAllToAll(v, at, u)
			if a2a+lat > p.AllToAll+p.AllToAllLatency {
				p.AllToAll, p.AllToAllLatency = a2a, lat
			}
			crossNodes = crossNodes || cross
		}
		at += u
	}
	p.Steps = len(v.HPGroups) - 1
	if p.Steps > 0 && !m.free {
		if m.node(v.First) != m.node(v.First+n-1) {
			crossNodes = true
		}
		bytes := lMax * kMax * m.kv
		if crossNodes {
			for i := range n {
				k := m.Kind(v.First + i)
				p.Step = max(p.Step, bytes/k.RingNICBytesPerSecond)
				p.StepLatency = max(p.StepLatency, k.InterLatencySeconds)
			}
		} else {
			k := m.Kind(v.First)
			p.Step, p.StepLatency = bytes/k.NVLinkBytesPerSecond, k.IntraLatencySeconds
		}
	}
	return p
}

// hpAllToAll is one pass of an HP group's four all-to-alls (queries, keys,
// values out; output back), bandwidth and latency, and whether it crosses
// nodes.
func (m *Model) hpAllToAll(v View, at, u int) (bw, latency float64, cross bool) {
	hf := float64(m.Heads)
	x := v.Tokens[at : at+u]
	if cap(m.eta) < u {
		m.eta, m.kappa = make([]float64, u), make([]float64, u)
	}
	eta, kappa := m.eta[:u], m.kappa[:u]
	for i := range u {
		eta[i] = v.Heads[at+i] / hf
		kappa[i] = m.KVShare(v.Heads[at+i])
	}
	first := v.First + at
	cross = m.node(first) != m.node(first+u-1)
	bw = m.ragged(first, x, eta, m.q) + m.ragged(first, x, kappa, m.kv) + m.ragged(first, eta, x, m.o)
	for i := range u {
		k := m.Kind(first + i)
		lat := k.IntraLatencySeconds
		if cross {
			lat = k.InterLatencySeconds
		}
		latency = max(latency, 4*lat) // Q, K, V and O: one hop each
	}
	return bw, latency, cross
}

// ragged is the bandwidth time of an all-to-all in which rank i of the
// ranks from first sends x[i]·y[j]·unit bytes to rank j: the busiest
// endpoint, NVLink inside its node and its NIC to the others.
func (m *Model) ragged(first int, x, y []float64, unit float64) float64 {
	var xAll, yAll float64
	for i := range x {
		xAll += x[i]
		yAll += y[i]
	}
	var worst float64
	for lo := 0; lo < len(x); {
		node := m.node(first + lo)
		hi := lo
		var xn, yn float64
		for hi < len(x) && m.node(first+hi) == node {
			xn += x[hi]
			yn += y[hi]
			hi++
		}
		k := m.Kind(first + lo)
		for i := lo; i < hi; i++ {
			intra := max(x[i]*(yn-y[i]), y[i]*(xn-x[i])) * unit
			inter := max(x[i]*(yAll-yn), y[i]*(xAll-xn)) * unit
			worst = max(worst, intra/k.NVLinkBytesPerSecond, inter/k.NICBytesPerSecond)
		}
		lo = hi
	}
	return worst
}

// Seconds combines per-token parts (from Parts with s1 = 1, s2 = 1) into the
// stage time of a group holding s1 tokens with Σ s² = s2, without θ.
func (m *Model) Seconds(p Parts, s1, s2 float64) float64 {
	return m.combine(s1*p.Linear, s2*p.Attention, s1*p.AllToAll+p.AllToAllLatency, s1*p.Step+p.StepLatency, p.Steps)
}

// ExactSeconds is the stage time of parts priced at the group's own tokens
// (Parts with the actual s1 and s2), without θ.
func (m *Model) ExactSeconds(p Parts) float64 {
	return m.combine(p.Linear, p.Attention, p.AllToAll+p.AllToAllLatency, p.Step+p.StepLatency, p.Steps)
}

// combine is the layer time of its terms (see the package doc) times the
// stage's layers.
func (m *Model) combine(lin, attn, a2a, step float64, steps int) float64 {
	t := lin + attn + 2*a2a
	if steps > 0 {
		r := float64(steps + 1)
		t += float64(steps) * (max(0, step-attn*attentionFwdShare/r) + max(0, 2*step-attn*(1-attentionFwdShare)/r))
	}
	return m.Layers * t
}
