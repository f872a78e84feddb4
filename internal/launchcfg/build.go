package launchcfg

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/job"
)

// Options are what an import needs that the arguments do not say.
type Options struct {
	// GPU names the calibration profile of the GPUs (required).
	GPU string
	// GPUs is the job's GPU count; 0 takes the launcher's (torchrun's
	// --nnodes × --nproc-per-node).
	GPUs int
	// GPUsPerNode is the NVLink domain; 0 takes the launcher's
	// --nproc-per-node, else NodeGPUs.
	GPUsPerNode int
	// NodeGPUs is the GPU kind's own node size, the last fallback.
	NodeGPUs int
	// Vocab is the vocabulary when the arguments give none (Megatron-LM
	// reads it from the tokenizer).
	Vocab int
	// ModelName names the model (default "imported").
	ModelName string
	// IgnoreUnknown lists arguments the catalog does not know instead of
	// failing on them.
	IgnoreUnknown bool
}

// Import is a job read from a launch line or a recipe.
type Import struct {
	// Format is "megatron" or "nemo"; Source names what was read.
	Format, Source string
	// Job is the model, the cluster, the fixed layout (budget included)
	// and the context: everything a scenario's [cluster], [model] and
	// [parallel] say.
	Job job.Job
	// Policy is the DCP policy that runs the layout as the framework does:
	// "static" at degree CP (Megatron's context parallelism), or "mcore"
	// for Megatron-Core's dynamic CP (--hybrid-context-parallel).
	Policy string
	// CP is the context-parallel degree; CPExec how static CP exchanges
	// K/V: "ring" (p2p), "ulysses" (a2a), "all-gather-kv" (allgather) or
	// "ulysses-ring" (a2a+p2p).
	CP     int
	CPExec string
	// MicroBatch and GlobalBatch are sequences per microbatch and per
	// iteration; SeqLen every sequence's length.
	MicroBatch, GlobalBatch, SeqLen int
	// Uses lists every argument and what became of it, in the order read.
	Uses []Use
	// Assumed lists the defaults taken and the approximations made.
	Assumed []string
}

// Use is what the import did with one argument.
type Use struct {
	// Arg names it as written ("--num-layers", "model.num_layers"); Value
	// is its value ("" for a flag).
	Arg, Value string
	// Class says what became of it; Note which scenario key it set, how it
	// is priced, its no-effect group or why it is refused.
	Class Class
	Note  string
}

// Error is every problem of an import: bad values, refused and unknown
// arguments, a job dcpsim cannot run. It blames the input (badinput).
type Error struct {
	Source   string
	Problems []string
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		if strings.HasPrefix(e.Problems[0], e.Source+":") {
			return e.Problems[0] // it names the file and line itself
		}
		return e.Source + ": " + e.Problems[0]
	}
	return fmt.Sprintf("%s: %d problems:\n  %s", e.Source, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// Is makes every import error bad input.
func (e *Error) Is(target error) bool { return target == badinput.Err }

// builder resolves settings into an Import, collecting problems.
type builder struct {
	s        *settings
	o        Options
	recipe   bool
	im       *Import
	problems []string
	// origin maps a scenario key to the argument that set it, for the
	// job's validation messages.
	origin map[string]string
	// names spells a command-line argument as the input does.
	names func(string) string
}

func (b *builder) fail(format string, args ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

func (b *builder) failErr(err error) {
	if err != nil {
		b.problems = append(b.problems, err.Error())
	}
}

func (b *builder) assume(format string, args ...any) {
	b.im.Assumed = append(b.im.Assumed, fmt.Sprintf(format, args...))
}

// from names where a setting came from: its argument, or the default.
func from[T any](b *builder, s setting[T], cli string) string {
	if s.set {
		return s.src
	}
	return b.names(cli) + " (default)"
}

// build turns the settings into the job. It returns nil with the problems
// in b.problems when the job cannot be built.
func (b *builder) build() {
	m := b.model()
	par := b.parallel(m)
	b.batch(&par)
	if len(b.problems) > 0 {
		return
	}
	j := job.Job{Model: m, Parallel: par, ContextTokens: b.im.SeqLen,
		Cluster: job.Cluster{GPU: b.o.GPU, GPUs: b.im.Job.Cluster.GPUs, GPUsPerNode: b.im.Job.Cluster.GPUsPerNode}}
	if err := j.Validate(); err != nil {
		fields, others := job.FieldErrors(err)
		for _, f := range fields {
			key := f.Key
			if key == "context_tokens" {
				key = "workload.context_tokens"
			}
			if o, ok := b.origin[key]; ok {
				b.fail("%s = %v: %s (from %s)", key, f.Value, f.Rule, o)
			} else {
				b.fail("%s", f.Error())
			}
		}
		for _, o := range others {
			b.failErr(o)
		}
	}
	b.im.Job = j
}

// required reports a missing setting.
func (b *builder) required(set bool, cli, why string) bool {
	if !set {
		b.fail("%s is required: %s", b.names(cli), why)
	}
	return set
}

func (b *builder) model() job.Model {
	s := b.s
	m := job.Model{Name: cmpOr(b.o.ModelName, "imported")}
	ok := b.required(s.layers.set, "num-layers", "the model's layers")
	ok = b.required(s.hidden.set, "hidden-size", "the model's width") && ok
	ok = b.required(s.heads.set, "num-attention-heads", "the query heads") && ok
	if !ok {
		return m
	}
	m.Layers, m.Hidden, m.QueryHeads = s.layers.v, s.hidden.v, s.heads.v
	b.origin["model.layers"] = s.layers.src
	b.origin["model.hidden"] = s.hidden.src
	b.origin["model.query_heads"] = s.heads.src

	// Attention.
	kvc := s.kvChannels.v
	if !s.kvChannels.set {
		if m.Hidden%m.QueryHeads != 0 {
			b.fail("%s %d does not divide %s %d: give %s", b.names("num-attention-heads"), m.QueryHeads, b.names("hidden-size"), m.Hidden, b.names("kv-channels"))
			return m
		}
		kvc = m.Hidden / m.QueryHeads
	}
	b.origin["model.head_dim_qk"] = from(b, s.kvChannels, "kv-channels")
	if s.mla.or(false) {
		if s.gqa.or(false) {
			b.fail("%s and %s: Megatron-LM refuses both (MLA has no query groups)", s.mla.src, s.gqa.src)
		}
		m.Attention = job.MLA
		m.KVHeads = m.QueryHeads
		// Megatron-LM's command line and the recipes' MLATransformerConfig
		// have different defaults.
		defQ, defKV := 0, 32
		if b.recipe {
			defQ, defKV = 512, 512
		}
		m.QLoRARank = s.qLoRA.or(defQ)
		m.KVLoRARank = s.kvLoRA.or(defKV)
		m.QKNopeHeadDim = s.qkHead.or(128)
		m.QKRopeHeadDim = s.qkPos.or(64)
		m.HeadDimV = s.vHead.or(128)
		m.HeadDimQK = m.QKNopeHeadDim + m.QKRopeHeadDim
		for _, d := range []struct {
			set  bool
			name string
			v    int
		}{{s.qLoRA.set, "q-lora-rank", m.QLoRARank}, {s.kvLoRA.set, "kv-lora-rank", m.KVLoRARank},
			{s.qkHead.set, "qk-head-dim", m.QKNopeHeadDim}, {s.qkPos.set, "qk-pos-emb-head-dim", m.QKRopeHeadDim}, {s.vHead.set, "v-head-dim", m.HeadDimV}} {
			if !d.set {
				b.assume("%s %d (the default)", b.names(d.name), d.v)
			}
		}
	} else {
		groups := m.QueryHeads
		switch {
		case s.gqa.or(false) || b.recipe && s.groups.set:
			groups = s.groups.or(1)
			if !s.groups.set {
				b.assume("%s 1 (Megatron-LM's default with %s)", b.names("num-query-groups"), s.gqa.src)
			}
			b.origin["model.kv_heads"] = from(b, s.groups, "num-query-groups")
		case s.groups.set:
			b.fail("%s without %s: Megatron-LM ignores it and trains multi-head attention; add %s or drop it",
				s.groups.src, b.names("group-query-attention"), b.names("group-query-attention"))
		}
		m.KVHeads = groups
		m.Attention = job.GQA
		if groups == m.QueryHeads {
			m.Attention = job.MHA
		}
		m.HeadDimQK, m.HeadDimV = kvc, kvc
		for _, x := range []setting[int]{s.qLoRA, s.kvLoRA, s.qkHead, s.qkPos, s.vHead} {
			if x.set {
				b.fail("%s: needs %s", x.src, b.names("multi-latent-attention"))
			}
		}
	}
	m.QKNorm = s.qkNorm.or(false)
	if m.Attention == job.MLA && m.QKNorm {
		// With MLA, Megatron's q/k layernorms are the latents' norms, which
		// dcpsim's MLA already has.
		m.QKNorm = false
		b.assume("%s with MLA: the norms of the query and key latents, which the MLA model has", s.qkNorm.src)
	}
	m.GatedAttention = s.attnGate.or(false)

	// The FFN.
	m.Activation = b.activation()
	ffn := s.ffn.v
	if !s.ffn.set {
		if m.Activation.Gated() {
			ffn = int(float64(4*m.Hidden)*2/3/64) * 64
		} else {
			ffn = 4 * m.Hidden
		}
		b.assume("%s %d (Megatron-LM's default for this width and activation)", b.names("ffn-hidden-size"), ffn)
	}
	m.DenseFFN = ffn
	m.DenseLayers = m.Layers
	b.origin["model.dense_ffn"] = from(b, s.ffn, "ffn-hidden-size")
	if e := s.experts.or(0); e > 0 {
		b.moe(&m, e, ffn)
	} else {
		for _, x := range []struct {
			set bool
			src string
		}{{s.topK.set, s.topK.src}, {s.moeFFN.set, s.moeFFN.src}, {s.sharedFFN.set, s.sharedFFN.src}, {s.moeFreq.set, s.moeFreq.src}, {s.moeFreqN.set, s.moeFreqN.src}, {s.expertBias.set, s.expertBias.src}} {
			if x.set {
				b.fail("%s: needs %s (the model has no experts)", x.src, b.names("num-experts"))
			}
		}
	}

	// The embedding.
	vocab, vsrc := s.vocab.v, s.vocab.src
	switch {
	case s.vocab.set:
	case b.o.Vocab > 0:
		vocab, vsrc = b.o.Vocab, "dcpsim import --vocab"
	default:
		b.fail("the vocabulary is unknown: give %s (Megatron-LM otherwise reads it from the tokenizer, which dcpsim does not), or dcpsim import's --vocab N", b.names("vocab-size"))
		return m
	}
	m.Vocab = vocab
	b.origin["model.vocab"] = vsrc
	pad := !b.recipe || s.padVocab.or(false)
	if mult := s.padMultiple.or(128) * b.s.tp.or(1); pad && mult > 1 && vocab%mult != 0 {
		m.Vocab = (vocab + mult - 1) / mult * mult
		b.assume("vocabulary %d padded to %d (a multiple of %s %d × tp %d, as Megatron-LM pads it)", vocab, m.Vocab, b.names("make-vocab-size-divisible-by"), s.padMultiple.or(128), s.tp.or(1))
	}
	switch pos := s.posType.or("learned_absolute"); pos {
	case "learned_absolute":
		m.LearnedPositions = true
		if !s.posType.set {
			b.assume("learned absolute position embeddings (%s's default)", b.names("position-embedding-type"))
		}
	case "relative":
		b.fail("%s relative: relative position attention is not modelled", s.posType.src)
	}
	m.TiedEmbeddings = !s.untie.or(false)
	if b.recipe {
		m.TiedEmbeddings = s.tied.or(true)
	}
	m.MaxContextTokens = s.maxPos.or(s.seq.or(1))
	if m.LearnedPositions && s.maxPos.set && s.seq.set && s.maxPos.v < s.seq.v {
		b.fail("%s %d is below %s %d: the learned positions do not cover a sequence", s.maxPos.src, s.maxPos.v, s.seq.src, s.seq.v)
	}
	m.MTPLayers = s.mtp.or(s.layoutMTP.or(0))
	m.Source = "imported from " + b.im.Source
	return m
}

// activation resolves the FFN's activation: Megatron-LM's flags, or a
// recipe's gated_linear_unit and activation_func.
func (b *builder) activation() job.Activation {
	s := b.s
	var set []string
	act := job.GELU
	for _, f := range []struct {
		on  bool
		src string
		a   job.Activation
	}{{s.swiglu.or(false), s.swiglu.src, job.SwiGLU}, {s.squaredReLU.or(false), s.squaredReLU.src, job.SquaredReLU}, {s.geglu.or(false), s.geglu.src, job.GeGLU}} {
		if f.on {
			set = append(set, f.src)
			act = f.a
		}
	}
	if len(set) > 1 {
		b.fail("%s: choose one activation", strings.Join(set, " and "))
	}
	if len(set) == 1 {
		return act
	}
	if !s.gated.set && !s.activationFunc.set {
		b.assume("GELU activation (Megatron-LM's default: no %s)", b.names("swiglu"))
		return job.GELU
	}
	gated := s.gated.or(false)
	switch f := s.activationFunc.or("gelu"); {
	case f == "silu" && gated:
		return job.SwiGLU
	case (f == "gelu" || f == "quick_gelu") && gated:
		return job.GeGLU
	case f == "gelu" || f == "quick_gelu" || f == "fast_gelu":
		return job.GELU
	case f == "squared_relu" && !gated:
		return job.SquaredReLU
	default:
		b.fail("%s %q with gated_linear_unit %v: not one of SwiGLU, GeGLU, GELU or squared ReLU", s.activationFunc.src, f, gated)
	}
	return act
}

// moe fills the MoE fields of m.
func (b *builder) moe(m *job.Model, experts, ffn int) {
	s := b.s
	m.RoutedExperts = experts
	m.TopK = s.topK.or(2)
	if !s.topK.set {
		b.assume("%s 2 (Megatron-LM's default)", b.names("moe-router-topk"))
	}
	m.ExpertFFN = s.moeFFN.or(ffn)
	if !s.moeFFN.set {
		b.assume("%s %d (%s, Megatron-LM's default)", b.names("moe-ffn-hidden-size"), ffn, b.names("ffn-hidden-size"))
	}
	if s.sharedFFN.set {
		m.SharedExperts, m.SharedExpertFFN = 1, s.sharedFFN.v
	}
	m.RouterExpertBias = s.expertBias.or(false)
	m.DenseLayers = 0
	switch {
	case s.moeFreq.set:
		p := s.moeFreq.v
		if len(p) != m.Layers {
			b.fail("%s lists %d layers: the model has %d", s.moeFreq.src, len(p), m.Layers)
			return
		}
		dense, step, ok := denseAndStep(p)
		if !ok {
			b.fail("%s: dcpsim models MoE layers as some dense layers first, then every N-th layer MoE (the N-th, 2N-th, ... after them); this pattern is not of that form", s.moeFreq.src)
			return
		}
		m.DenseLayers, m.MoELayerStep = dense, step
		b.origin["model.dense_layers"] = s.moeFreq.src
		b.origin["model.moe_layer_step"] = s.moeFreq.src
	case s.moeFreqN.set && s.moeFreqN.v > 1:
		b.fail("%s %d puts MoE on layers 0, %d, %d, ... (the first of every %d); dcpsim's moe_layer_step puts it on the last of each period: write the pattern out, e.g. \"([0]*%d+[1])*%d\" for the last",
			s.moeFreqN.src, s.moeFreqN.v, s.moeFreqN.v, 2*s.moeFreqN.v, s.moeFreqN.v, s.moeFreqN.v-1, m.Layers/s.moeFreqN.v)
	}
	if m.HasDenseLayers() && !s.ffn.set {
		b.fail("%s is required: the model has dense layers beside its experts", b.names("ffn-hidden-size"))
	}
}

// parallel resolves the layout (without the batch).
func (b *builder) parallel(m job.Model) job.Parallel {
	s := b.s
	p := job.Parallel{TP: s.tp.or(1), PP: s.pp.or(1), EP: s.ep.or(1), VPP: 1}
	b.origin["parallel.tp"] = from(b, s.tp, "tensor-model-parallel-size")
	b.origin["parallel.pp"] = from(b, s.pp, "pipeline-model-parallel-size")
	b.origin["parallel.ep"] = from(b, s.ep, "expert-model-parallel-size")
	b.origin["cluster.gpus"] = "the GPU count"
	if m.RoutedExperts > 0 {
		p.ETP = s.etp.or(p.TP)
		b.origin["parallel.etp"] = from(b, s.etp, "expert-tensor-parallel-size")
	} else if s.etp.set && s.etp.v != p.TP {
		b.fail("%s %d: a dense model has no experts to split", s.etp.src, s.etp.v)
	}
	b.pipeline(&p, m)
	p.SequenceParallel = s.sp.or(false)
	p.TPCommOverlap = s.tpOverlap.or(false)
	if p.TP == 1 && (p.SequenceParallel || p.TPCommOverlap) {
		// Megatron-LM turns sequence parallelism off at tp 1; there are no
		// TP collectives to overlap.
		p.SequenceParallel, p.TPCommOverlap = false, false
	}
	b.origin["parallel.tp_comm_overlap"] = from(b, s.tpOverlap, "tp-comm-overlap")
	p.OverlapGradReduce = s.overlapGrad.or(false)
	p.OverlapParamGather = s.overlapParam.or(false)
	b.origin["parallel.overlap_param_gather"] = from(b, s.overlapParam, "overlap-param-gather")
	b.origin["parallel.overlap_grad_reduce"] = from(b, s.overlapGrad, "overlap-grad-reduce")
	b.gradSync(&p)
	if m.RoutedExperts > 0 {
		b.dispatch(&p)
	}
	b.recompute(&p)
	b.precision(&p)
	return p
}

// pipeline resolves the virtual stages and the layers of each.
func (b *builder) pipeline(p *job.Parallel, m job.Model) {
	s := b.s
	e, l := 0, 0
	if s.accEmbedding.or(false) {
		e = 1
	}
	if s.accLoss.or(false) {
		l = 1
	}
	var vppFrom []string
	for _, x := range []struct {
		set bool
		src string
	}{{s.layout.set, s.layout.src}, {s.vppLayers.set, s.vppLayers.src}, {s.vppStages.set, s.vppStages.src}} {
		if x.set {
			vppFrom = append(vppFrom, x.src)
		}
	}
	if len(vppFrom) > 1 {
		b.fail("%s: Megatron-LM takes at most one of them", strings.Join(vppFrom, " and "))
		return
	}
	uneven := s.first.set || s.last.set
	if s.layout.set && (uneven || e+l > 0) {
		b.fail("%s cannot be set with other pipeline layout arguments (Megatron-Core refuses it)", s.layout.src)
		return
	}
	if uneven && e+l > 0 {
		b.fail("%s and %s cannot be set together (Megatron-Core refuses it)", cmpOr(s.first.src, s.last.src), cmpOr(s.accEmbedding.src, s.accLoss.src))
		return
	}
	switch {
	case s.layout.set:
		n := len(s.layout.v)
		if n%p.PP != 0 {
			b.fail("%s has %d virtual stages: not a multiple of pp %d", s.layout.src, n, p.PP)
			return
		}
		p.VPP = n / p.PP
		if s.vpp.set && s.vpp.v != p.VPP {
			b.fail("%s %d conflicts with %s (%d virtual stages per rank)", s.vpp.src, s.vpp.v, s.layout.src, p.VPP)
		}
		p.PipelineLayout = layoutText(s.layout.v)
		b.origin["parallel.pipeline_layout"] = s.layout.src
		b.origin["parallel.vpp"] = s.layout.src
		return
	case s.vppStages.set:
		p.VPP = s.vppStages.v
		b.origin["parallel.vpp"] = s.vppStages.src
	case s.vpp.set:
		p.VPP = s.vpp.v
		b.origin["parallel.vpp"] = s.vpp.src
	case s.vppLayers.set:
		if uneven {
			b.fail("%s with an uneven first or last stage: Megatron-LM wants %s instead", s.vppLayers.src, b.names("num-virtual-stages-per-pipeline-rank"))
			return
		}
		slots := m.Layers + e + l
		if slots%p.PP != 0 || slots/p.PP%s.vppLayers.v != 0 {
			b.fail("%s %d: the %d layers%s per pipeline rank must split into chunks of it (Megatron-LM asserts)", s.vppLayers.src, s.vppLayers.v, slots, map[bool]string{true: " (the embedding and loss counted)"}[e+l > 0])
			return
		}
		p.VPP = slots / p.PP / s.vppLayers.v
		b.origin["parallel.vpp"] = s.vppLayers.src
	}
	if p.VPP > 1 && s.mbGroup.set && s.mbGroup.v != p.PP {
		b.fail("%s %d: dcpsim's interleaved schedule runs groups of pp = %d microbatches", s.mbGroup.src, s.mbGroup.v, p.PP)
	}
	if uneven {
		p.FirstStageLayers, p.LastStageLayers = s.first.or(0), s.last.or(0)
		b.origin["parallel.first_stage_layers"] = s.first.src
		b.origin["parallel.last_stage_layers"] = s.last.src
		for _, x := range []setting[int]{s.first, s.last} {
			if x.set && x.v%p.VPP != 0 {
				b.fail("%s %d: must be a multiple of the virtual stages per rank (%d)", x.src, x.v, p.VPP)
			}
		}
		return
	}
	if e+l > 0 {
		slots, n := m.Layers+e+l, p.PP*p.VPP
		src := cmpOr(s.accEmbedding.src, s.accLoss.src)
		if slots%n != 0 {
			b.fail("%s: the %d layers with the embedding and loss counted must split evenly over pp·vpp = %d virtual stages (Megatron-Core asserts)", src, slots, n)
			return
		}
		counts := slices.Repeat([]int{slots / n}, n)
		counts[0] -= e
		counts[n-1] -= l
		p.PipelineLayout = layoutText(counts)
		b.origin["parallel.pipeline_layout"] = src
	}
}

// layoutText is a pipeline_layout value: "" when every virtual stage
// holds as many layers (the even split needs none).
func layoutText(counts []int) string {
	out := make([]string, len(counts))
	even := true
	for i, c := range counts {
		out[i] = strconv.Itoa(c)
		even = even && c == counts[0]
	}
	if even {
		return ""
	}
	return strings.Join(out, ",")
}

// gradSync resolves the data-parallel scheme.
func (b *builder) gradSync(p *job.Parallel) {
	s := b.s
	switch {
	case s.fsdp.set:
		strategy := s.shardingStrategy.or("optim_grads_params")
		switch {
		case s.fsdp.v == "torch" && s.fsdp2NoReshard.or(false):
			p.GradSync = job.GradFSDP
		case s.fsdp.v == "torch":
			p.GradSync = job.GradFSDPReshard
		case strategy == "optim_grads_params":
			p.GradSync = job.GradFSDPReshard
		case strategy == "no_shard":
			p.GradSync = job.GradAllReduce
		default:
			p.GradSync = job.GradReduceScatter
		}
		if p.GradSync.FSDP() && (p.OverlapGradReduce || p.OverlapParamGather) {
			p.OverlapGradReduce, p.OverlapParamGather = false, false
			b.assume("FSDP overlaps its collectives layer by layer: %s and %s are implied", b.names("overlap-grad-reduce"), b.names("overlap-param-gather"))
		}
		b.origin["parallel.grad_sync"] = s.fsdp.src
	case s.distOpt.or(false):
		p.GradSync = job.GradReduceScatter
		b.origin["parallel.grad_sync"] = s.distOpt.src
	default:
		p.GradSync = job.GradAllReduce
		b.assume("gradients all-reduced, the optimizer replicated (no %s)", b.names("use-distributed-optimizer"))
		if s.shardingStrategy.set {
			b.assume("%s ignored without FSDP", s.shardingStrategy.src)
		}
	}
	switch {
	case b.recipe && s.mpGradFP32.set:
		p.GradReduceFP32 = s.mpGradFP32.v
	case b.recipe && s.gradFP32.set:
		p.GradReduceFP32 = s.gradFP32.v
	case b.recipe:
		p.GradReduceFP32 = s.mpGiven
	case s.gradBF16.or(false):
		p.GradReduceFP32 = false
	default:
		p.GradReduceFP32 = true
		if !s.gradFP32.set {
			b.assume("gradients reduced in FP32 (Megatron-LM's default without %s)", b.names("grad-reduce-in-bf16"))
		}
	}
}

// dispatch resolves an MoE model's dispatcher, capacity and overlap.
func (b *builder) dispatch(p *job.Parallel) {
	s := b.s
	p.OverlapMoEComm = s.overlapMoE.or(false)
	d := s.dispatcher.or("allgather")
	if s.deepEP.or(false) {
		d = "deepep"
	}
	switch d {
	case "alltoall":
		p.MoEDispatcher = job.DispatchAllToAll
	case "deepep":
		p.MoEDispatcher = job.DispatchDeepEP
	case "flex":
		switch s.flexBackend.or("") {
		case "deepep":
			p.MoEDispatcher = job.DispatchDeepEP
		case "hybridep":
			p.MoEDispatcher = job.DispatchDeepEP
			b.assume("HybridEP priced as DeepEP (once per destination node, NVLink forwarding)")
		default:
			b.fail("%s flex needs %s deepep or hybridep", s.dispatcher.src, b.names("moe-flex-dispatcher-backend"))
		}
	default:
		p.MoEDispatcher = job.DispatchAllToAll
		b.assume("the allgather dispatcher (%s) priced as all-to-all", from(b, s.dispatcher, "moe-token-dispatcher-type"))
	}
	if s.capacity.set {
		if s.padCapacity.or(false) {
			p.MoECapacityFactor = s.capacity.v
			b.origin["parallel.moe_capacity_factor"] = s.capacity.src
		} else {
			b.assume("%s without padding is dropless under the uniform routing priced", s.capacity.src)
		}
	}
}

// recompute resolves the activation recomputation.
func (b *builder) recompute(p *job.Parallel) {
	s := b.s
	g := s.granularity.or("")
	if s.recomputeActivations.or(false) {
		if g == "full" {
			b.fail("%s and %s full: choose one", s.recomputeActivations.src, s.granularity.src)
		}
		g = "selective"
	}
	switch g {
	case "selective":
		p.Recompute = job.RecomputeSelective
		if s.method.set {
			b.fail("%s: Megatron-LM refuses a method with selective recomputation", s.method.src)
		}
		mods := s.modules.or([]string{"core_attn"})
		if !slices.Equal(mods, []string{"core_attn"}) {
			b.assume("recompute modules %s priced as dcpsim's selective recomputation (core attention)", strings.Join(mods, ", "))
		}
	case "full":
		p.Recompute = job.RecomputeFull
		switch s.method.or("") {
		case "uniform":
			if n := s.recomputeNum.or(1); n > 1 {
				b.assume("%s uniform with %d layers per checkpoint priced as every layer recomputed one by one", s.method.src, n)
			}
		case "block":
			if !s.recomputeNum.set {
				b.fail("%s block needs %s", s.method.src, b.names("recompute-num-layers"))
			}
			p.RecomputeLayers = s.recomputeNum.v
			b.origin["parallel.recompute_layers"] = s.recomputeNum.src
		default:
			b.fail("%s full needs %s uniform or block (Megatron-Core refuses it without)", s.granularity.src, b.names("recompute-method"))
		}
	default:
		p.Recompute = job.RecomputeNone
		for _, x := range []struct {
			set bool
			src string
		}{{s.method.set, s.method.src}, {s.recomputeNum.set, s.recomputeNum.src}, {s.modules.set, s.modules.src}} {
			if x.set {
				b.assume("%s ignored without %s", x.src, b.names("recompute-granularity"))
			}
		}
	}
}

// precision resolves the GEMMs' number format.
func (b *builder) precision(p *job.Parallel) {
	s := b.s
	if !s.bf16.or(false) && !s.fp16.or(false) {
		b.fail("neither %s nor %s: Megatron-LM then trains in FP32, which dcpsim does not price", b.names("bf16"), b.names("fp16"))
		return
	}
	if s.fp16.or(false) && !s.bf16.or(false) {
		b.assume("FP16 priced as BF16 (the same tensor-core rate)")
	}
	p.Precision = job.PrecisionBF16
	if !s.fp8.set {
		if s.fp8Recipe.set {
			b.assume("%s ignored without %s (no FP8)", s.fp8Recipe.src, b.names("fp8-format"))
		}
		return
	}
	p.Precision = job.PrecisionFP8
	switch r := s.fp8Recipe.or("delayed"); r {
	case "mxfp8":
		p.Precision = job.PrecisionMXFP8
	case "blockwise":
		b.assume("blockwise FP8 priced as per-tensor FP8")
	case "custom":
		b.fail("%s custom: a custom FP8 recipe's cost is unknown", s.fp8Recipe.src)
	}
	b.origin["parallel.precision"] = s.fp8.src
}

// batch resolves the cluster size, the batch and the CP degree, and sets
// the budget.
func (b *builder) batch(p *job.Parallel) {
	s := b.s
	im := b.im
	if b.o.GPU == "" {
		b.fail("the GPU kind is required: dcpsim import's --gpu (a calibration profile)")
	}
	gpus := b.o.GPUs
	switch launcher := s.nnodes.or(0) * s.nprocPerNode.or(0); {
	case gpus > 0 && launcher > 0 && gpus != launcher:
		b.fail("--gpus %d disagrees with the launcher's %d nodes × %d GPUs", gpus, s.nnodes.v, s.nprocPerNode.v)
	case gpus == 0 && launcher > 0:
		gpus = launcher
	case gpus == 0:
		b.fail("the GPU count is required: dcpsim import's --gpus N (or a launcher line with --nnodes and --nproc-per-node)")
	}
	perNode := b.o.GPUsPerNode
	if perNode == 0 {
		perNode = s.nprocPerNode.or(b.o.NodeGPUs)
	}
	if perNode == 0 {
		perNode = 8
	}
	im.Job.Cluster = job.Cluster{GPU: b.o.GPU, GPUs: gpus, GPUsPerNode: perNode}
	if !b.required(s.seq.set, "seq-length", "every sequence's length") ||
		!b.required(s.mbs.set, "micro-batch-size", "sequences per microbatch") || gpus < 1 {
		return
	}
	im.SeqLen, im.MicroBatch = s.seq.v, s.mbs.v
	b.origin["workload.context_tokens"] = s.seq.src
	cp := s.cp.or(1)
	im.CP, im.Policy = cp, "static"
	if s.hybridCP.or(false) {
		im.Policy = "mcore"
		if p.PP > 1 {
			b.fail("%s with pp %d: Megatron-LM supports dynamic CP without pipeline parallelism only", s.hybridCP.src, p.PP)
		}
		if !s.maxSeqlenPerRank.set {
			b.fail("%s needs %s (the budget of a rank)", s.hybridCP.src, b.names("max-seqlen-per-dp-cp-rank"))
		}
	}
	mp := p.TP * p.PP * cp
	if gpus%mp != 0 {
		b.fail("%d GPUs do not divide into tp %d × pp %d × cp %d = %d (%s, %s, %s)", gpus, p.TP, p.PP, cp, mp,
			from(b, s.tp, "tensor-model-parallel-size"), from(b, s.pp, "pipeline-model-parallel-size"), from(b, s.cp, "context-parallel-size"))
		return
	}
	dp := gpus / mp
	if im.Policy == "static" {
		if cp&(cp-1) != 0 {
			b.fail("%s %d: dcpsim's static CP runs power-of-two degrees", s.cp.src, cp)
		}
		if cp > 1 && im.SeqLen%(2*cp) != 0 {
			b.fail("%s %d: must be a multiple of 2 × %s %d (Megatron-LM asserts)", s.seq.src, im.SeqLen, s.cp.src, cp)
		}
		p.BudgetTokens = im.MicroBatch * im.SeqLen / cp
		b.origin["parallel.budget_tokens"] = s.mbs.src + " × " + s.seq.src + " / " + from(b, s.cp, "context-parallel-size")
	} else {
		p.BudgetTokens = s.maxSeqlenPerRank.v
		b.origin["parallel.budget_tokens"] = s.maxSeqlenPerRank.src
		if s.cp.set && cp > 1 {
			b.assume("%s %d: dynamic CP chooses each sequence's degree", s.cp.src, cp)
		}
		dp = gpus / (p.TP * p.PP)
	}
	gbs := s.gbs.or(im.MicroBatch * dp)
	if !s.gbs.set {
		b.assume("%s %d (micro batch × data-parallel replicas, Megatron-LM's default)", b.names("global-batch-size"), gbs)
	}
	if gbs%(im.MicroBatch*dp) != 0 {
		b.fail("%s %d: must be a multiple of micro batch %d × %d data-parallel replicas (Megatron-LM asserts)", s.gbs.src, gbs, im.MicroBatch, dp)
	}
	im.GlobalBatch = gbs
	im.CPExec = b.cpExec(cp)
}

// cpExec resolves how static CP exchanges K/V.
func (b *builder) cpExec(cp int) string {
	s := b.s
	types := s.cpComm.or([]string{"p2p"})
	t := types[0]
	for _, x := range types[1:] {
		if x != t {
			b.fail("%s: one communication type per layer is not modelled; give one type", s.cpComm.src)
			return "ring"
		}
	}
	switch t {
	case "a2a":
		return "ulysses"
	case "allgather":
		return "all-gather-kv"
	case "a2a+p2p":
		if !s.hierCP.set {
			b.fail("%s a2a+p2p needs %s (Megatron-LM asserts)", s.cpComm.src, b.names("hierarchical-context-parallel-sizes"))
		} else if prod := product(s.hierCP.v); prod != cp {
			b.fail("%s multiply to %d: must be %s %d", s.hierCP.src, prod, from(b, s.cp, "context-parallel-size"), cp)
		}
		b.assume("a2a+p2p priced as dcpsim's inner Ulysses × outer ring (its own inner size)")
		return "ulysses-ring"
	}
	if s.hierCP.set {
		b.assume("%s ignored without %s a2a+p2p", s.hierCP.src, b.names("cp-comm-type"))
	}
	return "ring"
}

func product(v []int) int {
	p := 1
	for _, x := range v {
		p *= x
		if p > job.MaxGPUs {
			return job.MaxGPUs + 1
		}
	}
	return p
}

// cmpOr is the first non-empty string.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errorOf is the import's error, or nil.
func errorOf(source string, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return &Error{Source: source, Problems: problems}
}
