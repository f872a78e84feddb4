package bytescale

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/internal/keyheap"
)

// fgroup is one CP group of a phase: a unit (or part of a split one) on its
// ranks.
type fgroup struct {
	seqs     []int
	tokens   int64
	squares  int64
	minRanks int // D: the fewest ranks it may run on (⌈Σ s/C⌉)
	ranks    int // the ranks it runs on: minRanks, or more after widening
}

// frame is one assignment: a contiguous range of whole lanes that runs one or
// more phases in order, each a microbatch whose groups cover every rank of the
// range. A frame has one phase unless VPP alignment split it.
type frame struct {
	firstLane, lanes int
	slot             int
	bucket           int // the bucket of its first unit
	phases           [][]fgroup
}

// planner is the state of one Plan call.
type planner struct {
	in      sched.Inputs
	lengths []int
	model   timeModel
	delta   float64
	ep      int // ranks per lane (the EP size)
	lanes   int // G/ep
	limit   int // the largest CP degree (Inputs.DegreeLimit)

	units    []unit  // sorted: per-rank time at D ranks descending, ties by key
	bucketOf []int32 // by unit
	bucketLo []int   // bucket b holds units [bucketLo[b], bucketLo[b+1])
	tree     unitTree
	unplaced int

	lockstep   bool  // slots are lock-step pipeline groups (pp > 1 or vpp > 1), else lanes
	ppBalance  bool  // PP-Balance (pp > 1): buckets in turn, else the first bucket only
	groupLanes int   // lanes per pipeline group
	slotFirst  []int // by slot: first lane
	slotLanes  []int // by slot: lanes
	time       []float64
	frames     []frame

	rounds  int
	widened int // ranks added to groups beyond their D to fill a frame

	heapOps, visits, poolVisits int64

	offload *sched.OffloadCosts // nil: no offload (Options.Offload off, no costs or no offloadable layers)
	share   float64             // sched.Inputs.OffloadShare
	forced  float64             // Options.OffloadRatio: every long unit's ratio (0: none)
	// rule is Options.OffloadRule (RuleBounded or RuleEq3); balancedLoad
	// the batch's model time over the pool, W/G (RuleBounded's bound).
	rule         string
	balancedLoad float64
}

// sortUnits orders the units by their per-rank time at D ranks, descending
// (ties: lower key), and cuts them into k buckets of about equal work (the
// per-rank time times the ranks, i.e. Σ s² + (θ/c)·Σ s/C): unit j goes to
// bucket ⌊k·(work before j)/W⌋, so buckets are contiguous, the long ones hold
// few units, and a unit heavier than W/k leaves the next buckets empty.
func (p *planner) sortUnits(k int) {
	m := p.model
	t := make([]float64, len(p.units))
	order := make([]int, len(p.units))
	for j, u := range p.units {
		t[j] = m.perRank(u.squares, u.tokens, u.ranks)
		order[j] = j
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(t[b], t[a]), cmp.Compare(p.units[a].key, p.units[b].key))
	})
	sorted := make([]unit, len(order))
	var total float64
	for i, j := range order {
		sorted[i] = p.units[j]
		total += t[j] * float64(p.units[j].ranks)
	}
	p.units = sorted
	p.bucketOf = make([]int32, len(sorted))
	p.bucketLo = make([]int, k+1)
	var before float64
	b := 0
	for j, u := range sorted {
		p.visits++
		nb := min(k-1, int(math.Floor(float64(k)*before/total)))
		for b < nb {
			b++
			p.bucketLo[b] = j
		}
		p.bucketOf[j] = int32(b)
		before += m.perRank(u.squares, u.tokens, u.ranks) * float64(u.ranks)
	}
	for b++; b <= k; b++ {
		p.bucketLo[b] = len(sorted)
	}
	ranks := make([]int, len(sorted))
	for j, u := range sorted {
		ranks[j] = u.ranks
	}
	p.tree = newUnitTree(ranks)
	p.unplaced = len(sorted)
}

// next returns the first unplaced unit needing at most maxRanks ranks, looking
// from bucket b's start to the end and then from the first bucket (round
// robin), or -1.
func (p *planner) next(b, maxRanks int) int {
	lo := p.bucketLo[b]
	p.heapOps++
	if j := p.tree.first(lo, len(p.units), maxRanks); j >= 0 || lo == 0 {
		return j
	}
	p.heapOps++
	return p.tree.first(0, lo, maxRanks)
}

// firstBucket is the bucket of the first unplaced unit: DP-Balance takes from
// it only.
func (p *planner) firstBucket() int {
	p.heapOps++
	if j := p.tree.first(0, len(p.units), math.MaxInt32); j >= 0 {
		return int(p.bucketOf[j])
	}
	return 0
}

// bucketAfter is the first bucket after b, round robin, that still holds a
// unit: PP-Balance's cursor.
func (p *planner) bucketAfter(b int) int {
	k := len(p.bucketLo) - 1
	if j := p.next((b+1)%k, math.MaxInt32); j >= 0 {
		return int(p.bucketOf[j])
	}
	return b
}

// take places unit j and returns it as a group on its D ranks.
func (p *planner) take(j int) fgroup {
	p.tree.remove(j)
	p.heapOps++
	p.visits++
	p.unplaced--
	u := p.units[j]
	return fgroup{seqs: u.seqs, tokens: u.tokens, squares: u.squares, minRanks: u.ranks, ranks: u.ranks}
}

// fill builds a phase of frameRanks ranks: unit first, then the first unplaced
// units that fit the ranks left (from bucket b on, round robin), then, if
// ranks are still free, widens its groups to cover them (widen).
func (p *planner) fill(first, frameRanks, b int) ([]fgroup, error) {
	groups := []fgroup{p.take(first)}
	free := frameRanks - groups[0].ranks
	for free > 0 {
		j := p.next(b, free)
		if j < 0 {
			break
		}
		groups = append(groups, p.take(j))
		free -= groups[len(groups)-1].ranks
	}
	return p.widen(groups, free)
}

// widen gives free more ranks to the groups of a phase, one at a time, each to
// the group with the largest per-rank time that is below the degree limit
// (ties: the earlier group), which minimises the phase's largest per-rank
// time. If every group is at the limit, the group with the most sequences
// (ties: the earlier) is split in two (its sequences alternate), each half on
// its D ranks, and widening goes on; if none has two sequences the phase
// cannot cover its ranks and the error wraps sched.ErrCannotPlan.
func (p *planner) widen(groups []fgroup, free int) ([]fgroup, error) {
	for free > 0 {
		best := -1
		var bestTime float64
		for i, g := range groups {
			if g.ranks >= p.limit {
				continue
			}
			if t := p.model.perRank(g.squares, g.tokens, g.ranks); best < 0 || t > bestTime {
				best, bestTime = i, t
			}
		}
		p.heapOps++
		if best >= 0 {
			groups[best].ranks++
			free--
			p.widened++
			continue
		}
		split := -1
		for i, g := range groups {
			if len(g.seqs) >= 2 && (split < 0 || len(g.seqs) > len(groups[split].seqs)) {
				split = i
			}
		}
		if split < 0 {
			return nil, fmt.Errorf("%w: bytescale: a phase of %d groups, each at the degree limit %d, cannot cover %d more ranks of its lanes (EP %d)",
				sched.ErrCannotPlan, len(groups), p.limit, free, p.ep)
		}
		a, b := p.halve(groups[split])
		free += groups[split].ranks - a.ranks - b.ranks
		groups = slices.Insert(groups, split+1, b)
		groups[split] = a
	}
	return groups, nil
}

// halve splits a group's sequences alternately into two groups on their D
// ranks.
func (p *planner) halve(g fgroup) (fgroup, fgroup) {
	var h [2]fgroup
	for i, id := range g.seqs {
		s := int64(p.length(id))
		h[i%2].seqs = append(h[i%2].seqs, id)
		h[i%2].tokens += s
		h[i%2].squares += s * s
		p.visits++
	}
	for i := range h {
		h[i].minRanks = minRanks(h[i].tokens, p.in.BudgetTokens)
		h[i].ranks = h[i].minRanks
	}
	return h[0], h[1]
}

// phaseTime is a phase's estimated time: its largest per-rank time (the CP
// groups and the EP blocks of its lanes move together).
func (p *planner) phaseTime(groups []fgroup) float64 {
	var t float64
	for _, g := range groups {
		t = max(t, p.model.perRank(g.squares, g.tokens, g.ranks))
	}
	return t
}

// balance is Alg. 2: rounds in which the least-loaded target slot is served
// a frame at a time, until every unit is placed (package doc, "Balance
// scheduler").
func (p *planner) balance() error {
	h := keyheap.New(p.time)
	defer func() { p.heapOps += h.Ops }()
	cursor := p.firstBucket()
	for p.unplaced > 0 {
		p.rounds++
		maxTime := 0.0
		for _, t := range p.time {
			maxTime = max(maxTime, t)
		}
		p.poolVisits += int64(len(p.time))
		threshold := maxTime * (1 - p.delta)
		for s, t := range p.time {
			if t < threshold {
				h.Add(s)
			}
		}
		fresh := h.Len() == 0
		if fresh {
			for s := range p.time {
				h.Add(s)
			}
		}
		for h.Len() > 0 && p.unplaced > 0 {
			s := h.Take()
			if !p.ppBalance {
				cursor = p.firstBucket()
			}
			used, err := p.place(s, cursor, h, fresh, threshold)
			if err != nil {
				return err
			}
			if p.ppBalance {
				cursor = p.bucketAfter(used)
			}
			if !fresh && p.time[s] < threshold {
				h.Add(s)
			}
		}
		for h.Len() > 0 {
			h.Take()
		}
	}
	return nil
}

// place assigns one frame for target slot s, its first unit from bucket b (or
// the next one holding a unit), and returns that unit's bucket. Slot s is a
// lock-step pipeline group and the frame is the whole group; or s is a lane
// (pp = vpp = 1), and the frame is the earliest-starting window of lanes the
// unit needs (s itself for a unit of one lane), which then ends together.
func (p *planner) place(s, b int, h *keyheap.Heap[float64], fresh bool, threshold float64) (int, error) {
	first := p.next(b, math.MaxInt32)
	used := int(p.bucketOf[first])
	if p.lockstep {
		phase, err := p.fill(first, p.slotLanes[s]*p.ep, used)
		if err != nil {
			return 0, err
		}
		p.time[s] += p.phaseTime(phase)
		p.frames = append(p.frames, frame{firstLane: p.slotFirst[s], lanes: p.slotLanes[s], slot: s, bucket: used, phases: [][]fgroup{phase}})
		return used, nil
	}
	n := (p.units[first].ranks + p.ep - 1) / p.ep
	a, start := p.window(s, n)
	phase, err := p.fill(first, n*p.ep, used)
	if err != nil {
		return 0, err
	}
	end := start + p.phaseTime(phase)
	for l := a; l < a+n; l++ {
		p.time[l] = end
		if l == s || !h.Contains(l) {
			continue
		}
		if fresh || end >= threshold {
			h.Remove(l)
		} else {
			h.Fix(l)
		}
	}
	p.frames = append(p.frames, frame{firstLane: a, lanes: n, slot: a, bucket: used, phases: [][]fgroup{phase}})
	return used, nil
}

// window returns the first lane of the n contiguous lanes that can start a
// frame earliest (the latest of their times), ties by the least idle time (Σ
// of the start minus each lane's time), then the lowest first lane; and that
// start. One unit wide (n = 1) it is lane l itself. Otherwise it visits every
// lane once (a sliding maximum and prefix sums).
func (p *planner) window(l, n int) (int, float64) {
	if n == 1 {
		p.poolVisits++
		return l, p.time[l]
	}
	span := p.time
	p.poolVisits += int64(len(span))
	prefix := make([]float64, len(span)+1)
	for i, t := range span {
		prefix[i+1] = prefix[i] + t
	}
	var deque []int // indices into span, times decreasing
	best, bestStart, bestIdle := -1, 0.0, 0.0
	for i, t := range span {
		for len(deque) > 0 && span[deque[len(deque)-1]] <= t {
			deque = deque[:len(deque)-1]
		}
		deque = append(deque, i)
		a := i - n + 1 // the window span[a : i+1]
		if a < 0 {
			continue
		}
		if deque[0] < a {
			deque = deque[1:]
		}
		start := span[deque[0]]
		idle := float64(n)*start - (prefix[i+1] - prefix[a])
		if best < 0 || start < bestStart || start == bestStart && idle < bestIdle {
			best, bestStart, bestIdle = a, start, idle
		}
	}
	return best, bestStart
}

// length returns sequence id's length (set by Plan).
func (p *planner) length(id int) int { return p.lengths[id] }

// orderBySimilarity puts each pipeline group's frames in increasing order of
// estimated time, so the group's microbatches of similar length run one after
// another: §6.2's Insight 1 ("only transitions add bubbles"). Alg. 2 fixes
// which frames a group runs, not their order; groups share no lanes, so the
// order inside one group changes no other. Increasing, not decreasing: the
// pipeline fills with its short microbatches; on hy3-8k it measured 6.6%
// faster than assignment order and 1.3% faster than decreasing order.
// It returns a sorted copy; p.frames keeps the assignment order.
func (p *planner) orderBySimilarity() []frame {
	time := func(f frame) float64 {
		var t float64
		for _, ph := range f.phases {
			t += p.phaseTime(ph)
		}
		return t
	}
	frames := slices.Clone(p.frames)
	slices.SortStableFunc(frames, func(a, b frame) int {
		if c := cmp.Compare(a.slot, b.slot); c != 0 {
			return c
		}
		return cmp.Compare(time(a), time(b))
	})
	return frames
}
