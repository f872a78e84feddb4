package sched

import (
	"fmt"
)

// Layout is a group's CP × HP execution with per-rank shares (HexiSeq's
// asymmetric CP × HP; USP's equal-share factorization is its symmetric case).
// The group's ranks are cut, in order, into head-parallel (HP) groups of
// HPGroups[h] consecutive ranks; HP group h runs a contiguous chunk of L_h
// tokens of the group's packed sequences (every sequence split in the same
// proportions), and the chunks meet by ring (context-parallel) steps across
// the HP groups. Inside HP group h, rank i holds ShardTokens[i] tokens of the
// chunk for its linear layers (so L_h is the sum of its ranks' shards), and
// after the ragged Q/K/V all-to-all it runs core attention for Heads[i] of
// the H query heads of a TP rank over all L_h tokens; the output all-to-all
// returns each rank its own tokens. A rank's shares are independent: a fast
// rank may hold more tokens and more heads, a rank with no heads runs only
// linear layers. nil on a group means the even split of the CP execution the
// policy declares.
type Layout struct {
	// HPGroups are the sizes of the HP (all-to-all) groups, in rank order;
	// they sum to the group's size.
	HPGroups []int `json:"hp_groups"`
	// ShardTokens[i] is the tokens rank FirstRank+i holds; they sum to the
	// group's tokens Σ s.
	ShardTokens []int `json:"shard_tokens"`
	// Heads[i] is the query heads rank FirstRank+i runs attention for; each
	// HP group's sum to H (Inputs.HeadsPerRank).
	Heads []int `json:"heads"`
}

// Chunks returns each HP group's chunk L_h (the sum of its ranks' shards).
func (l *Layout) Chunks() []int {
	out := make([]int, len(l.HPGroups))
	i := 0
	for h, u := range l.HPGroups {
		for range u {
			if i < len(l.ShardTokens) {
				out[h] += l.ShardTokens[i]
			}
			i++
		}
	}
	return out
}

// HPGroupOf returns, for each rank of the group (by offset), its HP group.
func (l *Layout) HPGroupOf() []int {
	var out []int
	for h, u := range l.HPGroups {
		for range u {
			out = append(out, h)
		}
	}
	return out
}

// MemoryTokens returns each rank's activation memory in token-equivalents:
// max(ShardTokens[i], Heads[i]·L_h/H). A rank keeps the activations of its
// linear layers for its own tokens and those of core attention (Q, K, V,
// output, softmax statistics) for its heads over its HP group's whole chunk;
// the larger of the two bounds its share of a token's activations (the
// split between them depends on the model; the bound holds for any).
func (l *Layout) MemoryTokens(heads int) []float64 {
	chunks := l.Chunks()
	hp := l.HPGroupOf()
	out := make([]float64, len(l.ShardTokens))
	for i, s := range l.ShardTokens {
		att := 0.0
		if i < len(hp) && i < len(l.Heads) && heads > 0 {
			att = float64(l.Heads[i]) * float64(chunks[hp[i]]) / float64(heads)
		}
		out[i] = max(float64(s), att)
	}
	return out
}

// Check reports the first way the layout does not fit group g of groupTokens
// tokens when a TP rank has heads query heads: HP groups of at least one rank
// summing to the group's size, one shard and one head count per rank, shards
// >= 0 summing to the group's tokens, head counts >= 0 summing to heads in
// every HP group.
func (l *Layout) Check(g Group, groupTokens int64, heads int) error {
	if len(l.HPGroups) == 0 || len(l.HPGroups) > g.Size {
		return fmt.Errorf("layout: %d HP groups: must be in [1, %d] (the group's size)", len(l.HPGroups), g.Size)
	}
	sum := 0
	for h, u := range l.HPGroups {
		if u < 1 || u > g.Size {
			return fmt.Errorf("layout: HP group %d has %d ranks: must be in [1, %d]", h, u, g.Size)
		}
		sum += u
	}
	if sum != g.Size {
		return fmt.Errorf("layout: HP groups of %v ranks sum to %d, the group has %d", l.HPGroups, sum, g.Size)
	}
	if len(l.ShardTokens) != g.Size || len(l.Heads) != g.Size {
		return fmt.Errorf("layout: %d shard lengths and %d head counts for %d ranks", len(l.ShardTokens), len(l.Heads), g.Size)
	}
	var tokens int64
	for i, s := range l.ShardTokens {
		if s < 0 || int64(s) > groupTokens { // each shard within the group's tokens: the sum cannot wrap
			return fmt.Errorf("layout: rank %d holds %d tokens: must be in [0, %d] (the group's tokens)", g.FirstRank+i, s, groupTokens)
		}
		tokens += int64(s)
	}
	if tokens != groupTokens {
		return fmt.Errorf("layout: shard lengths sum to %d tokens, the group's sequences to %d", tokens, groupTokens)
	}
	i := 0
	for h, u := range l.HPGroups {
		n := 0
		for range u {
			if l.Heads[i] < 0 || l.Heads[i] > heads {
				return fmt.Errorf("layout: rank %d runs %d heads: must be in [0, %d]", g.FirstRank+i, l.Heads[i], heads)
			}
			n += l.Heads[i]
			i++
		}
		if n != heads {
			return fmt.Errorf("layout: HP group %d's ranks run %d heads: must be %d (the query heads per TP rank)", h, n, heads)
		}
	}
	return nil
}
