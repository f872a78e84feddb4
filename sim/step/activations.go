package step

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/sched"

	"github.com/dcpsim/dcpsim/sim/pipeline"
)

// activations follows every rank's held activations through its schedule
// when the costs are an ActivationSizer: on each stage a rank keeps the
// activations of each chunk from the end of its forward to the end of its
// backward, so its peak is reached at the end of a forward, or during a
// backward with that backward's transient on top. The order of a rank's ops
// is its pipeline schedule, and with variable-length microbatches the peak is
// the largest prefix of that stream.
//
// A rank's microbatches are read once into its shard per microbatch (tokens
// and scores; ranks of a class whose CP groups are the same in every
// microbatch share it and its peaks). Without interleaving stage s runs
// w = min(p−s−1, m) warm-up forwards, then pairs of a forward and a
// backward, then the rest of the backwards: after the forward of microbatch
// k+w the rank holds the window k..k+w, and while the backward of k runs the
// window k..min(k+w, m−1) plus k's transient, so the peak is read off prefix
// sums of the rank's shards in O(m) per stage, in the schedule's order. With
// interleaving the schedule's ops are walked one by one.
func (r *Runner) activations() error {
	sizer, ok := r.costs.(ActivationSizer)
	if !ok {
		return nil
	}
	pp, v := r.pp, r.v
	doms := r.l.Domains
	r.sizer = sizer
	defer func() { r.sizer = nil }()
	scores := false
	r.rates = resize(r.rates, pp*v)
	for s := range pp {
		for c := range v {
			a := sizer.ChunkActivation(s, c)
			if !finiteBytes(a.KeptPerToken) || !finiteBytes(a.KeptPerScore) || !finiteBytes(a.BackwardPerToken) || !finiteBytes(a.BackwardPerScore) ||
				!finiteBytes(a.OffloadPerToken) || !finiteBytes(a.OffloadPerScore) || a.OffloadPerToken > a.KeptPerToken || a.OffloadPerScore > a.KeptPerScore {
				return fmt.Errorf("step: stage %d chunk %d: activation rates %+v: need finite values >= 0, the offloadable parts at most the kept", s, c, a)
			}
			scores = scores || a.KeptPerScore > 0 || a.BackwardPerScore > 0
			r.rates[s*v+c] = a
		}
	}
	r.offload = false
	for i := range doms {
		for _, g := range doms[i].Groups {
			if g.Offload != 0 {
				if !(g.Offload > 0 && g.Offload <= 1) {
					return fmt.Errorf("step: microbatch %d group at rank %d: offload ratio %v: need a value in [0, 1]", doms[i].MB, g.FirstRank, g.Offload)
				}
				r.offload = true
			}
		}
	}
	res := r.res
	peaks := make([]float64, pp) // this rank's, per stage
	for c := range r.nc {
		sc := r.classSched[c]
		if sc == nil {
			continue
		}
		lo, hi := int(r.off[c]), int(r.off[c+1])
		cdoms := r.classDom[lo:hi]
		m := hi - lo
		if v == 1 && !scores && !r.offload {
			if err := r.classPeaks(c, cdoms); err != nil {
				return err
			}
			continue
		}
		r.cursor = resize(r.cursor, m)
		r.gidx = resize(r.gidx, m)
		r.tok = resize(r.tok, m)
		r.sco = resize(r.sco, m)
		if r.offload {
			r.tokR = resize(r.tokR, m)
			r.scoR = resize(r.scoR, m)
		}
		for k := range r.gidx {
			r.gidx[k] = -2 // no rank seen yet
		}
		for rank := int(r.classFirst[c]); rank < int(r.classFirst[c+1]); rank++ {
			same := true
			for k, di := range cdoms {
				gs := doms[di].Groups
				cur := r.cursor[k]
				for int(cur) < len(gs) && gs[cur].LastRank() < rank {
					cur++
				}
				r.cursor[k] = cur
				gi := int32(-1)
				if int(cur) < len(gs) && gs[cur].FirstRank <= rank {
					gi = cur
				}
				if gi != r.gidx[k] {
					same = false
					r.gidx[k] = gi
					r.tok[k], r.sco[k] = 0, 0
					if r.offload {
						r.tokR[k], r.scoR[k] = 0, 0
					}
					if gi >= 0 {
						t, q, err := r.groupShard(&doms[di], int(gi))
						if err != nil {
							return err
						}
						r.tok[k], r.sco[k] = t, q
						if r.offload {
							o := doms[di].Groups[gi].Offload
							r.tokR[k], r.scoR[k] = o*t, o*q
						}
					}
				}
			}
			if !same {
				if v == 1 {
					r.prefixes(scores)
				}
				for s := range pp {
					if v == 1 {
						pk, at, bwd := r.windowPeak(s, scores)
						if peaks[s] = pk; at >= 0 {
							r.notePeak(s, pk, rank, int(cdoms[at]), 0, bwd)
						}
					} else {
						peaks[s] = r.walk(s, sc.Ops(s), cdoms, rank)
					}
				}
			}
			for s := range pp {
				res.Stages[s].Ranks[rank].PeakActivationBytes = peaks[s]
			}
		}
	}
	return nil
}

// classPeaks is windowPeak for every rank of class c (one chunk per stage,
// rates per token only), all stages in one pass over each rank's
// microbatches: with the rank's token prefix sums padded past m with their
// total, stage s's candidate at microbatch k is
// KeptPerToken·(P[k+p−s] − P[k]) + BackwardPerToken·T[k] (the window
// k..min(k+w, m−1) of windowPeak), and its warm-up's P[w]. The rank that sets
// a stage's Peak is walked again by windowPeak for the op; the value stays
// this pass's.
func (r *Runner) classPeaks(c int, cdoms []int32) error {
	first, nr := int(r.classFirst[c]), int(r.classRanks(c))
	m, pp := len(cdoms), r.pp
	doms := r.l.Domains
	nb := (pp + 7) / 8     // blocks of 8 stages
	stride := m + 1 + 8*nb // a rank's prefix sums, padded
	r.matT = resize(r.matT, nr*m)
	r.matP = grow(r.matP, stride) // one rank's at a time; every entry is written below
	tm, pt := r.matT, r.matP
	for k, di := range cdoms {
		d := &doms[di]
		gs := d.Groups
		// The groups on the class's ranks: from the first that ends in it.
		gi, _ := slices.BinarySearchFunc(gs, first, func(g sched.Group, rank int) int { return cmp.Compare(g.LastRank(), rank) })
		for ; gi < len(gs) && gs[gi].FirstRank < first+nr; gi++ {
			g := gs[gi]
			t, _, err := r.groupShard(d, gi)
			if err != nil {
				return err
			}
			lo, hi := max(g.FirstRank, first), min(g.LastRank()+1, first+nr)
			for x := lo; x < hi; x++ {
				tm[(x-first)*m+k] = t
			}
		}
	}
	// Indexed by j = p−1−s (the window's end is k+1+j), in blocks of 8:
	// stage s's rates (0 past the last stage), and one rank's peaks.
	r.rate8 = resize(r.rate8, 2*nb)
	r.best8 = resize(r.best8, nb)
	rate, best := r.rate8, r.best8
	for s := range pp {
		j := pp - 1 - s
		rate[2*(j/8)][j%8], rate[2*(j/8)+1][j%8] = r.rates[s].KeptPerToken, r.rates[s].BackwardPerToken
	}
	peaks := r.best[:0]
	if r.rowSeen == nil {
		r.rowSeen = map[uint64]int{}
	}
	clear(r.rowSeen)
	for x := range nr {
		tok := tm[x*m : (x+1)*m]
		// Ranks holding the same tokens in every microbatch (of different
		// groups) have the same peaks: the first such rank's are copied.
		h := uint64(14695981039346656037)
		for _, t := range tok {
			h = (h ^ math.Float64bits(t)) * 1099511628211
		}
		if y, ok := r.rowSeen[h]; ok && slices.Equal(tm[y*m:(y+1)*m], tok) {
			peaks = append(peaks, peaks[y*pp:(y+1)*pp]...)
			continue
		}
		r.rowSeen[h] = x
		pt[0] = 0
		for k, t := range tok {
			pt[k+1] = pt[k] + t
		}
		for j := m + 1; j < stride; j++ {
			pt[j] = pt[m]
		}
		// Every candidate is a finite float >= 0 (+0, never −0), whose bits
		// order as the values do: the maximum is an integer one, without a
		// branch on the data. Eight stages at a time keep their rates and
		// peaks in fixed arrays the compiler can hold.
		for bi := range nb {
			a, c := rate[2*bi], rate[2*bi+1]
			var o [8]uint64
			for j := range 8 {
				o[j] = math.Float64bits(a[j] * pt[min(8*bi+j, m)]) // the warm-up's last forward
			}
			if c == ([8]float64{}) {
				// No transient: the largest window, times the rate once
				// (rounding is monotone, so the product is the same).
				var d [8]uint64
				for k := range tok {
					pk := pt[k]
					win := (*[8]float64)(pt[k+1+8*bi : k+9+8*bi])
					for j := range 8 {
						d[j] = max(d[j], math.Float64bits(win[j]-pk))
					}
				}
				for j := range 8 {
					o[j] = max(o[j], math.Float64bits(a[j]*math.Float64frombits(d[j])+0))
				}
			} else {
				for k, t := range tok {
					pk := pt[k]
					win := (*[8]float64)(pt[k+1+8*bi : k+9+8*bi])
					for j := range 8 {
						o[j] = max(o[j], math.Float64bits(a[j]*(win[j]-pk)+c[j]*t))
					}
				}
			}
			best[bi] = o
		}
		for s := range pp {
			j := pp - 1 - s
			peaks = append(peaks, math.Float64frombits(best[j/8][j%8]))
		}
	}
	r.best = peaks
	for s := range pp {
		ranks := r.res.Stages[s].Ranks[first : first+nr]
		top := 0
		for x := range nr {
			ranks[x].PeakActivationBytes = peaks[x*pp+s]
			if peaks[x*pp+s] > peaks[top*pp+s] {
				top = x
			}
		}
		if v := peaks[top*pp+s]; v > r.res.Stages[s].Peak.Bytes {
			r.tok = append(r.tok[:0], tm[top*m:(top+1)*m]...)
			r.prefixes(false)
			_, at, bwd := r.windowPeak(s, false)
			r.notePeak(s, v, first+top, int(cdoms[at]), 0, bwd)
		}
	}
	return nil
}

// groupShard is the sizer's shard of group gi of domain d, checked.
func (r *Runner) groupShard(d *Domain, gi int) (tokens, scores float64, err error) {
	t, q := r.sizer.GroupShard(d, gi)
	if !finiteBytes(t) || !finiteBytes(q) {
		return 0, 0, fmt.Errorf("step: microbatch %d group at rank %d: shard of %v tokens, %v scores: need finite values >= 0",
			d.MB, d.Groups[gi].FirstRank, t, q)
	}
	return t, q, nil
}

// prefixes fills r.preT and r.preQ with the prefix sums of the rank's
// tokens and scores per microbatch (r.tok, r.sco); r.preQ only when a rate
// counts scores.
func (r *Runner) prefixes(scores bool) {
	m := len(r.tok)
	r.preT = resize(r.preT, m+1)
	for k, t := range r.tok {
		r.preT[k+1] = r.preT[k] + t
	}
	if scores {
		r.preQ = resize(r.preQ, m+1)
		for k, q := range r.sco {
			r.preQ[k+1] = r.preQ[k] + q
		}
	}
	if r.offload {
		r.preTR = resize(r.preTR, m+1)
		r.preQR = resize(r.preQR, m+1)
		for k := range m {
			r.preTR[k+1] = r.preTR[k] + r.tokR[k]
			r.preQR[k+1] = r.preQR[k] + r.scoR[k]
		}
	}
}

// windowPeak is walk for one chunk per stage (plain 1F1B): the same
// candidates in the schedule's order, from the prefix sums of the rank's
// tokens and scores (prefixes) at the stage's rates; it returns the peak and
// where it is reached: the microbatch position at (−1: none) of a forward's
// end or, with bwd, a backward. At microbatch k of m
// the forward of k+w (when there is one) ends holding the window k..k+w, and
// the backward of k then runs with the window k..min(k+w, m−1) and k's
// transient: the backward's candidate is never below the forward's, so the
// forward is the peak's op only when the transient is 0.
func (r *Runner) windowPeak(s int, scores bool) (peak float64, at int, bwd bool) {
	m := len(r.tok)
	a := r.rates[s]
	pt, pq, tok := r.preT, r.preQ, r.tok
	held := func(lo, hi int) float64 { // kept bytes of microbatches [lo, hi)
		x := a.KeptPerToken * (pt[hi] - pt[lo])
		if scores {
			x += a.KeptPerScore * (pq[hi] - pq[lo])
		}
		if r.offload { // less what offload moved to host memory
			x -= a.OffloadPerToken*(r.preTR[hi]-r.preTR[lo]) + a.OffloadPerScore*(r.preQR[hi]-r.preQR[lo])
			x = max(x, 0)
		}
		return x
	}
	w := min(r.pp-s-1, m)
	at = -1
	for j := range w { // the warm-up's forwards
		if x := held(0, j+1); x > peak {
			peak, at, bwd = x, j, false
		}
	}
	note := func(k int, f, b float64, full bool) {
		if b > peak {
			peak = b
			if full && b == f {
				at, bwd = k+w, false
			} else {
				at, bwd = k, true
			}
		}
	}
	if !scores && !r.offload {
		// The largest backward candidate (the first, at a tie), branch-light;
		// where it is reached is settled after.
		kt, bt := a.KeptPerToken, a.BackwardPerToken
		best, bk := -1.0, -1
		n := m - w
		lo, hi, tk := pt[:n], pt[w+1:w+1+n], tok[:n]
		for k := range n { // steady state: full windows
			if b := kt*(hi[k]-lo[k]) + bt*tk[k]; b > best {
				best, bk = b, k
			}
		}
		end := pt[m]
		for k := n; k < m; k++ { // cool-down
			if b := kt*(end-pt[k]) + bt*tok[k]; b > best {
				best, bk = b, k
			}
		}
		if best > peak {
			f := kt * (pt[min(bk+w, m-1)+1] - pt[bk])
			note(bk, f, best, bk < n)
		}
	} else {
		for k := range m {
			full := k+w < m
			f := held(k, min(k+w, m-1)+1)
			note(k, f, f+a.BackwardPerToken*tok[k]+a.BackwardPerScore*r.sco[k], full)
		}
	}
	return peak, at, bwd
}

// walk returns the peak of one rank's held activations on stage s over its
// ops (any number of chunks), and records it in the stage's Peak when it is
// the largest yet.
func (r *Runner) walk(s int, ops []pipeline.Op, cdoms []int32, rank int) float64 {
	v := r.v
	var held, peak float64
	at := -1
	for n, op := range ops {
		k := op.MB
		if r.gidx[k] < 0 {
			continue
		}
		a := &r.rates[s*v+int(op.Chunk)]
		kept := a.KeptPerToken*r.tok[k] + a.KeptPerScore*r.sco[k]
		if r.offload {
			kept = max(0, kept-(a.OffloadPerToken*r.tokR[k]+a.OffloadPerScore*r.scoR[k]))
		}
		if !op.Backward {
			held += kept
			if held > peak {
				peak, at = held, n
			}
			continue
		}
		if x := held + a.BackwardPerToken*r.tok[k] + a.BackwardPerScore*r.sco[k]; x > peak {
			peak, at = x, n
		}
		held -= kept
	}
	if at >= 0 {
		op := ops[at]
		r.notePeak(s, peak, rank, int(cdoms[op.MB]), int(op.Chunk), op.Backward)
	}
	return peak
}

// notePeak records a rank's peak on stage s, reached in domain di's op of
// chunk (at the forward's end or the backward's start), as the stage's Peak
// when it is the largest yet.
func (r *Runner) notePeak(s int, peak float64, rank, di, chunk int, backward bool) {
	st := &r.res.Stages[s]
	if peak <= st.Peak.Bytes {
		return
	}
	i := opIndex(s, di, chunk, backward, r.nd, r.v)
	when := r.res.Ops[i].End
	if backward {
		when = r.res.Ops[i].Start
	}
	st.Peak = ActivationPeak{Bytes: peak, Rank: rank, MB: r.l.Domains[di].MB, Chunk: chunk, Backward: backward, At: when}
}

// grow returns s with length n, its contents unspecified, reusing its
// storage when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// finiteBytes reports whether b is a usable byte count: finite and >= 0.
func finiteBytes(b float64) bool { return b >= 0 && !math.IsInf(b, 0) }
