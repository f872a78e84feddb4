package costmodel

import (
	"fmt"

	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/sim/step"
)

var _ step.ActivationSizer = (*Iteration)(nil)

// groupShard is what each rank of a group holds for the memory model: its
// tokens (the fullest rank's shard for a CP × HP layout) and its attention
// scores Σ s²/k.
type groupShard struct{ tokens, scores float64 }

// GroupShard returns each rank of group gi of domain d's tokens and
// attention scores (step.ActivationSizer).
func (it *Iteration) GroupShard(d *step.Domain, gi int) (tokens, scores float64) {
	sh := it.shard[int(it.gOff[d.Index])+gi]
	return sh.tokens, sh.scores
}

// ChunkActivation returns chunk's activation rates on stage
// (memory.Model.Chunk; step.ActivationSizer).
func (it *Iteration) ChunkActivation(stage, chunk int) step.ActivationRate {
	c := it.m.mem.Chunk(stage, chunk)
	return step.ActivationRate{KeptPerToken: c.PerToken, KeptPerScore: c.PerScore,
		BackwardPerToken: c.BackwardPerToken, BackwardPerScore: c.BackwardPerScore,
		OffloadPerToken: c.OffloadPerToken, OffloadPerScore: c.OffloadPerScore}
}

// GPUMemory is one GPU's memory at its peak in an iteration.
type GPUMemory struct {
	// Stage and Rank place the GPU (an HDP rank of a pipeline stage; its tp
	// ranks hold the same); Kind is its GPU kind.
	Stage, Rank int
	Kind        string
	// StatesBytes are its model states (memory.States), ReserveBytes the
	// reserve, ActivationBytes its peak held activations
	// (step.RankResult.PeakActivationBytes), HBMBytes its memory.
	StatesBytes, ReserveBytes, ActivationBytes, HBMBytes float64
}

// TotalBytes is states + reserve + activations.
func (g GPUMemory) TotalBytes() float64 { return g.StatesBytes + g.ReserveBytes + g.ActivationBytes }

// HeadroomBytes is HBM − TotalBytes (negative: out of memory).
func (g GPUMemory) HeadroomBytes() float64 { return g.HBMBytes - g.TotalBytes() }

// MemoryUse is an iteration's memory, stage by stage.
type MemoryUse struct {
	// Stages[s] is stage s's GPU with the least headroom (the lowest rank
	// among equals).
	Stages []GPUMemory
}

// Peak returns the GPU with the least headroom over the stages (the
// lowest stage among equals).
func (u MemoryUse) Peak() GPUMemory {
	var worst GPUMemory
	for s, g := range u.Stages {
		if s == 0 || g.HeadroomBytes() < worst.HeadroomBytes() {
			worst = g
		}
	}
	return worst
}

// OutOfMemoryError is a plan whose peak on some GPU exceeds its HBM: the job
// cannot run it. The GPU is the one with the least headroom.
type OutOfMemoryError struct {
	GPUMemory
}

// Error names the GPU and what it needs against its HBM, part by part.
func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("out of memory: stage %d rank %d (%s) needs %.1f GiB of its %.1f GiB (states %.1f + reserve %.1f + activations %.1f GiB)",
		e.Stage, e.Rank, e.Kind, e.TotalBytes()/memory.GiB, e.HBMBytes/memory.GiB,
		e.StatesBytes/memory.GiB, e.ReserveBytes/memory.GiB, e.ActivationBytes/memory.GiB)
}

// memoryUse reads each stage's least-headroom GPU off the result, and the
// out-of-memory error when one has none.
func (m *Model) memoryUse(res *step.Result) (MemoryUse, *OutOfMemoryError) {
	u := MemoryUse{Stages: make([]GPUMemory, len(res.Stages))}
	for s := range res.Stages {
		states := m.mem.States(s).Bytes()
		ranks := res.Stages[s].Ranks
		best := GPUMemory{}
		for r := range ranks {
			dev := m.DeviceOf(r)
			g := GPUMemory{Stage: s, Rank: r, StatesBytes: states, ReserveBytes: memory.ReserveBytes,
				ActivationBytes: ranks[r].PeakActivationBytes, HBMBytes: dev.Profile.HBMBytes.Value}
			if r == 0 || g.HeadroomBytes() < best.HeadroomBytes() {
				best = g
			}
		}
		best.Kind = m.DeviceOf(best.Rank).Name
		u.Stages[s] = best
	}
	if p := u.Peak(); p.HeadroomBytes() < 0 {
		return u, &OutOfMemoryError{p}
	}
	return u, nil
}
