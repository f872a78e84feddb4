package costmodel

import (
	"fmt"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/sched"
)

// Selective activation offload (ByteScale §5.2; sched.Group.Offload): a
// group offloading at ratio r copies r of the activations of each of its
// offloadable layers (a chunk's layers but its last two, memory.Chunk) to
// host memory while the layer's forward runs, and back while its backward
// runs, on the copy engines (DMA), which overlap compute and communication
// alike. A layer is slowed only by what its copy does not hide:
//
//	forward:  max(0, r·a·t/B_d2h − the layer's forward),
//	backward: max(0, r·a·t/B_h2d − the layer's backward),
//
// a the layer kind's offloadable bytes per token (offloadBytes), t the
// rank's tokens, B the profile's PCIe copy rates. The memory model keeps
// Kept − r·Offload on the GPU (step.ActivationRate). Left out: the PCIe link
// a GPU's offload shares with its NIC's GPUDirect traffic (on HGX nodes both
// cross the GPU's x16 link), and host memory's capacity and bandwidth with
// eight GPUs copying at once (the rates are one GPU's alone).

// offloadBytes returns the mean offloadable bytes per token of one layer of
// each kind (dense, MoE) over the layers offload may move (each chunk's but
// its last two), under each layer's recomputation (memory.Model.LayerBytes):
// what a rank at ratio 1 copies per token per layer.
func offloadBytes(m *Model) [2]float64 {
	par := m.job.Parallel
	comp := m.devices[0].Compute
	var sum, n [2]float64
	for s := range m.topo.PP {
		first, layers := comp.StageLayers(s)
		for c := range m.vpp {
			lo, hi := par.ChunkRange(s, first, layers, c)
			for l := lo; l < hi; l++ {
				if !memory.Offloadable(l-lo, hi-lo) {
					continue
				}
				rc := job.RecomputeNone
				if par.Recomputed(l - lo) {
					rc = par.RecomputeMode()
				}
				tok, _ := m.mem.LayerBytes(l, rc)
				k := 0
				if m.job.Model.IsMoELayer(l) {
					k = 1
				}
				sum[k] += tok
				n[k]++
			}
		}
	}
	var out [2]float64
	for k := range 2 {
		if n[k] > 0 {
			out[k] = sum[k] / n[k]
		}
	}
	return out
}

// offloadable counts a chunk's layers offload may move, by kind: all but its
// last two.
func offloadable(model job.Model, lo, hi int) (dense, moe int) {
	for l := lo; l < hi; l++ {
		if !memory.Offloadable(l-lo, hi-lo) {
			continue
		}
		if model.IsMoELayer(l) {
			moe++
		} else {
			dense++
		}
	}
	return dense, moe
}

// OffloadShare is the part of a rank's kept activations offload at ratio 1
// moves (memory.Model.OffloadShare) when every GPU kind of the cluster has
// host-copy rates (calib.Profile.HostBytesPerSecond), else 0: the
// scheduling input sched.Inputs.OffloadShare.
func (m *Model) OffloadShare() float64 {
	for _, d := range m.devices {
		if _, ok := d.Profile.HostBytesPerSecond(); !ok {
			return 0
		}
	}
	return m.mem.OffloadShare()
}

// OffloadCosts are the job's offload costs for a planner (sched.OffloadCosts,
// ByteScale's Eq. 3), on the first device and the stage that sets the
// pipeline's pace (Overhead's: the most layers), at a rank holding B tokens
// of one sequence: the stage's offloadable bytes per token (its chunks'
// memory.Chunk.OffloadPerToken), and the forward of its offloadable layers:
// causal attention per token² of per-rank load, and the GEMMs, memory-bound
// ops and MoE dispatch and combine per token. nil when OffloadShare is 0.
func (m *Model) OffloadCosts() *sched.OffloadCosts {
	if m.OffloadShare() == 0 {
		return nil
	}
	dev := m.devices[0]
	host, _ := dev.Profile.HostBytesPerSecond()
	stage := m.Overhead().Stage
	b := m.job.Parallel.BudgetTokens
	first, layers := dev.Compute.StageLayers(stage)
	var bytes float64
	var od, om int
	for c := range m.vpp {
		bytes += m.mem.Chunk(stage, c).OffloadPerToken
		lo, hi := m.job.Parallel.ChunkRange(stage, first, layers, c)
		d, e := offloadable(m.job.Model, lo, hi)
		od, om = od+d, om+e
	}
	blk := compute.KernelBlockTokens(b, 1)
	st := dev.Compute.RankStageSeconds(stage, b, []compute.Piece{{SeqTokens: b, CPDegree: 1, BlockTokens: blk}})
	share := float64(od+om) / float64(layers)
	attn := st.AttentionFwd * share / (float64(b) * float64(b))
	linear := (st.GEMMFwd + st.MemoryFwd) * share
	if m.moeLayer >= 0 && om > 0 && !m.opts.NoComm {
		c := m.moeComm(m.topo.ForStage(stage), 0, b)
		linear += float64(om) * c.FwdSeconds
	}
	return &sched.OffloadCosts{
		Source: fmt.Sprintf("cost model of %s on %s, stage %d (%d of %d layers offloadable) at B = %d tokens per rank",
			m.job.Model.Name, dev.Name, stage, od+om, layers, b),
		HostBytesPerSecond:               host,
		OffloadBytesPerToken:             bytes,
		ForwardAttentionSecondsPerToken2: attn,
		ForwardLinearSecondsPerToken:     linear / float64(b),
	}
}

// offloadExposed is what group g's offload at ratio g.Offload adds to one
// offloadable layer of kind (0 dense, 1 MoE) whose forward and backward take
// f and b seconds on a rank holding per tokens: the copies' time its compute
// does not hide, forward and backward (see above). The group's slowest copy
// rate among its devices is taken.
func (p *pricer) offloadExposed(g sched.Group, kind, per int, f, b float64) ([2]float64, error) {
	m := p.m
	if g.Offload == 0 {
		return [2]float64{}, nil
	}
	if g.Layout != nil {
		return [2]float64{}, fmt.Errorf("group at rank %d: offload ratio %v with a CP × HP layout (not modelled)", g.FirstRank, g.Offload)
	}
	d2h, h2d := 0.0, 0.0
	for r := g.FirstRank; r <= g.LastRank(); r++ {
		prof := m.DeviceOf(r).Profile
		if _, ok := prof.HostBytesPerSecond(); !ok {
			return [2]float64{}, fmt.Errorf("group at rank %d: offload ratio %v, but %s has no host-copy rates (host_to_device_bytes_per_second, device_to_host_bytes_per_second)",
				g.FirstRank, g.Offload, prof.Name)
		}
		if r == g.FirstRank || prof.DeviceToHostBytesPerSecond.Value < d2h {
			d2h = prof.DeviceToHostBytesPerSecond.Value
		}
		if r == g.FirstRank || prof.HostToDeviceBytesPerSecond.Value < h2d {
			h2d = prof.HostToDeviceBytesPerSecond.Value
		}
		if m.rankDevice == nil {
			break
		}
	}
	bytes := g.Offload * m.offBytes[kind] * float64(per)
	return [2]float64{max(0, bytes/d2h-f), max(0, bytes/h2d-b)}, nil
}
