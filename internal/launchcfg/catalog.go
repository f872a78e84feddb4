package launchcfg

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/job"
)

// Class is what the importer does with an argument.
type Class int

// The classes, in the order the listings give them.
const (
	// Mapped arguments set a scenario key, or say what the cost model
	// already prices (Note says which).
	Mapped Class = iota
	// NoEffect arguments change nothing a step's time depends on (Note
	// names the group: logging, checkpointing, data, ...).
	NoEffect
	// Refused arguments change the step in a way dcpsim does not model;
	// the import fails naming them.
	Refused
	// Unknown arguments are not in the catalog: the import fails unless
	// unknown arguments are ignored, and then they are listed.
	Unknown
)

// String names the class in listings.
func (c Class) String() string {
	return [...]string{"mapped", "no effect on timing", "refused", "unknown"}[c]
}

// arity is how many values a command-line argument takes.
type arity int

const (
	flagArity arity = iota // none
	oneArity               // exactly one
	manyArity              // one or more
	anyArity               // zero or more (arguments that only need skipping)
)

// spec is the catalog's entry for one argument.
type spec struct {
	class Class
	arity arity
	// apply records a Mapped argument's value.
	apply func(*settings, *arg) error
	// note says what a Mapped argument sets or how it is priced, the
	// group of a NoEffect one, or why a Refused one is refused.
	note string
	// approx marks a Mapped argument priced approximately (its note says
	// how): listed among the assumptions.
	approx bool
	// recipeOnly marks a recipe field with no command-line argument.
	recipeOnly bool
}

func mapped(a arity, to string, apply func(*settings, *arg) error) spec {
	return spec{class: Mapped, arity: a, note: to, apply: apply}
}

// priced is an argument whose setting is what the cost model prices.
func priced(a arity, how string) spec {
	return spec{class: Mapped, arity: a, note: "as priced: " + how}
}

// approx is an argument the cost model prices as something close.
func approx(a arity, how string) spec {
	return spec{class: Mapped, arity: a, note: "approximated: " + how, approx: true}
}

func noEffect(group string) spec { return spec{class: NoEffect, arity: anyArity, note: group} }

func refuse(a arity, why string) spec { return spec{class: Refused, arity: a, note: why} }

func recipe(s spec) spec { s.recipeOnly = true; return s }

// Field setters: an argument of one value (or a flag) sets one setting.

func intTo(f func(*settings) *setting[int], lo, hi int, to string) spec {
	return mapped(oneArity, to, func(s *settings, a *arg) error {
		v, err := a.int(lo, hi)
		if err != nil {
			return err
		}
		return put(f(s), v, a)
	})
}

func boolTo(f func(*settings) *setting[bool], to string) spec {
	return mapped(flagArity, to, func(s *settings, a *arg) error {
		v, err := a.bool()
		if err != nil {
			return err
		}
		return put(f(s), v, a)
	})
}

func choiceTo(f func(*settings) *setting[string], to string, allowed ...string) spec {
	return mapped(oneArity, to, func(s *settings, a *arg) error {
		v, err := a.choice(allowed...)
		if err != nil {
			return err
		}
		return put(f(s), v, a)
	})
}

// Bounds of the values arguments take: the job's where it has one.
const (
	maxWidth  = 1 << 20
	maxLayers = 1024
	maxTokens = job.MaxContextTokens
	maxBatch  = 1 << 24
)

// catalog is every argument by its command-line name without "--". A
// recipe key finds its entry by recipeName.
var catalog = map[string]spec{
	// The model.
	"num-layers":              intTo(func(s *settings) *setting[int] { return &s.layers }, 1, maxLayers, "model.layers"),
	"encoder-num-layers":      intTo(func(s *settings) *setting[int] { return &s.layers }, 1, maxLayers, "model.layers"),
	"hidden-size":             intTo(func(s *settings) *setting[int] { return &s.hidden }, 1, 65536, "model.hidden"),
	"ffn-hidden-size":         intTo(func(s *settings) *setting[int] { return &s.ffn }, 1, maxWidth, "model.dense_ffn"),
	"num-attention-heads":     intTo(func(s *settings) *setting[int] { return &s.heads }, 1, 1024, "model.query_heads"),
	"group-query-attention":   boolTo(func(s *settings) *setting[bool] { return &s.gqa }, "model.attention = \"gqa\""),
	"num-query-groups":        intTo(func(s *settings) *setting[int] { return &s.groups }, 1, 1024, "model.kv_heads"),
	"kv-channels":             intTo(func(s *settings) *setting[int] { return &s.kvChannels }, 1, 1024, "model.head_dim_qk, model.head_dim_v"),
	"multi-latent-attention":  boolTo(func(s *settings) *setting[bool] { return &s.mla }, "model.attention = \"mla\""),
	"q-lora-rank":             intTo(func(s *settings) *setting[int] { return &s.qLoRA }, 0, 65536, "model.q_lora_rank"),
	"kv-lora-rank":            intTo(func(s *settings) *setting[int] { return &s.kvLoRA }, 1, 65536, "model.kv_lora_rank"),
	"qk-head-dim":             intTo(func(s *settings) *setting[int] { return &s.qkHead }, 1, 1024, "model.qk_nope_head_dim"),
	"qk-pos-emb-head-dim":     intTo(func(s *settings) *setting[int] { return &s.qkPos }, 1, 1024, "model.qk_rope_head_dim"),
	"v-head-dim":              intTo(func(s *settings) *setting[int] { return &s.vHead }, 1, 1024, "model.head_dim_v"),
	"qk-layernorm":            boolTo(func(s *settings) *setting[bool] { return &s.qkNorm }, "model.qk_norm"),
	"attention-output-gate":   boolTo(func(s *settings) *setting[bool] { return &s.attnGate }, "model.gated_attention"),
	"swiglu":                  boolTo(func(s *settings) *setting[bool] { return &s.swiglu }, "model.activation = \"swiglu\""),
	"squared-relu":            boolTo(func(s *settings) *setting[bool] { return &s.squaredReLU }, "model.activation = \"squared-relu\""),
	"quick-geglu":             boolTo(func(s *settings) *setting[bool] { return &s.geglu }, "model.activation = \"geglu\""),
	"openai-gelu":             priced(flagArity, "GELU (its formula changes no cost)"),
	"position-embedding-type": choiceTo(func(s *settings) *setting[string] { return &s.posType }, "model.learned_positions", "learned_absolute", "rope", "yarn", "mrope", "relative", "none"),
	"use-rotary-position-embeddings": mapped(flagArity, "model.learned_positions = false", func(s *settings, a *arg) error {
		return put(&s.posType, "rope", a)
	}),
	"no-position-embedding": mapped(flagArity, "model.learned_positions = false", func(s *settings, a *arg) error {
		return put(&s.posType, "none", a)
	}),
	"max-position-embeddings":             intTo(func(s *settings) *setting[int] { return &s.maxPos }, 1, maxTokens, "model.max_context_tokens"),
	"untie-embeddings-and-output-weights": boolTo(func(s *settings) *setting[bool] { return &s.untie }, "model.tied_embeddings = false"),
	"vocab-size":                          intTo(func(s *settings) *setting[int] { return &s.vocab }, 1, 10_000_000, "model.vocab (padded as Megatron-LM pads it)"),
	"padded-vocab-size": mapped(oneArity, "model.vocab", func(s *settings, a *arg) error {
		v, err := a.int(1, 10_000_000)
		if err != nil {
			return err
		}
		if err := put(&s.vocab, v, a); err != nil {
			return err
		}
		return put(&s.padMultiple, 1, a)
	}),
	"make-vocab-size-divisible-by": intTo(func(s *settings) *setting[int] { return &s.padMultiple }, 1, 1<<20, "model.vocab (padding)"),
	"mtp-num-layers":               intTo(func(s *settings) *setting[int] { return &s.mtp }, 0, 16, "model.mtp_layers (recorded, not priced)"),
	"num-experts":                  intTo(func(s *settings) *setting[int] { return &s.experts }, 0, 4096, "model.routed_experts"),
	"moe-router-topk":              intTo(func(s *settings) *setting[int] { return &s.topK }, 1, 4096, "model.top_k"),
	"moe-ffn-hidden-size":          intTo(func(s *settings) *setting[int] { return &s.moeFFN }, 1, maxWidth, "model.expert_ffn"),
	"moe-shared-expert-intermediate-size": intTo(func(s *settings) *setting[int] { return &s.sharedFFN }, 1, maxWidth,
		"model.shared_experts = 1, model.shared_expert_ffn"),
	"moe-layer-freq":                mapped(oneArity, "model.dense_layers, model.moe_layer_step", applyMoEFreq),
	"moe-router-enable-expert-bias": boolTo(func(s *settings) *setting[bool] { return &s.expertBias }, "model.router_expert_bias"),

	// The layout.
	"tensor-model-parallel-size":            intTo(func(s *settings) *setting[int] { return &s.tp }, 1, job.MaxTP, "parallel.tp"),
	"pipeline-model-parallel-size":          intTo(func(s *settings) *setting[int] { return &s.pp }, 1, job.MaxPP, "parallel.pp"),
	"num-layers-per-virtual-pipeline-stage": intTo(func(s *settings) *setting[int] { return &s.vppLayers }, 1, maxLayers, "parallel.vpp"),
	"num-virtual-stages-per-pipeline-rank":  intTo(func(s *settings) *setting[int] { return &s.vppStages }, 1, job.MaxVPP, "parallel.vpp"),
	"pipeline-model-parallel-layout":        mapped(oneArity, "parallel.pipeline_layout, parallel.vpp", applyLayout),
	"decoder-first-pipeline-num-layers":     intTo(func(s *settings) *setting[int] { return &s.first }, 1, maxLayers, "parallel.first_stage_layers"),
	"decoder-last-pipeline-num-layers":      intTo(func(s *settings) *setting[int] { return &s.last }, 1, maxLayers, "parallel.last_stage_layers"),
	"account-for-embedding-in-pipeline-split": boolTo(func(s *settings) *setting[bool] { return &s.accEmbedding },
		"parallel.pipeline_layout (the embedding counts as a layer)"),
	"account-for-loss-in-pipeline-split": boolTo(func(s *settings) *setting[bool] { return &s.accLoss },
		"parallel.pipeline_layout (the loss counts as a layer)"),
	"microbatch-group-size-per-virtual-pipeline-stage": mapped(oneArity, "as priced when it is pp (Megatron's default)", func(s *settings, a *arg) error {
		v, err := a.int(1, 1<<20)
		if err != nil {
			return err
		}
		s.mbGroup = setting[int]{v: v, src: a.src, set: true}
		return nil
	}),
	"context-parallel-size": intTo(func(s *settings) *setting[int] { return &s.cp }, 1, job.MaxGPUs, "run.options.static.degree"),
	"cp-comm-type": mapped(manyArity, "how static CP exchanges K/V (run.options.static.ring, costs.cp_exec.static)", func(s *settings, a *arg) error {
		v, err := a.list()
		if err != nil {
			return err
		}
		for _, t := range v {
			if !slices.Contains([]string{"p2p", "a2a", "allgather", "a2a+p2p"}, t) {
				return a.errf("%q: must be p2p, a2a, allgather or a2a+p2p", t)
			}
		}
		return put(&s.cpComm, v, a)
	}),
	"hierarchical-context-parallel-sizes": mapped(manyArity, "costs.cp_exec.static = \"ulysses-ring\"", func(s *settings, a *arg) error {
		v, err := a.ints(1, job.MaxGPUs)
		if err != nil {
			return err
		}
		return put(&s.hierCP, v, a)
	}),
	"hybrid-context-parallel":     boolTo(func(s *settings) *setting[bool] { return &s.hybridCP }, "run.policies = [\"mcore\"] (Megatron-Core's dynamic CP)"),
	"max-seqlen-per-dp-cp-rank":   intTo(func(s *settings) *setting[int] { return &s.maxSeqlenPerRank }, 1, job.MaxBudgetTokens, "parallel.budget_tokens (with --hybrid-context-parallel)"),
	"expert-model-parallel-size":  intTo(func(s *settings) *setting[int] { return &s.ep }, 1, job.MaxGPUs, "parallel.ep"),
	"expert-tensor-parallel-size": intTo(func(s *settings) *setting[int] { return &s.etp }, 1, job.MaxTP, "parallel.etp"),
	"sequence-parallel":           boolTo(func(s *settings) *setting[bool] { return &s.sp }, "parallel.sequence_parallel"),
	"tp-comm-overlap":             boolTo(func(s *settings) *setting[bool] { return &s.tpOverlap }, "parallel.tp_comm_overlap"),
	"use-distributed-optimizer":   boolTo(func(s *settings) *setting[bool] { return &s.distOpt }, "parallel.grad_sync = \"reduce-scatter\""),
	"overlap-grad-reduce":         boolTo(func(s *settings) *setting[bool] { return &s.overlapGrad }, "parallel.overlap_grad_reduce"),
	"overlap-param-gather":        boolTo(func(s *settings) *setting[bool] { return &s.overlapParam }, "parallel.overlap_param_gather"),
	"grad-reduce-in-bf16":         boolTo(func(s *settings) *setting[bool] { return &s.gradBF16 }, "parallel.grad_reduce_fp32 = false"),
	"use-megatron-fsdp":           mapped(flagArity, "parallel.grad_sync = \"fsdp-reshard\" (with --data-parallel-sharding-strategy)", func(s *settings, a *arg) error { return fsdpFlag(s, a, "megatron") }),
	"use-torch-fsdp2":             mapped(flagArity, "parallel.grad_sync = \"fsdp-reshard\" (\"fsdp\" without resharding)", func(s *settings, a *arg) error { return fsdpFlag(s, a, "torch") }),
	"data-parallel-sharding-strategy": choiceTo(func(s *settings) *setting[string] { return &s.shardingStrategy }, "parallel.grad_sync (with FSDP)",
		"no_shard", "optim", "optim_grads", "optim_grads_params"),
	"torch-fsdp2-no-reshard-after-forward": boolTo(func(s *settings) *setting[bool] { return &s.fsdp2NoReshard }, "parallel.grad_sync = \"fsdp\""),
	"overlap-moe-expert-parallel-comm":     boolTo(func(s *settings) *setting[bool] { return &s.overlapMoE }, "parallel.overlap_moe_comm"),
	"moe-token-dispatcher-type": choiceTo(func(s *settings) *setting[string] { return &s.dispatcher }, "parallel.moe_dispatcher",
		"allgather", "alltoall", "flex"),
	"moe-enable-deepep":                boolTo(func(s *settings) *setting[bool] { return &s.deepEP }, "parallel.moe_dispatcher = \"deepep\""),
	"moe-flex-dispatcher-backend":      choiceTo(func(s *settings) *setting[string] { return &s.flexBackend }, "parallel.moe_dispatcher", "deepep", "hybridep"),
	"moe-expert-capacity-factor":       mapped(oneArity, "parallel.moe_capacity_factor (with padding)", applyCapacity),
	"moe-expert-rank-capacity-factor":  mapped(oneArity, "parallel.moe_capacity_factor (with padding)", applyRankCapacity),
	"moe-pad-expert-input-to-capacity": boolTo(func(s *settings) *setting[bool] { return &s.padCapacity }, "parallel.moe_capacity_factor"),

	// The batch.
	"micro-batch-size":         intTo(func(s *settings) *setting[int] { return &s.mbs }, 1, maxBatch, "parallel.budget_tokens = micro-batch · seq-length / CP"),
	"global-batch-size":        intTo(func(s *settings) *setting[int] { return &s.gbs }, 1, maxBatch, "workload.batch_tokens = global-batch · seq-length"),
	"seq-length":               intTo(func(s *settings) *setting[int] { return &s.seq }, 1, maxTokens, "workload.context_tokens and every sequence's length"),
	"encoder-seq-length":       intTo(func(s *settings) *setting[int] { return &s.seq }, 1, maxTokens, "workload.context_tokens and every sequence's length"),
	"rampup-batch-size":        refuse(manyArity, "the batch grows over the run; dcpsim simulates one batch size (simulate each size as its own job)"),
	"step-batch-size-schedule": refuse(anyArity, "the batch changes over the run; dcpsim simulates one batch size"),

	// Precision.
	"bf16":                              boolTo(func(s *settings) *setting[bool] { return &s.bf16 }, "parallel.precision = \"bf16\""),
	"fp16":                              boolTo(func(s *settings) *setting[bool] { return &s.fp16 }, "parallel.precision = \"bf16\" (FP16 runs at the BF16 rate)"),
	"fp8-format":                        choiceTo(func(s *settings) *setting[string] { return &s.fp8 }, "parallel.precision = \"fp8\"", "e4m3", "hybrid"),
	"fp8-recipe":                        choiceTo(func(s *settings) *setting[string] { return &s.fp8Recipe }, "parallel.precision (\"mxfp8\" for mxfp8)", "delayed", "tensorwise", "mxfp8", "blockwise", "custom"),
	"fp8-param-gather":                  approx(flagArity, "parameter all-gathers priced in BF16 (FP8 halves them)"),
	"fp8-margin":                        noEffect("FP8 numerics"),
	"fp8-interval":                      noEffect("FP8 numerics"),
	"fp8-amax-history-len":              noEffect("FP8 numerics"),
	"fp8-amax-compute-algo":             noEffect("FP8 numerics"),
	"fp8-output-proj":                   noEffect("FP8 numerics"),
	"fp8-quantizer-factory":             refuse(oneArity, "a custom FP8 quantizer's cost is unknown"),
	"no-fp8-wgrad":                      approx(flagArity, "weight gradients priced in FP8 (this keeps them in BF16)"),
	"disable-fp8-wgrad":                 approx(flagArity, "weight gradients priced in FP8 (this keeps them in BF16)"),
	"first-last-layers-bf16":            approx(flagArity, "every layer priced in FP8 (this keeps the first and last in BF16)"),
	"num-layers-at-start-in-bf16":       approx(oneArity, "every layer priced in FP8"),
	"num-layers-at-end-in-bf16":         approx(oneArity, "every layer priced in FP8"),
	"fp4-format":                        refuse(oneArity, "FP4 GEMMs are not priced"),
	"fp4-recipe":                        refuse(oneArity, "FP4 GEMMs are not priced"),
	"fp4-param-gather":                  refuse(flagArity, "FP4 is not priced"),
	"fp4-quantizer-factory":             refuse(oneArity, "FP4 is not priced"),
	"te-precision-config-file":          refuse(oneArity, "a per-layer precision file is not read"),
	"kitchen-config-file":               refuse(oneArity, "custom quantization recipes are not priced"),
	"kitchen-recipe-number":             refuse(oneArity, "custom quantization recipes are not priced"),
	"kitchen-attention-backend":         refuse(oneArity, "custom attention kernels are not priced"),
	"use-kitchen-attention":             refuse(flagArity, "custom attention kernels are not priced"),
	"reuse-grad-buf-for-mxfp8-param-ag": priced(flagArity, "a memory reuse; the gather is priced as is"),
	"loss-scale":                        noEffect("mixed-precision numerics"),
	"initial-loss-scale":                noEffect("mixed-precision numerics"),
	"min-loss-scale":                    noEffect("mixed-precision numerics"),
	"loss-scale-window":                 noEffect("mixed-precision numerics"),
	"hysteresis":                        noEffect("mixed-precision numerics"),
	"accumulate-allreduce-grads-in-fp32": mapped(flagArity, "parallel.grad_reduce_fp32", func(s *settings, a *arg) error {
		v, err := a.bool()
		if err != nil {
			return err
		}
		return put(&s.gradFP32, v, a)
	}),
	"attention-softmax-in-fp32":     noEffect("numerics"),
	"apply-query-key-layer-scaling": noEffect("numerics"),
	"fp16-lm-cross-entropy":         noEffect("numerics"),
	"fp32-residual-connection":      approx(flagArity, "residuals priced in BF16"),
	"main-grads-dtype":              approx(oneArity, "the memory model keeps FP32 main gradients"),
	"main-params-dtype":             approx(oneArity, "the memory model keeps FP32 main parameters"),
	"exp-avg-dtype":                 approx(oneArity, "the memory model keeps FP32 Adam moments"),
	"exp-avg-sq-dtype":              approx(oneArity, "the memory model keeps FP32 Adam moments"),
	"use-precision-aware-optimizer": approx(flagArity, "the memory model keeps FP32 optimizer states"),

	// Recomputation.
	"recompute-granularity": choiceTo(func(s *settings) *setting[string] { return &s.granularity }, "parallel.recompute", "full", "selective"),
	"recompute-method":      choiceTo(func(s *settings) *setting[string] { return &s.method }, "parallel.recompute_layers", "uniform", "block"),
	"recompute-num-layers":  intTo(func(s *settings) *setting[int] { return &s.recomputeNum }, 1, maxLayers, "parallel.recompute_layers"),
	"recompute-activations": boolTo(func(s *settings) *setting[bool] { return &s.recomputeActivations }, "parallel.recompute = \"selective\""),
	"recompute-modules": mapped(manyArity, "parallel.recompute = \"selective\"", func(s *settings, a *arg) error {
		v, err := a.list()
		if err != nil {
			return err
		}
		for _, m := range v {
			if !slices.Contains(recomputeModules, m) {
				return a.errf("module %q: must be one of %s", m, strings.Join(recomputeModules, ", "))
			}
		}
		return put(&s.modules, v, a)
	}),
	"checkpoint-activations":       refuse(flagArity, "Megatron-LM no longer accepts it: use --recompute-granularity full --recompute-method uniform"),
	"distribute-saved-activations": refuse(flagArity, "the memory model does not split recompute checkpoints over TP"),
	"moe-layer-recompute":          refuse(flagArity, "recomputing whole MoE layers is not modelled (use --recompute-modules moe)"),
	"mhc-recompute-layer-num":      refuse(oneArity, "hyper-connections are not modelled"),

	// Kernels and overlaps the cost model prices as they are.
	"use-flash-attn":                                      priced(flagArity, "FlashAttention core attention"),
	"attention-backend":                                   mapped(oneArity, "as priced: FlashAttention core attention (flash, fused or auto)", applyAttentionBackend),
	"flash-attention-version":                             priced(oneArity, "FlashAttention core attention"),
	"transformer-impl":                                    mapped(oneArity, "as priced: Transformer Engine layers", applyTransformerImpl),
	"use-mcore-models":                                    priced(flagArity, "Megatron-Core's GPT model"),
	"use-transformer-engine-op-fuser":                     priced(flagArity, "fused kernels are not priced apart"),
	"use-te-activation-func":                              priced(flagArity, "fused kernels are not priced apart"),
	"fused-residual-rmsnorm":                              priced(flagArity, "fused kernels are not priced apart"),
	"no-masked-softmax-fusion":                            priced(flagArity, "fused kernels are not priced apart"),
	"no-bias-gelu-fusion":                                 priced(flagArity, "fused kernels are not priced apart"),
	"no-bias-swiglu-fusion":                               priced(flagArity, "fused kernels are not priced apart"),
	"no-bias-dropout-fusion":                              priced(flagArity, "fused kernels are not priced apart"),
	"no-rope-fusion":                                      priced(flagArity, "fused kernels are not priced apart"),
	"no-persist-layer-norm":                               priced(flagArity, "fused kernels are not priced apart"),
	"no-gradient-accumulation-fusion":                     priced(flagArity, "fused kernels are not priced apart"),
	"no-gradient-reduce-div-fusion":                       priced(flagArity, "fused kernels are not priced apart"),
	"cross-entropy-loss-fusion":                           priced(flagArity, "the loss is not priced apart"),
	"cross-entropy-fusion-impl":                           priced(oneArity, "the loss is not priced apart"),
	"mla-down-proj-fusion":                                priced(flagArity, "fused kernels are not priced apart"),
	"moe-grouped-gemm":                                    priced(flagArity, "experts as grouped GEMMs"),
	"moe-use-legacy-grouped-gemm":                         priced(flagArity, "experts as grouped GEMMs"),
	"moe-use-grouped-tensor":                              priced(flagArity, "experts as grouped GEMMs"),
	"moe-single-grouped-weight":                           priced(flagArity, "experts as grouped GEMMs"),
	"moe-single-grouped-bias":                             priced(flagArity, "experts as grouped GEMMs"),
	"use-grouped-gemm-for-dense-mlp":                      priced(flagArity, "GEMMs priced by shape"),
	"use-grouped-gemm-for-shared-expert":                  priced(flagArity, "GEMMs priced by shape"),
	"moe-permute-fusion":                                  priced(flagArity, "token permutation is not priced apart"),
	"moe-permute-fusion-into-hybridep":                    priced(flagArity, "token permutation is not priced apart"),
	"moe-router-fusion":                                   priced(flagArity, "the router is priced as a GEMM"),
	"moe-router-padding-for-fp8":                          priced(flagArity, "padding is not priced apart"),
	"moe-router-padding-for-quantization":                 priced(flagArity, "padding is not priced apart"),
	"moe-router-force-load-balancing":                     priced(flagArity, "routing is priced uniform over the experts"),
	"moe-deepep-num-sms":                                  priced(oneArity, "the dispatcher's calibrated rate"),
	"moe-flex-dispatcher-num-sms":                         priced(oneArity, "the dispatcher's calibrated rate"),
	"moe-hybridep-num-sms":                                priced(oneArity, "the dispatcher's calibrated rate"),
	"moe-hybridep-num-sms-preprocessing":                  priced(oneArity, "the dispatcher's calibrated rate"),
	"moe-hybridep-num-blocks-permute":                     priced(oneArity, "the dispatcher's calibrated rate"),
	"moe-hybridep-num-blocks-unpermute":                   priced(oneArity, "the dispatcher's calibrated rate"),
	"moe-hybridep-pad-uneven-dispatch-inputs":             priced(flagArity, "the dispatcher's calibrated rate"),
	"moe-ncclep-zero-copy":                                priced(flagArity, "the dispatcher's calibrated rate"),
	"moe-dispatch-fwd-dtype":                              approx(oneArity, "the dispatch priced in FP8 with FP8 training, else BF16"),
	"moe-combine-bwd-dtype":                               approx(oneArity, "the combine priced in BF16"),
	"moe-shared-expert-overlap":                           approx(flagArity, "shared experts priced after the dispatch, not beside it"),
	"delay-wgrad-compute":                                 priced(flagArity, "part of the MoE communication overlap (parallel.overlap_moe_comm)"),
	"overlap-dispatch-backward-with-experts-wgrad":        priced(flagArity, "part of the MoE communication overlap (parallel.overlap_moe_comm)"),
	"ep-overlap-early-attn-memory-release":                priced(flagArity, "part of the MoE communication overlap (parallel.overlap_moe_comm)"),
	"high-priority-a2a-comm-stream":                       priced(anyArity, "stream priorities are not priced"),
	"high-priority-stream-groups":                         priced(anyArity, "stream priorities are not priced"),
	"tp-comm-overlap-cfg":                                 priced(oneArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"tp-comm-bootstrap-backend":                           priced(oneArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"tp-comm-overlap-rs-dgrad":                            priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"no-tp-comm-overlap-ag":                               priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"no-tp-comm-overlap-rs":                               priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"no-tp-comm-bulk-dgrad":                               priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"no-tp-comm-bulk-wgrad":                               priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"no-tp-comm-split-ag":                                 priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"no-tp-comm-split-rs":                                 priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"disable-tp-comm-overlap-ag":                          priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"disable-tp-comm-overlap-rs":                          priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"disable-tp-comm-bulk-dgrad":                          priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"disable-tp-comm-bulk-wgrad":                          priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"disable-tp-comm-split-ag":                            priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"disable-tp-comm-split-rs":                            priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated"),
	"overlap-param-gather-with-optimizer-step":            priced(flagArity, "parameter all-gathers overlap as parallel.overlap_param_gather says"),
	"no-align-param-gather":                               priced(flagArity, "parameter all-gathers overlap as parallel.overlap_param_gather says"),
	"disable-align-grad-reduce":                           priced(flagArity, "gradient reduction overlaps as parallel.overlap_grad_reduce says"),
	"no-align-grad-reduce":                                priced(flagArity, "gradient reduction overlaps as parallel.overlap_grad_reduce says"),
	"ddp-num-buckets":                                     priced(oneArity, "gradient buckets are not priced apart"),
	"ddp-bucket-size":                                     priced(oneArity, "gradient buckets are not priced apart"),
	"ddp-pad-buckets-for-high-nccl-busbw":                 priced(flagArity, "gradient buckets are not priced apart"),
	"ddp-average-in-collective":                           priced(flagArity, "the gradient collective as priced"),
	"ddp-reduce-scatter-with-fp32-accumulation":           priced(flagArity, "the gradient collective as priced"),
	"ddp-param-name-patterns-for-fp32-local-accumulation": priced(anyArity, "the gradient collective as priced"),
	"use-nccl-ub":                                         priced(flagArity, "collectives at their calibrated rates"),
	"disable-symmetric-registration":                      priced(flagArity, "collectives at their calibrated rates"),
	"create-all-gather-group":                             priced(flagArity, "collectives at their calibrated rates"),
	"use-sharp":                                           priced(flagArity, "collectives at their calibrated rates"),
	"sharp-enabled-group":                                 priced(oneArity, "collectives at their calibrated rates"),
	"symmetric-ar-type":                                   priced(oneArity, "collectives at their calibrated rates"),
	"nccl-communicator-config-path":                       priced(oneArity, "collectives at their calibrated rates"),
	"defer-embedding-wgrad-compute":                       priced(flagArity, "the embedding's gradient is not priced apart"),
	"wgrad-deferral-limit":                                priced(oneArity, "the embedding's gradient is not priced apart"),
	"fsdp-double-buffer":                                  priced(flagArity, "FSDP's collectives as priced"),
	"fsdp-manual-registration":                            priced(flagArity, "FSDP's collectives as priced"),
	"suggested-communication-unit-size":                   priced(oneArity, "FSDP's collectives as priced"),
	"keep-fp8-transpose-cache":                            priced(flagArity, "FSDP's collectives as priced"),
	"megatron-fsdp-version":                               priced(oneArity, "FSDP's collectives as priced"),
	"megatron-fsdp-main-grads-dtype":                      approx(oneArity, "the memory model keeps FP32 main gradients"),
	"megatron-fsdp-main-params-dtype":                     approx(oneArity, "the memory model keeps FP32 main parameters"),
	"megatron-fsdp-enable-fine-grained-param-gather":      priced(flagArity, "FSDP's collectives as priced"),
	"no-use-layer-wise-param-layout":                      priced(flagArity, "the optimizer's layout is not priced apart"),
	"enable-cuda-graph":                                   priced(flagArity, "kernel launches are not priced (as under CUDA graphs)"),
	"external-cuda-graph":                                 priced(flagArity, "kernel launches are not priced (as under CUDA graphs)"),
	"cuda-graph-impl":                                     priced(oneArity, "kernel launches are not priced (as under CUDA graphs)"),
	"cuda-graph-scope":                                    priced(anyArity, "kernel launches are not priced (as under CUDA graphs)"),
	"cuda-graph-modules":                                  priced(anyArity, "kernel launches are not priced (as under CUDA graphs)"),
	"cuda-graph-warmup-steps":                             priced(oneArity, "kernel launches are not priced (as under CUDA graphs)"),
	"optimizer-cuda-graph":                                priced(flagArity, "kernel launches are not priced (as under CUDA graphs)"),
	"moe-pad-experts-for-cuda-graph-inference":            noEffect("inference only"),
	"normalization":                                       priced(oneArity, "norms are priced as RMSNorm"),
	"apply-layernorm-1p":                                  priced(flagArity, "norms are priced as RMSNorm"),
	"disable-bias-linear":                                 priced(flagArity, "linear-layer biases are not priced (under 0.1% of a layer)"),
	"add-qkv-bias":                                        priced(flagArity, "linear-layer biases are not priced (under 0.1% of a layer)"),
	"overlap-p2p-communication-warmup-flush":              priced(flagArity, "pipeline transfers as the schedule prices them"),
	"pipeline-model-parallel-comm-backend":                priced(oneArity, "pipeline transfers as the schedule prices them"),
	"use-ring-exchange-p2p":                               priced(flagArity, "pipeline transfers as the schedule prices them"),
	"use-tp-pp-dp-mapping":                                priced(flagArity, "ranks are placed as dcpsim places them (TP inside a node)"),
	"optimizer": mapped(oneArity, "as priced: Adam (the optimizer step at 28 bytes a parameter)", func(_ *settings, a *arg) error {
		if _, err := a.choice("adam", "adamw", "hybridadam"); err != nil {
			return fmt.Errorf("%w (another optimizer's step is not priced)", err)
		}
		return nil
	}),

	// Refused: what dcpsim does not model.
	"model-parallel-size": refuse(oneArity, "Megatron-LM no longer accepts it: use --tensor-model-parallel-size"),
	"num-distributed-optimizer-instances": mapped(oneArity, "as priced when 1 (one optimizer shard per data-parallel rank)", func(_ *settings, a *arg) error {
		if _, err := a.int(1, 1); err != nil {
			return fmt.Errorf("%w: several distributed-optimizer instances are not modelled", err)
		}
		return nil
	}),
	"outer-dp-sharding-strategy": mapped(oneArity, "as priced when no_shard", func(_ *settings, a *arg) error {
		if _, err := a.choice("no_shard"); err != nil {
			return fmt.Errorf("%w: hybrid sharded data parallelism is not modelled", err)
		}
		return nil
	}),
	"enable-full-sharding-in-hsdp":                    refuse(flagArity, "hybrid sharded data parallelism is not modelled"),
	"tensor-parallel-num-weight-shards":               refuse(oneArity, "sharded TP weights (GTP) are not modelled"),
	"expert-tensor-parallel-num-weight-shards":        refuse(oneArity, "sharded expert weights (GTP) are not modelled"),
	"gtp-remat-opt-in-modules":                        refuse(anyArity, "sharded TP weights (GTP) are not modelled"),
	"gtp-remat-nccl-ub":                               refuse(flagArity, "sharded TP weights (GTP) are not modelled"),
	"gtp-expert-remat-nccl-ub":                        refuse(flagArity, "sharded TP weights (GTP) are not modelled"),
	"gtp-remat-reduce-scatter-with-fp32-accumulation": refuse(flagArity, "sharded TP weights (GTP) are not modelled"),
	"cpu-offloading-num-layers":                       refuse(oneArity, "activation offloading to the host is not modelled"),
	"cpu-offloading-retain-pinned-cpu-buffers":        refuse(flagArity, "activation offloading to the host is not modelled"),
	"fine-grained-activation-offloading":              refuse(flagArity, "activation offloading to the host is not modelled"),
	"fine-grained-offloading-max-inflight-offloads":   refuse(oneArity, "activation offloading to the host is not modelled"),
	"offload-modules":                                 refuse(anyArity, "activation offloading to the host is not modelled"),
	"activation-offload-fraction":                     refuse(oneArity, "activation offloading to the host is not modelled"),
	"min-offloaded-tensor-size":                       refuse(oneArity, "activation offloading to the host is not modelled"),
	"delay-offload-until-cuda-graph":                  refuse(flagArity, "activation offloading to the host is not modelled"),
	"delta-offload-bytes-across-pp-ranks":             refuse(oneArity, "activation offloading to the host is not modelled"),
	"moe-paged-stash":                                 refuse(flagArity, "activation offloading to the host is not modelled"),
	"moe-paged-stash-buffer-size-factor-cpu":          refuse(oneArity, "activation offloading to the host is not modelled"),
	"moe-paged-stash-buffer-size-factor-cuda":         refuse(oneArity, "activation offloading to the host is not modelled"),
	"moe-paged-stash-page-size":                       refuse(oneArity, "activation offloading to the host is not modelled"),
	"optimizer-cpu-offload":                           refuse(flagArity, "the optimizer on the host is not modelled"),
	"optimizer-offload-fraction":                      refuse(oneArity, "the optimizer on the host is not modelled"),
	"overlap-cpu-optimizer-d2h-h2d":                   refuse(flagArity, "the optimizer on the host is not modelled"),
	"use-torch-optimizer-for-cpu-offload":             refuse(flagArity, "the optimizer on the host is not modelled"),
	"window-size":                                     refuse(oneArity, "sliding-window attention is not modelled (attention is priced causal over the whole sequence)"),
	"window-attn-skip-freq":                           refuse(oneArity, "sliding-window attention is not modelled"),
	"experimental-attention-variant":                  refuse(oneArity, "attention variants other than MHA, GQA and MLA are not modelled"),
	"linear-attention-freq":                           refuse(oneArity, "linear attention layers are not modelled"),
	"linear-conv-kernel-dim":                          refuse(oneArity, "linear attention layers are not modelled"),
	"linear-key-head-dim":                             refuse(oneArity, "linear attention layers are not modelled"),
	"linear-value-head-dim":                           refuse(oneArity, "linear attention layers are not modelled"),
	"linear-num-key-heads":                            refuse(oneArity, "linear attention layers are not modelled"),
	"linear-num-value-heads":                          refuse(oneArity, "linear attention layers are not modelled"),
	"hybrid-layer-pattern":                            refuse(oneArity, "Mamba and hybrid layers are not modelled"),
	"hybrid-override-pattern":                         refuse(oneArity, "Mamba and hybrid layers are not modelled"),
	"is-hybrid-model":                                 refuse(flagArity, "Mamba and hybrid layers are not modelled"),
	"heterogeneous-layers-config-path":                refuse(oneArity, "layers of different shapes are not modelled"),
	"heterogeneous-layers-config-encoded-json":        refuse(oneArity, "layers of different shapes are not modelled"),
	"moe-latent-size":                                 refuse(oneArity, "latent MoE is not modelled"),
	"enable-mhc-connections":                          refuse(flagArity, "hyper-connections are not modelled"),
	"mhc-num-residual-streams":                        refuse(oneArity, "hyper-connections are not modelled"),
	"mtp-standalone":                                  refuse(flagArity, "MTP layers are recorded, not priced: a stage of its own would be empty"),
	"mtp-hybrid-override-pattern":                     refuse(oneArity, "Mamba and hybrid layers are not modelled"),
	"freeze-all-layers":                               refuse(flagArity, "frozen layers skip their weight gradients, which dcpsim prices"),
	"sft":                                             noEffect("data (supervised fine-tuning packs its data; the layers are the same)"),
	"relative-attention-num-buckets":                  refuse(oneArity, "relative position attention is not modelled"),
	"relative-attention-max-distance":                 refuse(oneArity, "relative position attention is not modelled"),
	"mrope-section":                                   noEffect("position encoding numerics"),
	"qk-l2-norm":                                      priced(flagArity, "norms are priced as in model.qk_norm"),
	"no-multi-latent-attention": mapped(flagArity, "model.attention (not \"mla\")", func(s *settings, a *arg) error {
		return put(&s.mla, false, a)
	}),
	"disable-multi-latent-attention": mapped(flagArity, "model.attention (not \"mla\")", func(s *settings, a *arg) error {
		return put(&s.mla, false, a)
	}),
	"batch-size":                      refuse(oneArity, "Megatron-LM no longer accepts it: use --micro-batch-size"),
	"decoder-num-layers":              refuse(oneArity, "encoder-decoder models are not modelled (a GPT takes --num-layers)"),
	"decoder-seq-length":              refuse(oneArity, "encoder-decoder models are not modelled (a GPT takes --seq-length)"),
	"no-overlap-p2p-communication":    approx(flagArity, "pipeline transfers priced as dcpsim's interleaved schedule runs them"),
	"mlp-chunks-for-training":         approx(oneArity, "the FFN priced as one GEMM chain"),
	"use-fused-weighted-squared-relu": priced(flagArity, "fused kernels are not priced apart"),
}

// refusedPrefixes are families of arguments for layers dcpsim does not
// model, by the start of their name.
var refusedPrefixes = []struct{ prefix, why string }{
	{"dsa-", "DeepSeek sparse attention is not modelled"},
	{"no-dsa-", "DeepSeek sparse attention is not modelled"},
	{"disable-dsa-", "DeepSeek sparse attention is not modelled"},
	{"mamba-", "Mamba and hybrid layers are not modelled"},
	{"disable-mamba-", "Mamba and hybrid layers are not modelled"},
	{"mhc-", "hyper-connections are not modelled"},
}

// recomputeModules are Megatron-LM's --recompute-modules.
var recomputeModules = []string{"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"}

// noEffectPrefixes are families of arguments with no effect on the step
// time, by the start of their name; the catalog's entries come first.
var noEffectPrefixes = []struct{ prefix, group string }{
	{"log-", "logging"}, {"logging-", "logging"}, {"wandb-", "logging"}, {"tensorboard-", "logging"},
	{"one-logger", "logging"}, {"no-one-logger", "logging"}, {"otel-", "logging"}, {"timing-log-", "logging"},
	{"straggler-", "straggler detection"}, {"disable-straggler-", "straggler detection"}, {"log-straggler", "straggler detection"},
	{"save", "checkpointing"}, {"load", "checkpointing"}, {"ckpt-", "checkpointing"}, {"dist-ckpt-", "checkpointing"},
	{"async-", "checkpointing"}, {"non-persistent-", "checkpointing"}, {"no-save-", "checkpointing"}, {"no-load-", "checkpointing"},
	{"disable-save-", "checkpointing"}, {"disable-load-", "checkpointing"}, {"use-checkpoint-", "checkpointing"},
	{"override-ckpt-", "checkpointing"}, {"no-ckpt-", "checkpointing"}, {"disable-ckpt-", "checkpointing"}, {"use-dist-ckpt", "checkpointing"},
	{"pretrained-checkpoint", "checkpointing"}, {"finetune", "checkpointing"}, {"persistent-save-", "checkpointing"},
	{"auto-detect-ckpt-format", "checkpointing"}, {"exit-on-missing-checkpoint", "checkpointing"}, {"use-persistent-ckpt-worker", "checkpointing"},
	{"lr", "learning rate"}, {"min-lr", "learning rate"}, {"decoupled-lr", "learning rate"}, {"decoupled-min-lr", "learning rate"},
	{"warmup", "learning rate"}, {"wsd-", "learning rate"}, {"override-opt", "learning rate"}, {"head-lr-mult", "learning rate"},
	{"weight-decay", "optimizer hyperparameters"}, {"start-weight-decay", "optimizer hyperparameters"},
	{"end-weight-decay", "optimizer hyperparameters"}, {"wd-incr-", "optimizer hyperparameters"}, {"no-weight-decay-", "optimizer hyperparameters"},
	{"apply-wd-to-", "optimizer hyperparameters"}, {"adam-", "optimizer hyperparameters"}, {"sgd-", "optimizer hyperparameters"},
	{"lion-", "optimizer hyperparameters"}, {"clip-grad", "optimizer hyperparameters"}, {"mup-", "optimizer hyperparameters"},
	{"use-mup", "optimizer hyperparameters"}, {"qk-clip", "optimizer hyperparameters"},
	{"init-method-", "initialization"}, {"embedding-init-method-", "initialization"}, {"use-cpu-initialization", "initialization"},
	{"no-initialization", "initialization"}, {"data-parallel-random-init", "initialization"}, {"init-model-with-meta-device", "initialization"},
	{"lazy-mpu-init", "initialization"}, {"perform-initialization", "initialization"}, {"te-rng-tracker", "initialization"},
	{"seed", "randomness"}, {"use-same-sampling-seed", "randomness"}, {"inference-rng-tracker", "randomness"},
	{"attention-dropout", "regularization"}, {"hidden-dropout", "regularization"},
	{"data-", "data"}, {"dataloader-", "data"}, {"train-data-path", "data"}, {"valid-data-path", "data"}, {"test-data-path", "data"},
	{"split", "data"}, {"mock-data", "data"}, {"num-workers", "data"}, {"num-dataset-builder-threads", "data"},
	{"per-split-data-args-path", "data"}, {"per-dataset-sequences-path", "data"}, {"mid-level-dataset-surplus", "data"},
	{"reset-position-ids", "data"}, {"reset-attention-mask", "data"}, {"eod-mask-loss", "data"}, {"no-create-attention-mask", "data"},
	{"create-attention-mask", "data"}, {"no-mmap-bin-files", "data"}, {"object-storage-", "data"}, {"fim-", "data"},
	{"no-data-sharding", "data"}, {"phase-transition-iterations", "data"}, {"sample-rate", "data"}, {"mask-prob", "data"},
	{"short-seq-prob", "data"}, {"vocab-extra-ids", "data"}, {"sft-tokenizer-", "data"}, {"chat-template", "data"},
	{"tokenizer-", "tokenizer"}, {"null-tokenizer-", "tokenizer"}, {"vocab-file", "tokenizer"}, {"merge-file", "tokenizer"},
	{"tiktoken-", "tokenizer"}, {"no-tokenizer-", "tokenizer"}, {"disable-tokenizer-", "tokenizer"}, {"trust-remote-code", "tokenizer"},
	{"no-use-tokenizer-model-", "tokenizer"}, {"disable-use-tokenizer-model-", "tokenizer"},
	{"train-iters", "run length"}, {"train-samples", "run length"}, {"exit-", "run length"}, {"iterations-to-skip", "run length"},
	{"skip-train", "run length"}, {"iter-per-epoch", "run length"}, {"train-sync-interval", "run length"},
	{"eval-", "evaluation"}, {"full-validation", "evaluation"}, {"multiple-validation-sets", "evaluation"},
	{"validation-set-names", "evaluation"}, {"start-eval-at-iter", "evaluation"}, {"skip-eval", "evaluation"},
	{"profile", "profiling"}, {"pytorch-profiler-", "profiling"}, {"use-pytorch-profiler", "profiling"}, {"nvtx-ranges", "profiling"},
	{"record-memory-history", "profiling"}, {"record-shapes", "profiling"}, {"memory-snapshot-path", "profiling"},
	{"memory-keys", "profiling"}, {"runtime-time-unit", "profiling"}, {"throughput-window-size", "profiling"},
	{"no-barrier-with-level-1-timing", "profiling"}, {"barrier-with-l1-time", "profiling"}, {"run-workload-inspector-server", "profiling"},
	{"inprocess-", "fault tolerance"}, {"ft-", "fault tolerance"}, {"enable-ft-package", "fault tolerance"},
	{"calc-ft-timeouts", "fault tolerance"}, {"rerun-mode", "fault tolerance"}, {"check-for-", "fault tolerance"},
	{"no-check-for-", "fault tolerance"}, {"disable-check-for-", "fault tolerance"}, {"error-injection-", "fault tolerance"},
	{"result-rejected-tracker-filename", "fault tolerance"}, {"flight-recorder-", "fault tolerance"},
	{"no-flight-recorder-", "fault tolerance"}, {"disable-flight-recorder-", "fault tolerance"},
	{"gpu-sniff-test-interval", "fault tolerance"}, {"check-weight-hash-", "fault tolerance"}, {"adlr-autoresume", "fault tolerance"},
	{"distributed-backend", "process setup"}, {"distributed-timeout-", "process setup"}, {"local-rank", "process setup"},
	{"disable-gloo-process-groups", "process setup"}, {"fake-process-group", "process setup"},
	{"use-mp-args-from-checkpoint-args", "process setup"}, {"enable-experimental", "process setup"},
	{"manual-gc", "process setup"}, {"disable-manual-gc-", "process setup"}, {"no-manual-gc-", "process setup"},
	{"empty-unused-memory-level", "process setup"}, {"deterministic-mode", "process setup"}, {"disable-jit-fuser", "process setup"},
	{"config-logger-dir", "process setup"}, {"yaml-cfg", "process setup"}, {"filter-warnings", "logging"},
	{"no-filter-warnings", "logging"}, {"disable-filter-warnings", "logging"}, {"modules-to-filter", "logging"},
	{"set-level-for-all-loggers", "logging"}, {"app-tag-", "logging"},
	{"inference-", "inference only"}, {"flash-decode", "inference only"}, {"enable-chunked-prefill", "inference only"},
	{"decode-only-cuda-graphs", "inference only"}, {"mlp-chunks-for-prefill", "inference only"},
	{"nccl-all-reduce-for-prefill", "inference only"}, {"num-speculative-tokens", "inference only"},
	{"use-legacy-static-engine", "inference only"}, {"max-tokens-to-oom", "inference only"}, {"cache-mla-latents", "inference only"},
	{"rl-", "reinforcement learning only"}, {"grpo-", "reinforcement learning only"}, {"perform-rl-step", "reinforcement learning only"},
	{"langrl-", "reinforcement learning only"}, {"refit-method", "reinforcement learning only"},
	{"logits-", "distillation only"}, {"dino-", "vision models only"}, {"vision-", "vision models only"}, {"img-", "vision models only"},
	{"patch-dim", "vision models only"}, {"num-channels", "vision models only"}, {"num-classes", "vision models only"},
	{"swin-backbone-type", "vision models only"}, {"classes-fraction", "vision models only"},
	{"data-per-class-fraction", "vision models only"}, {"mask-factor", "vision models only"}, {"mask-type", "vision models only"},
	{"biencoder-", "retrieval models only"}, {"retriever-", "retrieval models only"}, {"ict-", "retrieval models only"},
	{"bert-", "BERT only"}, {"query-in-block-prob", "retrieval models only"}, {"use-one-sent-docs", "retrieval models only"},
	{"evidence-data-path", "retrieval models only"}, {"titles-data-path", "retrieval models only"},
	{"block-data-path", "retrieval models only"}, {"embedding-path", "retrieval models only"}, {"indexer-", "retrieval models only"},
	{"output-bert-embeddings", "BERT only"},
	{"rotary-", "position encoding numerics"}, {"rope-", "position encoding numerics"}, {"use-rope-scaling", "position encoding numerics"},
	{"yarn-", "position encoding numerics"}, {"no-yarn-", "position encoding numerics"}, {"no-rope-freq", "position encoding numerics"},
	{"mscale", "position encoding numerics"}, {"beta-fast", "position encoding numerics"}, {"beta-slow", "position encoding numerics"},
	{"original-max-position-embeddings", "position encoding numerics"},
	{"norm-epsilon", "numerics"}, {"softmax-type", "numerics"}, {"glu-linear-offset", "numerics"},
	{"activation-func-clamp-value", "numerics"}, {"onnx-safe", "numerics"}, {"output-logit-dtype", "numerics"},
	{"batch-invariant-", "numerics"}, {"disable-bf16-reduced-precision-matmul", "numerics"},
	{"apply-residual-connection-post-layernorm", "numerics"}, {"calculate-per-token-loss", "loss"},
	{"no-clone-scatter-output-in-embedding", "numerics"}, {"disable-clone-scatter-output-in-embedding", "numerics"},
	{"moe-router-load-balancing-type", "MoE routing numerics"}, {"moe-aux-loss-coeff", "MoE routing numerics"},
	{"moe-z-loss-coeff", "MoE routing numerics"}, {"moe-router-score-function", "MoE routing numerics"},
	{"moe-router-pre-softmax", "MoE routing numerics"}, {"moe-router-topk-scaling-factor", "MoE routing numerics"},
	{"moe-router-num-groups", "MoE routing numerics (routing is priced uniform)"},
	{"moe-router-group-topk", "MoE routing numerics (routing is priced uniform)"},
	{"moe-router-dtype", "MoE routing numerics"}, {"moe-router-bias-update-rate", "MoE routing numerics"},
	{"moe-input-jitter-eps", "MoE routing numerics"}, {"moe-per-layer-logging", "logging"},
	{"moe-token-drop-policy", "MoE routing numerics"}, {"moe-apply-probs-on-input", "MoE routing numerics"},
	{"moe-router-force-biased", "MoE routing numerics"}, {"moe-router-quantile-", "MoE routing numerics"},
	{"moe-enable-routing-replay", "MoE routing numerics"}, {"moe-routing-trace-", "MoE routing numerics"},
	{"moe-shared-expert-gate", "MoE routing numerics"}, {"moe-use-upcycling", "initialization"},
	{"moe-upcycling-granularity", "initialization"}, {"moe-mlp-glu-interleave-size", "numerics"},
	{"moe-shared-expert-glu-interleave-size", "numerics"}, {"mtp-loss-scaling-factor", "loss"},
	{"mtp-detach-heads", "loss"}, {"mtp-use-repeated-layer", "initialization"}, {"mtp-hsm", "loss"},
	{"decrease-batch-size-if-needed", "run length"}, {"no-pin-cpu-", "process setup"}, {"enable-msc", "data"},
	{"disable-msc", "data"}, {"verify-integrity", "checkpointing"}, {"replication", "checkpointing"},
	{"dump-param-to-param-group-map", "logging"}, {"use-gigatoken", "data"}, {"spec", "process setup"},
	{"test-mode", "process setup"}, {"no-pad-vocab-size", "tokenizer"}, {"disable-pad-vocab-size", "tokenizer"},
	{"mtp-", "loss"}, {"muon-", "optimizer hyperparameters"}, {"gdp-", "optimizer hyperparameters"},
	{"no-log-", "logging"}, {"disable-log-", "logging"}, {"no-strict-fsdp-dtensor-load", "checkpointing"},
	{"disable-strict-fsdp-dtensor-load", "checkpointing"}, {"distrib-optim-fully-reshardable", "checkpointing"},
	{"most-recent-k", "checkpointing"}, {"allow-ambiguous-pad-tokens", "data"},
}

// lookup finds an argument's catalog entry by its command-line name
// (without "--"): the catalog's own, else a no-effect family's.
func lookup(name string) (spec, bool) {
	if s, ok := catalog[name]; ok {
		return s, true
	}
	for _, p := range refusedPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return refuse(anyArity, p.why), true
		}
	}
	for _, p := range noEffectPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return noEffect(p.group), true
		}
	}
	return spec{}, false
}
