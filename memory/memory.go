package memory

import (
	"fmt"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
)

// Bytes per element and per parameter.
const (
	// WeightBytesPerParam is a BF16 weight.
	WeightBytesPerParam = 2
	// GradientBytesPerParam is an FP32 main gradient (Megatron-LM's default
	// for BF16 training; theoretical_memory_usage.py's 6 = 2 + 4).
	GradientBytesPerParam = 4
	// OptimizerBytesPerParam is Adam's FP32 master weight, first and second
	// moments (the 12 of 6 + 12/DP).
	OptimizerBytesPerParam = 12
	// FP8WeightBytesPerParam is, under FP8 training, the FP8 copy of a layer
	// weight and its transpose that Transformer Engine keeps beside the BF16
	// weight for the iteration (Hopper's FP8 GEMMs take only the TN layout,
	// so the data gradient needs the transpose).
	FP8WeightBytesPerParam = 2
	// ReserveBytes is the HBM every GPU keeps out of the model's reach: the
	// CUDA context and kernels (about 0.5-1 GB), cuBLAS and attention
	// workspaces, NCCL's buffers for every communicator a job creates, and
	// the PyTorch caching allocator's fragmentation. Assumption, one number for
	// every kind: ByteScale (Ge et al., SIGCOMM 2025, §7) measures 5-10 GB per
	// GPU for the NCCL groups of dynamic context parallelism, and the 10 GB
	// is its upper end (research/costmodel.md §7.3).
	ReserveBytes = 10e9
)

// States is the model-state memory of one GPU of a pipeline stage.
type States struct {
	// DenseParams and ExpertParams are the parameters the GPU holds: dense
	// ones over tp (embedding on the first stage, output layer on the last),
	// routed experts over etp·ep (tp·ep by default).
	DenseParams, ExpertParams float64
	// WeightBytes, GradientBytes and OptimizerBytes are the BF16 weights, the
	// FP32 gradients and the GPU's share of Adam's FP32 states.
	WeightBytes, GradientBytes, OptimizerBytes float64
	// FP8WeightBytes is, under FP8 training, the FP8 copies of the layers'
	// weights (FP8WeightBytesPerParam; not the embedding's or the output
	// layer's, which stay BF16); 0 in BF16.
	FP8WeightBytes float64
}

// Bytes is the GPU's model-state total.
func (s States) Bytes() float64 {
	return s.WeightBytes + s.GradientBytes + s.OptimizerBytes + s.FP8WeightBytes
}

// Chunk is what one rank keeps from the forward pass of one model chunk of
// one stage until its backward, as a function of its shard: PerToken bytes
// per token it holds plus PerScore bytes per attention score Σ s²/k (softmax
// kernel only). Backward* is the transient its backward rebuilds on top
// (recomputation of one layer at a time), in the same two units.
type Chunk struct {
	PerToken, PerScore                 float64
	BackwardPerToken, BackwardPerScore float64
	// OffloadPerToken and OffloadPerScore are the part of PerToken and
	// PerScore that selective offload may move to host memory (ByteScale
	// §5.2): the layers of the chunk but its last two, whose activations the
	// backward needs first (Fig. 10; Eq. 3's 2·Act(s) kept on the GPU). An
	// offload ratio r keeps Kept − r·Offload on the GPU.
	OffloadPerToken, OffloadPerScore float64
}

// KeptLayers is how many of a chunk's last layers selective offload leaves
// on the GPU: the backward needs them first (ByteScale Fig. 10; Eq. 3's
// 2·Act(s)).
const KeptLayers = 2

// Offloadable reports whether the layer at position i of a chunk of n
// layers is one selective offload may move: every one but the chunk's last
// KeptLayers. The memory model, the cost model and its breakdown all ask
// this.
func Offloadable(i, n int) bool { return i < n-KeptLayers }

// Offload returns the bytes of a rank's kept activations that offload at
// ratio 1 moves to host memory.
func (c Chunk) Offload(tokens, scores float64) float64 {
	return c.OffloadPerToken*tokens + c.OffloadPerScore*scores
}

// Kept returns the bytes a rank holding tokens tokens with scores Σ s²/k
// keeps.
func (c Chunk) Kept(tokens, scores float64) float64 { return c.PerToken*tokens + c.PerScore*scores }

// Backward returns the transient bytes the chunk's backward adds.
func (c Chunk) Backward(tokens, scores float64) float64 {
	return c.BackwardPerToken*tokens + c.BackwardPerScore*scores
}

// Model is the memory model of one job under one attention kernel. It is
// immutable after New.
type Model struct {
	job    job.Job
	kernel compute.AttentionKernel
	// first[s], layers[s]: stage s's first layer and layer count.
	first, layers []int
	states        []States
	chunks        [][]Chunk // [stage][chunk]
}

// New builds the memory model of job j with core attention run by kernel. It
// fails when the layers do not split over the stages and chunks.
func New(j job.Job, kernel compute.AttentionKernel) (*Model, error) {
	stages, err := j.StageLayers()
	if err != nil {
		return nil, err
	}
	v := max(j.Parallel.VPP, 1)
	m := &Model{job: j, kernel: kernel}
	first := 0
	for s, n := range stages {
		if n < v && j.Parallel.PipelineLayout == "" {
			return nil, fmt.Errorf("memory: stage %d has %d layers, fewer than vpp = %d chunks", s, n, v)
		}
		m.first = append(m.first, first)
		m.layers = append(m.layers, n)
		m.states = append(m.states, m.stageStates(s, first, n, len(stages)))
		cs := make([]Chunk, v)
		for c := range v {
			cs[c] = m.chunk(s, c, first, n, len(stages))
		}
		m.chunks = append(m.chunks, cs)
		first += n
	}
	return m, nil
}

// Job returns the job modelled.
func (m *Model) Job() job.Job { return m.job }

// Stages returns the number of pipeline stages.
func (m *Model) Stages() int { return len(m.states) }

// States returns the model states per GPU of stage s.
func (m *Model) States(s int) States { return m.states[s] }

// Chunk returns what one rank keeps from chunk c of stage s (chunk c holds
// the stage's layers [c·n/v, (c+1)·n/v), as the cost model splits them).
func (m *Model) Chunk(s, c int) Chunk { return m.chunks[s][c] }

// OffloadShare is the part of a rank's kept activations per token that
// selective offload at ratio 1 moves to host memory, on the stage where it
// is smallest (Σ OffloadPerToken / Σ PerToken over the stage's chunks): a
// rank holding t tokens at ratio r keeps at most t·(1 − r·OffloadShare)
// tokens' worth on every stage. 0 when some stage has at most two layers
// per chunk.
func (m *Model) OffloadShare() float64 {
	share := 1.0
	for _, cs := range m.chunks {
		var off, kept float64
		for _, c := range cs {
			off += c.OffloadPerToken
			kept += c.PerToken
		}
		if kept > 0 {
			share = min(share, off/kept)
		}
	}
	return share
}

// KeepsScores reports whether any chunk's activations count attention
// scores (Chunk.PerScore or BackwardPerScore > 0: the softmax kernel).
func (m *Model) KeepsScores() bool {
	for _, cs := range m.chunks {
		for _, c := range cs {
			if c.PerScore > 0 || c.BackwardPerScore > 0 {
				return true
			}
		}
	}
	return false
}

// MaxStates returns the largest model-state total over the stages and the
// stage holding it.
func (m *Model) MaxStates() (bytes float64, stage int) {
	for s, st := range m.states {
		if b := st.Bytes(); b > bytes {
			bytes, stage = b, s
		}
	}
	return bytes, stage
}

func (m *Model) stageStates(s, first, n, pp int) States {
	mod, par := m.job.Model, m.job.Parallel
	var dense, expert float64
	for l := first; l < first+n; l++ {
		e := mod.LayerExpertParams(l)
		dense += mod.LayerParams(l) - e
		expert += e
	}
	// Routed experts are split over ep·etp GPUs (tp·ep unless expert TP
	// differs), and the distributed optimizer shards them over the expert-DP
	// group of G/EPRanks ranks.
	tp, ep := float64(max(par.TP, 1)), float64(max(par.EP, 1))
	etp, epRanks := tp, ep
	if par.ExpertTP() != par.TP {
		etp, epRanks = float64(par.ExpertTP()), float64(par.EPRanks())
	}
	layers := dense/tp + expert/(etp*ep)
	if s == 0 {
		dense += mod.EmbeddingParams()
	}
	if s == pp-1 {
		dense += mod.OutputParams()
	}
	st := States{DenseParams: dense / tp, ExpertParams: expert / (etp * ep)}
	if par.FP8() {
		st.FP8WeightBytes = FP8WeightBytesPerParam * layers
	}
	all := st.DenseParams + st.ExpertParams
	st.WeightBytes = WeightBytesPerParam * all
	st.GradientBytes = GradientBytesPerParam * all
	st.OptimizerBytes = OptimizerBytesPerParam * all
	if mode := par.GradSyncMode(); mode.Sharded() {
		g := float64(max(m.job.PoolRanks(), 1))
		shard := st.DenseParams/g + st.ExpertParams*epRanks/g
		st.OptimizerBytes = OptimizerBytesPerParam * shard
		if mode == job.GradFSDPReshard {
			// ZeRO-3: weights and gradients sharded at rest, one layer's
			// gathered (and its gradients unsharded) while it runs.
			var widest float64
			for l := first; l < first+n; l++ {
				e := mod.LayerExpertParams(l)
				widest = max(widest, (mod.LayerParams(l)-e)/tp+e/(etp*ep))
			}
			st.WeightBytes = WeightBytesPerParam * (shard + widest)
			st.GradientBytes = GradientBytesPerParam * (shard + widest)
		}
	}
	return st
}

// dropout reports whether the job trains with dropout (the Megatron softmax
// kernel's era; see the package doc).
func (m *Model) dropout() bool { return m.kernel == compute.MegatronSoftmax }

// LayerBytes returns what one rank keeps of one 0-based layer per token of its
// shard (perToken) and per attention score (perScore), under granularity rc,
// and the layer's whole keep without recomputation (what full recompute's
// backward rebuilds).
func (m *Model) LayerBytes(layer int, rc job.RecomputeGranularity) (perToken, perScore float64) {
	mod, par := m.job.Model, m.job.Parallel
	t := float64(max(par.TP, 1))
	rep := func(x float64) float64 { // replicated over TP unless SP
		if par.SequenceParallel {
			return x / t
		}
		return x
	}
	split := func(x float64) float64 { return x / t }
	h := float64(mod.Hidden)
	if rc == job.RecomputeFull {
		return rep(2 * h), 0
	}
	// g is the bytes of an element of a saved GEMM input: BF16, or FP8 under
	// FP8 training, which keeps the inputs' FP8 casts for the backward.
	g := 2.0
	if par.FP8() {
		g = 1
	}
	nh, nkv := float64(mod.QueryHeads), float64(mod.KVHeads)
	dqk, dv := float64(mod.HeadDimQK), float64(mod.HeadDimV)
	var drop float64
	if m.dropout() {
		drop = 1
	}
	// Attention block: norm input, QKV input (the norm output), dropout mask.
	a := rep(2*h + g*h + drop*h)
	if mod.Attention == job.MLA {
		// q_norm input and q_up input, kv_down output (kv_norm input and the
		// RoPE key), kv_up input.
		ql, kl := float64(mod.QLoRARank), float64(mod.KVLoRARank)
		a += rep(2*ql + g*ql + 2*(kl+float64(mod.QKRopeHeadDim)) + g*kl)
	}
	// Q, K, V, and the output projection's input.
	a += split(2*(nh+nkv)*dqk + 2*nkv*dv + g*nh*dv)
	if mod.GatedAttention {
		a += split(4 * nh * dv)
	}
	if rc != job.RecomputeSelective {
		if m.kernel == compute.MegatronSoftmax {
			perScore = split(nh * (2 + 3*drop))
		} else {
			a += split(4 * nh)
		}
	}
	// FFN block: norm input, first-GEMM input, dropout mask.
	f := rep(2*h + g*h + drop*h)
	// An FFN of width ff keeps its activation's input (the gate and up
	// outputs when gated) and the down GEMM's input.
	act := func(ff float64) float64 {
		if mod.Activation.Gated() {
			return 4*ff + g*ff
		}
		return 2*ff + g*ff
	}
	if !mod.IsMoELayer(layer) {
		f += split(act(float64(mod.DenseFFN)))
	} else {
		// Router logits; per routed copy the permuted input (the experts'
		// first-GEMM input) and the expert output.
		k := float64(mod.TopK)
		c := par.ExpertRowScale()
		f += rep(4*float64(mod.RoutedExperts) + c*k*(g*h+2*h))
		fe, fs := float64(mod.ExpertFFN), float64(mod.SharedExpertFFN)
		f += split(c*k*act(fe) + float64(mod.SharedExperts)*act(fs))
	}
	return a + f, perScore
}

// chunk sums the layers of chunk c of stage s and adds the embedding and the
// output layer where they sit.
func (m *Model) chunk(s, c, first, n, pp int) Chunk {
	mod, par := m.job.Model, m.job.Parallel
	v := max(par.VPP, 1)
	rc := par.RecomputeMode()
	var ch Chunk
	lo, hi := par.ChunkRange(s, first, n, c)
	for l := lo; l < hi; l++ {
		lrc := job.RecomputeNone
		if par.Recomputed(l - lo) {
			lrc = rc
		}
		tok, sc := m.LayerBytes(l, lrc)
		ch.PerToken += tok
		ch.PerScore += sc
		if Offloadable(l-lo, hi-lo) {
			ch.OffloadPerToken += tok
			ch.OffloadPerScore += sc
		}
		switch lrc {
		case job.RecomputeFull:
			// The backward rebuilds one whole layer at a time.
			ft, fs := m.LayerBytes(l, job.RecomputeNone)
			ch.BackwardPerToken = max(ch.BackwardPerToken, ft)
			ch.BackwardPerScore = max(ch.BackwardPerScore, fs)
		case job.RecomputeSelective:
			// ... or one layer's core attention.
			nt, ns := m.LayerBytes(l, job.RecomputeNone)
			ch.BackwardPerToken = max(ch.BackwardPerToken, nt-tok)
			ch.BackwardPerScore = max(ch.BackwardPerScore, ns-sc)
		}
	}
	t := float64(max(par.TP, 1))
	h := float64(mod.Hidden)
	if s == 0 && c == 0 {
		ch.PerToken += 8 // token ids (int64)
		if m.dropout() {
			if par.SequenceParallel {
				ch.PerToken += h / t
			} else {
				ch.PerToken += h
			}
		}
	}
	if s == pp-1 && c == v-1 {
		ch.PerToken += 4*h/t + 4*float64(mod.Vocab)/t
	}
	return ch
}
