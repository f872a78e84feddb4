package kineto

import (
	"cmp"
	"slices"
	"sort"
)

// maxWalk bounds the ancestors a kernel's op search climbs.
const maxWalk = 256

// link nests the ops of every thread by time (sort + stack) and links every
// kernel to the op that launched it: the op with the kernel's External id
// when its launch lies inside that op (or no launch was recorded), else the
// op with the launch's External id, else the innermost op around the
// launch on its thread (traces of older PyTorch, whose kernels' External id
// is their correlation).
func (p *parser) link() {
	if !p.fractional {
		p.slackNano = 1000
	}
	p.order = make([]int32, len(p.ops))
	for i := range p.order {
		p.order[i] = int32(i)
	}
	slices.SortFunc(p.order, func(a, b int32) int {
		oa, ob := &p.ops[a], &p.ops[b]
		if c := cmp.Compare(oa.thread, ob.thread); c != 0 {
			return c
		}
		if c := cmp.Compare(oa.start, ob.start); c != 0 {
			return c
		}
		if c := cmp.Compare(ob.end, oa.end); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	p.byThread = map[int32][2]int{}
	var stack []int32
	first := 0
	for at, i := range p.order {
		o := &p.ops[i]
		if at > 0 && p.ops[p.order[at-1]].thread != o.thread {
			p.byThread[p.ops[p.order[at-1]].thread] = [2]int{first, at}
			first, stack = at, stack[:0]
		}
		for len(stack) > 0 {
			top := &p.ops[stack[len(stack)-1]]
			if top.start <= o.start && o.start < top.end && o.end <= top.end+p.slackNano {
				break
			}
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			o.parent = stack[len(stack)-1]
		}
		stack = append(stack, i)
	}
	if len(p.order) > 0 {
		p.byThread[p.ops[p.order[len(p.order)-1]].thread] = [2]int{first, len(p.order)}
	}
	// External ids and correlations: sorted slices searched by binary
	// search (they arrive nearly sorted), lighter than maps for millions.
	for i := range p.ops {
		if p.ops[i].ext > 0 {
			p.byExt = append(p.byExt, int32(i))
		}
	}
	slices.SortStableFunc(p.byExt, func(a, b int32) int { return cmp.Compare(p.ops[a].ext, p.ops[b].ext) })
	slices.SortStableFunc(p.runtimes, func(a, b rtEvent) int { return cmp.Compare(a.corr, b.corr) })
	for ki := range p.kernels {
		k := &p.kernels[ki]
		rt, hasRT := p.launch(k.corr)
		op := int32(-1)
		if e, ok := p.opByExt(k.ext); ok && (!hasRT || p.around(e, rt)) {
			op = e
		}
		if op < 0 && hasRT {
			if e, ok := p.opByExt(rt.ext); ok && p.around(e, rt) {
				op = e
			} else {
				op = p.innermost(rt)
			}
		}
		k.op = op
		if op >= 0 {
			p.ops[op].kernels++
		}
	}
}

// opByExt is the first op with External id ext (> 0).
func (p *parser) opByExt(ext int64) (int32, bool) {
	if ext <= 0 {
		return -1, false
	}
	i, ok := slices.BinarySearchFunc(p.byExt, ext, func(o int32, e int64) int { return cmp.Compare(p.ops[o].ext, e) })
	if !ok {
		return -1, false
	}
	return p.byExt[i], true
}

// launch is the last launch recorded with correlation corr (> 0).
func (p *parser) launch(corr int64) (rtEvent, bool) {
	if corr <= 0 {
		return rtEvent{}, false
	}
	i, ok := slices.BinarySearchFunc(p.runtimes, corr, func(r rtEvent, c int64) int { return cmp.Compare(r.corr, c) })
	if !ok {
		return rtEvent{}, false
	}
	for i+1 < len(p.runtimes) && p.runtimes[i+1].corr == corr {
		i++
	}
	return p.runtimes[i], true
}

// around reports whether the launch rt lies inside op e (start and end).
func (p *parser) around(e int32, rt rtEvent) bool {
	o := &p.ops[e]
	return o.thread == rt.thread && o.start <= rt.start && rt.end <= o.end+p.slackNano
}

// innermost is the innermost op of the launch's thread whose span holds the
// launch, -1 if none: the last op starting at or before it, or that op's
// nearest ancestor holding it (ops nest, so every op holding the launch is
// on that chain).
func (p *parser) innermost(rt rtEvent) int32 {
	r, ok := p.byThread[rt.thread]
	if !ok {
		return -1
	}
	seg := p.order[r[0]:r[1]]
	j := sort.Search(len(seg), func(x int) bool { return p.ops[seg[x]].start > rt.start }) - 1
	if j < 0 {
		return -1
	}
	c := seg[j]
	for depth := 0; c >= 0 && depth < maxWalk; depth++ {
		if p.around(c, rt) {
			return c
		}
		c = p.ops[c].parent
	}
	return -1
}
