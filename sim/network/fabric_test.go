package network

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
)

// fabricTopo is stage s of a one-kind cluster with fabric f.
func fabricTopo(t *testing.T, gpus, gpn, tp, pp int, f job.Fabric) Topology {
	t.Helper()
	tt, err := NewTopology(workedProfile(), job.Cluster{GPU: "worked", GPUs: gpus, GPUsPerNode: gpn, Fabric: f}, tp, pp)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

func TestFabricDefaultsDoNotContend(t *testing.T) {
	tt := fabricTopo(t, 4096, 8, 1, 4, job.Fabric{})
	if tt.Contended() {
		t.Fatalf("default fabric %+v contends", tt.Fabric)
	}
	if tt.Fabric.NICsPerNode != 8 || tt.Fabric.NodesPerLeaf != job.DefaultNodesPerLeaf || tt.Fabric.SpineOversubscription != 1 {
		t.Fatalf("defaults %+v", tt.Fabric)
	}
	var w Window
	if w.Reset(tt) {
		t.Fatal("Reset reports contention on the default fabric")
	}
	id := w.Add(Demand{Ranks: Contiguous(0, 512), Pattern: PatternAllToAll, NICSeconds: 1})
	w.Solve()
	if s := w.Stretch(id); s != 1 {
		t.Fatalf("stretch %g on a non-blocking fabric", s)
	}
}

func TestFabricRejected(t *testing.T) {
	for _, f := range []job.Fabric{{NICsPerNode: 3}, {NICsPerNode: 16}, {NodesPerLeaf: -1}, {SpineOversubscription: 0.5}, {SpineOversubscription: math.NaN()}} {
		_, err := NewTopology(workedProfile(), job.Cluster{GPU: "worked", GPUs: 64, GPUsPerNode: 8, Fabric: f}, 1, 1)
		if err == nil {
			t.Errorf("fabric %+v accepted", f)
		}
	}
}

// TestWindowAnalytic checks stretches known exactly.
func TestWindowAnalytic(t *testing.T) {
	cases := []struct {
		name   string
		fabric job.Fabric
		tp, pp int
		stage  int
		demand []Demand
		want   []float64
	}{
		{"4 NICs for 8 GPUs: an all-to-all over two full nodes runs at half", job.Fabric{NICsPerNode: 4}, 1, 1, 0,
			[]Demand{{Ranks: Contiguous(0, 16), Pattern: PatternAllToAll, NICSeconds: 1}}, []float64{2}},
		{"4 NICs: a ring through nodes puts one flow per node per ring", job.Fabric{NICsPerNode: 4}, 1, 1, 0,
			[]Demand{{Ranks: Contiguous(0, 32), Pattern: PatternRings, Rings: 8, NICSeconds: 1}}, []float64{2}},
		{"4 NICs: a plain ring has one flow per node", job.Fabric{NICsPerNode: 4}, 1, 1, 0,
			[]Demand{{Ranks: Contiguous(0, 32), Pattern: PatternRings, Rings: 1, NICSeconds: 1}}, []float64{1}},
		{"4 NICs: two half-node groups share one node's NICs", job.Fabric{NICsPerNode: 4}, 1, 1, 0,
			[]Demand{{Ranks: Ranks{First: 0, Count: 8, Stride: 2}, Pattern: PatternAllToAll, NICSeconds: 1},
				{Ranks: Ranks{First: 1, Count: 8, Stride: 2}, Pattern: PatternAllToAll, NICSeconds: 1}}, []float64{2, 2}},
		{"processor sharing: the small flow finishes first", job.Fabric{NICsPerNode: 4}, 1, 1, 0,
			[]Demand{{Ranks: Ranks{First: 0, Count: 8, Stride: 2}, Pattern: PatternAllToAll, NICSeconds: 1},
				{Ranks: Ranks{First: 1, Count: 8, Stride: 2}, Pattern: PatternAllToAll, NICSeconds: 3}},
			// 4 flows of 1 and 4 of 3 on 4 NICs: the small end at (4+4)/4 = 2
			// (σ 2), the large at (4·1 + 4·3)/4 = 4 (σ 4/3).
			[]float64{2, 4.0 / 3}},
		{"2:1 spine: pipeline transfers of a full stage across leaves", job.Fabric{NodesPerLeaf: 4, SpineOversubscription: 2}, 1, 2, 0,
			[]Demand{{Ranks: Contiguous(0, 32), Pattern: PatternPeerStage, NICSeconds: 1}}, []float64{2}},
		{"2:1 spine: an all-to-all inside one leaf group is not slowed", job.Fabric{NodesPerLeaf: 4, SpineOversubscription: 2}, 1, 1, 0,
			[]Demand{{Ranks: Contiguous(0, 32), Pattern: PatternAllToAll, NICSeconds: 1}}, []float64{1}},
		{"4:1 spine: an all-to-all over two leaf groups sends 32/56 of v up from 32 GPUs", job.Fabric{NodesPerLeaf: 4, SpineOversubscription: 4}, 1, 1, 0,
			// Leaf capacity 4·8/4 = 8 NICs; 32 flows of 4/7 (32 of a member's 56
			// off-node peers are in the other leaf group): T = 32·(4/7)/8 = 16/7 of v = 1.
			[]Demand{{Ranks: Contiguous(0, 64), Pattern: PatternAllToAll, NICSeconds: 1}}, []float64{16.0 / 7}},
		{"one NIC per flow: 2 flows on 4 NICs are not sped up", job.Fabric{NICsPerNode: 4}, 1, 1, 0,
			[]Demand{{Ranks: Ranks{First: 0, Count: 2, Stride: 8}, Pattern: PatternAllToAll, NICSeconds: 1}}, []float64{1}},
		{"tp 2: a rank's two GPUs are two flows", job.Fabric{NICsPerNode: 4}, 2, 1, 0,
			[]Demand{{Ranks: Contiguous(0, 8), Pattern: PatternAllToAll, NICSeconds: 1}}, []float64{2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tt := fabricTopo(t, 64*8, 8, tc.tp, tc.pp, tc.fabric).ForStage(tc.stage)
			var w Window
			if !w.Reset(tt) {
				t.Fatal("fabric does not contend")
			}
			for _, d := range tc.demand {
				w.Add(d)
			}
			w.Solve()
			for i, want := range tc.want {
				if got := w.Stretch(i); math.Abs(got-want) > 1e-12*want {
					t.Errorf("demand %d: stretch %g, want %g", i, got, want)
				}
			}
		})
	}
}

// fluidFlow is one flow of the exact fluid max-min oracle: its size in
// NIC-seconds and the pools it crosses.
type fluidFlow struct {
	size  float64
	pools []int
}

// fluidMaxMin returns every flow's completion time under exact max-min fair
// sharing (progressive filling, recomputed at every completion), each flow
// also capped at rate 1 (its own NIC).
func fluidMaxMin(flows []fluidFlow, capacity []float64) []float64 {
	n := len(flows)
	done := make([]float64, n)
	left := make([]float64, n)
	active := make([]bool, n)
	for i, f := range flows {
		left[i], active[i] = f.size, f.size > 0
	}
	now := 0.0
	for {
		rate := make([]float64, n)
		frozen := make([]bool, n)
		any := false
		for i := range n {
			frozen[i] = !active[i]
			any = any || active[i]
		}
		if !any {
			return done
		}
		// Water-filling: raise every unfrozen flow's rate together.
		level := 0.0
		for {
			step, bottleneck := 1-level, -1 // the NIC cap
			for p, c := range capacity {
				used, count := 0.0, 0
				for i, f := range flows {
					if !active[i] || !slices.Contains(f.pools, p) {
						continue
					}
					if frozen[i] {
						used += rate[i]
					} else {
						used += level
						count++
					}
				}
				if count > 0 {
					if s := (c - used) / float64(count); s < step {
						step, bottleneck = s, p
					}
				}
			}
			level += step
			progressed := false
			for i, f := range flows {
				if frozen[i] {
					continue
				}
				if bottleneck < 0 || slices.Contains(f.pools, bottleneck) {
					rate[i], frozen[i], progressed = level, true, true
				}
			}
			if bottleneck < 0 || !progressed {
				for i := range n {
					if !frozen[i] {
						rate[i], frozen[i] = level, true
					}
				}
			}
			all := true
			for i := range n {
				all = all && frozen[i]
			}
			if all {
				break
			}
		}
		dt := math.Inf(1)
		for i := range n {
			if active[i] {
				dt = min(dt, left[i]/rate[i])
			}
		}
		now += dt
		for i := range n {
			if active[i] {
				left[i] -= rate[i] * dt
				if left[i] <= 1e-12*flows[i].size {
					active[i], done[i] = false, now
				}
			}
		}
	}
}

// TestWindowAgainstFluidMaxMin compares the window's per-pool processor
// sharing with exact fluid max-min sharing on random windows of flows over
// pools. On one pool the two agree exactly; across several the window's
// busiest-link rule may over-count (a flow held back on one pool uses less
// of another) or, rarely, under-count (a flow freed early elsewhere takes
// more of this one), and the test bounds both.
func TestWindowAgainstFluidMaxMin(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 23))
	worst, least := 1.0, 1.0
	for trial := range 400 {
		// Flows as a window places them: each on one node pool and, half of
		// them, one leaf pool (ids −1, −2) shared by the nodes.
		nodes, leaves := 1+rng.IntN(4), 1+rng.IntN(2)
		if trial < 100 {
			nodes, leaves = 1, 0
		}
		nics, npl, oversub := 1+rng.IntN(4), 1+rng.IntN(3), 1+3*rng.Float64()
		var w Window
		w.fab = fabricLinks{nics: nics, nodesPerLeaf: npl, oversub: oversub}
		ids := make([]int, 0, nodes+leaves) // oracle pool p is window pool ids[p]
		capacity := make([]float64, 0, nodes+leaves)
		for n := range nodes {
			ids, capacity = append(ids, n), append(capacity, float64(nics))
		}
		for l := range leaves {
			ids, capacity = append(ids, -1-l), append(capacity, float64(npl*nics)/oversub)
		}
		nf := 1 + rng.IntN(9)
		flows := make([]fluidFlow, nf)
		for i := range flows {
			flows[i].size = 0.25 + rng.Float64()*4
			flows[i].pools = []int{rng.IntN(nodes)}
			if leaves > 0 && rng.IntN(2) == 0 {
				flows[i].pools = append(flows[i].pools, nodes+rng.IntN(leaves))
			}
			w.stretch = append(w.stretch, 1)
			for _, p := range flows[i].pools {
				w.entries = append(w.entries, poolEntry{pool: ids[p], demand: int32(i), flows: 1, size: flows[i].size, whole: flows[i].size})
			}
		}
		w.Solve()
		exact := fluidMaxMin(flows, capacity)
		for i, f := range flows {
			approx := w.Stretch(i) * f.size
			if trial < 100 && math.Abs(approx-exact[i]) > 1e-9*exact[i] {
				t.Fatalf("trial %d flow %d: one pool, window %g != exact %g", trial, i, approx, exact[i])
			}
			worst = max(worst, approx/exact[i])
			least = min(least, approx/exact[i])
		}
	}
	t.Logf("window over exact max-min on 400 random windows: %.3fx to %.3fx", least, worst)
	// Measured at 0.900x to 3.37x (seed 7, 23): the over-count is a flow
	// charged an equal share of a node's NICs that the flows held back on an
	// oversubscribed leaf leave unused; fabric.go states the rule.
	if least < 0.85 || worst > 4 {
		t.Errorf("window / exact max-min in [%.3f, %.3f]: the stated bounds are [0.85, 4]", least, worst)
	}
}

// TestCPLayerOnSlowedFabric checks that a Ulysses group over two nodes of
// 4-NIC nodes pays twice its NIC term, and its NVLink-bound share nothing.
func TestCPLayerOnSlowedFabric(t *testing.T) {
	full := fabricTopo(t, 64, 8, 1, 1, job.Fabric{})
	half := fabricTopo(t, 64, 8, 1, 1, job.Fabric{NICsPerNode: 4})
	m := job.Model{QueryHeads: 64, KVHeads: 8, HeadDimQK: 128, HeadDimV: 128, Hidden: 8192, Layers: 1}
	g := CPGroup{Exec: sched.Ulysses, FirstRank: 0, Degree: 16}
	alone, err := CPLayer(full, m, g, 65536, CPOverlap{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := CPLayer(half, m, g, 65536, CPOverlap{})
	if err != nil {
		t.Fatal(err)
	}
	if alone.Fwd.NICSeconds != 0 || rec.Fwd.NICSeconds <= 0 {
		t.Fatalf("NIC seconds %g (uncontended) and %g (contended)", alone.Fwd.NICSeconds, rec.Fwd.NICSeconds)
	}
	var w Window
	w.Reset(half)
	id := w.Add(CPDemand(half, m, g, rec.Fwd))
	w.Solve()
	if s := w.Stretch(id); s != 2 {
		t.Fatalf("stretch %g, want 2", s)
	}
	slow, err := CPLayer(half.Slowed(2), m, g, 65536, CPOverlap{})
	if err != nil {
		t.Fatal(err)
	}
	// Each all-to-all is NIC-bound here: its β term doubles, α does not.
	alpha := 4 * full.oneHopSeconds(true)
	if got, want := slow.Fwd.CommSeconds-alpha, 2*(alone.Fwd.CommSeconds-alpha); math.Abs(got-want) > 1e-9*want {
		t.Fatalf("slowed comm %g s, want %g", got, want)
	}
}

// TestAllToAllScale: with all_to_all_inter_scale A, an all-to-all over k > 2
// nodes pays its NIC term × (1 + A·log2(k/2)); at A = 0 (the shipped
// profiles) and on two nodes nothing changes.
func TestAllToAllScale(t *testing.T) {
	for _, tc := range []struct {
		a     float64
		nodes int
		want  float64 // NIC term over the A = 0 one
	}{{0, 8, 1}, {1, 2, 1}, {1, 8, 3}, {0.5, 4, 1.5}, {0.25, 16, 1.75}} {
		p := workedProfile()
		base := topo(t, p, 8*tc.nodes, 8, 1, 1)
		p.AllToAllInterScale = c(tc.a)
		scaled := topo(t, p, 8*tc.nodes, 8, 1, 1)
		n := 8 * tc.nodes
		bytes := 64e6
		alpha := base.oneHopSeconds(true)
		b, s := AllToAllSeconds(base, 0, n, bytes)-alpha, AllToAllSeconds(scaled, 0, n, bytes)-alpha
		if math.Abs(s/b-tc.want) > 1e-12 {
			t.Errorf("A = %g over %d nodes: NIC term ×%g, want ×%g", tc.a, tc.nodes, s/b, tc.want)
		}
		if got, want := allToAllNICSeconds(scaled, 0, n, bytes), s; math.Abs(got-want) > 1e-12*want {
			t.Errorf("A = %g over %d nodes: allToAllNICSeconds %g, AllToAllSeconds's NIC term %g", tc.a, tc.nodes, got, want)
		}
	}
}
