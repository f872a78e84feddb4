package experiment

// Predicting an at-scale run: the row's source family fills what the row
// leaves unstated and says how its framework ran (Family), the row becomes
// a job (AtScaleJob), static CP at the row's degree plans its batch, and
// the cost model and the engine time it (PredictAtScale).

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/static"
)

// Family is a source family: the software its published runs used, as
// validation/README.md cites it, and what the at-scale validation takes
// for the fields a row leaves unstated. One Family serves every row of its
// sources; nothing in it is fitted to a row.
type Family struct {
	// Name names the family in tables ("nemo", "megatron-bridge", ...).
	Name string
	// Match lists substrings of the source column that select the family
	// (the first family with a match wins; Generic matches everything).
	Match []string
	// Software says what ran, for the tables' headers.
	Software string
	// Recompute is the framework's default when a row leaves recompute
	// empty: none for every family here.
	Recompute job.RecomputeGranularity
	// SequenceParallel, TPCommOverlap (dense models; TPCommOverlapMoE for
	// MoE models), OverlapGradReduce, OverlapParamGather, GradReduceFP32
	// and OverlapMoEComm are the framework's settings (job.Parallel).
	SequenceParallel, TPCommOverlap, TPCommOverlapMoE     bool
	OverlapGradReduce, OverlapParamGather, GradReduceFP32 bool
	OverlapMoEComm                                        bool
	// GradSync is the data-parallel scheme: the distributed optimizer,
	// all-reduce, or FSDP (FSDPReshardWithoutPP: resharding when pp = 1,
	// torchtitan's FSDP2 default).
	GradSync             job.GradSync
	FSDPReshardWithoutPP bool
	// CP is how context parallelism exchanges K/V: Megatron's p2p ring,
	// or the all-gather of Llama 3 and torch's context parallel.
	CP sched.CPExec
	// ExpertTPDefault is the expert TP when a MoE row leaves etp empty: 0
	// means tp (Megatron-Core's default before MoE parallel folding), else
	// that degree.
	ExpertTPDefault int
	// MicrobatchesPerPP, when true, derives an unstated micro-batch size
	// from as many microbatches as pipeline stages (torchtitan's default
	// n_microbatches = pp; one microbatch without pipeline parallelism);
	// otherwise an unstated micro-batch is 1.
	MicrobatchesPerPP bool
	// DeepEPOffHopper dispatches MoE tokens with DeepEP on every GPU but
	// Hopper, where the all-to-all dispatcher runs (Megatron-Bridge's
	// DeepSeek-V3 recipes use the flex dispatcher; its H100 performance
	// configs reset it to alltoall).
	DeepEPOffHopper bool
	// NVL72ExpertCapacity, when positive, pads MoE experts to that capacity
	// factor on NVL72 racks (job.Parallel.MoECapacityFactor):
	// Megatron-Bridge's GB200 DeepSeek-V3 recipe captures the whole
	// iteration in a CUDA graph, which needs static shapes, and sets
	// moe_expert_rank_capacity_factor 1.5 with padded experts
	// (scripts/performance deepseek_llm_pretrain.py of v0.5.0).
	NVL72ExpertCapacity float64
	// Kernel is the core attention priced.
	Kernel compute.AttentionKernel
	// OneLayerChunks takes an unstated vp as one layer per model chunk,
	// the embedding and the loss counting as one each: (layers + 2)/pp when
	// that divides (Llama 3 §3.3.2 interleaves with the first chunk holding
	// only the embedding and the last only the output and the loss).
	OneLayerChunks bool
}

// Families are the source families of the at-scale table, most specific
// first; validation/README.md gives the source of every setting.
var Families = []Family{
	{
		Name: "nemo", Match: []string{"NVIDIA/dgxc-benchmarking", "NVIDIA/NeMo"},
		Software:         "NeMo (Megatron-Core), DGX Cloud benchmarking recipes and NeMo's long-sequence tables",
		SequenceParallel: true, TPCommOverlap: true, TPCommOverlapMoE: true,
		OverlapGradReduce: true, OverlapParamGather: true,
		GradSync: job.GradReduceScatter, CP: sched.Ring,
	},
	{
		Name: "megatron-bridge", Match: []string{"NVIDIA-NeMo/Megatron-Bridge"},
		Software:         "Megatron-Bridge performance recipes (Megatron-Core)",
		SequenceParallel: true, TPCommOverlap: true,
		OverlapGradReduce: true, OverlapParamGather: true, OverlapMoEComm: true, DeepEPOffHopper: true, NVL72ExpertCapacity: 1.5,
		GradSync: job.GradReduceScatter, CP: sched.Ring, ExpertTPDefault: 1,
	},
	{
		Name: "megatron-lm", Match: []string{"NVIDIA/Megatron-LM"},
		Software:         "Megatron-LM (Megatron-Core 0.9) with --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap",
		SequenceParallel: true, TPCommOverlap: true, TPCommOverlapMoE: true,
		OverlapGradReduce: true, OverlapParamGather: true, GradReduceFP32: true,
		GradSync: job.GradReduceScatter, CP: sched.Ring,
	},
	{
		Name: "llama3", Match: []string{"2407.21783", "Llama 3 Herd"},
		Software:         "Meta's 4D-parallel stack (Llama 3 §3.3.2: FSDP without resharding, all-gather CP, one layer per model chunk)",
		SequenceParallel: true, OneLayerChunks: true,
		GradSync: job.GradFSDP, CP: sched.AllGatherKV,
	},
	{
		Name: "megascale", Match: []string{"2402.15627", "MegaScale"},
		Software: "Megatron-LM of January 2023 (commit 285068c8), MegaScale's baseline: its defaults",
		GradSync: job.GradAllReduce, CP: sched.Ring, Kernel: compute.MegatronSoftmax,
	},
	{
		Name: "torchtitan", Match: []string{"pytorch/torchtitan"},
		Software:         "torchtitan (FSDP2, AsyncTP, torch.compile, PyTorch's FlashAttention-2 SDPA)",
		SequenceParallel: true, TPCommOverlap: true, TPCommOverlapMoE: true, Kernel: compute.FlashAttention2,
		GradSync: job.GradFSDP, FSDPReshardWithoutPP: true, CP: sched.AllGatherKV, MicrobatchesPerPP: true,
	},
}

// Generic is the family of a source no other matches: Megatron-Core as
// the megatron-lm family runs it, the framework of most published runs.
var Generic = Family{
	Name: "other", Software: "unknown framework, taken as Megatron-Core with its overlaps",
	SequenceParallel: true, TPCommOverlap: true, TPCommOverlapMoE: true,
	OverlapGradReduce: true, OverlapParamGather: true, GradReduceFP32: true,
	GradSync: job.GradReduceScatter, CP: sched.Ring,
}

// FamilyOf returns the family of a source column.
func FamilyOf(source string) Family {
	for _, f := range Families {
		for _, m := range f.Match {
			if strings.Contains(source, m) {
				return f
			}
		}
	}
	return Generic
}

// atScaleModels are the presets a row may stand on for what its columns
// cannot say (MLA's ranks): a row of MLA names its model, and the preset of
// that name family supplies q_lora, kv_lora and the RoPE split.
var atScaleModels = []struct{ prefix, preset string }{
	{"deepseek-v3", job.ModelDeepSeekV3},
	{"deepseek-v2-lite", job.ModelDeepSeekV2Lite},
}

// Model builds the row's model from its columns; an MLA row takes its
// latent ranks from the preset its model name starts with.
func (r AtScaleRun) Model() (job.Model, error) {
	dense := r.DenseLayers
	if r.Experts == 0 {
		dense = r.Layers
	}
	m := job.Model{
		Name: r.ID, Layers: r.Layers, DenseLayers: dense, MoELayerStep: r.MoELayerStep, Hidden: r.Hidden,
		Attention: r.Attention, QueryHeads: r.Heads, KVHeads: r.KVHeads, HeadDimQK: r.HeadDim, HeadDimV: r.HeadDim,
		DenseFFN: r.FFN, Activation: r.MLP, Vocab: r.Vocab, MaxContextTokens: max(r.SeqLen, 1),
		RoutedExperts: r.Experts, TopK: r.TopK, ExpertFFN: r.ExpertFFN, SharedExperts: r.SharedExperts,
		Source: r.Source,
	}
	if r.SharedExperts > 0 {
		m.SharedExpertFFN = r.ExpertFFN
	}
	if r.Attention == job.MLA {
		name := strings.ToLower(r.ModelName)
		i := slices.IndexFunc(atScaleModels, func(p struct{ prefix, preset string }) bool { return strings.HasPrefix(name, p.prefix) })
		if i < 0 {
			return job.Model{}, badInput("row %q (line %d): model %q: an mla row needs a preset for its latent ranks; known: deepseek-v3, deepseek-v2-lite", r.ID, r.Line, r.ModelName)
		}
		p, err := job.LookupModel(atScaleModels[i].preset)
		if err != nil {
			return job.Model{}, err
		}
		m.QLoRARank, m.KVLoRARank, m.QKNopeHeadDim, m.QKRopeHeadDim = p.QLoRARank, p.KVLoRARank, p.QKNopeHeadDim, p.QKRopeHeadDim
		m.HeadDimQK, m.HeadDimV = p.HeadDimQK, p.HeadDimV
		if r.HeadDim != p.HeadDimQK {
			return job.Model{}, badInput("row %q (line %d): head_dim = %d: the %s preset's MLA heads are %d wide (q/k)", r.ID, r.Line, r.HeadDim, p.Name, p.HeadDimQK)
		}
	}
	if err := m.Validate(); err != nil {
		return job.Model{}, badInput("row %q (line %d): %w", r.ID, r.Line, err)
	}
	return m, nil
}

// SplitLayers is the pipeline layout of layers over pp·vp virtual stages
// when they do not divide evenly: the embedding and the loss each count as
// a layer (Megatron-Core's account_for_embedding_in_pipeline_split and
// account_for_loss_in_pipeline_split), layers+2 slots spread evenly with
// the earlier virtual stages taking the remainder, and the first and last
// virtual stages hold one layer less. It is also the split Llama 3 states
// (§3.3.2: the first and last stages hold one layer less) and torchtitan's
// default for 1F1B. An even split gives "" (no layout needed).
func SplitLayers(layers, pp, vp int) string {
	n := pp * vp
	if layers%n == 0 {
		return ""
	}
	slots := layers + 2
	out := make([]string, n)
	for v := range n {
		c := slots / n
		if v < slots%n {
			c++
		}
		if v == 0 || v == n-1 {
			c--
		}
		out[v] = fmt.Sprint(c)
	}
	return strings.Join(out, ",")
}

// AtScaleSetup is a row resolved: its family, its job and profile, the
// layout's unstated fields as taken, and each assumption in words.
type AtScaleSetup struct {
	Run     AtScaleRun
	Family  Family
	Job     job.Job
	Profile *calib.Profile
	// MBS, CP and Microbatches are the micro-batch size, CP degree and
	// microbatches per replica the prediction uses.
	MBS, CP, Microbatches int
	// Exec is the CP execution.
	Exec sched.CPExec
	// Assumed lists what the family supplied, e.g. "mbs 1", "recompute none".
	Assumed []string
}

// AtScaleJob resolves a row: the family fills every unstated field (and
// says so in Assumed), the model comes from the columns, uneven layers get
// SplitLayers' layout, and the job is validated.
func AtScaleJob(r AtScaleRun) (AtScaleSetup, error) {
	fam := FamilyOf(r.Source)
	su := AtScaleSetup{Run: r, Family: fam, CP: max(r.CP, 1), Exec: fam.CP}
	prof, err := calib.LookupProfile(r.GPU)
	if err != nil {
		return su, badInput("row %q: %w", r.ID, err)
	}
	su.Profile = prof
	m, err := r.Model()
	if err != nil {
		return su, err
	}
	assume := func(format string, args ...any) { su.Assumed = append(su.Assumed, fmt.Sprintf(format, args...)) }
	su.MBS = r.MBS
	if su.MBS == 0 {
		su.MBS = 1
		if local := r.GBS / r.DP; fam.MicrobatchesPerPP && local%r.PP == 0 {
			su.MBS = local / r.PP
		}
		assume("mbs %d", su.MBS)
	}
	vp := r.VP
	if vp == 0 {
		vp = 1
		if fam.OneLayerChunks && r.PP > 1 && (r.Layers+2)%r.PP == 0 {
			vp = (r.Layers + 2) / r.PP
		}
		if r.PP > 1 {
			assume("vp %d", vp)
		}
	}
	rc := r.Recompute
	if rc == "" {
		rc = cmpOr(fam.Recompute, job.RecomputeNone)
		assume("recompute %s", rc)
	}
	par := job.Parallel{
		TP: r.TP, PP: r.PP, VPP: vp, EP: max(r.EP, 1), BudgetTokens: su.MBS * r.SeqLen / su.CP,
		SequenceParallel: fam.SequenceParallel && r.TP > 1, Recompute: rc,
		GradSync: fam.GradSync, OverlapGradReduce: fam.OverlapGradReduce, OverlapParamGather: fam.OverlapParamGather,
		GradReduceFP32: fam.GradReduceFP32, PipelineLayout: SplitLayers(r.Layers, r.PP, vp),
	}
	par.TPCommOverlap = par.SequenceParallel && (fam.TPCommOverlap && !r.MoE() || fam.TPCommOverlapMoE && r.MoE())
	par.OverlapMoEComm = fam.OverlapMoEComm && r.MoE()
	if fam.DeepEPOffHopper && r.MoE() && !strings.HasPrefix(r.GPU, "H") {
		par.MoEDispatcher = job.DispatchDeepEP
	}
	if c := fam.NVL72ExpertCapacity; c > 0 && r.MoE() && strings.HasSuffix(r.GPU, "-NVL72") {
		par.MoECapacityFactor = c
		assume("experts padded to capacity factor %g (full-iteration CUDA graph)", c)
	}
	if fam.GradSync == job.GradFSDP && fam.FSDPReshardWithoutPP && r.PP == 1 {
		par.GradSync = job.GradFSDPReshard
	}
	if r.DP*su.CP == 1 {
		par.OverlapGradReduce, par.OverlapParamGather = false, false
	}
	if par.PipelineLayout != "" {
		assume("layers per virtual stage %s (embedding and loss as a layer each)", par.PipelineLayout)
	}
	switch r.Precision {
	case "fp8":
		par.Precision = job.PrecisionFP8
	case "mxfp8":
		par.Precision = job.PrecisionMXFP8
	}
	if r.MoE() {
		par.ETP = r.ETP
		if par.ETP == 0 {
			par.ETP = fam.ExpertTPDefault
			if par.ETP == 0 {
				par.ETP = r.TP
			}
			assume("etp %d", par.ETP)
		}
	}
	gpn := int(prof.GPUsPerNode.Value)
	if d := nvlinkDomain(r.GPUs, gpn, r.TP); d != gpn {
		assume("NVLink domains of %d GPUs (%d is no multiple of the %s's %d)", d, r.GPUs, r.GPU, gpn)
		gpn = d
	}
	su.Job = job.Job{Model: m, Cluster: job.Cluster{GPU: r.GPU, GPUs: r.GPUs, GPUsPerNode: gpn},
		Parallel: par, ContextTokens: r.SeqLen}
	if err := su.Job.Validate(); err != nil {
		return su, badInput("row %q (line %d): %w", r.ID, r.Line, err)
	}
	su.Microbatches = r.GBS / (su.MBS * r.DP)
	if vp > 1 && su.Microbatches%r.PP != 0 {
		return su, badInput("row %q (line %d): gbs = %d gives %d microbatches per replica: with vp > 1 they must be a multiple of pp (%d), as Megatron's interleaved schedule requires",
			r.ID, r.Line, r.GBS, su.Microbatches, r.PP)
	}
	return su, nil
}

// cmpOr is the first of a, b that is not empty.
func cmpOr(a, b job.RecomputeGranularity) job.RecomputeGranularity {
	if a != "" {
		return a
	}
	return b
}

// FLOPsPerStep is one iteration's FLOPs under the row's named formula, each
// as its source defines it (validation/README.md):
//
//	megatron-lm  12·B·s·L·h²·[(1 + g/a + s/h)·(q/h) + (f/h)·k·glu + V_pad/(2·L·h)]
//	             Megatron-LM training.py num_floating_point_operations at
//	             f2e5db40: q = heads·head_dim, g the K/V heads, glu 3/2 when
//	             gated, k and f the routed experts' top-k and width on MoE
//	             models, V padded to a multiple of 128·tp; attention not causal
//	nemo         B·s·L·h²·(12 + 12·g/a + (18 or 12)·f'/h + 12·s/h + 6·V/(L·h))
//	             NeMo's flops_formulas llama/nemotron/mixtral before commit
//	             6251117f4c (causal halving came in August 2025): 18 when
//	             gated, f' = f, or top-k·expert width on MoE models
//	llama3       (6·N + 12·L·a·d·s)·B·s: PaLM's model FLOPs (Chowdhery et al.
//	             2022, arxiv.org/abs/2204.02311 App. B), the definition the
//	             Llama 3 paper cites for its MFU (§3.3.2), N the model's
//	             parameters and d the head dim (attention not causal)
//	megascale    72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)) (MegaScale §6.1: it
//	             reproduces every Megatron-LM MFU of Table 2 within 0.1 point)
//
// with B = gbs, s = seq_len, L = layers, h = hidden, a = heads.
func (r AtScaleRun) FLOPsPerStep(m job.Model) (float64, error) {
	B, s, L, h := float64(r.GBS), float64(r.SeqLen), float64(r.Layers), float64(r.Hidden)
	a, g, V := float64(r.Heads), float64(r.KVHeads), float64(r.Vocab)
	f, k := float64(r.FFN), 1.0
	if r.MoE() {
		f, k = float64(r.ExpertFFN), float64(r.TopK)
	}
	switch r.FLOPsFormula {
	case FormulaMegatronLM:
		glu := 1.0
		if r.MLP.Gated() {
			glu = 1.5
		}
		q := a * float64(r.HeadDim) / h
		pad := float64(128 * r.TP)
		vp := math.Ceil(V/pad) * pad
		return 12 * B * s * L * h * h * ((1+g/a+s/h)*q + f/h*k*glu + vp/(2*L*h)), nil
	case FormulaNeMo:
		ffn := 12.0
		if r.MLP.Gated() {
			ffn = 18
		}
		return B * s * L * h * h * (12 + 12*g/a + ffn*k*f/h + 12*s/h + 6*V/(L*h)), nil
	case FormulaLlama3:
		return (6*m.TotalParams() + 12*L*a*float64(r.HeadDim)*s) * B * s, nil
	case FormulaMegaScale:
		return 72 * B * s * L * h * h * (1 + s/(6*h) + V/(12*L*h)), nil
	}
	return 0, badInput("row %q: flops_formula %q: must be one of %s", r.ID, r.FLOPsFormula, strings.Join(AtScaleFormulas, ", "))
}

// MeasuredSeconds converts the row's measured value to seconds per step:
// s/step as is; tokens/s/gpu as gbs·seq_len / (value·gpus); tflops/gpu as
// FLOPsPerStep / (gpus·value·10¹²); mfu% as FLOPsPerStep / (gpus·value/100
// ·the GPU's dense BF16 peak).
func (r AtScaleRun) MeasuredSeconds(m job.Model, prof *calib.Profile) (float64, error) {
	v := r.MeasuredValue
	switch r.MeasuredUnit {
	case UnitSecondsPerStep:
		return v, nil
	case UnitTokensPerSecondPerGPU:
		return float64(r.GBS) * float64(r.SeqLen) / (v * float64(r.GPUs)), nil
	case UnitTFLOPsPerGPU, UnitMFUPercent:
		f, err := r.FLOPsPerStep(m)
		if err != nil {
			return 0, err
		}
		per := v * 1e12
		if r.MeasuredUnit == UnitMFUPercent {
			per = v / 100 * prof.PeakBF16FLOPs.Value
		}
		return f / (float64(r.GPUs) * per), nil
	}
	return 0, badInput("row %q: measured_unit %q", r.ID, r.MeasuredUnit)
}

// Kind tags a row for the summaries: "dense" or "moe", then "+cp" for
// context parallelism or sequences of 32K tokens and more, "+fp8" for FP8
// or MXFP8.
func (r AtScaleRun) Kind() string {
	k := "dense"
	if r.MoE() {
		k = "moe"
	}
	if r.CP > 1 || r.SeqLen >= 32768 {
		k += "+cp"
	}
	if r.Precision != "bf16" {
		k += "+fp8"
	}
	return k
}

// PredictAtScale predicts one row (AtScaleJob): a batch of gbs sequences
// of seq_len tokens planned by static CP at the row's degree (each
// microbatch mbs whole sequences per CP group), priced by the cost model
// with the family's CP exchange and attention kernel, timed by the engine.
// A run whose predicted peak memory exceeds its GPU's says so among its
// assumptions (the run did fit, so the memory model is the one off) and is
// timed as stated.
func PredictAtScale(r AtScaleRun) (results.ValidationResult, error) {
	return predictAtScaleOn(r, nil)
}

// predictAtScaleOn is PredictAtScale on prof instead of the row's embedded
// profile when prof is not nil (the fit of a sustained efficiency).
func predictAtScaleOn(r AtScaleRun, prof *calib.Profile) (results.ValidationResult, error) {
	su, err := AtScaleJob(r)
	if err != nil {
		return results.ValidationResult{}, err
	}
	if prof != nil {
		su.Profile = prof
	}
	meas, err := r.MeasuredSeconds(su.Job.Model, su.Profile)
	if err != nil {
		return results.ValidationResult{}, err
	}
	out, err := su.simulate()
	if err != nil {
		return results.ValidationResult{}, err
	}
	res := out.Result
	t := res.IterationSeconds()
	mem := su.Job.Parallel
	var states, act float64
	if len(out.Memory.Stages) > 0 {
		act = out.Memory.Stages[0].ActivationBytes
		states = out.Memory.Stages[0].StatesBytes
	}
	layout := fmt.Sprintf("%d×%s tp%d pp%d vp%d cp%d", r.GPUs, r.GPU, r.TP, r.PP, mem.VPP, su.CP)
	if r.MoE() {
		layout += fmt.Sprintf(" ep%d etp%d", mem.EP, mem.ExpertTP())
	}
	layout += fmt.Sprintf(" dp%d, %d MBs of %d, %s, %s", r.DP, su.Microbatches, su.MBS, mem.RecomputeMode(), mem.PrecisionMode())
	v := results.ValidationResult{
		Name: r.ID, PredictedSeconds: t, MeasuredSeconds: meas, Error: t/meas - 1,
		MeasuredValue: r.MeasuredValue, MeasuredUnit: r.MeasuredUnit, Kind: r.Kind(),
		Source: su.Family.Name, GPU: r.GPU, Assumed: su.Assumed, Layout: layout,
		ComputeShare: res.ComputeShare, ExposedCommShare: res.ExposedCommShare, PPBubbleShare: res.PPBubbleShare + res.DPBubbleShare,
		SyncShare: res.SyncShare, PredictedWeightsOptimizerBytes: states, PredictedActivationBytes: act,
	}
	if out.OutOfMemory != nil {
		g := out.OutOfMemory
		v.Assumed = append(v.Assumed, fmt.Sprintf("memory model over HBM: %.1f of %.1f GiB on stage %d", g.TotalBytes()/(1<<30), g.HBMBytes/(1<<30), g.Stage))
	}
	return v, nil
}

// simulate plans and times the setup's batch.
func (su AtScaleSetup) simulate() (costmodel.Outcome, error) {
	r, j := su.Run, su.Job
	mod, err := costmodel.New(j, su.Profile, costmodel.Options{AttentionKernel: su.Family.Kernel})
	if err != nil {
		return costmodel.Outcome{}, fmt.Errorf("row %q: %w", r.ID, err)
	}
	policy, err := static.New(static.Options{Degree: su.CP})
	if err != nil {
		return costmodel.Outcome{}, fmt.Errorf("row %q: %w", r.ID, err)
	}
	in := sched.Inputs{PoolRanks: j.PoolRanks(), BudgetTokens: j.Parallel.BudgetTokens, PP: r.PP, VPP: j.Parallel.VPP,
		EP: j.Parallel.EPRanks(), ContextTokens: r.SeqLen}
	lengths := slices.Repeat([]int{r.SeqLen}, r.GBS)
	plan, err := policy.Plan(lengths, in)
	if err != nil {
		return costmodel.Outcome{}, fmt.Errorf("row %q: plan: %w", r.ID, err)
	}
	if got := len(plan.Microbatches); got != su.Microbatches {
		return costmodel.Outcome{}, fmt.Errorf("row %q: the plan has %d microbatches, want %d", r.ID, got, su.Microbatches)
	}
	out, err := mod.Simulate(plan, lengths, costmodel.Exec{CP: su.Exec}, 0)
	if err != nil {
		return costmodel.Outcome{}, fmt.Errorf("row %q: %w", r.ID, err)
	}
	return out, nil
}
