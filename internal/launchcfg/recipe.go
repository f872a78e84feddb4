package launchcfg

import (
	"slices"
	"strings"
)

// NeMo imports a NeMo Megatron-Bridge recipe: the YAML form of its
// ConfigContainer (model:, train:, ddp:, optimizer:, mixed_precision:,
// comm_overlap:, dist:, dataset:, tokenizer:, and the sections that do
// not touch the step: logger:, checkpoint:, scheduler:, ...). Its keys are
// Megatron-Core's configuration fields, which Megatron-LM's arguments
// mirror; name names the file in messages.
func NeMo(data []byte, name string, o Options) (*Import, error) {
	root, err := ParseYAML(data, name)
	if err != nil {
		return nil, &Error{Source: name, Problems: []string{err.Error()}}
	}
	s := &settings{}
	im := &Import{Format: "nemo", Source: name}
	b := &builder{s: s, o: o, im: im, recipe: true, origin: map[string]string{}, names: recipeKeyName}
	r := &recipeReader{s: s, b: b, o: o}
	for i, sec := range root.Keys {
		r.section(sec, root.Values[i])
	}
	b.build()
	if err := errorOf(name, b.problems); err != nil {
		return nil, err
	}
	return im, nil
}

// recipeSections say how each section of a ConfigContainer is read: by
// the catalog key by key (with a fallback group for keys it does not
// know, or strict when empty), or as a whole with no effect.
var recipeSections = map[string]struct {
	fallback string // a no-effect group for unknown keys ("" : unknown keys are unknown)
	whole    bool   // the whole section has no effect
}{
	"model":                              {},
	"ddp":                                {},
	"comm_overlap":                       {},
	"mixed_precision":                    {},
	"train":                              {fallback: "run length"},
	"optimizer":                          {fallback: "optimizer hyperparameters"},
	"dist":                               {fallback: "process setup"},
	"dataset":                            {fallback: "data"},
	"tokenizer":                          {fallback: "tokenizer"},
	"logger":                             {fallback: "logging", whole: true},
	"checkpoint":                         {fallback: "checkpointing", whole: true},
	"scheduler":                          {fallback: "learning rate", whole: true},
	"rng":                                {fallback: "randomness", whole: true},
	"rerun_state_machine":                {fallback: "fault tolerance", whole: true},
	"validation":                         {fallback: "evaluation", whole: true},
	"ft":                                 {fallback: "fault tolerance", whole: true},
	"straggler":                          {fallback: "straggler detection", whole: true},
	"nvrx_straggler":                     {fallback: "straggler detection", whole: true},
	"profiling":                          {fallback: "profiling", whole: true},
	"tensor_inspect":                     {fallback: "logging", whole: true},
	"inprocess_restart":                  {fallback: "fault tolerance", whole: true},
	"env_vars":                           {fallback: "process setup", whole: true},
	"optimizer_config_override_provider": {fallback: "optimizer hyperparameters", whole: true},
}

// recipeNames are the recipe fields whose command-line argument has
// another name.
var recipeNames = map[string]string{
	"num_moe_experts":                       "num-experts",
	"num_layers_in_first_pipeline_stage":    "decoder-first-pipeline-num-layers",
	"num_layers_in_last_pipeline_stage":     "decoder-last-pipeline-num-layers",
	"bucket_size":                           "ddp-bucket-size",
	"average_in_collective":                 "ddp-average-in-collective",
	"nccl_ub":                               "use-nccl-ub",
	"pad_buckets_for_high_nccl_busbw":       "ddp-pad-buckets-for-high-nccl-busbw",
	"reduce_scatter_with_fp32_accumulation": "ddp-reduce-scatter-with-fp32-accumulation",
	"seq_len_interpolation_factor":          "rotary-seq-len-interpolation-factor",
	"rope_scaling":                          "use-rope-scaling",
	"fp8_param":                             "fp8-param-gather",
}

// recipeCatalog are the recipe fields with no command-line argument.
var recipeCatalog = map[string]spec{
	"virtual-pipeline-model-parallel-size": recipe(intTo(func(s *settings) *setting[int] { return &s.vpp }, 1, 64, "parallel.vpp")),
	"gated-linear-unit":                    recipe(boolTo(func(s *settings) *setting[bool] { return &s.gated }, "model.activation")),
	"activation-func":                      recipe(mapped(oneArity, "model.activation", applyActivationFunc)),
	"share-embeddings-and-output-weights":  recipe(boolTo(func(s *settings) *setting[bool] { return &s.tied }, "model.tied_embeddings")),
	"should-pad-vocab":                     recipe(boolTo(func(s *settings) *setting[bool] { return &s.padVocab }, "model.vocab (padding)")),
	"fp8":                                  recipe(choiceTo(func(s *settings) *setting[string] { return &s.fp8 }, "parallel.precision = \"fp8\"", "e4m3", "hybrid")),
	"grad-reduce-in-fp32":                  recipe(boolTo(func(s *settings) *setting[bool] { return &s.gradFP32 }, "parallel.grad_reduce_fp32")),
	"fp32":                                 recipe(refuse(flagArity, "FP32 training is not priced")),
	"params-dtype":                         recipe(noEffect("numerics (the precision flags decide)")),
	"pipeline-dtype":                       recipe(noEffect("numerics (the precision flags decide)")),
	"autocast-dtype":                       recipe(noEffect("numerics (the precision flags decide)")),
	"autocast-enabled":                     recipe(noEffect("numerics (the precision flags decide)")),
	"enable-autocast":                      recipe(noEffect("numerics (the precision flags decide)")),
	"fp8-dot-product-attention":            recipe(refuse(flagArity, "FP8 core attention is not priced")),
	"fp8-multi-head-attention":             recipe(refuse(flagArity, "FP8 core attention is not priced")),
	"fp8-wgrad":                            recipe(priced(flagArity, "weight gradients in FP8 with FP8 training")),
	"fp4":                                  recipe(refuse(oneArity, "FP4 GEMMs are not priced")),
	"fp4-param":                            recipe(refuse(flagArity, "FP4 is not priced")),
	"tp-only-amax-red":                     recipe(noEffect("FP8 numerics")),
	"cpu-offloading":                       recipe(refuse(flagArity, "activation offloading to the host is not modelled")),
	"cpu-offloading-activations":           recipe(refuse(flagArity, "activation offloading to the host is not modelled")),
	"cpu-offloading-weights":               recipe(refuse(flagArity, "activation offloading to the host is not modelled")),
	"cpu-offloading-double-buffering":      recipe(refuse(flagArity, "activation offloading to the host is not modelled")),
	"num-microbatches-with-partial-activation-checkpoints": recipe(refuse(oneArity, "partial recomputation by microbatch is not modelled")),
	"add-bias-linear":                        recipe(priced(flagArity, "linear-layer biases are not priced (under 0.1% of a layer)")),
	"add-qkv-bias":                           recipe(priced(flagArity, "linear-layer biases are not priced (under 0.1% of a layer)")),
	"gradient-accumulation-fusion":           recipe(priced(flagArity, "fused kernels are not priced apart")),
	"bias-activation-fusion":                 recipe(priced(flagArity, "fused kernels are not priced apart")),
	"bias-dropout-fusion":                    recipe(priced(flagArity, "fused kernels are not priced apart")),
	"masked-softmax-fusion":                  recipe(priced(flagArity, "fused kernels are not priced apart")),
	"persist-layer-norm":                     recipe(priced(flagArity, "fused kernels are not priced apart")),
	"apply-rope-fusion":                      recipe(priced(flagArity, "fused kernels are not priced apart")),
	"memory-efficient-layer-norm":            recipe(priced(flagArity, "fused kernels are not priced apart")),
	"fused-single-qkv-rope":                  recipe(priced(flagArity, "fused kernels are not priced apart")),
	"activation-func-fp8-input-store":        recipe(priced(flagArity, "fused kernels are not priced apart")),
	"dense-grouped-gemm":                     recipe(priced(flagArity, "GEMMs priced by shape")),
	"overlap-p2p-comm":                       recipe(priced(flagArity, "pipeline transfers as the schedule prices them")),
	"batch-p2p-comm":                         recipe(priced(flagArity, "pipeline transfers as the schedule prices them")),
	"batch-p2p-sync":                         recipe(priced(flagArity, "pipeline transfers as the schedule prices them")),
	"deallocate-pipeline-outputs":            recipe(priced(flagArity, "pipeline memory as the memory model holds it")),
	"variable-seq-lengths":                   recipe(noEffect("data")),
	"scatter-embedding-sequence-parallel":    recipe(priced(flagArity, "sequence parallelism as priced")),
	"tp-comm-overlap-disable-qkv":            recipe(priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated")),
	"tp-comm-overlap-disable-fc1":            recipe(priced(flagArity, "TP overlap (parallel.tp_comm_overlap) as calibrated")),
	"align-param-gather":                     recipe(priced(flagArity, "parameter all-gathers overlap as parallel.overlap_param_gather says")),
	"align-grad-reduce":                      recipe(priced(flagArity, "gradient reduction overlaps as parallel.overlap_grad_reduce says")),
	"data-parallel-size":                     recipe(noEffect("derived from the layout")),
	"preserve-fp32-weights":                  recipe(priced(flagArity, "the memory model's optimizer states")),
	"check-for-nan-in-grad":                  recipe(noEffect("fault tolerance")),
	"check-for-large-grads":                  recipe(noEffect("fault tolerance")),
	"gradient-reduce-div-fusion":             recipe(priced(flagArity, "fused kernels are not priced apart")),
	"transformer-layer-spec":                 recipe(priced(oneArity, "Transformer Engine layers")),
	"use-transformer-engine-full-layer-spec": recipe(priced(flagArity, "Transformer Engine layers")),
	"use-te-rng-tracker":                     recipe(noEffect("randomness")),
	"init-method":                            recipe(noEffect("initialization")),
	"output-layer-init-method":               recipe(noEffect("initialization")),
	"embedding-init-method":                  recipe(noEffect("initialization")),
	"softmax-scale":                          recipe(noEffect("numerics")),
	"parallel-output":                        recipe(noEffect("numerics")),
	"logit-dtype":                            recipe(noEffect("numerics")),
	"generation-config":                      recipe(noEffect("inference only")),
	"hf-model-id":                            recipe(noEffect("checkpointing")),
	"hf-model-revision":                      recipe(noEffect("checkpointing")),
	"restore-modelopt-state":                 recipe(noEffect("checkpointing")),
	"mtp-enabled":                            recipe(noEffect("MTP layers are recorded by mtp_num_layers")),
	"use-arbitrary-attention-mask":           recipe(noEffect("data")),
	"moe-token-dropping":                     recipe(noEffect("MoE routing numerics")),
	"timers":                                 recipe(noEffect("logging")),
	"finalize-model-grads-func":              recipe(noEffect("process setup")),
	"grad-scale-func":                        recipe(noEffect("process setup")),
	"no-sync-func":                           recipe(noEffect("process setup")),
	"grad-sync-func":                         recipe(noEffect("process setup")),
	"param-sync-func":                        recipe(noEffect("process setup")),
	"num-layers-in-first-pipeline-stage":     recipe(intTo(func(s *settings) *setting[int] { return &s.first }, 1, maxLayers, "parallel.first_stage_layers")),
	"num-layers-in-last-pipeline-stage":      recipe(intTo(func(s *settings) *setting[int] { return &s.last }, 1, maxLayers, "parallel.last_stage_layers")),
}

// recipeKeyName spells a command-line argument as a recipe's key, for
// messages (the section where recipes usually hold it).
func recipeKeyName(cli string) string {
	field := strings.ReplaceAll(cli, "-", "_")
	for k, v := range recipeNames {
		if v == cli {
			field = k
		}
	}
	switch cli {
	case "micro-batch-size", "global-batch-size":
		return "train." + field
	case "use-distributed-optimizer", "overlap-grad-reduce", "overlap-param-gather":
		return "ddp." + field
	case "bf16", "fp16", "fp8-format":
		return "mixed_precision"
	case "grad-reduce-in-bf16":
		return "mixed_precision.grad_reduce_in_fp32"
	case "vocab-size":
		return "model.vocab_size"
	}
	return "model." + field
}

type recipeReader struct {
	s *settings
	b *builder
	o Options
}

func (r *recipeReader) use(u Use) { r.b.im.Uses = append(r.b.im.Uses, u) }

// section reads one top-level section.
func (r *recipeReader) section(name string, v *Node) {
	if isStructural(name) {
		r.use(Use{Arg: name, Value: scalarText(v), Class: NoEffect, Note: "structure"})
		return
	}
	sec, ok := recipeSections[name]
	switch {
	case name == "peft":
		if isOff(v) {
			r.use(Use{Arg: name, Class: Mapped, Note: "as priced: no adapters"})
			return
		}
		r.b.fail("peft: refused: fine-tuning adapters change the backward pass, which dcpsim prices in full")
		r.use(Use{Arg: name, Class: Refused, Note: "adapters are not modelled"})
		return
	case !ok:
		r.unknown(name, v)
		return
	case sec.whole || v.Null:
		r.use(Use{Arg: name, Value: describeNode(v), Class: NoEffect, Note: cmpOr(sec.fallback, "not set")})
		return
	case name == "mixed_precision":
		r.mixedPrecision(v)
		return
	case v.Kind != Mapping:
		r.b.fail("%s: must be a mapping of keys", name)
		return
	}
	for i, key := range v.Keys {
		r.key(name, key, v.Values[i], sec.fallback)
	}
}

// isStructural reports the keys NeMo-Run and Hydra add to serialized
// configs (_target_, _partial_, _call_).
func isStructural(key string) bool { return strings.HasPrefix(key, "_") && strings.HasSuffix(key, "_") }

// key reads one key of a section through the catalog.
func (r *recipeReader) key(section, key string, v *Node, fallback string) {
	src := section + "." + key
	if isStructural(key) {
		r.use(Use{Arg: src, Value: scalarText(v), Class: NoEffect, Note: "structure"})
		return
	}
	name, sp, ok := recipeLookup(key)
	if section == "mixed_precision" && name == "grad-reduce-in-fp32" {
		sp = recipe(boolTo(func(s *settings) *setting[bool] { return &s.mpGradFP32 }, "parallel.grad_reduce_fp32"))
	}
	if !ok {
		if fallback != "" {
			r.use(Use{Arg: src, Value: describeNode(v), Class: NoEffect, Note: fallback})
			return
		}
		r.unknown(src, v)
		return
	}
	a := &arg{src: src, yaml: true, node: v}
	use := Use{Arg: src, Value: describeNode(v), Class: sp.class, Note: sp.note}
	switch {
	case sp.class == NoEffect:
	case isOff(v) && sp.class != Mapped:
		// A refused feature left off (false, null, 0) is what dcpsim prices.
		use.Class, use.Note = Mapped, "off, as priced"
	case v.Null:
		use.Note = "null: the default"
	default:
		if v.Kind == Mapping && name != "activation-func" && name != "tp-comm-overlap-cfg" {
			if sp.class == Mapped && sp.apply != nil {
				r.b.fail("%s: must be a value, not a mapping", src)
				break
			}
		}
		vals, ok := nodeWords(v)
		if !ok && sp.apply != nil && name != "pipeline-model-parallel-layout" && name != "activation-func" {
			r.b.fail("%s: must be a value or a list of values", src)
			break
		}
		a.vals = vals
		if sp.approx && isOff(v) {
			break
		}
		if err := apply(r.s, sp, a, r.b); err != nil {
			r.b.failErr(err)
		}
	}
	r.use(use)
}

// recipeLookup finds a recipe field's catalog entry: its own, the
// command-line argument of the same name, or that argument's --no- or
// --disable- form (a field whose default is true).
func recipeLookup(key string) (string, spec, bool) {
	name := strings.ReplaceAll(key, "_", "-")
	if n, ok := recipeNames[key]; ok {
		name = n
	}
	if sp, ok := recipeCatalog[name]; ok {
		return name, sp, true
	}
	if sp, ok := lookup(name); ok {
		return name, sp, true
	}
	for _, prefix := range []string{"no-", "disable-"} {
		if sp, ok := lookup(prefix + name); ok && sp.apply == nil {
			return prefix + name, sp, true
		}
	}
	return name, spec{}, false
}

func (r *recipeReader) unknown(src string, v *Node) {
	r.use(Use{Arg: src, Value: describeNode(v), Class: Unknown})
	if !r.o.IgnoreUnknown {
		r.b.fail("%s: unknown key (not in dcpsim's catalog of Megatron-Bridge fields); --ignore-unknown lists it and goes on", src)
	}
}

// mixedPrecision reads mixed_precision: a recipe's preset name or the
// fields of its MixedPrecisionConfig.
func (r *recipeReader) mixedPrecision(v *Node) {
	r.s.mpGiven = true
	if v.Kind == Mapping {
		for i, key := range v.Keys {
			r.key("mixed_precision", key, v.Values[i], "")
		}
		return
	}
	a := &arg{src: "mixed_precision", yaml: true, vals: []Word{{Text: v.Value}}}
	use := Use{Arg: "mixed_precision", Value: v.Value, Class: Mapped, Note: "parallel.precision, parallel.grad_reduce_fp32"}
	preset := strings.ReplaceAll(v.Value, "-", "_")
	p, ok := precisionPresets[preset]
	if !ok {
		r.b.fail("mixed_precision %q: not a preset dcpsim knows (%s); write its fields out", v.Value, strings.Join(presetNames(), ", "))
		r.use(use)
		return
	}
	_ = put(&r.s.bf16, p.bf16, a)
	_ = put(&r.s.fp16, !p.bf16, a)
	if p.fp8 != "" {
		_ = put(&r.s.fp8, p.fp8, a)
		_ = put(&r.s.fp8Recipe, p.recipe, a)
	}
	_ = put(&r.s.mpGradFP32, p.gradFP32, a)
	r.use(use)
}

// precisionPresets are Megatron-Bridge's mixed-precision recipes
// (training/mixed_precision.py): 16-bit format, FP8 format and recipe,
// gradient reduction in FP32.
var precisionPresets = map[string]struct {
	bf16        bool
	fp8, recipe string
	gradFP32    bool
}{
	"bf16_mixed":                             {bf16: true, gradFP32: true},
	"fp16_mixed":                             {bf16: false, gradFP32: false},
	"bf16_with_fp8_delayed_scaling_mixed":    {bf16: true, fp8: "hybrid", recipe: "delayed", gradFP32: true},
	"fp16_with_fp8_delayed_scaling_mixed":    {bf16: false, fp8: "hybrid", recipe: "delayed", gradFP32: false},
	"bf16_with_mxfp8_mixed":                  {bf16: true, fp8: "e4m3", recipe: "mxfp8", gradFP32: true},
	"fp16_with_mxfp8_mixed":                  {bf16: false, fp8: "e4m3", recipe: "mxfp8", gradFP32: false},
	"bf16_with_fp8_current_scaling_mixed":    {bf16: true, fp8: "hybrid", recipe: "tensorwise", gradFP32: true},
	"fp16_with_fp8_current_scaling_mixed":    {bf16: false, fp8: "hybrid", recipe: "tensorwise", gradFP32: false},
	"bf16_with_fp8_subchannel_scaling_mixed": {bf16: true, fp8: "hybrid", recipe: "blockwise", gradFP32: true},
}

func presetNames() []string {
	out := make([]string, 0, len(precisionPresets))
	for k := range precisionPresets {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// isOff reports whether a recipe value leaves a feature off: null, false,
// 0, an empty list or "none".
func isOff(v *Node) bool {
	switch v.Kind {
	case Scalar:
		if v.Null {
			return true
		}
		if v.Quoted {
			return v.Value == "" || strings.EqualFold(v.Value, "none")
		}
		switch strings.ToLower(v.Value) {
		case "false", "0", "0.0", "none", "":
			return true
		}
	case Sequence:
		return len(v.Items) == 0
	case Mapping:
		return len(v.Keys) == 0
	}
	return false
}

// nodeWords turns a scalar or a list of scalars into values; ok is false
// for anything else.
func nodeWords(v *Node) ([]Word, bool) {
	switch v.Kind {
	case Scalar:
		return []Word{{Text: v.Value}}, true
	case Sequence:
		out := make([]Word, 0, len(v.Items))
		for _, it := range v.Items {
			if it.Kind != Scalar {
				return nil, false
			}
			out = append(out, Word{Text: it.Value})
		}
		return out, true
	}
	return nil, false
}

// scalarText is a scalar's text, or a summary of a collection.
func scalarText(v *Node) string {
	if v.Kind == Scalar {
		return v.Value
	}
	return describeNode(v)
}

// applyActivationFunc reads a recipe's activation_func: a function's name
// ("silu", "torch.nn.functional.silu") or its serialized form
// ({_target_: torch.nn.functional.silu, _call_: false}).
func applyActivationFunc(s *settings, a *arg) error {
	n := a.node
	text := ""
	switch {
	case n != nil && n.Kind == Mapping:
		t := n.Get("_target_")
		if t == nil || t.Kind != Scalar {
			return a.errf("must name a function (_target_)")
		}
		text = t.Value
	default:
		v, err := a.one()
		if err != nil {
			return err
		}
		text = v
	}
	f := text[strings.LastIndexAny(text, ".:")+1:]
	switch f {
	case "silu", "gelu", "quick_gelu", "fast_gelu", "squared_relu":
	default:
		return a.errf("%q: the activations are silu, gelu, quick_gelu and squared_relu", f)
	}
	return put(&s.activationFunc, f, a)
}
