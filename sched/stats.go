package sched

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// MBStats describes one microbatch over the ranks that take part in it
// (Plan.Participants). Loads are per-rank attention work Σ s²/k (tokens²) and
// tokens are Σ s/k; a taking-part rank idle in the microbatch counts 0.
type MBStats struct {
	// Groups and BusyRanks count the CP groups and the ranks they cover;
	// Participants counts the ranks taking part (BusyRanks plus idle ones).
	Groups, BusyRanks, Participants int
	// MaxLoad, MeanLoad and MinLoad are per-rank Σ s²/k.
	MaxLoad, MeanLoad, MinLoad float64
	// MaxTokens, MeanTokens and MinTokens are per-rank Σ s/k.
	MaxTokens, MeanTokens, MinTokens float64
	// Intensity is the paper's attention intensity I = Σ s² / R over the R busy
	// ranks (hydra-paper.txt §3.1).
	Intensity float64
}

// DegreeShare is the share of GPU-slots (a rank taking part in a microbatch)
// that ran at one CP degree; Degree 0 collects idle slots.
type DegreeShare struct {
	// Degree is the CP degree (group size), 0 for idle.
	Degree int `json:"degree"`
	// Share is the fraction of all slots.
	Share float64 `json:"share"`
}

// Stats summarises a plan.
type Stats struct {
	// Microbatches holds one entry per microbatch, in order.
	Microbatches []MBStats
	// Degrees is the CP-degree histogram over all slots, by ascending degree.
	Degrees []DegreeShare
	// Slots counts the (rank, microbatch) pairs in which a rank takes part: G·M
	// for a plan of global microbatches.
	Slots int64
	// RankMicrobatchesMin, RankMicrobatchesMax and RankMicrobatchesMean are the
	// microbatch counts of the ranks (each rank's Slots), over all G ranks.
	RankMicrobatchesMin, RankMicrobatchesMax int
	RankMicrobatchesMean                     float64
	// MaxLoad is the largest per-rank load of any microbatch; MaxMinMBLoad is the
	// ratio of the largest to the smallest per-microbatch maximum load.
	MaxLoad, MaxMinMBLoad float64
}

// IdleShare returns the share of slots in which a rank held nothing.
func (s *Stats) IdleShare() float64 {
	for _, d := range s.Degrees {
		if d.Degree == 0 {
			return d.Share
		}
	}
	return 0
}

// Participants returns the ranks that take part in microbatch m as
// half-open, ordered, disjoint intervals [lo, hi): every rank of the pool
// unless the plan's microbatches are partial, else every rank of an EP block
// (the aligned block of ep consecutive ranks; ep <= 1: the rank alone) that one
// of the MB's groups touches, since an idle rank of such a block still joins
// its block's MoE collectives. This is the rule the engine runs (sim/step).
func (p *Plan) Participants(m, ep int) [][2]int {
	if !p.PartialMicrobatches {
		return [][2]int{{0, p.PoolRanks}}
	}
	ep = max(ep, 1)
	var out [][2]int
	for _, g := range p.Microbatches[m].Groups {
		lo := g.FirstRank / ep * ep
		hi := min((g.LastRank()/ep+1)*ep, p.PoolRanks)
		if n := len(out); n > 0 && lo <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], hi)
			continue
		}
		out = append(out, [2]int{lo, hi})
	}
	return out
}

// ComputeStats summarises plan p over the batch lengths, with ep the
// expert-parallel size that decides which ranks take part in a partial
// microbatch (Participants). Groups are assumed ordered by FirstRank and inside
// the pool (Validate).
func ComputeStats(p *Plan, lengths []int, ep int) Stats {
	g := p.PoolRanks
	load := make([]float64, g)
	tokens := make([]float64, g)
	perRank := make([]int, g)
	slots := map[int]int64{}
	st := Stats{Microbatches: make([]MBStats, len(p.Microbatches))}
	minMBMax := math.Inf(1)
	for m, mb := range p.Microbatches {
		ms := &st.Microbatches[m]
		var squares float64
		parts := p.Participants(m, ep)
		for _, iv := range parts {
			clear(load[iv[0]:iv[1]])
			clear(tokens[iv[0]:iv[1]])
			ms.Participants += iv[1] - iv[0]
		}
		for _, grp := range mb.Groups {
			var l, t float64
			for _, id := range grp.Seqs {
				s := float64(lengths[id])
				l += s * s / float64(grp.Size)
				t += s / float64(grp.Size)
				squares += s * s
			}
			for r := max(grp.FirstRank, 0); r <= grp.LastRank() && r < g; r++ {
				load[r] += l
				tokens[r] += t
			}
			ms.Groups++
			ms.BusyRanks += grp.Size
			slots[grp.Size] += int64(grp.Size)
		}
		slots[0] += int64(ms.Participants - ms.BusyRanks)
		st.Slots += int64(ms.Participants)
		ms.MinLoad, ms.MinTokens = math.Inf(1), math.Inf(1)
		for _, iv := range parts {
			for r := iv[0]; r < iv[1]; r++ {
				perRank[r]++
				ms.MaxLoad = math.Max(ms.MaxLoad, load[r])
				ms.MinLoad = math.Min(ms.MinLoad, load[r])
				ms.MeanLoad += load[r] / float64(ms.Participants)
				ms.MaxTokens = math.Max(ms.MaxTokens, tokens[r])
				ms.MinTokens = math.Min(ms.MinTokens, tokens[r])
				ms.MeanTokens += tokens[r] / float64(ms.Participants)
			}
		}
		if ms.Participants == 0 {
			ms.MinLoad, ms.MinTokens = 0, 0
		}
		if ms.BusyRanks > 0 {
			ms.Intensity = squares / float64(ms.BusyRanks)
		}
		st.MaxLoad = math.Max(st.MaxLoad, ms.MaxLoad)
		minMBMax = math.Min(minMBMax, ms.MaxLoad)
	}
	if len(p.Microbatches) > 0 && minMBMax > 0 {
		st.MaxMinMBLoad = st.MaxLoad / minMBMax
	}
	if g > 0 {
		st.RankMicrobatchesMin = math.MaxInt
		for _, n := range perRank {
			st.RankMicrobatchesMin = min(st.RankMicrobatchesMin, n)
			st.RankMicrobatchesMax = max(st.RankMicrobatchesMax, n)
		}
		st.RankMicrobatchesMean = float64(st.Slots) / float64(g)
	}
	st.Degrees = SharesOf(slots)
	return st
}

// SharesOf turns slot counts by degree into shares by ascending degree (0,
// idle, first); degrees without slots are left out.
func SharesOf[N int64 | float64](slots map[int]N) []DegreeShare {
	var total N
	degrees := make([]int, 0, len(slots))
	for d, n := range slots {
		if n > 0 {
			degrees = append(degrees, d)
			total += n
		}
	}
	if total == 0 {
		return nil
	}
	slices.Sort(degrees)
	out := make([]DegreeShare, len(degrees))
	for i, d := range degrees {
		out[i] = DegreeShare{Degree: d, Share: float64(slots[d]) / float64(total)}
	}
	return out
}

// FormatDegrees formats a degree histogram as "1:12.5% 2:25.0% ...".
func FormatDegrees(ds []DegreeShare) string {
	return FormatDegreeShares(ds, "%s:%.1f%%", " ")
}

// FormatDegreeShares writes each share with format (the degree's name, "idle"
// for 0, and the percentage), joined by sep.
func FormatDegreeShares(ds []DegreeShare, format, sep string) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		name := fmt.Sprint(d.Degree)
		if d.Degree == 0 {
			name = "idle"
		}
		parts[i] = fmt.Sprintf(format, name, 100*d.Share)
	}
	return strings.Join(parts, sep)
}
