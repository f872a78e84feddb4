package hydra

import (
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
)

// PlanBuilder turns a packer's decisions into sched.Microbatches. HyDra's two
// packers and hydra-hetero's (sched/hydrahetero) report through it, so their
// plans (close reasons included) are formatted by the same code and can be
// compared with reflect.DeepEqual. Every sequence id of the
// plan lives in one backing array of N ints (no per-sequence allocation).
type PlanBuilder struct {
	poolRanks int
	seqIDs    []int // backing array of every Group.Seqs, filled MB by MB
	filled    int   // seqIDs[:filled] belong to closed MBs
	mbs       []sched.Microbatch

	// The open MB.
	groups   []blockGeometry
	seqs     []int32 // sequence ids in placement order
	seqGroup []int32 // seqGroup[i] is the group seqs[i] joined
	byFirst  []int32 // rank -> group starting there, -1 if none (all -1 between MBs)
	offsets  []int
}

// blockGeometry is a group's rank block and sequence count.
type blockGeometry struct {
	first, size, count int
}

// Waiting describes the longest sequence still unplaced when an MB closes.
type Waiting struct {
	// Remaining counts the sequences still unplaced (0: the MB is the last).
	Remaining int
	// ID and Tokens are the longest unplaced sequence's id and length, Degree
	// its CP degree.
	ID, Tokens int
	Degree     int
}

// NewPlanBuilder returns a builder for a plan of the given sequence count on
// poolRanks ranks, with no MB yet.
func NewPlanBuilder(poolRanks, sequences int) *PlanBuilder {
	b := &PlanBuilder{
		poolRanks: poolRanks,
		seqIDs:    make([]int, sequences),
		byFirst:   make([]int32, poolRanks),
		// An MB may take every sequence: growing these by appends copied
		// megabytes per plan at G = 4096.
		seqs:     make([]int32, 0, sequences),
		seqGroup: make([]int32, 0, sequences),
	}
	for r := range b.byFirst {
		b.byFirst[r] = -1
	}
	return b
}

// Open starts a group of the open MB on ranks [first, first+size) and
// returns its index.
func (b *PlanBuilder) Open(first, size int) int32 {
	b.groups = append(b.groups, blockGeometry{first: first, size: size})
	return int32(len(b.groups) - 1)
}

// Add appends sequence id to group gi.
func (b *PlanBuilder) Add(gi int32, id int) {
	b.seqs = append(b.seqs, int32(id))
	b.seqGroup = append(b.seqGroup, gi)
	b.groups[gi].count++
}

// Double grows group gi into its buddy block: the aligned block twice its size.
func (b *PlanBuilder) Double(gi int32) {
	g := &b.groups[gi]
	g.first &^= g.size
	g.size *= 2
}

// Close ends the MB: groups in FirstRank order, their sequences in placement
// order, and the reason it closed (w and the backfill's doublings).
func (b *PlanBuilder) Close(w Waiting, doublings int) {
	idle := b.poolRanks
	for gi, g := range b.groups {
		b.byFirst[g.first] = int32(gi)
		idle -= g.size
	}
	if cap(b.offsets) < len(b.groups) {
		b.offsets = make([]int, len(b.groups))
	}
	b.offsets = b.offsets[:len(b.groups)]
	out := make([]sched.Group, 0, len(b.groups))
	off := b.filled
	for r, gi := range b.byFirst {
		if gi < 0 {
			continue
		}
		b.byFirst[r] = -1
		g := b.groups[gi]
		b.offsets[gi] = off
		out = append(out, sched.Group{FirstRank: r, Size: g.size, Seqs: b.seqIDs[off : off+g.count : off+g.count]})
		off += g.count
	}
	for i, id := range b.seqs {
		gi := b.seqGroup[i]
		b.seqIDs[b.offsets[gi]] = int(id)
		b.offsets[gi]++
	}
	b.filled = off
	b.mbs = append(b.mbs, sched.Microbatch{Groups: out, Closed: closeReason(w, doublings, idle)})
	b.groups, b.seqs, b.seqGroup = b.groups[:0], b.seqs[:0], b.seqGroup[:0]
}

// Microbatches returns the closed MBs.
func (b *PlanBuilder) Microbatches() []sched.Microbatch { return b.mbs }

// closeReason says why an MB closed (recorded in sched.Microbatch.Closed), e.g.
// "full: sequence 4 (2 tokens, degree 1) and 0 more wait: no free 1-aligned
// block and no open group of size >= 1 can take it within Λ* and B; backfill: 0
// doublings, 0 idle ranks". It is built with strconv rather than fmt: plans with
// thousands of small MBs spent most of their time formatting.
func closeReason(w Waiting, doublings, idleRanks int) string {
	b := make([]byte, 0, 200)
	if w.Remaining == 0 {
		b = append(b, "last: every sequence placed; "...)
	} else {
		b = append(b, "full: sequence "...)
		b = strconv.AppendInt(b, int64(w.ID), 10)
		b = append(b, " ("...)
		b = strconv.AppendInt(b, int64(w.Tokens), 10)
		b = append(b, " tokens, degree "...)
		b = strconv.AppendInt(b, int64(w.Degree), 10)
		b = append(b, ") and "...)
		b = strconv.AppendInt(b, int64(w.Remaining-1), 10)
		b = append(b, " more wait: no free "...)
		b = strconv.AppendInt(b, int64(w.Degree), 10)
		b = append(b, "-aligned block and no open group of size >= "...)
		b = strconv.AppendInt(b, int64(w.Degree), 10)
		b = append(b, " can take it within Λ* and B; "...)
	}
	b = append(b, "backfill: "...)
	b = strconv.AppendInt(b, int64(doublings), 10)
	b = append(b, " doublings, "...)
	b = strconv.AppendInt(b, int64(idleRanks), 10)
	b = append(b, " idle ranks"...)
	return string(b)
}
