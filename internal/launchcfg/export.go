package launchcfg

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/job"
)

// ExportJob is what Export needs of a scenario: its job, how its policy
// runs context parallelism, and its batch.
type ExportJob struct {
	// Name names the scenario (or the search candidate) in the header.
	Name string
	// Job is the scenario's job, budget resolved.
	Job job.Job
	// Policy is the DCP policy; CP its static degree (0 when the policy
	// chooses degrees per microbatch); CPExec how its CP groups exchange
	// K/V ("ring", "ulysses", "all-gather-kv", "ulysses-ring").
	Policy string
	CP     int
	CPExec string
	// Static says the policy is static CP: a degree of 0 is then derived
	// from the context as static CP derives it, not chosen per microbatch.
	Static bool
	// BatchTokens is the tokens of one iteration.
	BatchTokens int64
}

// Export writes a scenario's job as Megatron-LM arguments: a launch
// script fragment with the layout and batch (PARALLEL_ARGS, BATCH_ARGS)
// and the model (MODEL_ARGS) as bash arrays, and the torchrun line that
// passes them to pretrain_gpt.py, which MegatronScript reads back. What
// Megatron-LM cannot run as dcpsim simulates it is said in comments.
func Export(e ExportJob) (string, error) {
	j := e.Job
	m, p := j.Model, j.Parallel
	if p.BudgetTokens < 1 || j.ContextTokens < 1 {
		return "", fmt.Errorf("%s: the budget (%d) and context (%d) must be resolved", e.Name, p.BudgetTokens, j.ContextTokens)
	}
	var notes []string
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }

	cp := e.CP
	if cp == 0 && e.Static {
		cp = memoryDegree(j.ContextTokens, p.BudgetTokens)
	}
	if cp == 0 {
		cp = memoryDegree(j.ContextTokens, p.BudgetTokens)
		note("policy %s chooses each microbatch's CP degree; Megatron-LM runs one: %d, the least whose budget holds the %d-token context", e.Policy, cp, j.ContextTokens)
		if e.Policy == "mcore" && p.PP == 1 {
			note("Megatron-Core's own dynamic CP: --hybrid-context-parallel --max-seqlen-per-dp-cp-rank %d", p.BudgetTokens)
		}
	}
	if g := j.PoolRanks(); g < 1 || g%cp != 0 {
		return "", fmt.Errorf("%s: context parallelism %d does not divide the %d ranks of a pipeline stage (gpus / (tp·pp)): Megatron-LM cannot run it", e.Name, cp, g)
	}
	ctx := j.ContextTokens
	mbs := int64(p.BudgetTokens) * int64(cp) / int64(ctx)
	if mbs < 1 || int64(p.BudgetTokens)*int64(cp)%int64(ctx) != 0 {
		mbs = max(mbs, 1)
		note("budget %d × cp %d is not a whole number of %d-token sequences: micro batch %d", p.BudgetTokens, cp, ctx, mbs)
	}
	gbs := e.BatchTokens / int64(ctx)
	if e.BatchTokens%int64(ctx) != 0 || gbs < 1 {
		gbs = max(gbs, 1)
		note("%d tokens per iteration are not a whole number of %d-token sequences: global batch %d", e.BatchTokens, ctx, gbs)
	}

	var par []string
	add := func(list *[]string, args ...string) { *list = append(*list, strings.Join(args, " ")) }
	add(&par, "--tensor-model-parallel-size", itoa(p.TP))
	add(&par, "--pipeline-model-parallel-size", itoa(p.PP))
	switch {
	case p.PipelineLayout != "":
		layout, err := p.Layout()
		if err != nil {
			return "", err
		}
		add(&par, "--pipeline-model-parallel-layout", shellQuote(layoutString(layout)))
	case p.VPP > 1:
		add(&par, "--num-virtual-stages-per-pipeline-rank", itoa(p.VPP))
	}
	if p.FirstStageLayers > 0 {
		add(&par, "--decoder-first-pipeline-num-layers", itoa(p.FirstStageLayers))
	}
	if p.LastStageLayers > 0 {
		add(&par, "--decoder-last-pipeline-num-layers", itoa(p.LastStageLayers))
	}
	add(&par, "--context-parallel-size", itoa(cp))
	switch e.CPExec {
	case "ulysses":
		add(&par, "--cp-comm-type", "a2a")
	case "all-gather-kv":
		add(&par, "--cp-comm-type", "allgather")
	case "ulysses-ring":
		inner := min(cp, max(j.Cluster.GPUsPerNode/p.TP, 1))
		for cp%inner != 0 {
			inner--
		}
		add(&par, "--cp-comm-type", "a2a+p2p", "--hierarchical-context-parallel-sizes", itoa(inner), itoa(cp/inner))
		note("a2a+p2p's inner all-to-all spans %d ranks (one node's); dcpsim picks its own per group", inner)
	default:
		add(&par, "--cp-comm-type", "p2p")
	}
	if m.RoutedExperts > 0 {
		add(&par, "--expert-model-parallel-size", itoa(p.EP))
		add(&par, "--expert-tensor-parallel-size", itoa(p.ExpertTP()))
		switch p.MoEDispatcher {
		case job.DispatchDeepEP:
			add(&par, "--moe-token-dispatcher-type", "flex", "--moe-flex-dispatcher-backend", "deepep")
		default:
			add(&par, "--moe-token-dispatcher-type", "alltoall")
		}
		if p.OverlapMoEComm {
			add(&par, "--overlap-moe-expert-parallel-comm")
		}
		if p.MoECapacityFactor > 0 {
			add(&par, "--moe-expert-capacity-factor", strconv.FormatFloat(p.MoECapacityFactor, 'g', -1, 64), "--moe-pad-expert-input-to-capacity")
		}
	}
	if p.SequenceParallel && p.TP > 1 {
		add(&par, "--sequence-parallel")
	}
	if p.TPCommOverlap && p.TP > 1 {
		add(&par, "--tp-comm-overlap")
	}
	switch p.GradSyncMode() {
	case job.GradReduceScatter:
		add(&par, "--use-distributed-optimizer")
	case job.GradFSDPReshard:
		add(&par, "--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim_grads_params")
	case job.GradFSDP:
		add(&par, "--use-torch-fsdp2", "--torch-fsdp2-no-reshard-after-forward")
	}
	if p.OverlapGradReduce {
		add(&par, "--overlap-grad-reduce")
	}
	if p.OverlapParamGather {
		add(&par, "--overlap-param-gather")
	}
	if !p.GradReduceFP32 {
		add(&par, "--grad-reduce-in-bf16")
	}
	switch p.RecomputeMode() {
	case job.RecomputeSelective:
		add(&par, "--recompute-granularity", "selective")
	case job.RecomputeFull:
		if p.RecomputeLayers > 0 {
			add(&par, "--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", itoa(p.RecomputeLayers))
		} else {
			add(&par, "--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1")
		}
	}
	add(&par, "--bf16")
	switch p.PrecisionMode() {
	case job.PrecisionFP8:
		add(&par, "--fp8-format", "hybrid")
	case job.PrecisionMXFP8:
		add(&par, "--fp8-format", "e4m3", "--fp8-recipe", "mxfp8")
	}

	batch := []string{
		"--seq-length " + itoa(ctx),
		"--micro-batch-size " + strconv.FormatInt(mbs, 10),
		"--global-batch-size " + strconv.FormatInt(gbs, 10),
	}
	model, err := modelArgs(m, note)
	if err != nil {
		return "", fmt.Errorf("%s: %w", e.Name, err)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# dcpsim export megatron %s: %d×%s (%d a node), policy %s\n", printable(e.Name), j.Cluster.GPUs, printable(j.Cluster.GPU), j.Cluster.GPUsPerNode, printable(e.Policy))
	for _, n := range notes {
		fmt.Fprintf(&b, "# %s\n", printable(n))
	}
	writeArray(&b, "PARALLEL_ARGS", par)
	writeArray(&b, "BATCH_ARGS", batch)
	writeArray(&b, "MODEL_ARGS", model)
	nodes, perNode := 1, j.Cluster.GPUs
	if j.Cluster.GPUsPerNode > 0 && j.Cluster.GPUs > j.Cluster.GPUsPerNode {
		nodes, perNode = j.Cluster.GPUs/j.Cluster.GPUsPerNode, j.Cluster.GPUsPerNode
	}
	fmt.Fprintf(&b, "torchrun --nproc-per-node %d --nnodes %d pretrain_gpt.py \"${MODEL_ARGS[@]}\" \"${PARALLEL_ARGS[@]}\" \"${BATCH_ARGS[@]}\"\n", perNode, nodes)
	return b.String(), nil
}

// modelArgs are the model's Megatron-LM arguments.
func modelArgs(m job.Model, note func(string, ...any)) ([]string, error) {
	out := []string{
		"--num-layers " + itoa(m.Layers),
		"--hidden-size " + itoa(m.Hidden),
		"--ffn-hidden-size " + itoa(m.DenseFFN),
		"--num-attention-heads " + itoa(m.QueryHeads),
	}
	switch m.Attention {
	case job.MLA:
		out = append(out, "--multi-latent-attention")
		if m.QLoRARank > 0 { // none: Megatron-LM's full query projection
			out = append(out, "--q-lora-rank "+itoa(m.QLoRARank))
		}
		out = append(out, "--kv-lora-rank "+itoa(m.KVLoRARank), "--qk-head-dim "+itoa(m.QKNopeHeadDim),
			"--qk-pos-emb-head-dim "+itoa(m.QKRopeHeadDim), "--v-head-dim "+itoa(m.HeadDimV))
	case job.GQA:
		out = append(out, "--group-query-attention", "--num-query-groups "+itoa(m.KVHeads))
	}
	if m.Attention != job.MLA {
		if m.HeadDimQK != m.HeadDimV {
			return nil, fmt.Errorf("query/key heads of %d and value heads of %d: Megatron-LM's --kv-channels sets both", m.HeadDimQK, m.HeadDimV)
		}
		out = append(out, "--kv-channels "+itoa(m.HeadDimQK))
	}
	if m.QKNorm {
		out = append(out, "--qk-layernorm")
	}
	if m.GatedAttention {
		out = append(out, "--attention-output-gate")
	}
	switch m.Activation {
	case "", job.SwiGLU:
		out = append(out, "--swiglu")
	case job.GeGLU:
		out = append(out, "--quick-geglu")
		note("GeGLU as --quick-geglu (the same cost)")
	case job.SquaredReLU:
		out = append(out, "--squared-relu")
	}
	if m.RoutedExperts > 0 {
		out = append(out, "--num-experts "+itoa(m.RoutedExperts), "--moe-router-topk "+itoa(m.TopK), "--moe-ffn-hidden-size "+itoa(m.ExpertFFN))
		if m.SharedExperts > 0 {
			out = append(out, "--moe-shared-expert-intermediate-size "+itoa(m.SharedExperts*m.SharedExpertFFN))
		}
		if m.DenseLayers > 0 || m.MoELayerStep > 1 {
			out = append(out, "--moe-layer-freq "+shellQuote(freqExpression(m.Layers, m.DenseLayers, max(m.MoELayerStep, 1))))
		}
		if m.RouterExpertBias {
			out = append(out, "--moe-router-enable-expert-bias")
		}
		out = append(out, "--moe-grouped-gemm")
	}
	if m.LearnedPositions {
		out = append(out, "--position-embedding-type learned_absolute")
	} else {
		out = append(out, "--position-embedding-type rope")
	}
	out = append(out, "--max-position-embeddings "+itoa(m.MaxContextTokens))
	if !m.TiedEmbeddings {
		out = append(out, "--untie-embeddings-and-output-weights")
	}
	out = append(out, "--vocab-size "+itoa(m.Vocab))
	if m.MTPLayers > 0 {
		out = append(out, "--mtp-num-layers "+itoa(m.MTPLayers))
	}
	out = append(out, "--normalization RMSNorm", "--disable-bias-linear")
	return out, nil
}

// freqExpression is --moe-layer-freq for dense leading layers and MoE
// every step-th layer after them.
func freqExpression(layers, dense, step int) string {
	var parts []string
	if dense > 0 {
		parts = append(parts, fmt.Sprintf("[0]*%d", dense))
	}
	rest := layers - dense
	if step == 1 {
		parts = append(parts, fmt.Sprintf("[1]*%d", rest))
	} else {
		if k := rest / step; k > 0 {
			parts = append(parts, fmt.Sprintf("([0]*%d+[1])*%d", step-1, k))
		}
		if r := rest % step; r > 0 {
			parts = append(parts, fmt.Sprintf("[0]*%d", r))
		}
	}
	return strings.Join(parts, "+")
}

// layoutString writes per-virtual-stage layer counts as Megatron-Core's
// layout string: the embedding before the first stage's layers, the loss
// after the last's.
func layoutString(counts []int) string {
	stages := make([]string, len(counts))
	for i, c := range counts {
		s := strings.Repeat("t", c)
		if c > 1 {
			s = "t*" + itoa(c)
		}
		if i == 0 {
			s = "E" + s
		}
		if i == len(counts)-1 {
			s += "L"
		}
		stages[i] = s
	}
	return strings.Join(stages, "|")
}

// memoryDegree is the least power-of-two CP degree whose budget holds a
// context (static CP's derived degree, sched.MemoryDegree).
func memoryDegree(context, budget int) int {
	d := 1
	for d*budget < context {
		d *= 2
	}
	return d
}

func writeArray(b *strings.Builder, name string, args []string) {
	fmt.Fprintf(b, "%s=(\n", name)
	for _, a := range args {
		fmt.Fprintf(b, "    %s\n", a)
	}
	b.WriteString(")\n")
}

// shellQuote quotes a word for the shell when it needs it.
func shellQuote(s string) string {
	if strings.ContainsAny(s, " *()[]|$\"'\\;&<>") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }
