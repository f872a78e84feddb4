package job

import "fmt"

// GPT returns a dense GPT model as Megatron-LM builds it (its GPTModel, the
// model of Narayanan et al. SC'21 and Korthikanti et al. 2022): multi-head
// attention with head dimension hidden/heads, a GELU FFN of width ffn (4h in
// every published run), learned absolute position embeddings for
// contextTokens positions, and the LM head tied to the input embedding. Its
// LayerNorms are priced and counted as RMSNorms and its linear-layer biases
// are left out: together 11·h parameters per layer, under 0.05% of a layer
// (12·h² + 13·h with them, Narayanan et al. Eq. 2) for h >= 2304. The name is
// free; Validate checks the rest (hidden must divide by heads here).
func GPT(name string, hidden, ffn, heads, layers, vocab, contextTokens int) (Model, error) {
	if heads < 1 || hidden%heads != 0 {
		return Model{}, fieldErr("model.query_heads", heads, "must divide model.hidden (%d): head dim = hidden/heads", hidden)
	}
	d := hidden / heads
	m := Model{
		Name: name, Layers: layers, DenseLayers: layers, Hidden: hidden, Attention: MHA,
		QueryHeads: heads, KVHeads: heads, HeadDimQK: d, HeadDimV: d,
		DenseFFN: ffn, Activation: GELU, LearnedPositions: true,
		Vocab: vocab, TiedEmbeddings: true, MaxContextTokens: contextTokens,
		Source: fmt.Sprintf("Megatron-LM GPT: h %d, ffn %d, %d heads, %d layers, V %d, %d positions", hidden, ffn, heads, layers, vocab, contextTokens),
	}
	if err := m.Validate(); err != nil {
		return Model{}, err
	}
	return m, nil
}
