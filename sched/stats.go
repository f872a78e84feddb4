package sched

import (
	"fmt"
	"math"
	"sort"
)

// MBStats describes one microbatch. Loads are per-rank attention work Σ s²/k
// (tokens²) and tokens are Σ s/k, over all G ranks (a rank idle in the
// microbatch counts 0).
type MBStats struct {
	// Groups and BusyRanks count the CP groups and the ranks they cover.
	Groups, BusyRanks int
	// MaxLoad, MeanLoad and MinLoad are per-rank Σ s²/k.
	MaxLoad, MeanLoad, MinLoad float64
	// MaxTokens, MeanTokens and MinTokens are per-rank Σ s/k.
	MaxTokens, MeanTokens, MinTokens float64
	// Intensity is the paper's attention intensity I = Σ s² / R over the R busy
	// ranks (hydra-paper.txt §3.1).
	Intensity float64
}

// DegreeShare is the share of GPU-slots (ranks × microbatches) that ran at one
// CP degree; Degree 0 collects idle slots.
type DegreeShare struct {
	// Degree is the CP degree (group size), 0 for idle.
	Degree int
	// Share is the fraction of all rank-microbatch slots.
	Share float64
}

// Stats summarises a plan.
type Stats struct {
	// Microbatches holds one entry per microbatch, in order.
	Microbatches []MBStats
	// Degrees is the CP-degree histogram, by ascending degree.
	Degrees []DegreeShare
	// MaxLoad is the largest per-rank load of any microbatch; MaxMinMBLoad is the
	// ratio of the largest to the smallest per-microbatch maximum load.
	MaxLoad, MaxMinMBLoad float64
}

// ComputeStats summarises plan p over the batch lengths.
func ComputeStats(p *Plan, lengths []int) Stats {
	g := p.PoolRanks
	load := make([]float64, g)
	tokens := make([]float64, g)
	slots := map[int]int{}
	st := Stats{Microbatches: make([]MBStats, len(p.Microbatches))}
	minMBMax := math.Inf(1)
	for m, mb := range p.Microbatches {
		clear(load)
		clear(tokens)
		ms := &st.Microbatches[m]
		var squares float64
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
			slots[grp.Size] += grp.Size
		}
		slots[0] += g - ms.BusyRanks
		ms.MinLoad, ms.MinTokens = math.Inf(1), math.Inf(1)
		for r := range g {
			ms.MaxLoad = math.Max(ms.MaxLoad, load[r])
			ms.MinLoad = math.Min(ms.MinLoad, load[r])
			ms.MeanLoad += load[r] / float64(g)
			ms.MaxTokens = math.Max(ms.MaxTokens, tokens[r])
			ms.MinTokens = math.Min(ms.MinTokens, tokens[r])
			ms.MeanTokens += tokens[r] / float64(g)
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
	total := g * len(p.Microbatches)
	degrees := make([]int, 0, len(slots))
	for d, n := range slots {
		if n > 0 {
			degrees = append(degrees, d)
		}
	}
	sort.Ints(degrees)
	for _, d := range degrees {
		st.Degrees = append(st.Degrees, DegreeShare{Degree: d, Share: float64(slots[d]) / float64(total)})
	}
	return st
}

// FormatDegrees formats a degree histogram as "1:12.5% 2:25.0% ...".
func FormatDegrees(ds []DegreeShare) string {
	var s string
	for i, d := range ds {
		if i > 0 {
			s += " "
		}
		label := fmt.Sprint(d.Degree)
		if d.Degree == 0 {
			label = "idle"
		}
		s += fmt.Sprintf("%s:%.1f%%", label, 100*d.Share)
	}
	return s
}
