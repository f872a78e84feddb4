package job

import (
	"errors"
	"fmt"
	"slices"
)

// AttentionKind is the attention variant of a model. It decides which projections
// exist, what context parallelism has to move, and what attention keeps for the
// backward pass.
type AttentionKind string

const (
	// MHA is multi-head attention: one K/V head per query head.
	MHA AttentionKind = "mha"
	// GQA is grouped-query attention: kv_heads K/V heads, each shared by
	// query_heads/kv_heads query heads.
	GQA AttentionKind = "gqa"
	// MLA is DeepSeek's multi-head latent attention: K and V are up-projected from a
	// kv_lora_rank latent plus a shared RoPE key. Training materialises per-head K/V,
	// so kv_heads == query_heads.
	MLA AttentionKind = "mla"
)

// Bounds on model sizes. They are far above any published model and only keep a
// typo in a scenario from asking for absurd amounts of memory or time.
const (
	maxModelLayers  = 1024
	maxModelHidden  = 65536
	maxModelHeads   = 1024
	maxHeadDim      = 1024
	maxLoRARank     = 65536
	maxFFN          = 1 << 20
	maxExperts      = 4096
	maxSharedExpert = 64
	maxVocab        = 10_000_000
	maxMTPLayers    = 16
)

// Model is a decoder-only transformer architecture: exact published shapes for the
// presets (see LookupModel) and everything the cost model derives from them. Sizes
// are element counts (widths); the derived methods state their units.
//
// The TOML tags are the keys of a scenario's [model] table, which is decoded over a
// preset, so a scenario overrides only the keys it names.
type Model struct {
	// Name identifies the model, e.g. "deepseek-v3".
	Name string `toml:"name"`
	// Layers is the number of transformer layers, excluding MTP modules.
	Layers int `toml:"layers"`
	// DenseLayers is how many of the first layers have a dense FFN; the rest are MoE
	// (DeepSeek's first_k_dense_replace). A dense model has DenseLayers == Layers.
	DenseLayers int `toml:"dense_layers"`
	// Hidden is the model width h.
	Hidden int `toml:"hidden"`
	// Attention is the attention variant.
	Attention AttentionKind `toml:"attention"`
	// QueryHeads is n_h, the number of query heads.
	QueryHeads int `toml:"query_heads"`
	// KVHeads is n_kv, the number of K/V heads (== QueryHeads for MHA and MLA).
	KVHeads int `toml:"kv_heads"`
	// HeadDimQK is d_qk, the width of one query/key head; for MLA it is
	// QKNopeHeadDim + QKRopeHeadDim.
	HeadDimQK int `toml:"head_dim_qk"`
	// HeadDimV is d_v, the width of one value head.
	HeadDimV int `toml:"head_dim_v"`
	// QKNorm says whether queries and keys get a per-head RMSNorm (Qwen3, Hy3).
	QKNorm bool `toml:"qk_norm"`
	// GatedAttention adds the output gate of gated attention (Qiu et al. 2025,
	// arxiv.org/abs/2505.06708, the G1 position): the attention output Y
	// becomes Y ⊙ sigmoid(X·W_g) before the output projection, with X the
	// normalised layer input and W_g of h × n_h·d_v (head-specific,
	// elementwise), so a layer gains h·n_h·d_v parameters and a gate GEMM. The
	// HyDra paper's model is a "gated MLA"; every preset keeps its published
	// value (false).
	GatedAttention bool `toml:"gated_attention"`
	// QKNopeHeadDim is the MLA query/key width without RoPE (0 for MHA/GQA).
	QKNopeHeadDim int `toml:"qk_nope_head_dim"`
	// QKRopeHeadDim is the MLA decoupled RoPE width, shared by all heads for the key
	// (0 for MHA/GQA).
	QKRopeHeadDim int `toml:"qk_rope_head_dim"`
	// QLoRARank is the MLA query compression rank; 0 means a full query projection
	// (DeepSeek-V2-Lite). Must be 0 for MHA/GQA.
	QLoRARank int `toml:"q_lora_rank"`
	// KVLoRARank is the MLA key/value latent width d_c (0 for MHA/GQA).
	KVLoRARank int `toml:"kv_lora_rank"`
	// DenseFFN is the intermediate width of the dense layers' FFN.
	DenseFFN int `toml:"dense_ffn"`
	// Activation is the FFN activation of every layer, dense FFNs, routed
	// and shared experts alike: SwiGLU (the default, also for ""), GeGLU,
	// GELU or squared ReLU. The gated two (SwiGLU, GeGLU) have three h×f
	// matrices, the others two.
	Activation Activation `toml:"activation"`
	// LearnedPositions gives the model learned absolute position embeddings,
	// MaxContextTokens of them (GPT-2, Megatron-LM's GPT), instead of rotary
	// ones: the embedding gains MaxContextTokens·h parameters and the layers
	// run no RoPE. MLA's decoupled RoPE key needs rotary positions.
	LearnedPositions bool `toml:"learned_positions"`
	// MoELayerStep spaces the MoE layers after the first DenseLayers: 0 or 1
	// makes every one of them MoE; N makes MoE every N-th of them, layer i
	// (0-based) being MoE when (i − DenseLayers) mod N = N − 1 and dense
	// (DenseFFN) otherwise (Llama 4 Maverick's interleave_moe_layer_step = 2:
	// layers 1, 3, 5, ... MoE).
	MoELayerStep int `toml:"moe_layer_step"`
	// RoutedExperts is the number of routed experts per MoE layer (0 for dense).
	RoutedExperts int `toml:"routed_experts"`
	// TopK is how many routed experts each token visits (0 for dense).
	TopK int `toml:"top_k"`
	// SharedExperts is the number of always-active shared experts per MoE layer.
	SharedExperts int `toml:"shared_experts"`
	// ExpertFFN is the SwiGLU intermediate width of one routed expert.
	ExpertFFN int `toml:"expert_ffn"`
	// SharedExpertFFN is the SwiGLU intermediate width of one shared expert; it is
	// set per model (all presets use ExpertFFN) and must be 0 without shared experts.
	SharedExpertFFN int `toml:"shared_expert_ffn"`
	// RouterExpertBias says whether the router has a per-expert bias (DeepSeek-V3's
	// e_score_correction_bias, Hy3's expert bias).
	RouterExpertBias bool `toml:"router_expert_bias"`
	// Vocab is the vocabulary size V.
	Vocab int `toml:"vocab"`
	// TiedEmbeddings says whether the LM head shares the input embedding matrix.
	TiedEmbeddings bool `toml:"tied_embeddings"`
	// MaxContextTokens is the longest context the published model supports.
	MaxContextTokens int `toml:"max_context_tokens"`
	// MTPLayers is the number of multi-token-prediction modules. They are recorded
	// but excluded from every derived quantity, as the published totals exclude them.
	MTPLayers int `toml:"mtp_layers"`
	// Source names the config file or page the numbers came from.
	Source string `toml:"source"`
}

// Activation is the activation function of a dense FFN layer.
type Activation string

const (
	// SwiGLU is silu(x·W_gate)·(x·W_up) followed by the down projection: a
	// gate-and-up GEMM h → 2f, 3·h·f weights (Llama, Qwen, DeepSeek). The
	// empty value means SwiGLU.
	SwiGLU Activation = "swiglu"
	// GeGLU is gelu(x·W_gate)·(x·W_up), the gated GELU of Shazeer 2020
	// ("GLU Variants Improve Transformer"), priced and counted as SwiGLU
	// (Grok-1's experts).
	GeGLU Activation = "geglu"
	// GELU is gelu(x·W_up) followed by the down projection: an up GEMM h → f,
	// 2·h·f weights (GPT-2, GPT-3, Megatron-LM's GPT with f = 4h).
	GELU Activation = "gelu"
	// SquaredReLU is relu(x·W_up)² followed by the down projection, not
	// gated, priced and counted as GELU (Nemotron-4: So et al. 2021,
	// "Primer").
	SquaredReLU Activation = "squared-relu"
)

// Activations lists the activations a model may name, in the order errors
// list them.
var Activations = []Activation{SwiGLU, GeGLU, GELU, SquaredReLU}

// Gated reports whether the activation multiplies a gate by an up
// projection (SwiGLU, GeGLU, and the empty value): a gate-and-up GEMM h →
// 2f and three h×f matrices instead of two.
func (a Activation) Gated() bool { return a == "" || a == SwiGLU || a == GeGLU }

// Validate checks every field and returns all problems joined with errors.Join,
// each a *FieldError naming the scenario key (e.g. "model.kv_heads") and the rule it
// breaks; nil means the model is usable.
func (m Model) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if m.Name == "" {
		add(fieldErr("model.name", `""`, "must not be empty"))
	}
	add(checkRange("model.layers", m.Layers, 1, maxModelLayers))
	if m.DenseLayers < 0 || m.DenseLayers > m.Layers {
		add(fieldErr("model.dense_layers", m.DenseLayers, "must be in [0, layers (%d)]", m.Layers))
	}
	add(checkRange("model.hidden", m.Hidden, 1, maxModelHidden))
	add(checkRange("model.query_heads", m.QueryHeads, 1, maxModelHeads))
	add(checkRange("model.head_dim_qk", m.HeadDimQK, 1, maxHeadDim))
	add(checkRange("model.head_dim_v", m.HeadDimV, 1, maxHeadDim))
	if m.KVHeads < 1 || m.KVHeads > maxModelHeads {
		add(checkRange("model.kv_heads", m.KVHeads, 1, maxModelHeads))
	} else if m.QueryHeads >= 1 && m.QueryHeads%m.KVHeads != 0 {
		add(fieldErr("model.kv_heads", m.KVHeads, "must divide query_heads (%d)", m.QueryHeads))
	}

	switch m.Attention {
	case MHA, GQA:
		if m.Attention == MHA && m.KVHeads != m.QueryHeads {
			add(fieldErr("model.kv_heads", m.KVHeads, "must equal query_heads (%d) for attention = %q", m.QueryHeads, MHA))
		}
		for _, f := range []struct {
			key string
			v   int
		}{
			{"model.qk_nope_head_dim", m.QKNopeHeadDim},
			{"model.qk_rope_head_dim", m.QKRopeHeadDim},
			{"model.q_lora_rank", m.QLoRARank},
			{"model.kv_lora_rank", m.KVLoRARank},
		} {
			if f.v != 0 {
				add(fieldErr(f.key, f.v, "must be 0 unless attention = %q", MLA))
			}
		}
	case MLA:
		if m.KVHeads != m.QueryHeads {
			add(fieldErr("model.kv_heads", m.KVHeads, "must equal query_heads (%d) for MLA (training materialises per-head K/V)", m.QueryHeads))
		}
		add(checkRange("model.kv_lora_rank", m.KVLoRARank, 1, maxLoRARank))
		add(checkRange("model.q_lora_rank", m.QLoRARank, 0, maxLoRARank))
		add(checkRange("model.qk_nope_head_dim", m.QKNopeHeadDim, 1, maxHeadDim))
		add(checkRange("model.qk_rope_head_dim", m.QKRopeHeadDim, 1, maxHeadDim))
		if m.HeadDimQK != m.QKNopeHeadDim+m.QKRopeHeadDim {
			add(fieldErr("model.head_dim_qk", m.HeadDimQK, "must equal qk_nope_head_dim + qk_rope_head_dim (%d + %d) for MLA",
				m.QKNopeHeadDim, m.QKRopeHeadDim))
		}
		if m.QKNorm {
			add(fieldErr("model.qk_norm", true, "must be false for MLA (its norms are on the latents)"))
		}
	default:
		add(fieldErr("model.attention", fmt.Sprintf("%q", string(m.Attention)), "must be one of %q, %q, %q", MHA, GQA, MLA))
	}

	if m.HasDenseLayers() {
		add(checkRange("model.dense_ffn", m.DenseFFN, 1, maxFFN))
	} else {
		// Kept as published even when unused (Qwen3-MoE's intermediate_size).
		add(checkRange("model.dense_ffn", m.DenseFFN, 0, maxFFN))
	}

	if m.Activation != "" && !slices.Contains(Activations, m.Activation) {
		add(fieldErr("model.activation", fmt.Sprintf("%q", string(m.Activation)), "must be one of %q", Activations))
	}
	if m.MoELayerStep < 0 || m.MoELayerStep > maxModelLayers {
		add(checkRange("model.moe_layer_step", m.MoELayerStep, 0, maxModelLayers))
	} else if m.MoELayerStep > 1 && m.DenseLayers == m.Layers {
		add(fieldErr("model.moe_layer_step", m.MoELayerStep, "must be 0 or 1 for a dense model (dense_layers = layers = %d)", m.Layers))
	} else if m.MoELayerStep > m.Layers-m.DenseLayers {
		add(fieldErr("model.moe_layer_step", m.MoELayerStep, "must be at most the %d layers after dense_layers, else no layer is MoE", m.Layers-m.DenseLayers))
	}
	if m.LearnedPositions && m.Attention == MLA {
		add(fieldErr("model.learned_positions", true, "must be false for MLA (its decoupled key is rotary)"))
	}

	if m.DenseLayers == m.Layers {
		for _, f := range []struct {
			key string
			v   int
		}{
			{"model.routed_experts", m.RoutedExperts},
			{"model.top_k", m.TopK},
			{"model.shared_experts", m.SharedExperts},
			{"model.expert_ffn", m.ExpertFFN},
			{"model.shared_expert_ffn", m.SharedExpertFFN},
		} {
			if f.v != 0 {
				add(fieldErr(f.key, f.v, "must be 0 for a dense model (dense_layers = layers = %d)", m.Layers))
			}
		}
		if m.RouterExpertBias {
			add(fieldErr("model.router_expert_bias", true, "must be false for a dense model (dense_layers = layers = %d)", m.Layers))
		}
	} else {
		add(checkRange("model.routed_experts", m.RoutedExperts, 1, maxExperts))
		if m.TopK < 1 || m.TopK > max(m.RoutedExperts, 1) {
			add(fieldErr("model.top_k", m.TopK, "must be in [1, routed_experts (%d)]", m.RoutedExperts))
		}
		add(checkRange("model.expert_ffn", m.ExpertFFN, 1, maxFFN))
		add(checkRange("model.shared_experts", m.SharedExperts, 0, maxSharedExpert))
		if m.SharedExperts > 0 {
			add(checkRange("model.shared_expert_ffn", m.SharedExpertFFN, 1, maxFFN))
		} else if m.SharedExpertFFN != 0 {
			add(fieldErr("model.shared_expert_ffn", m.SharedExpertFFN, "must be 0 when shared_experts = 0"))
		}
	}

	add(checkRange("model.vocab", m.Vocab, 1, maxVocab))
	add(checkRange("model.max_context_tokens", m.MaxContextTokens, 1, MaxContextTokens))
	add(checkRange("model.mtp_layers", m.MTPLayers, 0, maxMTPLayers))
	return errors.Join(errs...)
}

// IsMoELayer reports whether the 0-based layer has an MoE FFN: layer >=
// DenseLayers and, with MoELayerStep N > 1, (layer − DenseLayers) mod N =
// N − 1. It panics if layer is outside [0, Layers).
func (m Model) IsMoELayer(layer int) bool {
	m.checkLayer(layer)
	if layer < m.DenseLayers {
		return false
	}
	return m.MoELayerStep <= 1 || (layer-m.DenseLayers)%m.MoELayerStep == m.MoELayerStep-1
}

// HasDenseLayers reports whether some layer has a dense FFN (DenseFFN wide):
// the first DenseLayers, or the layers MoELayerStep skips.
func (m Model) HasDenseLayers() bool {
	return m.DenseLayers > 0 || (m.MoELayerStep > 1 && m.DenseLayers < m.Layers)
}

// ffnMatrices is the number of h×f weight matrices of one FFN (dense or
// expert): 3 for a gated activation (gate, up, down), 2 otherwise (up,
// down).
func (m Model) ffnMatrices() float64 {
	if m.Activation.Gated() {
		return 3
	}
	return 2
}

func (m Model) checkLayer(layer int) {
	if layer < 0 || layer >= m.Layers {
		panic(fmt.Sprintf("job: layer %d out of range [0, %d) for model %q", layer, m.Layers, m.Name))
	}
}

// ---------------------------------------------------------------------------------
// Parameter counts (costmodel.md §3). Linear layers have no biases in any preset;
// norms are RMSNorm with one weight vector.

// attentionLinearParams is the weight count of the attention projections of one
// layer: q, k, v, o for MHA/GQA; for MLA (DeepSeek's model.py) wq or wq_a + wq_b,
// wkv_a (h -> kv_lora + rope), wkv_b (kv_lora -> n_h·(nope + v)) and wo; plus
// the gate W_g (h -> n_h·d_v) of gated attention.
func (m Model) attentionLinearParams() float64 {
	h, nh, nkv := float64(m.Hidden), float64(m.QueryHeads), float64(m.KVHeads)
	dqk, dv := float64(m.HeadDimQK), float64(m.HeadDimV)
	out := nh * dv * h
	out += m.GateParams()
	if m.Attention == MLA {
		q := h * nh * dqk
		if m.QLoRARank > 0 {
			ql := float64(m.QLoRARank)
			q = h*ql + ql*nh*dqk
		}
		kl := float64(m.KVLoRARank)
		kvA := h * (kl + float64(m.QKRopeHeadDim))
		kvB := kl * nh * (float64(m.QKNopeHeadDim) + dv)
		return q + kvA + kvB + out
	}
	return h*nh*dqk + h*nkv*dqk + h*nkv*dv + out
}

// GateParams is the output gate's weight count of one layer, h·n_h·d_v with
// GatedAttention and 0 without.
func (m Model) GateParams() float64 {
	if !m.GatedAttention {
		return 0
	}
	return float64(m.Hidden) * float64(m.QueryHeads) * float64(m.HeadDimV)
}

// attentionNormParams is the pre-attention RMSNorm plus MLA's latent norms
// (q_norm on q_lora, kv_norm on kv_lora) or Qwen3/Hy3's per-head q/k norms.
func (m Model) attentionNormParams() float64 {
	n := float64(m.Hidden)
	if m.Attention == MLA {
		n += float64(m.QLoRARank + m.KVLoRARank)
	}
	if m.QKNorm {
		n += 2 * float64(m.HeadDimQK)
	}
	return n
}

// ffnLinearParams is the FFN weight count of one layer: total counts every routed
// expert, active only the top-k. MoE includes the router (h·E) and shared experts.
func (m Model) ffnLinearParams(layer int, activeOnly bool) float64 {
	h := float64(m.Hidden)
	if !m.IsMoELayer(layer) {
		return m.ffnMatrices() * h * float64(m.DenseFFN)
	}
	experts := float64(m.RoutedExperts)
	if activeOnly {
		experts = float64(m.TopK)
	}
	mats := m.ffnMatrices()
	return h*float64(m.RoutedExperts) +
		experts*mats*h*float64(m.ExpertFFN) +
		float64(m.SharedExperts)*mats*h*float64(m.SharedExpertFFN)
}

// layerNonLinearParams is the norms of one layer (attention and FFN) plus the
// router's expert bias where the model has one.
func (m Model) layerNonLinearParams(layer int) float64 {
	n := m.attentionNormParams() + float64(m.Hidden)
	if m.RouterExpertBias && m.IsMoELayer(layer) {
		n += float64(m.RoutedExperts)
	}
	return n
}

// LayerParams is the parameter count of one transformer layer (0-based), all
// routed experts included: attention projections and norms, FFN norm, dense
// SwiGLU 3·h·f (GELU 2·h·f) or router h·E (+E bias) + E·3·h·f_e + shared experts.
func (m Model) LayerParams(layer int) float64 {
	return m.attentionLinearParams() + m.ffnLinearParams(layer, false) + m.layerNonLinearParams(layer)
}

// LayerExpertParams is the routed-expert part of LayerParams, E·3·h·f_e (E·2·h·f_e
// for a non-gated activation; 0 for a dense layer): the part that expert
// parallelism shards.
func (m Model) LayerExpertParams(layer int) float64 {
	if !m.IsMoELayer(layer) {
		return 0
	}
	return float64(m.RoutedExperts) * m.ffnMatrices() * float64(m.Hidden) * float64(m.ExpertFFN)
}

// LayerActiveParams is the parameter count one token touches in the layer: as
// LayerParams with only TopK routed experts.
func (m Model) LayerActiveParams(layer int) float64 {
	return m.attentionLinearParams() + m.ffnLinearParams(layer, true) + m.layerNonLinearParams(layer)
}

// LayerActiveLinearParams is the GEMM weight count one token goes through in the
// layer (attention projections, dense SwiGLU or router + top-k + shared experts;
// no norms). The layer's forward GEMM FLOPs per token are 2× this (costmodel §0.1).
func (m Model) LayerActiveLinearParams(layer int) float64 {
	return m.attentionLinearParams() + m.ffnLinearParams(layer, true)
}

// EmbeddingParams is the input embedding, V·h, plus MaxContextTokens·h
// learned position embeddings with LearnedPositions.
func (m Model) EmbeddingParams() float64 {
	n := float64(m.Vocab) * float64(m.Hidden)
	if m.LearnedPositions {
		n += float64(m.MaxContextTokens) * float64(m.Hidden)
	}
	return n
}

// OutputParams is the final RMSNorm plus the LM head: h + V·h, or h alone when the
// head is tied to the embedding.
func (m Model) OutputParams() float64 {
	n := float64(m.Hidden)
	if !m.TiedEmbeddings {
		n += float64(m.Vocab) * float64(m.Hidden)
	}
	return n
}

// TotalParams is the parameter count of the model without MTP modules:
// EmbeddingParams + Σ LayerParams + OutputParams (costmodel §3).
func (m Model) TotalParams() float64 {
	n := m.EmbeddingParams() + m.OutputParams()
	for l := range m.Layers {
		n += m.LayerParams(l)
	}
	return n
}

// ActiveParams is the parameter count one token touches, embeddings and LM head
// included and MTP excluded: EmbeddingParams + Σ LayerActiveParams + OutputParams
// (costmodel §3). Equal to TotalParams for a dense model.
func (m Model) ActiveParams() float64 {
	n := m.EmbeddingParams() + m.OutputParams()
	for l := range m.Layers {
		n += m.LayerActiveParams(l)
	}
	return n
}

// ---------------------------------------------------------------------------------
// FLOPs (costmodel.md §2). A multiply-add counts as 2 FLOPs.

// LinearTrainFLOPsPerToken is the GEMM FLOPs of one training step (forward and
// backward) per token: 6·(Σ LayerActiveLinearParams + V·h), i.e. 2 forward + 4
// backward FLOPs per active weight, LM head 6·h·V included, the embedding lookup
// excluded (costmodel §2.3).
func (m Model) LinearTrainFLOPsPerToken() float64 {
	n := float64(m.Vocab) * float64(m.Hidden)
	for l := range m.Layers {
		n += m.LayerActiveLinearParams(l)
	}
	return 6 * n
}

// AttentionFwdFLOPsPerSquareToken is c = n_h·(d_qk + d_v): the causal core-attention
// forward FLOPs of one layer per squared sequence length (QKᵀ and PV at 2·s²·d per
// head each, halved by the causal mask; costmodel §2.1). GQA and MLA do not change it.
func (m Model) AttentionFwdFLOPsPerSquareToken() float64 {
	return float64(m.QueryHeads) * float64(m.HeadDimQK+m.HeadDimV)
}

// AttentionFwdFLOPs is the causal core-attention forward FLOPs of one layer for one
// sequence (document) of seqTokens tokens: c·s² (costmodel §2.1). For a packed
// micro-batch sum it over the documents (§2.2).
func (m Model) AttentionFwdFLOPs(seqTokens int) float64 {
	s := float64(seqTokens)
	return m.AttentionFwdFLOPsPerSquareToken() * s * s
}

// AttentionBwdFactor is the ratio of core-attention backward to forward FLOPs,
// (3·d_qk + 2·d_v)/(d_qk + d_v): five GEMMs in the backward (recomputed QKᵀ, dV,
// dP, dQ, dK) against two in the forward. It is 2.5 when d_qk == d_v (MHA/GQA,
// FlashAttention's convention) and 2.6 for DeepSeek-V3's MLA (costmodel §2.1).
func (m Model) AttentionBwdFactor() float64 {
	dqk, dv := float64(m.HeadDimQK), float64(m.HeadDimV)
	return (3*dqk + 2*dv) / (dqk + dv)
}

// AttentionFLOPsCrossoverTokens is the document length s* at which causal attention
// forward FLOPs per token (c·s) equal the layer's linear forward FLOPs per token
// (2·LayerActiveLinearParams), taken on the last layer, i.e. an MoE layer in an MoE
// model (costmodel §2.3). Longer documents are attention-dominated.
func (m Model) AttentionFLOPsCrossoverTokens() float64 {
	return 2 * m.LayerActiveLinearParams(m.Layers-1) / m.AttentionFwdFLOPsPerSquareToken()
}

// ---------------------------------------------------------------------------------
// Communication bytes per token per layer, BF16 = 2 bytes (costmodel.md §4).

// UlyssesBytesPerTokenLayer is U = 2·(n_h·d_qk + n_kv·d_qk + n_kv·d_v + n_h·d_v):
// the Q, K, V and attention-output bytes of one token in one layer, which Ulysses
// all-to-alls move (costmodel §4.1). For MLA these are the up-projected per-head
// tensors (n_kv = n_h).
func (m Model) UlyssesBytesPerTokenLayer() float64 {
	nh, nkv := float64(m.QueryHeads), float64(m.KVHeads)
	dqk, dv := float64(m.HeadDimQK), float64(m.HeadDimV)
	return 2 * (nh*dqk + nkv*dqk + nkv*dv + nh*dv)
}

// RingKVBytesPerTokenLayer is 2·n_kv·(d_qk + d_v): the per-head K and V bytes of one
// token in one layer that ring attention passes around (costmodel §4.2); for MLA
// the up-projected K/V (n_kv = n_h).
func (m Model) RingKVBytesPerTokenLayer() float64 {
	return 2 * float64(m.KVHeads) * float64(m.HeadDimQK+m.HeadDimV)
}

// MLALatentBytesPerTokenLayer is 2·(kv_lora + qk_rope): the bytes of one token's MLA
// latent c_KV and shared RoPE key in one layer, what a ring could pass instead of
// per-head K/V at the price of re-running the up-projection (costmodel §4.2). It
// is 0 for MHA/GQA.
func (m Model) MLALatentBytesPerTokenLayer() float64 {
	if m.Attention != MLA {
		return 0
	}
	return 2 * float64(m.KVLoRARank+m.QKRopeHeadDim)
}

// MoEDispatchBytesPerTokenLayer is k·h·b: the bytes one token sends to its top-k
// experts in one MoE layer before the (E_p−1)/E_p remote fraction is applied, with
// b = 1 for an FP8 dispatch and 2 for BF16 (costmodel §4.4). It is 0 for a dense
// model.
func (m Model) MoEDispatchBytesPerTokenLayer(fp8 bool) float64 {
	b := 2.0
	if fp8 {
		b = 1
	}
	return float64(m.TopK) * float64(m.Hidden) * b
}

// MoECombineBytesPerTokenLayer is k·h·2: the BF16 bytes of one token's top-k expert
// outputs returned in one MoE layer (costmodel §4.4); 0 for a dense model.
func (m Model) MoECombineBytesPerTokenLayer() float64 {
	return float64(m.TopK) * float64(m.Hidden) * 2
}
