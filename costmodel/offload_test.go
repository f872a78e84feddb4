package costmodel

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/step"
)

// offloadPlan is one microbatch: rank 0 alone holding a sequence of tokens
// tokens at offload ratio r, ranks 1..7 a short sequence each.
func offloadPlan(tokens int, r float64) (*sched.Plan, []int) {
	lengths := []int{tokens}
	mb := sched.Microbatch{Groups: []sched.Group{{FirstRank: 0, Size: 1, Seqs: []int{0}, Offload: r}}}
	for rank := 1; rank < 8; rank++ {
		mb.Groups = append(mb.Groups, sched.Group{FirstRank: rank, Size: 1, Seqs: []int{len(lengths)}})
		lengths = append(lengths, 1024)
	}
	return &sched.Plan{Policy: "test", PoolRanks: 8, Microbatches: []sched.Microbatch{mb}}, lengths
}

// offloadModel is Llama 3 8B on 8 H100 (tp1 pp1), no recomputation.
func offloadModel(t *testing.T) *Model {
	t.Helper()
	prof, err := calib.LookupProfile("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	m, err := job.LookupModel(job.ModelLlama3With8B)
	if err != nil {
		t.Fatal(err)
	}
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: "H100-SXM", GPUs: 8, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 1, BudgetTokens: 16384}, ContextTokens: 65536}
	mod, err := New(j, prof, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestOffloadMemory: a rank offloading at ratio r keeps its activations less
// r·Offload(tokens) (memory.Chunk): the layers but the chunk's last two.
func TestOffloadMemory(t *testing.T) {
	mod := offloadModel(t)
	const tokens = 16384
	var peaks [2]float64
	for i, r := range []float64{0, 0.75} {
		plan, lengths := offloadPlan(tokens, r)
		out, err := mod.Simulate(plan, lengths, Exec{CP: sched.Ulysses}, 0)
		if err != nil {
			t.Fatal(err)
		}
		peaks[i] = out.Result.Stages[0].Ranks[0].PeakActivationBytes
	}
	c := mod.Memory().Chunk(0, 0)
	want := 0.75 * c.Offload(tokens, 0)
	if got := peaks[0] - peaks[1]; math.Abs(got-want) > 1e-6*want {
		t.Errorf("offload at 0.75 saves %.4g bytes, want 0.75·Offload = %.4g", got, want)
	}
	// Llama 3 8B's 32 layers: 30 offloadable; the head's logits are not.
	if s := mod.OffloadShare(); !(s > 0.5 && s < 30.0/32) {
		t.Errorf("OffloadShare = %v, want in (0.5, 30/32)", s)
	}
}

// TestOffloadExposed: copies that the layer's compute hides cost nothing
// (ratio 0.05 of 16K tokens: about 3 ms of copies under a 15 ms layer); all
// of them (ratio 1) take about four times the layer, and cost per
// offloadable layer what they exceed it by, counted with the exposed data
// movement (ByteScale Fig. 21: offloading everything at 64K slows a step,
// half of it does not).
func TestOffloadExposed(t *testing.T) {
	const tokens = 16384
	for _, tc := range []struct {
		r       float64
		exposed bool
	}{{0.05, false}, {1, true}} {
		mod := offloadModel(t)
		plan, lengths := offloadPlan(tokens, tc.r)
		it, err := mod.Price(mustLayout(t, mod, plan), lengths, Exec{CP: sched.Ulysses}, 0)
		if err != nil {
			t.Fatal(err)
		}
		base, _ := offloadPlan(tokens, 0)
		it0, err := mod.Price(mustLayout(t, mod, base), lengths, Exec{CP: sched.Ulysses}, 0)
		if err != nil {
			t.Fatal(err)
		}
		d := &it.layout.Domains[0]
		f1, b1 := it.ChunkSeconds(0, 0, d)
		f0, b0 := it0.ChunkSeconds(0, 0, &it0.layout.Domains[0])
		if !tc.exposed {
			if f1 != f0 || b1 != b0 {
				t.Errorf("ratio %v: offload changed the chunk from %v/%v to %v/%v s", tc.r, f0, b0, f1, b1)
			}
			continue
		}
		dc := it.cost[0]
		bytes := tc.r * mod.offBytes[0] * tokens
		prof := mod.devices[0].Profile
		wantF := 30 * (bytes/prof.DeviceToHostBytesPerSecond.Value - dc.dense[0])
		wantB := 30 * (bytes/prof.HostToDeviceBytesPerSecond.Value - dc.dense[1])
		if math.Abs(f1-f0-wantF) > 1e-9*wantF || math.Abs(b1-b0-wantB) > 1e-9*wantB {
			t.Errorf("ratio 1: chunk +%v/+%v s, want +%v/+%v (30 layers × copy − layer)", f1-f0, b1-b0, wantF, wantB)
		}
		fc, _ := it.ChunkExposedCommSeconds(0, 0, d)
		fc0, _ := it0.ChunkExposedCommSeconds(0, 0, &it0.layout.Domains[0])
		if math.Abs(fc-fc0-wantF) > 1e-9*wantF {
			t.Errorf("the copies' wait is not counted with the exposed data movement: +%v, want +%v", fc-fc0, wantF)
		}
	}
}

// TestOffloadCosts: the planner's costs come from the profile and the
// memory model, and a profile without host-copy rates gives none.
func TestOffloadCosts(t *testing.T) {
	mod := offloadModel(t)
	c := mod.OffloadCosts()
	if c == nil {
		t.Fatal("no offload costs on H100-SXM")
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if c.HostBytesPerSecond != 35.2e9 {
		t.Errorf("host rate %v, want min(35.2, 52.8) GB/s", c.HostBytesPerSecond)
	}
	var off float64
	off += mod.Memory().Chunk(0, 0).OffloadPerToken
	if c.OffloadBytesPerToken != off {
		t.Errorf("offload bytes per token %v, want the chunk's %v", c.OffloadBytesPerToken, off)
	}
	prof, _ := calib.LookupProfile("H100-SXM")
	prof.HostToDeviceBytesPerSecond = calib.Const{}
	prof.DeviceToHostBytesPerSecond = calib.Const{}
	m2, err := New(mod.Job(), prof, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m2.OffloadCosts() != nil || m2.OffloadShare() != 0 {
		t.Error("a profile without host-copy rates offers offload")
	}
	plan, lengths := offloadPlan(16384, 0.5)
	if _, err := m2.Price(mustLayout(t, m2, plan), lengths, Exec{CP: sched.Ulysses}, 0); err == nil {
		t.Error("pricing an offloading group without host-copy rates: no error")
	}
}

// mustLayout lays plan out for mod's EP.
func mustLayout(t *testing.T, mod *Model, plan *sched.Plan) *step.Layout {
	t.Helper()
	l, err := step.NewLayout(plan, mod.ep)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
