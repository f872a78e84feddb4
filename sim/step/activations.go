package step

import (
	"fmt"
	"github.com/dcpsim/dcpsim/sim/pipeline"
	"math"
)

// activations follows every rank's held activations through its schedule
// when the costs are an ActivationSizer: on each stage a rank keeps the
// activations of each chunk from the end of its forward to the end of its
// backward, so its peak is reached at the end of a forward, or during a
// backward with that backward's transient on top. The order of a rank's ops
// is its pipeline schedule, and with variable-length microbatches the peak is
// the largest prefix of that stream, which is what is summed here. Ranks of a
// class whose CP groups are the same in every microbatch share one walk.
//
// It costs pp·vpp calls per CP group, then per rank with its own groups
// pp·2·vpp·m additions (m its microbatches).
func (r *Runner) activations() error {
	sizer, ok := r.costs.(ActivationSizer)
	if !ok {
		return nil
	}
	pp, v, nd := r.pp, r.v, r.nd
	doms := r.l.Domains
	// gOff[di] is the index of domain di's first group among all groups.
	r.gOff = resize(r.gOff, nd+1)
	for i := range doms {
		r.gOff[i+1] = r.gOff[i] + int32(len(doms[i].Groups))
	}
	ng := int(r.gOff[nd])
	r.actTab = resize(r.actTab, pp*v*ng*2)
	tab := r.actTab
	for s := range pp {
		for di := range doms {
			d := &doms[di]
			for c := range v {
				base := ((s*v+c)*ng + int(r.gOff[di])) * 2
				for gi := range d.Groups {
					kept, bwd := sizer.ChunkActivationBytes(s, c, d, gi)
					if !finiteBytes(kept) || !finiteBytes(bwd) {
						return fmt.Errorf("step: stage %d chunk %d microbatch %d group at rank %d: activations %v + %v bytes: need finite values >= 0",
							s, c, d.MB, d.Groups[gi].FirstRank, kept, bwd)
					}
					tab[base+2*gi], tab[base+2*gi+1] = kept, bwd
				}
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
		r.cursor = resize(r.cursor, m)
		r.gidx = resize(r.gidx, m)
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
				}
			}
			if !same {
				for s := range pp {
					peaks[s] = r.walk(s, sc.Ops(s), cdoms, ng, rank)
				}
			}
			for s := range pp {
				res.Stages[s].Ranks[rank].PeakActivationBytes = peaks[s]
			}
		}
	}
	return nil
}

// walk returns the peak of one rank's held activations on stage s over its
// ops, and records it in the stage's Peak when it is the largest yet.
func (r *Runner) walk(s int, ops []pipeline.Op, cdoms []int32, ng, rank int) float64 {
	v, tab := r.v, r.actTab
	var held, peak float64
	at := -1
	for n, op := range ops {
		gi := r.gidx[op.MB]
		if gi < 0 {
			continue
		}
		di := int(cdoms[op.MB])
		base := ((s*v+int(op.Chunk))*ng + int(r.gOff[di]) + int(gi)) * 2
		if !op.Backward {
			held += tab[base]
			if held > peak {
				peak, at = held, n
			}
			continue
		}
		if x := held + tab[base+1]; x > peak {
			peak, at = x, n
		}
		held -= tab[base]
	}
	st := &r.res.Stages[s]
	if at >= 0 && peak > st.Peak.Bytes {
		op := ops[at]
		di := int(cdoms[op.MB])
		i := opIndex(s, di, int(op.Chunk), op.Backward, r.nd, v)
		when := r.res.Ops[i].End
		if op.Backward {
			when = r.res.Ops[i].Start
		}
		st.Peak = ActivationPeak{Bytes: peak, Rank: rank, MB: r.l.Domains[di].MB, Chunk: int(op.Chunk), Backward: op.Backward, At: when}
	}
	return peak
}

// finiteBytes reports whether b is a usable byte count: finite and >= 0.
func finiteBytes(b float64) bool { return b >= 0 && !math.IsInf(b, 0) }
