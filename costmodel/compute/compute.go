package compute

import (
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/calib"
	"strings"

	"github.com/dcpsim/dcpsim/job"
)

// Compute prices the computation of one job on one GPU kind: GEMMs, core
// attention, the LM head and the optimizer step, per rank, from the profile's
// peak, HBM bandwidth and efficiency curves and the model's FLOP counts. A rank is
// one member of the HDP pool, i.e. one TP group of Job.Parallel.TP GPUs; every
// time is that of one of its GPUs, which does 1/TP of the FLOPs.
//
// All methods are pure; a Compute is safe for concurrent use.
type Compute struct {
	// Profile is the GPU's calibration.
	Profile *calib.Profile
	// Job is the model and layout being priced.
	Job job.Job
	// Attention is the core-attention implementation priced (the zero value
	// FlashAttention). Set it before the Compute is shared.
	Attention AttentionKernel

	stageFirst  []int // first layer of each pipeline stage
	stageLayers []int // layers of each pipeline stage
}

// NewCompute checks the profile and the parts of the job the cost model reads
// (model, tp, pp, ep, stage split) and returns a Compute.
func NewCompute(p *calib.Profile, j job.Job) (*Compute, error) {
	if p == nil {
		return nil, errors.New("compute: nil profile")
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("compute: profile %q: %w", p.Name, err)
	}
	if err := j.Model.Validate(); err != nil {
		return nil, fmt.Errorf("compute: %w", err)
	}
	par := j.Parallel
	switch {
	case par.TP < 1:
		return nil, fmt.Errorf("compute: parallel.tp = %d: must be >= 1", par.TP)
	case par.EP < 1:
		return nil, fmt.Errorf("compute: parallel.ep = %d: must be >= 1", par.EP)
	case j.Model.RoutedExperts > 0 && j.Model.RoutedExperts%par.EP != 0:
		return nil, fmt.Errorf("compute: parallel.ep = %d: must divide model.routed_experts (%d)", par.EP, j.Model.RoutedExperts)
	}
	if par.FP8() && !p.HasFP8() {
		return nil, fmt.Errorf("compute: parallel.precision = %q: profile %q has no FP8 tensor cores (no peak_fp8_flops and gemm_fp8); FP8 training needs a part with them (%s)",
			par.Precision, p.Name, strings.Join(fp8ProfileNames(), ", "))
	}
	stages, err := j.StageLayers()
	if err != nil {
		return nil, fmt.Errorf("compute: %w", err)
	}
	c := &Compute{Profile: p, Job: j, stageLayers: stages}
	first := 0
	for _, n := range stages {
		c.stageFirst = append(c.stageFirst, first)
		first += n
	}
	return c, nil
}

// flopsSeconds is the time of flops FLOPs on one GPU of the rank at efficiency
// eta; no work takes no time, however low eta is.
func (c *Compute) flopsSeconds(flops, eta float64) float64 {
	if flops == 0 {
		return 0
	}
	return flops / (float64(c.Job.Parallel.TP) * c.Profile.TensorPeak(false) * eta)
}

// ExpertTokens is the number of tokens one routed expert's GEMM sees when a rank
// holds tokens tokens: tokens·top_k / (experts per rank) = tokens·k·ep/E, under
// uniform routing (each rank of an EP group receives, on average, as many
// token-expert pairs as it sends, spread evenly over its E/ep local experts).
// With expert TP etp below tp (MoE parallel folding) each GPU routes its
// tokens/tp and an expert's etp GPUs share its rows: tokens·k·ep·etp/(E·tp),
// the same when etp = tp. It is 0 for a dense model.
func (c *Compute) ExpertTokens(tokens int) float64 {
	m := c.Job.Model
	if m.RoutedExperts == 0 {
		return 0
	}
	par := c.Job.Parallel
	x := float64(tokens) * float64(m.TopK) * float64(par.EP) / float64(m.RoutedExperts)
	if etp := par.ExpertTP(); etp != par.TP {
		x = x * float64(etp) / float64(par.TP)
	}
	if par.MoECapacityFactor > 0 {
		x *= par.MoECapacityFactor
	}
	return x
}

// GEMMFwdSeconds is the forward time of the linear layers of the 0-based layer
// for tokens tokens on one GPU of a rank: the FwdSeconds of its GEMM ops
// (LayerOps), each priced by its per-GPU shape (GEMMSeconds): the attention
// projections, the dense SwiGLU or the router, the routed experts' grouped
// GEMMs at ExpertTokens rows each and the shared experts. It panics if layer is
// out of range or tokens < 0.
func (c *Compute) GEMMFwdSeconds(layer, tokens int) float64 {
	f, _ := OpsSeconds(c.LayerOps(layer, tokens), OpKindGEMM)
	return f
}

// GEMMBwdSeconds is the backward time of the layer's linear layers: the
// BwdSeconds of its GEMM ops, twice the forward (data and weight gradients at
// the forward's shapes, permuted).
func (c *Compute) GEMMBwdSeconds(layer, tokens int) float64 {
	_, b := OpsSeconds(c.LayerOps(layer, tokens), OpKindGEMM)
	return b
}

// LMHeadFwdSeconds is the forward time of the LM head GEMM (h → V) of the
// last pipeline stage for tokens tokens, the OpLMHead of HeadOps:
// GEMMSeconds of (T, V/tp, h). The head costs the same tied or not.
func (c *Compute) LMHeadFwdSeconds(tokens int) float64 {
	for _, o := range c.HeadOps(tokens) {
		if o.Name == OpLMHead {
			return o.FwdSeconds
		}
	}
	panic("compute: HeadOps without an lm_head")
}

// LMHeadBwdSeconds is the LM head's backward time, twice its forward.
func (c *Compute) LMHeadBwdSeconds(tokens int) float64 {
	return 2 * c.LMHeadFwdSeconds(tokens)
}

// KernelBlockTokens is the sequence length the attention kernel sees when a
// sequence of seqTokens tokens is split over a CP group whose ring dimension has
// ringDegree ranks: seqTokens/ringDegree rounded up. Ulysses (ringDegree 1) keeps
// the whole sequence and splits heads; a zig-zag ring runs one block of s/r
// query tokens against s/r key tokens per step; Ulysses u inside a ring r sees s/r.
func KernelBlockTokens(seqTokens, ringDegree int) int {
	if seqTokens < 0 || ringDegree < 1 {
		panic(fmt.Sprintf("compute: KernelBlockTokens(%d, %d): need seqTokens >= 0 and ringDegree >= 1", seqTokens, ringDegree))
	}
	return (seqTokens + ringDegree - 1) / ringDegree
}

// attentionFLOPs is the causal forward FLOPs one rank does for a sequence of s
// tokens over a CP group of k ranks: c·s²/k (zig-zag sharding gives every rank
// 1/k of the mask area; costmodel §2.2).
func (c *Compute) attentionFLOPs(seqTokens, cpDegree, blockTokens int, fn string) float64 {
	if seqTokens < 0 || cpDegree < 1 || (seqTokens > 0 && blockTokens < 1) {
		panic(fmt.Sprintf("compute: %s(%d, %d, %d): need seqTokens >= 0, cpDegree >= 1, blockTokens >= 1",
			fn, seqTokens, cpDegree, blockTokens))
	}
	return c.Job.Model.AttentionFwdFLOPs(seqTokens) / float64(cpDegree)
}

// AttentionFwdSeconds is one rank's causal core-attention forward time for its
// share of one sequence of seqTokens tokens split over cpDegree ranks:
//
//	c·s²/k / (TP·peak·η_fwd(blockTokens)),   c = Model.AttentionFwdFLOPsPerSquareToken
//
// with η_fwd = AttentionEfficiency(false, ·), by the model's head dimension.
//
// blockTokens is the length the kernel actually runs at (KernelBlockTokens: s for
// Ulysses or no CP, s/r for a ring of r). FLOPs follow FlashAttention's convention
// (costmodel §2.1), which is the convention the attention curves were fitted in,
// so no 3.5/3 conversion applies here; an MFU-style count that takes the backward
// as 2× the forward would have to scale FA-reported TFLOPS by 3/3.5. The curve
// ignores the head count: Ulysses' fewer heads per rank at short lengths may run
// below it. With Attention = MegatronSoftmax it is MegatronAttentionSeconds'
// forward instead (blockTokens unused). It panics if seqTokens < 0, cpDegree <
// 1, or seqTokens > 0 and blockTokens < 1.
func (c *Compute) AttentionFwdSeconds(seqTokens, cpDegree, blockTokens int) float64 {
	f := c.attentionFLOPs(seqTokens, cpDegree, blockTokens, "AttentionFwdSeconds")
	if c.Attention == MegatronSoftmax {
		fwd, _ := c.MegatronAttentionSeconds(seqTokens, cpDegree)
		return fwd
	}
	return c.flopsSeconds(f, c.AttentionEfficiency(false, float64(blockTokens)))
}

// AttentionEfficiency is the causal attention kernel's efficiency at block
// length x for the model's head dimension, forward or backward: the profile's
// curves interpolated linearly in d_qk between the head dims it has curves
// at, 128 and 256, and 192 when the profile has the optional d192 curves
// (fitted from measurements at MLA's 192/128):
//
//	η = (1−w)·η_lo(x) + w·η_hi(x),   w = (d_qk − d_lo)/(d_hi − d_lo)
//
// with d_lo ≤ d_qk ≤ d_hi the neighbouring knots, clamped to the 128 curve
// below 128 (no preset has a smaller head dim) and the 256 curve above. So
// without d192 curves MLA's d_qk 192 (d_v 128) runs halfway between the 128
// and 256 curves, and with them exactly on the d192 one. FlashAttention-3's
// published causal forward runs 2% slower at 512 tokens and 4% faster from 4K
// at head dim 256 than at 128 on an H100
// (testdata/fa3_h100_fwd_causal_d256.csv).
func (c *Compute) AttentionEfficiency(backward bool, x float64) float64 {
	p := c.Profile
	lo, mid, hi := p.AttentionFwd, p.AttentionFwdD192, p.AttentionFwdD256
	midKey := calib.CurveAttentionFwdD192
	if backward {
		lo, mid, hi = p.AttentionBwd, p.AttentionBwdD192, p.AttentionBwdD256
		midKey = calib.CurveAttentionBwdD192
	}
	d := float64(c.Job.Model.HeadDimQK)
	dLo, dHi := 128.0, 256.0
	if p.HasCurve(midKey) {
		if d <= 192 {
			hi, dHi = mid, 192
		} else {
			lo, dLo = mid, 192
		}
	}
	w := min(max((d-dLo)/(dHi-dLo), 0), 1)
	eta := (1-w)*lo.At(x) + w*hi.At(x)
	if c.Attention == FlashAttention2 {
		if backward {
			return eta / FA2BwdSlowdown
		}
		return eta / FA2FwdSlowdown
	}
	return eta
}

// AttentionBwdSeconds is the matching backward time: Model.AttentionBwdFactor
// (2.5 for d_qk = d_v, 2.6 for DeepSeek-V3's MLA) times the forward FLOPs, at
// the backward efficiency AttentionEfficiency(true, blockTokens), or
// MegatronAttentionSeconds' backward with Attention = MegatronSoftmax.
func (c *Compute) AttentionBwdSeconds(seqTokens, cpDegree, blockTokens int) float64 {
	f := c.attentionFLOPs(seqTokens, cpDegree, blockTokens, "AttentionBwdSeconds") * c.Job.Model.AttentionBwdFactor()
	if c.Attention == MegatronSoftmax {
		_, bwd := c.MegatronAttentionSeconds(seqTokens, cpDegree)
		return bwd
	}
	return c.flopsSeconds(f, c.AttentionEfficiency(true, float64(blockTokens)))
}

// Piece is one rank's share of one sequence in a microbatch: a sequence of
// SeqTokens tokens on a CP group of CPDegree ranks (1: the whole sequence is
// local), run by the attention kernel at BlockTokens (KernelBlockTokens).
type Piece struct {
	// SeqTokens is the sequence's length s.
	SeqTokens int
	// CPDegree is k, the ranks the sequence is split over.
	CPDegree int
	// BlockTokens is the length the attention kernel runs at.
	BlockTokens int
}

// LayerSeconds is the compute time of one or more layers on one rank, split
// into GEMMs, memory-bound ops, kernel launch gaps and core attention, forward
// and backward.
type LayerSeconds struct {
	// GEMMFwd and GEMMBwd are the linear layers' forward and backward seconds.
	GEMMFwd, GEMMBwd float64
	// MemoryFwd and MemoryBwd are the memory-bound ops' seconds (LayerOps of
	// OpKindMemory).
	MemoryFwd, MemoryBwd float64
	// LaunchFwd and LaunchBwd are the kernels' fixed costs (OpLaunch).
	LaunchFwd, LaunchBwd float64
	// AttentionFwd and AttentionBwd are core attention's forward and backward seconds.
	AttentionFwd, AttentionBwd float64
}

// FwdSeconds is the forward time, every part.
func (s LayerSeconds) FwdSeconds() float64 {
	return s.GEMMFwd + s.MemoryFwd + s.LaunchFwd + s.AttentionFwd
}

// BwdSeconds is the backward time, every part.
func (s LayerSeconds) BwdSeconds() float64 {
	return s.GEMMBwd + s.MemoryBwd + s.LaunchBwd + s.AttentionBwd
}

// TotalSeconds is forward plus backward.
func (s LayerSeconds) TotalSeconds() float64 { return s.FwdSeconds() + s.BwdSeconds() }

// Add returns the sum of s and o.
func (s LayerSeconds) Add(o LayerSeconds) LayerSeconds {
	return LayerSeconds{s.GEMMFwd + o.GEMMFwd, s.GEMMBwd + o.GEMMBwd, s.MemoryFwd + o.MemoryFwd, s.MemoryBwd + o.MemoryBwd,
		s.LaunchFwd + o.LaunchFwd, s.LaunchBwd + o.LaunchBwd, s.AttentionFwd + o.AttentionFwd, s.AttentionBwd + o.AttentionBwd}
}

// Scale returns s with every part multiplied by f.
func (s LayerSeconds) Scale(f float64) LayerSeconds {
	return LayerSeconds{f * s.GEMMFwd, f * s.GEMMBwd, f * s.MemoryFwd, f * s.MemoryBwd,
		f * s.LaunchFwd, f * s.LaunchBwd, f * s.AttentionFwd, f * s.AttentionBwd}
}

// opsLayerSeconds sorts ops into a LayerSeconds (no attention).
func opsLayerSeconds(ops []Op) LayerSeconds {
	var s LayerSeconds
	s.GEMMFwd, s.GEMMBwd = OpsSeconds(ops, OpKindGEMM)
	s.MemoryFwd, s.MemoryBwd = OpsSeconds(ops, OpKindMemory)
	s.LaunchFwd, s.LaunchBwd = OpsSeconds(ops, OpKindLaunch)
	return s
}

// attentionSeconds sums the attention time of a rank's pieces for one layer.
func (c *Compute) attentionSeconds(pieces []Piece) (fwd, bwd float64) {
	for _, p := range pieces {
		fwd += c.AttentionFwdSeconds(p.SeqTokens, p.CPDegree, p.BlockTokens)
		bwd += c.AttentionBwdSeconds(p.SeqTokens, p.CPDegree, p.BlockTokens)
	}
	return fwd, bwd
}

// RankLayerSeconds is one rank's compute time for the 0-based layer in one
// microbatch: the LayerOps of its tokens (normally Σ SeqTokens/CPDegree over
// the pieces) and the core attention of each piece.
func (c *Compute) RankLayerSeconds(layer, tokens int, pieces []Piece) LayerSeconds {
	s := opsLayerSeconds(c.LayerOps(layer, tokens))
	s.AttentionFwd, s.AttentionBwd = c.attentionSeconds(pieces)
	return s
}

// StageLayers returns the first layer and the layer count of a pipeline stage.
// It panics if stage is out of range.
func (c *Compute) StageLayers(stage int) (first, layers int) {
	if stage < 0 || stage >= len(c.stageLayers) {
		panic(fmt.Sprintf("compute: stage %d out of range [0, %d)", stage, len(c.stageLayers)))
	}
	return c.stageFirst[stage], c.stageLayers[stage]
}

// RankStageSeconds is one rank's compute time for all layers of a pipeline stage
// (0-based) in one microbatch, as RankLayerSeconds summed over the stage's layers,
// plus the head (HeadOps: LM head in the GEMM parts, final norm and loss in the
// memory parts, their launches) on the last stage.
func (c *Compute) RankStageSeconds(stage, tokens int, pieces []Piece) LayerSeconds {
	first, n := c.StageLayers(stage)
	af, ab := c.attentionSeconds(pieces)
	s := LayerSeconds{AttentionFwd: float64(n) * af, AttentionBwd: float64(n) * ab}
	// Layers differ only dense vs MoE, so price one of each kind.
	var dense, moe LayerSeconds
	dn, mn := 0, 0
	for l := first; l < first+n; l++ {
		if c.Job.Model.IsMoELayer(l) {
			if mn == 0 {
				moe = opsLayerSeconds(c.LayerOps(l, tokens))
			}
			mn++
		} else {
			if dn == 0 {
				dense = opsLayerSeconds(c.LayerOps(l, tokens))
			}
			dn++
		}
	}
	s = s.Add(dense.Scale(float64(dn))).Add(moe.Scale(float64(mn)))
	if stage == len(c.stageLayers)-1 {
		s = s.Add(opsLayerSeconds(c.HeadOps(tokens)))
	}
	return s
}

// OptimizerBytesPerParam is the HBM traffic of one Adam step per parameter with
// BF16 parameters and gradients and FP32 master weights and moments (Megatron's
// distributed optimizer, costmodel §4.5/§7.1): read gradient 2 + master 4 + m 4 +
// v 4, write master 4 + m 4 + v 4 + BF16 parameter 2.
const OptimizerBytesPerParam = 28

// OptimizerFLOPsPerParam is the floating-point operations of one AdamW step per
// parameter, counted from its update rule (Loshchilov and Hutter, "Decoupled
// Weight Decay Regularization", ICLR 2019, Algorithm 2, as Apex's FusedAdam
// applies it per element in adam_w_mode): m = β1·m + (1−β1)·g 3, v = β2·v +
// (1−β2)·g² 4, the bias-corrected denominator sqrt(v/(1−β2^t)) + ε 3, the
// bias-corrected step m/(1−β1^t)/denominator 2, the decay term + λ·p 2, and
// p −= lr·step 2. The step is memory-bound (OptimizerBytesPerParam); this
// count only describes its work (execution traces' num_ops), it prices nothing.
const OptimizerFLOPsPerParam = 16

// FP8WeightCastSeconds is, under FP8 training, the per-iteration recast of the
// params weights a GPU holds to their FP8 copies and transposes,
// MemorySeconds(params·FP8WeightCastBytesPerParam); 0 in BF16.
func (c *Compute) FP8WeightCastSeconds(params float64) float64 {
	if !c.Job.Parallel.FP8() {
		return 0
	}
	return c.MemorySeconds(params * FP8WeightCastBytesPerParam)
}

// fp8ProfileNames lists the embedded profiles with FP8 tensor cores.
func fp8ProfileNames() []string {
	var out []string
	for _, n := range calib.ProfileNames() {
		if p, err := calib.LookupProfile(n); err == nil && p.HasFP8() {
			out = append(out, n)
		}
	}
	return out
}

// OptimizerStepSeconds is the time of one optimizer step over params parameters
// (the shard this GPU updates, e.g. Ψ_rank/DP with a distributed optimizer): a
// memory-bound pass, MemorySeconds(params·OptimizerBytesPerParam), at the
// profile's achieved memory-bound bandwidth.
func (c *Compute) OptimizerStepSeconds(params float64) float64 {
	if params < 0 {
		panic(fmt.Sprintf("compute: OptimizerStepSeconds: params = %v < 0", params))
	}
	return c.MemorySeconds(params * OptimizerBytesPerParam)
}
