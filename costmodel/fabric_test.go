package costmodel

import (
	"math"
	"reflect"
	"testing"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
)

// fabricModel is simModel's DeepSeek-V2-Lite on 64 H20 GPUs at tp1 pp2 ep1
// (13 of its 27 layers on the last stage) on fabric f.
func fabricModel(t *testing.T, f job.Fabric) *Model {
	t.Helper()
	return simModelWith(t, 64, 2, 1, 1, Options{}, func(j *job.Job) {
		j.Cluster.Fabric, j.Parallel.LastStageLayers = f, 13
	})
}

// fabricPlan is one MB of two Ulysses groups, each over two whole nodes
// (ranks 0-15 and 16-31 of the 32-rank pool), one 32K sequence each.
func fabricPlan() (*sched.Plan, []int) {
	return &sched.Plan{Policy: "test", PoolRanks: 32, Microbatches: []sched.Microbatch{{Groups: []sched.Group{
		{FirstRank: 0, Size: 16, Seqs: []int{0}}, {FirstRank: 16, Size: 16, Seqs: []int{1}}}}}}, []int{32768, 32768}
}

// TestFabricSharedNICs: with 4 NICs for a node's 8 GPUs, every Ulysses
// all-to-all over two nodes runs its NIC term at half the rate, exactly as
// on the topology slowed by 2 (network.Window's stretch); an explicit
// one-NIC-per-GPU non-blocking fabric prices as the default to the bit.
func TestFabricSharedNICs(t *testing.T) {
	plan, lengths := fabricPlan()
	exec := Exec{CP: sched.Ulysses}
	price := func(mod *Model) (*Iteration, *step.Layout) {
		l, err := step.NewLayout(plan, 1)
		if err != nil {
			t.Fatal(err)
		}
		it, err := mod.Price(l, lengths, exec, 0)
		if err != nil {
			t.Fatal(err)
		}
		return it, l
	}
	def, ld := price(fabricModel(t, job.Fabric{}))
	same, _ := price(fabricModel(t, job.Fabric{NICsPerNode: 8, NodesPerLeaf: 32, SpineOversubscription: 1}))
	if !reflect.DeepEqual(def.cost, same.cost) || !reflect.DeepEqual(def.p2p, same.p2p) {
		t.Fatal("an explicit non-blocking fabric prices differently from the default")
	}
	half := fabricModel(t, job.Fabric{NICsPerNode: 4})
	shared, ls := price(half)
	m := half.Job().Model
	want, err := network.CPLayer(half.Topology().Slowed(2), m, network.CPGroup{Exec: sched.Ulysses, Degree: 16}, 32768, network.CPOverlap{})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := network.CPLayer(half.Topology(), m, network.CPGroup{Exec: sched.Ulysses, Degree: 16}, 32768, network.CPOverlap{})
	if err != nil {
		t.Fatal(err)
	}
	got := shared.cost[0].denseComm[0]
	if math.Abs(got-want.Fwd.ExposedSeconds) > 1e-12 || !(got > alone.Fwd.ExposedSeconds) {
		t.Fatalf("dense layer's exposed CP: %g s, want %g (alone %g)", got, want.Fwd.ExposedSeconds, alone.Fwd.ExposedSeconds)
	}
	if d := def.cost[0].denseComm[0]; math.Abs(d-alone.Fwd.ExposedSeconds) > 1e-12 {
		t.Fatalf("default fabric: %g s, want the alone price %g", d, alone.Fwd.ExposedSeconds)
	}
	// Every stage boundary's transfers: 8 GPUs of a node on 4 NICs.
	for i := range ls.Domains {
		if s, d := shared.P2PSeconds(0, 1, 0, &ls.Domains[i], false), def.P2PSeconds(0, 1, 0, &ld.Domains[i], false); !(s > d) {
			t.Errorf("domain %d: pipeline transfer %g s on 4 NICs, %g on 8", i, s, d)
		}
	}
	// The gradient synchronisation shares the NICs too.
	if s, d := shared.GradSyncSeconds(0), def.GradSyncSeconds(0); !(s > d) {
		t.Errorf("grad sync %g s on 4 NICs, %g on 8", s, d)
	}
}
