package job

import (
	"fmt"
	"slices"
	"strings"
)

// Names of the model presets, as LookupModel and a scenario's model.name take them.
const (
	// ModelDeepSeekV3 names DeepSeek-V3 (MLA, 256-expert MoE).
	ModelDeepSeekV3 = "deepseek-v3"
	// ModelDeepSeekV2Lite names DeepSeek-V2-Lite (MLA, 64-expert MoE), a small
	// public MLA model (the testbed stand-in before paper-mla).
	ModelDeepSeekV2Lite = "deepseek-v2-lite"
	// ModelPaperMLA names paper-mla, the stand-in for the HyDra paper's unnamed
	// "internal MLA-based model" (gated MLA, 64 query heads).
	ModelPaperMLA = "paper-mla"
	// ModelHy3 names Tencent Hy3 (GQA, 192-expert MoE).
	ModelHy3 = "hy3"
	// ModelQwen3MoE235B names Qwen3-235B-A22B (GQA, 128-expert MoE).
	ModelQwen3MoE235B = "qwen3-235b-a22b"
	// ModelQwen3MoE30B names Qwen3-30B-A3B (GQA, 128-expert MoE).
	ModelQwen3MoE30B = "qwen3-30b-a3b"
	// ModelLlama3With8B names Llama 3 8B (GQA, dense).
	ModelLlama3With8B = "llama-3-8b"
	// ModelLlama3With70B names Llama 3 70B (GQA, dense).
	ModelLlama3With70B = "llama-3-70b"
	// ModelLlama2With7B names Llama 2 7B (MHA, dense), the architecture of
	// WLB-LLM's 7B model.
	ModelLlama2With7B = "llama-2-7b"
	// ModelByteScaleLlama7B names the LLaMA-7B of ByteScale's Table 1 (GQA,
	// dense).
	ModelByteScaleLlama7B = "bytescale-llama-7b"
	// ModelGPT7B names GPT-7B as Hetu-Galvatron configures it (MHA, GELU,
	// dense), FlexSP's smallest model.
	ModelGPT7B = "gpt-7b"
)

// presets builds the preset models afresh on every call, so no caller can change
// another's copy.
func presets() []Model {
	return []Model{
		deepSeekV3(), deepSeekV2Lite(), paperMLA(), hy3(), qwen3MoE235B(), qwen3MoE30B(), llama3With8B(), llama3With70B(),
		llama2With7B(), gpt7B(), byteScaleLlama7B(),
	}
}

// ModelNames returns the preset names, sorted.
func ModelNames() []string {
	ps := presets()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	slices.Sort(names)
	return names
}

// LookupModel returns a copy of the named preset, or an error listing the known
// names.
func LookupModel(name string) (Model, error) {
	for _, p := range presets() {
		if p.Name == name {
			return p, nil
		}
	}
	return Model{}, fmt.Errorf("job: unknown model %q (known: %s)", name, strings.Join(ModelNames(), ", "))
}

// deepSeekV3 is DeepSeek-V3 (671B total / 37B active, +1 MTP module): 61 layers, the
// first 3 dense, MLA with 128 heads, 256 routed experts (top-8, 8 groups, top-4
// groups) plus 1 shared, sigmoid router with expert bias. Trained on 2048 H800 with
// PP16, EP64, no TP.
func deepSeekV3() Model {
	return Model{
		Name:             ModelDeepSeekV3,
		Layers:           61,
		DenseLayers:      3,
		Hidden:           7168,
		Attention:        MLA,
		QueryHeads:       128,
		KVHeads:          128,
		HeadDimQK:        192,
		HeadDimV:         128,
		QKNopeHeadDim:    128,
		QKRopeHeadDim:    64,
		QLoRARank:        1536,
		KVLoRARank:       512,
		DenseFFN:         18432,
		RoutedExperts:    256,
		TopK:             8,
		SharedExperts:    1,
		ExpertFFN:        2048,
		SharedExpertFFN:  2048,
		RouterExpertBias: true,
		Vocab:            129280,
		MaxContextTokens: 163840,
		MTPLayers:        1,
		Source:           "github.com/deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json, README_WEIGHTS.md; huggingface.co/deepseek-ai/DeepSeek-V3 config.json",
	}
}

// deepSeekV2Lite is DeepSeek-V2-Lite (15.7B total / 2.4B active): 27 layers, the
// first dense (first_k_dense_replace 1), MLA with 16 heads and no query compression
// (q_lora_rank null), 64 routed experts (top-6) plus 2 shared, softmax router
// without bias. max_position_embeddings is 163840 (YaRN ×40 over 4K); the model
// card advertises 32K.
//
// It is the testbed stand-in for the HyDra paper's unnamed "internal MLA-based
// model" on 512 H20 GPUs with tp1 pp4 ep8: it is MLA like that model, its 64
// experts divide evenly over ep8 (8 per rank), and it is small enough that 4
// stages fit on 96 GB H20s at 4K–8K tokens per rank: its activations are 3.97
// MiB per token over the 27 layers (2.76 with layernorm+activation+mla_up_proj
// recompute), so the first of 4 stages, holding 4 micro-batches of 7 layers,
// keeps ≈ 32 GiB (22 GiB) at 8K tokens, next to ≈ 0.9B parameters per rank at
// ep8 (≈ 6 GB of model state with a distributed optimizer).
func deepSeekV2Lite() Model {
	return Model{
		Name:             ModelDeepSeekV2Lite,
		Layers:           27,
		DenseLayers:      1,
		Hidden:           2048,
		Attention:        MLA,
		QueryHeads:       16,
		KVHeads:          16,
		HeadDimQK:        192,
		HeadDimV:         128,
		QKNopeHeadDim:    128,
		QKRopeHeadDim:    64,
		QLoRARank:        0,
		KVLoRARank:       512,
		DenseFFN:         10944,
		RoutedExperts:    64,
		TopK:             6,
		SharedExperts:    2,
		ExpertFFN:        1408,
		SharedExpertFFN:  1408,
		Vocab:            102400,
		MaxContextTokens: 163840,
		Source:           "huggingface.co/deepseek-ai/DeepSeek-V2-Lite config.json; DeepSeek-V2 paper arxiv.org/abs/2405.04434 (V2-Lite appendix)",
	}
}

// PaperMLALayers is paper-mla's layer count: the one constant of dcpsim fitted
// to a number of the HyDra paper. It is the L for which static CP on the
// testbed-32k scenario (512 H20, tp1 pp4 ep8, B = 4K, 32K context) runs the
// paper's 10.3 s mean step (§6.2), every other dimension fixed below; every
// other result is out of sample (experiment's TestPaperMLAFittedPoint pins it).
const PaperMLALayers = 32

// paperMLA is the stand-in for the HyDra paper's "internal MLA-based model"
// (§6.1), trained with tp1 pp4 ep8 on 512 H20 and 2,048 H800 GPUs. Each
// dimension is from the paper, inferred, or fitted:
//
//   - from the paper: MLA with the gated attention of Qiu et al. 2025 ("the
//     mutually independent streams of the gated MLA projection", §5.2.2); 64
//     query heads ("at P = 256 and h = 64, the outer ring spans only four
//     ranks"); a MoE whose experts split over ep8;
//   - inferred, from DeepSeek-V2, the public MLA-MoE family the paper's design
//     follows (arXiv 2405.04434): the MLA widths (q_lora 1536, kv_lora 512,
//     d_qk 128 + 64 RoPE, d_v 128), hidden 5120, 160 routed experts (top-6,
//     20 per rank at ep8) plus 2 shared of width 1536, one dense first layer of
//     width 12288, vocabulary 102400;
//   - fitted: the layer count, PaperMLALayers.
//
// At 8K tokens per rank four stages fit 80-96 GB only with selective
// recomputation (as production long-context runs use); the simulator has no
// memory check beyond the token budget.
func paperMLA() Model {
	return Model{
		Name:             ModelPaperMLA,
		Layers:           PaperMLALayers,
		DenseLayers:      1,
		Hidden:           5120,
		Attention:        MLA,
		QueryHeads:       64,
		KVHeads:          64,
		HeadDimQK:        192,
		HeadDimV:         128,
		QKNopeHeadDim:    128,
		QKRopeHeadDim:    64,
		QLoRARank:        1536,
		KVLoRARank:       512,
		GatedAttention:   true,
		DenseFFN:         12288,
		RoutedExperts:    160,
		TopK:             6,
		SharedExperts:    2,
		ExpertFFN:        1536,
		SharedExpertFFN:  1536,
		Vocab:            102400,
		MaxContextTokens: 262144,
		Source:           "HyDra paper §5.2.2, §6.1 and its summary (gated MLA, 64 query heads, MoE over ep8); other widths inferred from DeepSeek-V2 (huggingface.co/deepseek-ai/DeepSeek-V2 config.json); layers fitted (PaperMLALayers)",
	}
}

// hy3 is Tencent Hy3 (295B total / 21B active, +3.8B in 1 MTP layer): 80 layers,
// the first dense, GQA 64 query / 8 KV heads of 128 with q/k norm, 192 routed
// experts (top-8) plus 1 shared of width 1536 (expert_hidden_dim), sigmoid router
// with expert bias, 256K context. The best public proxy for a Tencent Hunyuan
// GQA-MoE (costmodel.md §3).
func hy3() Model {
	return Model{
		Name:             ModelHy3,
		Layers:           80,
		DenseLayers:      1,
		Hidden:           4096,
		Attention:        GQA,
		QueryHeads:       64,
		KVHeads:          8,
		HeadDimQK:        128,
		HeadDimV:         128,
		QKNorm:           true,
		DenseFFN:         13312,
		RoutedExperts:    192,
		TopK:             8,
		SharedExperts:    1,
		ExpertFFN:        1536,
		SharedExpertFFN:  1536,
		RouterExpertBias: true,
		Vocab:            120832,
		MaxContextTokens: 262144,
		MTPLayers:        1,
		Source:           "huggingface.co/tencent/Hy3 config.json; github.com/Tencent-Hunyuan/Hy3 README.md",
	}
}

// qwen3MoE235B is Qwen3-235B-A22B (235B total / 22B active): 94 layers, all MoE,
// GQA 64 query / 4 KV heads of 128 with q/k norm, 128 routed experts (top-8), no
// shared expert, untied embeddings. intermediate_size 12288 is kept as DenseFFN
// although no layer is dense. 40960 native context (128K with YaRN).
func qwen3MoE235B() Model {
	return Model{
		Name:             ModelQwen3MoE235B,
		Layers:           94,
		DenseLayers:      0,
		Hidden:           4096,
		Attention:        GQA,
		QueryHeads:       64,
		KVHeads:          4,
		HeadDimQK:        128,
		HeadDimV:         128,
		QKNorm:           true,
		DenseFFN:         12288,
		RoutedExperts:    128,
		TopK:             8,
		ExpertFFN:        1536,
		Vocab:            151936,
		MaxContextTokens: 40960,
		Source:           "huggingface.co/Qwen/Qwen3-235B-A22B config.json; Qwen3 Technical Report arxiv.org/abs/2505.09388 Table 2",
	}
}

// qwen3MoE30B is Qwen3-30B-A3B (30.5B total / 3.3B active): 48 layers, all MoE,
// GQA 32 query / 4 KV heads of 128 with q/k norm, 128 routed experts (top-8) of
// width 768, no shared expert, untied embeddings; intermediate_size 6144 unused.
func qwen3MoE30B() Model {
	return Model{
		Name:             ModelQwen3MoE30B,
		Layers:           48,
		DenseLayers:      0,
		Hidden:           2048,
		Attention:        GQA,
		QueryHeads:       32,
		KVHeads:          4,
		HeadDimQK:        128,
		HeadDimV:         128,
		QKNorm:           true,
		DenseFFN:         6144,
		RoutedExperts:    128,
		TopK:             8,
		ExpertFFN:        768,
		Vocab:            151936,
		MaxContextTokens: 40960,
		Source:           "huggingface.co/Qwen/Qwen3-30B-A3B config.json; Qwen3 Technical Report arxiv.org/abs/2505.09388 Table 2",
	}
}

// llama3With8B is Llama 3 8B (8.03B): 32 dense layers, GQA 32 query / 8 KV heads of
// 128, SwiGLU 14336 (ffn_dim_multiplier 1.3), untied embeddings, 8K context (128K
// in Llama 3.1).
func llama3With8B() Model {
	return Model{
		Name:             ModelLlama3With8B,
		Layers:           32,
		DenseLayers:      32,
		Hidden:           4096,
		Attention:        GQA,
		QueryHeads:       32,
		KVHeads:          8,
		HeadDimQK:        128,
		HeadDimV:         128,
		DenseFFN:         14336,
		Vocab:            128256,
		MaxContextTokens: 8192,
		Source:           "github.com/meta-llama/llama-models models/sku_list.py; huggingface.co/meta-llama/Meta-Llama-3-8B config.json",
	}
}

// llama3With70B is Llama 3 70B (70.6B): 80 dense layers, GQA 64 query / 8 KV heads
// of 128, SwiGLU 28672, untied embeddings, 8K context (128K in Llama 3.1).
func llama3With70B() Model {
	return Model{
		Name:             ModelLlama3With70B,
		Layers:           80,
		DenseLayers:      80,
		Hidden:           8192,
		Attention:        GQA,
		QueryHeads:       64,
		KVHeads:          8,
		HeadDimQK:        128,
		HeadDimV:         128,
		DenseFFN:         28672,
		Vocab:            128256,
		MaxContextTokens: 8192,
		Source:           "github.com/meta-llama/llama-models models/sku_list.py; huggingface.co/meta-llama/Meta-Llama-3-70B config.json",
	}
}

// llama2With7B is Llama 2 7B (6.74B): 32 dense layers, multi-head attention with
// 32 heads of 128 (no GQA at this size), SwiGLU 11008, untied embeddings,
// vocabulary 32000, 4K context. WLB-LLM's 7B model "shares the same architecture
// as the LLaMA2-7B model" (WLB-LLM §7.1) and is trained at 64K-160K contexts,
// so its positions are rotary as here and MaxContextTokens is the published 4K:
// a scenario sets its own context.
func llama2With7B() Model {
	return Model{
		Name:             ModelLlama2With7B,
		Layers:           32,
		DenseLayers:      32,
		Hidden:           4096,
		Attention:        MHA,
		QueryHeads:       32,
		KVHeads:          32,
		HeadDimQK:        128,
		HeadDimV:         128,
		DenseFFN:         11008,
		Vocab:            32000,
		MaxContextTokens: 4096,
		Source:           "huggingface.co/meta-llama/Llama-2-7b-hf config.json; Llama 2 paper arxiv.org/abs/2307.09288 Table 1 (7B: MHA, 4K context)",
	}
}

// gpt7B is GPT-7B as FlexSP (Wang et al., ASPLOS 2025, arXiv 2412.01523 §6.1)
// trains it on Hetu-Galvatron, on which FlexSP is built: the gpt-7b meta config
// gives 32 layers, hidden 4096, 64 heads of 64 and vocabulary 50257 (GPT-2's);
// the Hugging Face GPT-2 block it configures has a GELU FFN of 4h = 16384 (its
// n_inner default) and ties the LM head to the embedding. That config's
// n_positions is 2048 learned positions; FlexSP trains at 192K and 384K and
// does not say how it extends them. Learned embeddings for 384K positions would
// add 1.6B parameters (24%) to a "7B" model, so positions here are rotary, with
// no parameters: 6.65B in all (6.44B in the layers, 0.21B in the embedding).
// MaxContextTokens is 384K, FlexSP's longest context.
func gpt7B() Model {
	return Model{
		Name:             ModelGPT7B,
		Layers:           32,
		DenseLayers:      32,
		Hidden:           4096,
		Attention:        MHA,
		QueryHeads:       64,
		KVHeads:          64,
		HeadDimQK:        64,
		HeadDimV:         64,
		DenseFFN:         16384,
		Activation:       GELU,
		Vocab:            50257,
		TiedEmbeddings:   true,
		MaxContextTokens: 393216,
		Source:           "github.com/AFDWang/Hetu-Galvatron galvatron/models/gpt_hf/meta_configs/gpt-7b.json (n_layer 32, n_embd 4096, n_head 64, head_dim 64, vocab 50257); GPT-2 block defaults (n_inner 4h, GELU, tied head) in transformers GPT2Config; FlexSP arXiv 2412.01523 §6.1; rotary positions assumed (see gpt7B)",
	}
}

// byteScaleLlama7B is the LLaMA-7B of ByteScale (Ge et al., SIGCOMM 2025, arXiv
// 2502.21231, Table 1: 32 layers, 32 heads, 8 groups, hidden 4096; "All
// systems mentioned in this paper apply the GQA technique", §7): Llama 2 7B's
// layers with 8 KV heads. Table 1 gives neither the FFN nor the vocabulary;
// they are Llama 2 7B's (SwiGLU 11008, 32000, untied), an assumption. 5.93B
// parameters. MaxContextTokens is the paper's 2M.
func byteScaleLlama7B() Model {
	m := llama2With7B()
	m.Name = ModelByteScaleLlama7B
	m.Attention = GQA
	m.KVHeads = 8
	m.MaxContextTokens = 2 << 20
	m.Source = "ByteScale arXiv 2502.21231 Table 1 (32 layers, 32 heads, 8 groups, hidden 4096); FFN 11008 and vocabulary 32000 assumed from huggingface.co/meta-llama/Llama-2-7b-hf config.json"
	return m
}
