package step

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim"
	"github.com/dcpsim/dcpsim/sim/pipeline"
)

// sized is hashed with activations: each group's ranks hold a hashed
// 1-1000 tokens and 0-99 scores, and each chunk keeps a hashed 1-16 bytes per
// token and 0-3 per score, its backward adding a hashed share of them.
type sized struct{ hashed }

func (sized) GroupShard(d *Domain, gi int) (float64, float64) {
	g := d.Groups[gi]
	h := mix(d.MB, g.FirstRank, g.Size, 7)
	return float64(1 + h%1000), float64(h >> 10 % 100)
}

func (sized) ChunkActivation(s, c int) ActivationRate {
	h := mix(s, c, 11)
	kt, ks := float64(1+h%16), float64(h>>5%4)
	f := float64(h>>9%3) / 2
	return ActivationRate{KeptPerToken: kt, KeptPerScore: ks, BackwardPerToken: f * kt, BackwardPerScore: f * ks}
}

// sizedTokens is sized with rates per token only: the engine's matrix path
// for one chunk per stage (classPeaks) instead of the walk.
type sizedTokens struct{ sized }

func (c sizedTokens) ChunkActivation(s, ch int) ActivationRate {
	a := c.sized.ChunkActivation(s, ch)
	a.KeptPerScore, a.BackwardPerScore = 0, 0
	return a
}

// sizedOffload is sized with a hashed part of each kept rate offloadable
// (sched.Group.Offload moves r of it to host memory).
type sizedOffload struct{ sized }

func (c sizedOffload) ChunkActivation(s, ch int) ActivationRate {
	a := c.sized.ChunkActivation(s, ch)
	f := float64(mix(s, ch, 13)%5) / 4
	a.OffloadPerToken, a.OffloadPerScore = f*a.KeptPerToken, f*a.KeptPerScore
	return a
}

// withOffload is a copy of plan whose groups offload at hashed ratios in
// {0, 1/3, 2/3, 1}.
func withOffload(plan *sched.Plan) *sched.Plan {
	out := *plan
	out.Microbatches = slices.Clone(plan.Microbatches)
	for m := range out.Microbatches {
		gs := slices.Clone(out.Microbatches[m].Groups)
		for i := range gs {
			gs[i].Offload = float64(mix(m, gs[i].FirstRank, 17)%4) / 3
		}
		out.Microbatches[m].Groups = gs
	}
	return &out
}

// bytes is what a rank of group gi keeps of chunk c on stage s on the GPU,
// and its backward's transient.
func bytes(costs ActivationSizer, s, c int, d *Domain, gi int) (kept, bwd float64) {
	t, q := costs.GroupShard(d, gi)
	a := costs.ChunkActivation(s, c)
	r := d.Groups[gi].Offload
	return a.KeptPerToken*t + a.KeptPerScore*q - r*(a.OffloadPerToken*t+a.OffloadPerScore*q), a.BackwardPerToken*t + a.BackwardPerScore*q
}

// timelinePeak is the oracle: one rank's peak on one stage read from the
// simulated timeline alone (the ops' start and end times), not from the
// schedule's order: + kept at a forward's end, + transient from a backward's
// start to its end, − kept at its end.
func timelinePeak(res *Result, costs ActivationSizer, s, rank int) float64 {
	type ev struct {
		at    sim.Nanos
		order int // at equal times ends (of the previous op) before starts
		delta float64
	}
	var evs []ev
	for di := range res.Domains {
		d := &res.Domains[di]
		if rank < d.FirstRank || rank > d.LastRank() {
			continue
		}
		gi := slices.IndexFunc(d.Groups, func(g sched.Group) bool { return g.FirstRank <= rank && rank <= g.LastRank() })
		if gi < 0 {
			continue
		}
		for c := range res.VPP {
			kept, bwd := bytes(costs, s, c, d, gi)
			f := res.Ops[res.OpIndex(s, di, c, false)]
			b := res.Ops[res.OpIndex(s, di, c, true)]
			evs = append(evs, ev{f.End, 0, kept}, ev{b.Start, 1, bwd}, ev{b.End, 0, -bwd - kept})
		}
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.order, b.order))
	})
	var held, peak float64
	for _, e := range evs {
		held += e.delta
		peak = max(peak, held)
	}
	return peak
}

// TestPeakActivationsMatchTimeline: on the policies' plans and on random
// partial plans, every (stage, rank)'s peak equals the one read off the
// simulated timeline, each stage's Peak is its largest, and the rest of the
// Result is what Run gives without activations.
func TestPeakActivationsMatchTimeline(t *testing.T) {
	var r Runner
	checked := 0
	var checkOne func(name string, plan *sched.Plan, pp, vpp, ep int, costs sizedCosts)
	check := func(name string, plan *sched.Plan, pp, vpp, ep int) {
		t.Helper()
		for _, costs := range []sizedCosts{sized{}, sizedTokens{}} {
			checkOne(name, plan, pp, vpp, ep, costs)
		}
		checkOne(name+" offloading", withOffload(plan), pp, vpp, ep, sizedOffload{})
	}
	checkOne = func(name string, plan *sched.Plan, pp, vpp, ep int, costs sizedCosts) {
		t.Helper()
		l, err := NewLayout(plan, ep)
		if err != nil {
			return
		}
		got, err := r.Run(l, pp, vpp, costs)
		if err != nil {
			return
		}
		for s := range pp {
			st := &got.Stages[s]
			var worst float64
			for rank := range st.Ranks {
				want := timelinePeak(got, costs, s, rank)
				if g := st.Ranks[rank].PeakActivationBytes; math.Abs(g-want) > 1e-9*max(1, want) {
					t.Fatalf("%s (pp %d vpp %d ep %d): stage %d rank %d peak %v, timeline %v", name, pp, vpp, ep, s, rank, g, want)
				}
				worst = max(worst, st.Ranks[rank].PeakActivationBytes)
				checked++
			}
			if st.Peak.Bytes != worst || worst > 0 && st.Ranks[st.Peak.Rank].PeakActivationBytes != worst {
				t.Fatalf("%s: stage %d Peak %+v, largest rank peak %v", name, s, st.Peak, worst)
			}
		}
		plain, err := Run(l, pp, vpp, hashed{})
		if err != nil {
			t.Fatal(err)
		}
		for s := range got.Stages {
			for k := range got.Stages[s].Ranks {
				got.Stages[s].Ranks[k].PeakActivationBytes = 0
			}
			got.Stages[s].Peak = ActivationPeak{}
		}
		if !equalResults(got, plain) {
			t.Fatalf("%s: tracking activations changed the timeline", name)
		}
	}
	testPlans(t, 5, 20, func(name string, plan *sched.Plan, pp, vpp, ep int, _ float64) { check(name, plan, pp, vpp, ep) })
	if checked < 5000 {
		t.Errorf("%d (stage, rank) peaks checked: want at least 5000", checked)
	}
}

// sizedCosts are the costs TestPeakActivationsMatchTimeline runs.
type sizedCosts interface {
	Costs
	ActivationSizer
}

// equalResults compares two Results field by field where it matters to the
// timeline (the Domains' groups are the same slices).
func equalResults(a, b *Result) bool {
	if a.Iteration != b.Iteration || !slices.Equal(a.Ops, b.Ops) || !slices.Equal(a.MBSeconds, b.MBSeconds) ||
		a.PPBubbleShare != b.PPBubbleShare || a.DPBubbleShare != b.DPBubbleShare {
		return false
	}
	for s := range a.Stages {
		if !slices.Equal(a.Stages[s].Ranks, b.Stages[s].Ranks) || a.Stages[s].GradSyncStart != b.Stages[s].GradSyncStart {
			return false
		}
	}
	return true
}

// perChunk keeps one byte per token of a rank's shard in every chunk, and
// its backward nothing.
type perChunk struct {
	LoadCosts
	tokens []int
}

func (c perChunk) GroupShard(d *Domain, gi int) (float64, float64) {
	g := d.Groups[gi]
	var n int
	for _, id := range g.Seqs {
		n += c.tokens[id]
	}
	return float64(n / g.Size), 0
}

func (perChunk) ChunkActivation(_, _ int) ActivationRate { return ActivationRate{KeptPerToken: 1} }

// TestEqualMicrobatchesClosedForm: with m equal microbatches, stage s of p
// holds min(p − s, m) microbatches at its peak under 1F1B, and under
// interleaved 1F1B the warmup's forwards plus one, min(w_s + 1, m·v), chunks
// (Korthikanti et al. 2022 §4.2.3: the first stage holds p microbatches,
// L·(1 + (p−1)/(p·m)) layers' worth when interleaved).
func TestEqualMicrobatchesClosedForm(t *testing.T) {
	const g, tokens = 4, 1000
	for _, tc := range []struct{ p, v, m int }{
		{1, 1, 3}, {2, 1, 1}, {4, 1, 8}, {4, 1, 2}, {8, 1, 16},
		{2, 2, 4}, {4, 2, 8}, {4, 3, 12}, {8, 3, 24}, {4, 2, 4},
	} {
		lengths := make([]int, tc.m*g)
		plan := &sched.Plan{PoolRanks: g}
		for k := range tc.m {
			var mb sched.Microbatch
			for r := range g {
				id := k*g + r
				lengths[id] = tokens
				mb.Groups = append(mb.Groups, sched.Group{FirstRank: r, Size: 1, Seqs: []int{id}})
			}
			plan.Microbatches = append(plan.Microbatches, mb)
		}
		costs := perChunk{LoadCosts{Lengths: lengths, PP: tc.p, VPP: tc.v}, lengths}
		res, err := Simulate(plan, tc.p, tc.v, 1, costs)
		if err != nil {
			t.Fatal(err)
		}
		for s := range tc.p {
			held := min(tc.p-s, tc.m)
			if tc.v > 1 {
				held = min(pipeline.Warmup(tc.p, tc.v, tc.m, 0, s)+1, tc.m*tc.v)
			}
			want := float64(held * tokens)
			for r, rr := range res.Stages[s].Ranks {
				if rr.PeakActivationBytes != want {
					t.Errorf("p %d v %d m %d: stage %d rank %d peak %v, want %d chunks = %v", tc.p, tc.v, tc.m, s, r, rr.PeakActivationBytes, held, want)
				}
			}
			if pk := res.Stages[s].Peak; pk.Bytes != want || pk.Rank != 0 || pk.Backward {
				t.Errorf("p %d v %d m %d: stage %d Peak %+v, want %v on rank 0 at a forward's end", tc.p, tc.v, tc.m, s, pk, want)
			}
		}
		// Korthikanti's interleaving factor, on the first stage when its
		// warmup does not cover every forward.
		if tc.v > 1 && pipeline.Warmup(tc.p, tc.v, tc.m, 0, 0) < tc.m*tc.v {
			layers := float64(res.Stages[0].Peak.Bytes) / tokens / float64(tc.v) // in whole-stage units
			want := float64(tc.p) * (1 + float64(tc.p-1)/float64(tc.p*tc.v))
			if math.Abs(layers-want) > 1e-12 {
				t.Errorf("p %d v %d: the first stage holds %v stages' worth, Korthikanti %v", tc.p, tc.v, layers, want)
			}
		}
	}
}

// badSizer answers NaN for one group.
type badSizer struct{ hashed }

func (badSizer) GroupShard(d *Domain, gi int) (float64, float64) {
	if d.MB == 1 {
		return math.NaN(), 0
	}
	return 1, 0
}

func (badSizer) ChunkActivation(_, _ int) ActivationRate { return ActivationRate{KeptPerToken: 1} }

// badRate answers a negative rate.
type badRate struct{ hashed }

func (badRate) GroupShard(*Domain, int) (float64, float64) { return 1, 0 }
func (badRate) ChunkActivation(s, _ int) ActivationRate {
	return ActivationRate{KeptPerToken: 1, BackwardPerScore: -float64(s)}
}

func TestActivationErrors(t *testing.T) {
	plan := &sched.Plan{PoolRanks: 2, Microbatches: []sched.Microbatch{
		{Groups: []sched.Group{{FirstRank: 0, Size: 2, Seqs: []int{0}}}},
		{Groups: []sched.Group{{FirstRank: 0, Size: 1, Seqs: []int{1}}}},
	}}
	if _, err := Simulate(plan, 1, 1, 1, badSizer{}); err == nil {
		t.Fatal("a NaN shard was accepted")
	}
	if _, err := Simulate(plan, 2, 1, 1, badRate{}); err == nil {
		t.Fatal("a negative rate was accepted")
	}
}
