package costmodel

import (
	"fmt"
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
)

// partsModels are the layouts the parts are checked on: tp 2 with and
// without sequence parallelism, pp 2 × vpp 2, full recomputation of the
// first layers of each chunk, selective recomputation, the gradient
// all-reduce, stages part way through a node, a fabric whose links contend
// and NoComm.
func partsModels(t *testing.T) map[string]*Model {
	return map[string]*Model{
		"tp2-sp-pp2-vpp2-full2": simModelWith(t, 64, 2, 2, 8, Options{UlyssesAcrossNodes: true}, func(j *job.Job) {
			j.Parallel.TP, j.Parallel.SequenceParallel, j.Parallel.LastStageLayers = 2, true, 13
			j.Parallel.Recompute, j.Parallel.RecomputeLayers = job.RecomputeFull, 2
		}),
		"tp2-pp2-selective-allreduce": simModelWith(t, 64, 2, 1, 8, Options{}, func(j *job.Job) {
			j.Parallel.TP, j.Parallel.Recompute, j.Parallel.GradSync = 2, job.RecomputeSelective, job.GradAllReduce
			j.Parallel.LastStageLayers = 13
		}),
		"straddle-full": simModelWith(t, 36, 3, 1, 4, Options{}, func(j *job.Job) { j.Parallel.Recompute = job.RecomputeFull }),
		"contended-pp2": simModelWith(t, 64, 2, 1, 8, Options{}, func(j *job.Job) {
			j.Cluster.Fabric, j.Parallel.LastStageLayers = job.Fabric{NICsPerNode: 2, SpineOversubscription: 2}, 13
		}),
		"nocomm-pp2-vpp2": simModelWith(t, 64, 2, 2, 8, Options{NoComm: true}, func(j *job.Job) { j.Parallel.LastStageLayers = 13 }),
	}
}

// sampleRanks are the ranks of d whose parts are checked: each group's
// first and last rank, a rank of the domain in no group, and the domain's
// first and last rank.
func sampleRanks(d *step.Domain) []int {
	seen := map[int]bool{}
	var out []int
	add := func(r int) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	add(d.FirstRank)
	add(d.LastRank())
	for _, g := range d.Groups {
		add(g.FirstRank)
		add(g.LastRank())
	}
	for r := d.FirstRank; r <= d.LastRank(); r++ {
		in := false
		for _, g := range d.Groups {
			in = in || g.FirstRank <= r && r <= g.LastRank()
		}
		if !in {
			add(r)
			break
		}
	}
	return out
}

// TestLayerPartsSumToChunkSeconds: for every policy's plans on every
// layout of partsModels, under the policy's CP execution and each other
// one, the parts of every (stage, chunk, pass, domain) on every sampled
// rank sum to ChunkSeconds within 1e-9 relative (exactly as the engine
// reads them: the held time makes up what a rank's own group leaves), no
// part is negative, every collective of a domain's ranks that names the same
// communicator carries the same bytes (its members must agree), and the
// gradient sync parts sum to GradSyncSeconds.
func TestLayerPartsSumToChunkSeconds(t *testing.T) {
	mods := partsModels(t)
	cases := simCases(t, mods)
	checked, held, colls, layouts, recomputed := 0, 0, map[string]bool{}, 0, 0
	for ci, c := range cases {
		for _, mb := range c.plan.Microbatches {
			for _, g := range mb.Groups {
				if g.Layout != nil {
					layouts++
				}
			}
		}
		j := c.mod.Job()
		l, err := step.NewLayout(c.plan, j.Parallel.EP)
		if err != nil {
			t.Fatal(err)
		}
		execs := []Exec{c.exec}
		if ci%4 == 0 { // every CP execution on some plans
			for _, e := range []sched.CPExec{sched.Ulysses, sched.Ring, sched.UlyssesRing, sched.AllGatherKV} {
				execs = append(execs, Exec{CP: e, OverlapAllToAll: e == sched.UlyssesRing})
			}
		}
		for _, exec := range execs {
			b, err := c.mod.Breakdown(l, c.lengths, exec, 0)
			if err != nil {
				continue // an execution the group's degree cannot run
			}
			for s := range j.Parallel.PP {
				for ch := range max(j.Parallel.VPP, 1) {
					for di := range l.Domains {
						d := &l.Domains[di]
						f, bw := b.ChunkSeconds(s, ch, d)
						for pass, want := range [2]float64{f, bw} {
							bytesOf := map[string]float64{}
							for _, r := range sampleRanks(d) {
								parts, err := b.LayerParts(s, ch, d, r, pass == 1)
								if err != nil {
									t.Fatalf("%s: %v", c.name, err)
								}
								var got float64
								for k := range parts {
									p := &parts[k]
									got += p.Seconds()
									if p.HeldSeconds > 0 {
										held++
									}
									for _, w := range []Work{p.Compute, p.Recompute} {
										if w.Seconds < 0 || w.FLOPs < 0 || w.Bytes < 0 {
											t.Fatalf("%s: negative work %+v", c.name, w)
										}
										// A roofline needs both (ASTRA-sim skips a kernel
										// without bytes).
										if (w.FLOPs > 0) != (w.Bytes > 0) {
											t.Fatalf("%s layer %d: work %+v has FLOPs or bytes but not both", c.name, p.Layer, w)
										}
									}
									if p.Recomputed && p.Recompute.Bytes > 0 {
										recomputed++
									}
									for _, list := range [][]Collective{p.RecomputeComm, p.Comm, p.MoEComm} {
										for _, cl := range list {
											colls[cl.Name] = true
											if cl.Seconds < 0 || !(cl.Bytes > 0) || cl.Ranks.Count < 1 {
												t.Fatalf("%s: collective %+v", c.name, cl)
											}
											if cl.Group != GroupTP && (r < cl.Ranks.First || r > cl.Ranks.Last() || (r-cl.Ranks.First)%cl.Ranks.Stride != 0) {
												t.Fatalf("%s: rank %d not in its collective %+v", c.name, r, cl)
											}
											key := fmt.Sprintf("%d/%s/%+v", p.Layer, cl.Name, cl.Ranks)
											if old, ok := bytesOf[key]; ok && old != cl.Bytes {
												t.Fatalf("%s: %s carries %g bytes on one rank, %g on another", c.name, key, cl.Bytes, old)
											}
											bytesOf[key] = cl.Bytes
										}
									}
								}
								if math.Abs(got-want) > 1e-9*want || want == 0 && got != 0 {
									t.Fatalf("%s %v stage %d chunk %d pass %d domain %d rank %d: parts sum to %.15g s, ChunkSeconds %.15g",
										c.name, exec, s, ch, pass, di, r, got, want)
								}
								checked++
							}
						}
					}
				}
			}
			for s := range j.Parallel.PP {
				for _, r := range []int{0, c.mod.Topology().PoolRanks - 1} {
					parts, err := c.mod.GradSyncParts(s, r)
					if err != nil {
						t.Fatal(err)
					}
					var got float64
					for _, p := range parts {
						got += p.Seconds
					}
					if want := b.GradSyncSeconds(s); math.Abs(got-want) > 1e-9*want {
						t.Errorf("%s stage %d rank %d: grad sync parts %g s, GradSyncSeconds %g", c.name, s, r, got, want)
					}
				}
			}
		}
	}
	t.Logf("%d (chunk, pass, rank) sums checked, %d parts held, %d CP × HP layout groups, collectives %v", checked, held, layouts, colls)
	if checked < 1000 || held == 0 || layouts == 0 || recomputed == 0 {
		t.Errorf("%d sums checked, %d held parts, %d recomputed parts with bytes: the cases do not exercise the parts", checked, held, recomputed)
	}
	for _, name := range []string{"cp-a2a", "cp-ring-ag", "cp-ring-rs", "cp-ag-kv", "cp-rs-dkv", "tp-ag-attn", "tp-rs-mlp", "tp-ar-attn", "moe-dispatch", "moe-combine"} {
		if !colls[name] {
			t.Errorf("no case has a %s collective", name)
		}
	}
}

// TestLayerPartsHand: on the hand-checked plan of TestModelCostsHand (an
// 8K sequence on ranks {0, 1} under Ulysses × ring, one-rank groups beside
// it), rank 0 runs its group's layer with no held time, ranks 2..7 of the
// same EP block are held for the difference, every rank of the block runs
// the same MoE all-to-alls, and the backward runs the head first and the
// layers last first.
func TestLayerPartsHand(t *testing.T) {
	mod, _, _ := modelSetup(t, true, Options{})
	plan, lengths := modelPlan(8192)
	l, err := step.NewLayout(plan, 8)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mod.Breakdown(l, lengths, Exec{CP: sched.UlyssesRing, OverlapAllToAll: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &l.Domains[0]
	p0, err := b.LayerParts(0, 0, d, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := b.LayerParts(0, 0, d, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p0) != 28 || p0[0].Layer != 0 || p0[27].Layer != -1 || p0[0].MoE || !p0[1].MoE {
		t.Fatalf("forward parts: %d, first layer %d, last %d", len(p0), p0[0].Layer, p0[len(p0)-1].Layer)
	}
	if p0[1].HeldSeconds != 0 || !(p2[1].HeldSeconds > 0) || len(p0[1].Comm) == 0 || len(p2[1].Comm) != 0 {
		t.Errorf("rank 0 held %g s with %d CP collectives, rank 2 held %g s with %d", p0[1].HeldSeconds, len(p0[1].Comm), p2[1].HeldSeconds, len(p2[1].Comm))
	}
	if c := p0[1].Comm[0]; c.Name != "cp-a2a" || c.Kind != AllToAll || c.Ranks.Count != 2 {
		t.Errorf("rank 0's CP collective %+v, want the all-to-all over ranks {0, 1}", c)
	}
	if len(p0[1].MoEComm) != 2 || p0[1].MoEComm[0] != p2[1].MoEComm[0] || p0[1].MoEComm[0].Ranks.Count != 8 {
		t.Errorf("MoE all-to-alls differ on the block: %+v, %+v", p0[1].MoEComm, p2[1].MoEComm)
	}
	if s0, s2 := p0[1].Seconds(), p2[1].Seconds(); math.Abs(s0-s2) > 1e-12*s0 {
		t.Errorf("the block's layer takes %g s on rank 0, %g s on rank 2", s0, s2)
	}
	bw, err := b.LayerParts(0, 0, d, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if bw[0].Layer != -1 || bw[1].Layer != 26 || bw[27].Layer != 0 || bw[1].MoEComm[0].Name != "moe-combine" {
		t.Errorf("backward order: %d, %d, ..., %d; first MoE collective %s", bw[0].Layer, bw[1].Layer, bw[27].Layer, bw[1].MoEComm[0].Name)
	}
	if _, err := b.LayerParts(0, 0, d, 9, false); err == nil {
		t.Error("a rank outside the domain was accepted")
	}
	if _, err := b.LayerParts(5, 0, d, 0, false); err == nil {
		t.Error("a stage outside the layout was accepted")
	}
	if got, want := b.P2PBytes(d, 0), 4096.0*float64(mod.Job().Model.Hidden)*2; got != want {
		t.Errorf("P2PBytes %g, want %g", got, want)
	}
}

// TestRecomputeWorkBytes: a recomputed layer's forward carries the bytes a
// roofline needs (ASTRA-sim skips a kernel of 0 bytes): under selective
// recomputation the core attention's inputs and outputs, tokens·(Q+K+V+O)
// per network.TokenBytes, beside its FLOPs; under full recomputation the
// whole forward's work, Compute of the forward pass. No priced time moves:
// the parts still sum to ChunkSeconds (TestLayerPartsSumToChunkSeconds).
func TestRecomputeWorkBytes(t *testing.T) {
	mods := partsModels(t)
	for _, name := range []string{"tp2-pp2-selective-allreduce", "tp2-sp-pp2-vpp2-full2"} {
		mod := mods[name]
		q, k, v, o := network.TokenBytes(mod.Topology(), mod.Job().Model)
		selective := mod.Job().Parallel.RecomputeMode() == job.RecomputeSelective
		checked := 0
		for _, c := range simCases(t, map[string]*Model{name: mod}) {
			l, err := step.NewLayout(c.plan, mod.Job().Parallel.EP)
			if err != nil {
				t.Fatal(err)
			}
			b, err := mod.Breakdown(l, c.lengths, c.exec, 0)
			if err != nil {
				continue // a plan its execution cannot run here
			}
			for di := range l.Domains {
				d := &l.Domains[di]
				for _, r := range sampleRanks(d) {
					fwd, err := b.LayerParts(0, 0, d, r, false)
					if err != nil {
						t.Fatal(err)
					}
					bwd, err := b.LayerParts(0, 0, d, r, true)
					if err != nil {
						t.Fatal(err)
					}
					tokens := float64(b.RankTokens(d, r))
					for _, p := range bwd {
						if !p.Recomputed || tokens == 0 || p.Recompute.FLOPs == 0 {
							continue
						}
						checked++
						want := tokens * (q + k + v + o)
						if !selective {
							want = fwd[indexOfLayer(fwd, p.Layer)].Compute.Bytes
						}
						if !(p.Recompute.Bytes > 0) || math.Abs(p.Recompute.Bytes-want) > 1e-9*want {
							t.Fatalf("%s domain %d rank %d layer %d: recompute %+v, want %g bytes", name, di, r, p.Layer, p.Recompute, want)
						}
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no recomputed layer checked", name)
		}
	}
}

// indexOfLayer is the position of layer in parts.
func indexOfLayer(parts []LayerPart, layer int) int {
	for i, p := range parts {
		if p.Layer == layer {
			return i
		}
	}
	return -1
}

// TestOptimizerWork: the optimizer step's work is AdamW over the parameters
// the GPU updates (its 1/G shard of the dense ones and ep/G of the experts'
// under the distributed optimizer, all under the gradient all-reduce), 16
// FLOPs and 28 bytes each, in OptimizerSeconds; a bad stage is an error.
func TestOptimizerWork(t *testing.T) {
	mods := partsModels(t)
	for _, name := range []string{"tp2-sp-pp2-vpp2-full2", "tp2-pp2-selective-allreduce", "straddle-full"} {
		mod := mods[name]
		j := mod.Job()
		g := float64(j.PoolRanks())
		for s := range j.Parallel.PP {
			w, err := mod.OptimizerWork(s)
			if err != nil {
				t.Fatal(err)
			}
			dense, expert := mod.stageParams(s)
			params := dense/g + expert*float64(j.Parallel.EP)/g
			if j.Parallel.GradSyncMode() == job.GradAllReduce {
				params = dense + expert
			}
			if w.Seconds != mod.optimizer[s] || w.FLOPs != 16*params || w.Bytes != 28*params || !(w.Bytes > 0) {
				t.Errorf("%s stage %d: %+v, want %g s, %g FLOPs, %g bytes", name, s, w, mod.optimizer[s], 16*params, 28*params)
			}
		}
		if _, err := mod.OptimizerWork(j.Parallel.PP); err == nil {
			t.Errorf("%s: stage %d out of range accepted", name, j.Parallel.PP)
		}
	}
}
