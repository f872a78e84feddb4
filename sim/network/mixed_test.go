package network

import (
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
)

// slowProfile is workedProfile with half the NVLink and a third of the NIC.
func slowProfile() calib.Profile {
	p := workedProfile()
	p.Name = "slow"
	p.NVLinkBytesPerSecond = c(180e9)
	p.NICBytesPerSecond = c(15e9)
	return p
}

// mixed is two pools of gpusEach GPUs, fast then slow, 8 per node, tp1 pp1.
func mixed(t *testing.T, fast, slow calib.Profile, gpusEach int) Topology {
	t.Helper()
	c := job.Cluster{GPUsPerNode: 8, GPUs: 2 * gpusEach,
		Pools: []job.Pool{{GPU: fast.Name, GPUs: gpusEach}, {GPU: slow.Name, GPUs: gpusEach}}}
	tt, err := NewMixedTopology([]calib.Profile{fast, slow}, c, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

// TestMixedOfOneKindIsOneKind: two pools of the same profile price every
// collective exactly as the one-kind cluster of their sum.
func TestMixedOfOneKindIsOneKind(t *testing.T) {
	p := realisticProfile()
	one := topo(t, p, 32, 8, 1, 1)
	two := mixed(t, p, p, 16)
	if !two.Mixed() || two.KindOf(15) != 0 || two.KindOf(16) != 1 {
		t.Fatalf("kinds: mixed %v, rank 15 kind %d, rank 16 kind %d", two.Mixed(), two.KindOf(15), two.KindOf(16))
	}
	for _, g := range []Ranks{Contiguous(0, 32), Contiguous(12, 8), Contiguous(4, 24), {First: 3, Count: 8, Stride: 4}} {
		if a, b := AllToAllSeconds(one, g.First, g.Count, 1e8), AllToAllSeconds(two, g.First, g.Count, 1e8); g.Stride == 1 && a != b {
			t.Errorf("all-to-all %+v: one kind %g, two pools %g", g, a, b)
		}
		if a, b := SendRecvSeconds(one, g, 1e7), SendRecvSeconds(two, g, 1e7); a != b {
			t.Errorf("send/recv %+v: one kind %g, two pools %g", g, a, b)
		}
		if a, b := ReduceScatterSeconds(one, g, 1e9), ReduceScatterSeconds(two, g, 1e9); a != b {
			t.Errorf("reduce-scatter %+v: one kind %g, two pools %g", g, a, b)
		}
	}
}

// TestMixedLinks: a ring crossing from the fast pool to the slow one runs at
// the slow NIC; one inside a slow node at the slow NVLink; an all-to-all
// spanning both is set by the slow ranks' NIC.
func TestMixedLinks(t *testing.T) {
	fast, slow := workedProfile(), slowProfile()
	m := mixed(t, fast, slow, 16)
	bytes := 15e6
	if got, want := SendRecvSeconds(m, Contiguous(8, 16), bytes), bytes/15e9+60e-6; !near(got, want, 1e-12) {
		t.Errorf("ring across the pools: %g s, want the slow NIC's %g", got, want)
	}
	if got, want := SendRecvSeconds(m, Contiguous(0, 16), bytes), bytes/45e9+60e-6; !near(got, want, 1e-12) {
		t.Errorf("ring across the fast nodes: %g s, want the fast NIC's %g", got, want)
	}
	if got, want := SendRecvSeconds(m, Contiguous(16, 8), bytes), bytes/180e9+25e-6; !near(got, want, 1e-12) {
		t.Errorf("ring in a slow node: %g s, want the slow NVLink's %g", got, want)
	}
	// 32 ranks, 8 per node: every rank sends 24/32 of its buffer off its node.
	if got, want := AllToAllSeconds(m, 0, 32, 32e6), 24e6/15e9+60e-6; !near(got, want, 1e-12) {
		t.Errorf("all-to-all over both pools: %g s, want the slow NIC's %g", got, want)
	}
	if got, want := P2PSeconds(mixedPP(t, fast, slow), 0, 9, 15e6), 15e6/15e9+60e-6; !near(got, want, 1e-12) {
		t.Errorf("pipeline p2p of a slow rank: %g s, want %g", got, want)
	}
}

// mixedPP is mixed with pp 2: 16 GPUs of each kind, 8 per stage.
func mixedPP(t *testing.T, fast, slow calib.Profile) Topology {
	t.Helper()
	c := job.Cluster{GPUsPerNode: 8, GPUs: 32, Pools: []job.Pool{{GPU: fast.Name, GPUs: 16}, {GPU: slow.Name, GPUs: 16}}}
	tt, err := NewMixedTopology([]calib.Profile{fast, slow}, c, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if tt.PoolRanks != 16 || tt.KindOf(7) != 0 || tt.KindOf(8) != 1 {
		t.Fatalf("pp 2: G = %d, kinds %d %d", tt.PoolRanks, tt.KindOf(7), tt.KindOf(8))
	}
	return tt
}

// TestMixedTopologyRefusesPartialNodes: a pool must fill whole nodes of
// every stage.
func TestMixedTopologyRefusesPartialNodes(t *testing.T) {
	p := workedProfile()
	c := job.Cluster{GPUsPerNode: 8, GPUs: 32, Pools: []job.Pool{{GPU: "a", GPUs: 20}, {GPU: "b", GPUs: 12}}}
	if _, err := NewMixedTopology([]calib.Profile{p, p}, c, 1, 1); err == nil {
		t.Error("pools of 20 and 12 GPUs on 8-GPU nodes: no error")
	}
	if _, err := NewMixedTopology([]calib.Profile{p}, c, 1, 1); err == nil {
		t.Error("one profile for two pools: no error")
	}
}

// TestRaggedAllToAllEven: the even case of the ragged all-to-all is
// AllToAllSeconds, inside a node and across nodes, on one kind and on two.
func TestRaggedAllToAllEven(t *testing.T) {
	for _, tt := range []Topology{topo(t, realisticProfile(), 32, 8, 1, 1), mixed(t, workedProfile(), slowProfile(), 16)} {
		for _, g := range [][2]int{{0, 8}, {8, 16}, {4, 8}, {0, 32}, {12, 8}} {
			n := g[1]
			x, y := make([]float64, n), make([]float64, n)
			for i := range n {
				x[i], y[i] = 1, 1/float64(n)
			}
			got, want := RaggedAllToAllSeconds(tt, g[0], x, y, 4e7), AllToAllSeconds(tt, g[0], n, 4e7)
			if !near(got, want, 1e-12) {
				t.Errorf("ranks [%d, %d): ragged %g, even %g", g[0], g[0]+n, got, want)
			}
		}
	}
}

// TestRaggedAllToAllUneven: the busiest endpoint sets the time. Two ranks in
// one node: rank 0 holds 3 units and takes 1/4 of the heads, rank 1 holds 1
// and takes 3/4: rank 0 sends 3·3/4, receives 1·1/4; rank 1 sends 1/4,
// receives 9/4. The largest, 9/4 units, crosses NVLink.
func TestRaggedAllToAllUneven(t *testing.T) {
	tt := topo(t, workedProfile(), 8, 8, 1, 1)
	got := RaggedAllToAllSeconds(tt, 0, []float64{3, 1}, []float64{0.25, 0.75}, 1e9)
	if want := 2.25e9/360e9 + 25e-6; !near(got, want, 1e-12) {
		t.Errorf("uneven all-to-all: %g s, want %g", got, want)
	}
	if got := RaggedAllToAllSeconds(tt, 0, []float64{5}, []float64{1}, 1e9); got != 0 {
		t.Errorf("one rank: %g s, want 0", got)
	}
}

// TestLayoutCPLayerEvenIsUlyssesRing: an even layout of HP groups of u ranks
// prices what CPLayer prices for UlyssesRing of inner degree u.
func TestLayoutCPLayerEvenIsUlyssesRing(t *testing.T) {
	tt := topo(t, realisticProfile(), 32, 8, 1, 1)
	for _, name := range []string{job.ModelLlama3With8B, job.ModelDeepSeekV2Lite} {
		m := model(t, name)
		heads := m.QueryHeads
		for _, c := range []struct{ first, size, u int }{{0, 8, 8}, {0, 16, 8}, {0, 32, 4}, {8, 16, 2}, {0, 32, 32}} {
			tokens := 64 * c.size * 32
			l := &sched.Layout{}
			for range c.size / c.u {
				l.HPGroups = append(l.HPGroups, c.u)
			}
			for range c.size {
				l.ShardTokens = append(l.ShardTokens, tokens/c.size)
				l.Heads = append(l.Heads, heads/c.u)
			}
			if heads%c.u != 0 {
				continue
			}
			ov := CPOverlap{AttentionFwdSeconds: 1e-3, AttentionBwdSeconds: 2.5e-3}
			want, err := CPLayer(tt, m, CPGroup{Exec: sched.UlyssesRing, FirstRank: c.first, Degree: c.size, UlyssesDegree: c.u}, tokens, ov)
			if err != nil {
				t.Fatal(err)
			}
			got, err := LayoutCPLayer(tt, m, c.first, l, int64(tokens), heads, LayoutOverlap{AttentionFwdSeconds: 1e-3, AttentionBwdSeconds: 2.5e-3})
			if err != nil {
				t.Fatal(err)
			}
			for k, pair := range [][2]CPCost{{got.Fwd, want.Fwd}, {got.Bwd, want.Bwd}} {
				g, w := pair[0], pair[1]
				if !near(g.CommSeconds, w.CommSeconds, 1e-9) || !near(g.ExposedSeconds, w.ExposedSeconds, 1e-9) ||
					!near(g.PayloadBytes, w.PayloadBytes, 1e-9) || !near(g.SentBytes, w.SentBytes, 1e-9) {
					t.Errorf("%s %+v pass %d: layout %+v, UlyssesRing %+v", name, c, k, g, w)
				}
			}
		}
	}
}

// TestLayoutCPLayerRefusesBadLayouts: a layout that does not fit its group
// is an error, not a price.
func TestLayoutCPLayerRefusesBadLayouts(t *testing.T) {
	tt := topo(t, workedProfile(), 16, 8, 1, 1)
	m := model(t, job.ModelLlama3With8B)
	ok := &sched.Layout{HPGroups: []int{2}, ShardTokens: []int{10, 6}, Heads: []int{20, 12}}
	if _, err := LayoutCPLayer(tt, m, 0, ok, 16, 32, LayoutOverlap{}); err != nil {
		t.Fatalf("good layout: %v", err)
	}
	for name, l := range map[string]*sched.Layout{
		"shards sum":      {HPGroups: []int{2}, ShardTokens: []int{10, 5}, Heads: []int{20, 12}},
		"heads sum":       {HPGroups: []int{2}, ShardTokens: []int{10, 6}, Heads: []int{20, 11}},
		"hp groups sum":   {HPGroups: []int{1, 2}, ShardTokens: []int{10, 6}, Heads: []int{20, 12}},
		"negative shard":  {HPGroups: []int{2}, ShardTokens: []int{17, -1}, Heads: []int{20, 12}},
		"negative heads":  {HPGroups: []int{2}, ShardTokens: []int{10, 6}, Heads: []int{33, -1}},
		"outside pool":    {HPGroups: []int{17}, ShardTokens: make([]int, 17), Heads: make([]int, 17)},
		"missing entries": {HPGroups: []int{2}, ShardTokens: []int{16}, Heads: []int{32}},
	} {
		if _, err := LayoutCPLayer(tt, m, 0, l, 16, 32, LayoutOverlap{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := LayoutCPLayer(tt, m, 0, ok, 16, 32, LayoutOverlap{AttentionFwdSeconds: -1}); err == nil {
		t.Error("negative overlap: no error")
	}
}
