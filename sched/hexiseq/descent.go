package hexiseq

import (
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/cphp"
)

// descend is stage 3: coordinate descent on l's shard lengths and head
// counts for a group from rank first holding s1 tokens with Σ s² = s2 (see
// the package doc). Each round evaluates, from each bottleneck rank a (the
// one with the largest linear term, the one with the largest attention
// term), moving δ tokens to every rank of a's HP group and to the rank of
// each other HP group with the smallest linear term, and moving one head to
// every rank of a's HP group; it applies the feasible move that lowers the
// modelled time most (by more than 1e-9 of it), or halves δ. It returns the
// moves applied and the evaluations made.
func (pl *planner) descend(first int, l *sched.Layout, s1, s2 float64, weights []float64) (moves, evals int64) {
	size := len(l.ShardTokens)
	if pl.rounds == 0 || size < 2 || s1 < 1 {
		return 0, 0
	}
	m := pl.m
	hp := l.HPGroupOf()
	starts := make([]int, len(l.HPGroups)) // first offset of each HP group
	for h := 1; h < len(l.HPGroups); h++ {
		starts[h] = starts[h-1] + l.HPGroups[h-1]
	}
	v := cphp.View{First: first, HPGroups: l.HPGroups, Tokens: make([]float64, size), Heads: make([]float64, size)}
	chunks := l.Chunks()
	sync := func(i int) {
		v.Tokens[i], v.Heads[i] = float64(l.ShardTokens[i]), float64(l.Heads[i])
	}
	for i := range size {
		sync(i)
	}
	eval := func() float64 {
		evals++
		return m.ExactSeconds(m.Parts(v, s1, s2))
	}
	fits := func(h int) bool { // every rank of HP group h within its budget
		for i := starts[h]; i < starts[h]+l.HPGroups[h]; i++ {
			mem := max(float64(l.ShardTokens[i]), float64(l.Heads[i])*float64(chunks[h])/float64(m.Heads))
			if mem > float64(m.Kind(first+i).BudgetTokens) {
				return false
			}
		}
		return true
	}
	// move shifts d tokens and n heads from rank a to rank b (d or n may be
	// negative to undo).
	move := func(a, b, d, n int) {
		l.ShardTokens[a] -= d
		l.ShardTokens[b] += d
		chunks[hp[a]] -= d
		chunks[hp[b]] += d
		l.Heads[a] -= n
		l.Heads[b] += n
		sync(a)
		sync(b)
	}
	cur := eval()
	delta := max(1, int(s1)/(4*size))
	for range pl.rounds {
		if delta < 1 {
			break
		}
		lin, att := -1, -1
		var linMax, attMax float64
		for i := range size {
			k := m.Kind(first + i)
			if x := k.LinearSecondsPerToken * v.Tokens[i]; lin < 0 || x > linMax {
				lin, linMax = i, x
			}
			if x := k.AttentionSecondsPerToken2 * v.Heads[i] * float64(chunks[hp[i]]); att < 0 || x > attMax {
				att, attMax = i, x
			}
		}
		bestVal := cur
		bestA, bestB, bestD, bestN := -1, -1, 0, 0
		// Chunk moves: δ tokens from one HP group to another, spread over
		// each group's ranks by linear speed (a direction no move between
		// two ranks follows).
		bestFrom, bestTo := -1, -1
		if len(l.HPGroups) > 1 {
			for from := range l.HPGroups {
				if chunks[from] < delta {
					continue
				}
				for to := range l.HPGroups {
					if to == from {
						continue
					}
					saved := slices.Clone(l.ShardTokens)
					savedChunks := slices.Clone(chunks)
					pl.shiftChunk(first, l, starts, chunks, from, to, delta)
					for i := range size {
						sync(i)
					}
					if fits(from) && fits(to) {
						if val := eval(); val < bestVal {
							bestVal, bestFrom, bestTo = val, from, to
						}
					}
					copy(l.ShardTokens, saved)
					copy(chunks, savedChunks)
					for i := range size {
						sync(i)
					}
				}
			}
		}
		try := func(a, b, d, n int) {
			if a == b || d > l.ShardTokens[a] || n > l.Heads[a] || d == 0 && n == 0 {
				return
			}
			move(a, b, d, n)
			if fits(hp[a]) && fits(hp[b]) {
				if val := eval(); val < bestVal {
					bestVal, bestA, bestB, bestD, bestN = val, a, b, d, n
				}
			}
			move(a, b, -d, -n)
		}
		for _, a := range []int{lin, att} {
			d := min(delta, l.ShardTokens[a])
			h := hp[a]
			for b := starts[h]; b < starts[h]+l.HPGroups[h]; b++ {
				try(a, b, d, 0)
				try(a, b, 0, 1)
			}
			for g := range l.HPGroups {
				if g == h {
					continue
				}
				best := -1
				var bestLin float64
				for b := starts[g]; b < starts[g]+l.HPGroups[g]; b++ {
					if x := m.Kind(first+b).LinearSecondsPerToken * v.Tokens[b]; best < 0 || x < bestLin {
						best, bestLin = b, x
					}
				}
				try(a, best, d, 0)
			}
			if lin == att {
				break
			}
		}
		if bestVal < cur*(1-1e-9) {
			if bestA >= 0 {
				move(bestA, bestB, bestD, bestN)
			} else {
				pl.shiftChunk(first, l, starts, chunks, bestFrom, bestTo, delta)
				for i := range size {
					sync(i)
				}
			}
			cur = bestVal
			moves++
			continue
		}
		delta /= 2
	}
	return moves, evals
}

// shiftChunk moves delta tokens from HP group from to HP group to, each
// group's new chunk split over its ranks by linear speed under their
// budgets (water-filled); chunks is updated. A chunk its ranks' budgets
// cannot hold keeps its old split (fits then refuses the move).
func (pl *planner) shiftChunk(first int, l *sched.Layout, starts, chunks []int, from, to, delta int) {
	m := pl.m
	for _, h := range []int{from, to} {
		d := delta
		if h == from {
			d = -delta
		}
		u := l.HPGroups[h]
		w := make([]float64, u)
		b := make([]int64, u)
		for i := range u {
			k := m.Kind(first + starts[h] + i)
			w[i], b[i] = 1/k.LinearSecondsPerToken, int64(k.BudgetTokens)
		}
		split := waterfill(int64(chunks[h]+d), w, b)
		if split == nil {
			// Over the budgets: put the extra on the fastest rank; fits refuses.
			l.ShardTokens[starts[h]] += d
		} else {
			for i, x := range split {
				l.ShardTokens[starts[h]+i] = int(x)
			}
		}
		chunks[h] += d
	}
}
