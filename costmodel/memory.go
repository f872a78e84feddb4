package costmodel

import (
	"fmt"

	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/step"
)

var _ step.ActivationSizer = (*Iteration)(nil)

// groupShard is what each rank of a group holds for the memory model: its
// tokens (the fullest rank's shard for a CP × HP layout) and its attention
// scores Σ s²/k.
type groupShard struct{ tokens, scores float64 }

// shards records every group's groupShard, domain by domain (gOff[i] is
// domain i's first group).
func (p *pricer) shards(it *Iteration, l *step.Layout) {
	it.gOff = append(it.gOff[:0], 0)
	it.shard = it.shard[:0]
	for i := range l.Domains {
		for _, g := range l.Domains[i].Groups {
			var sh groupShard
			var total int
			for _, id := range g.Seqs { // ids were checked when the domain was priced
				s := float64(p.lengths[id])
				total += p.lengths[id]
				sh.scores += s * s
			}
			sh.scores /= float64(g.Size)
			sh.tokens = float64((total + g.Size - 1) / g.Size)
			if g.Layout != nil {
				var most int
				for _, t := range g.Layout.ShardTokens {
					most = max(most, t)
				}
				sh.tokens = float64(most)
			}
			it.shard = append(it.shard, sh)
		}
		it.gOff = append(it.gOff, int32(len(it.shard)))
	}
}

// ChunkActivationBytes returns what each rank of group gi of domain d keeps
// from chunk's forward on stage (memory.Model.Chunk of its tokens and scores)
// and the transient its backward adds.
func (it *Iteration) ChunkActivationBytes(stage, chunk int, d *step.Domain, gi int) (kept, backward float64) {
	sh := it.shard[int(it.gOff[d.Index])+gi]
	c := it.m.mem.Chunk(stage, chunk)
	return c.Kept(sh.tokens, sh.scores), c.Backward(sh.tokens, sh.scores)
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

// groupsOf counts a plan's groups (the shards' storage).
func groupsOf(plan *sched.Plan) int {
	n := 0
	for _, mb := range plan.Microbatches {
		n += len(mb.Groups)
	}
	return n
}
