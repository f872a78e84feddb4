package scratch

import (
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
)

func TestScratch(t *testing.T) {
	sc, _ := scenarios.Preset("hy3-8k")
	prof, _ := calib.LookupProfile("H800")
	comp, err := calib.NewCompute(prof, sc.Job)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := network.NewTopology(*prof, sc.Job.Cluster, 1, sc.Job.Parallel.PP)
	if err != nil {
		t.Fatal(err)
	}
	_ = job.Model{}
	for _, deg := range []int{32, 128, 256, 1024} {
		lengths := []int{262144}
		for _, ex := range []network.CPExec{network.UlyssesRing, network.Ulysses} {
			mc, err := step.NewModelCosts(comp, topo, lengths, ex, ex == network.UlyssesRing)
			if err != nil {
				t.Fatal(err)
			}
			d := &step.Domain{MB: 0, FirstRank: 0, Size: deg, Groups: []sched.Group{{FirstRank: 0, Size: deg, Seqs: []int{0}}}}
			f, b := mc.ChunkSeconds(0, 0, d)
			mc2, _ := step.NewModelCosts(comp, topo, lengths, ex, ex == network.UlyssesRing)
			mc2.NoComm = true
			f2, b2 := mc2.ChunkSeconds(0, 0, d)
			t.Logf("deg %4d %v: fwd %.4f bwd %.4f   (no comm: %.4f %.4f) err %v", deg, ex, f, b, f2, b2, mc.Err())
		}
	}
}
