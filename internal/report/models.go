package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
)

// WriteModelList prints the model presets' derived quantities, one row each.
func WriteModelList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tattn\tlayers\ttotal (B)\tactive (B)\tlinear train (GFLOP/tok)\tc = attn fwd/s² (FLOP)\tUlysses (B/tok/layer)\tring K/V (B/tok/layer)\tMoE disp+comb (B/tok/layer)\tstates (GiB)\tact. (MiB/tok)\t")
	for _, n := range job.ModelNames() {
		m, err := job.LookupModel(n)
		if err != nil {
			return err
		}
		act, err := modelActivationBytesPerToken(m, job.RecomputeNone)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.2f\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f\t\n",
			n, strings.ToUpper(string(m.Attention)), m.Layers, m.TotalParams()/1e9, m.ActiveParams()/1e9,
			m.LinearTrainFLOPsPerToken()/1e9, m.AttentionFwdFLOPsPerSquareToken(), m.UlyssesBytesPerTokenLayer(),
			m.RingKVBytesPerTokenLayer(), m.MoEDispatchBytesPerTokenLayer(false)+m.MoECombineBytesPerTokenLayer(),
			modelStatesBytes(m)/memory.GiB, act/(1<<20))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nstates: the whole model's weights, gradients and Adam states unsharded, 18 bytes per parameter (BF16 2 +\n"+
		"FP32 4 + 12); act.: what one microbatch keeps per token through every layer, the embedding and the logits\n"+
		"(memory package, BF16, FlashAttention, no recompute, no parallelism); dcpsim memory SCENARIO for a layout")
	return err
}

// WriteModel prints one model preset's dimensions and derived quantities.
func WriteModel(w io.Writer, m job.Model) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...))
	}
	row("model", "%s", m.Name)
	row("source", "%s", m.Source)
	row("layers", "%d (%d dense, %d MoE)%s", m.Layers, m.DenseLayers, m.Layers-m.DenseLayers, mtp(m))
	row("hidden", "%d", m.Hidden)
	switch m.Attention {
	case job.MLA:
		row("attention", "MLA, %d heads, qk %d (nope %d + rope %d), v %d, q_lora %d, kv_lora %d",
			m.QueryHeads, m.HeadDimQK, m.QKNopeHeadDim, m.QKRopeHeadDim, m.HeadDimV, m.QLoRARank, m.KVLoRARank)
	default:
		row("attention", "%s, %d query / %d KV heads, head dims qk %d v %d", strings.ToUpper(string(m.Attention)), m.QueryHeads, m.KVHeads, m.HeadDimQK, m.HeadDimV)
	}
	if m.RoutedExperts > 0 {
		row("MoE", "%d routed experts top-%d, expert FFN %d; %d shared (FFN %d)", m.RoutedExperts, m.TopK, m.ExpertFFN, m.SharedExperts, m.SharedExpertFFN)
	}
	if m.DenseFFN > 0 {
		row("dense FFN", "%d", m.DenseFFN)
	}
	row("vocab", "%d", m.Vocab)
	row("params", "%.2fB total, %.2fB active", m.TotalParams()/1e9, m.ActiveParams()/1e9)
	row("linear training FLOPs", "%.2f GFLOP per token (6 × active linear params, incl. LM head)", m.LinearTrainFLOPsPerToken()/1e9)
	row("attention FLOPs", "%.0f × s² per layer forward (causal); backward × %.2f", m.AttentionFwdFLOPsPerSquareToken(), m.AttentionBwdFactor())
	row("attention = linear at", "s* = %.0f tokens", m.AttentionFLOPsCrossoverTokens())
	row("Ulysses all-to-all", "%.0f B per token per layer (Q, K, V, O)", m.UlyssesBytesPerTokenLayer())
	row("ring CP K/V", "%.0f B per token per layer", m.RingKVBytesPerTokenLayer())
	if m.Attention == job.MLA {
		row("MLA latent", "%.0f B per token per layer", m.MLALatentBytesPerTokenLayer())
	}
	if m.RoutedExperts > 0 {
		row("MoE dispatch / combine", "%.0f (BF16) or %.0f (FP8) / %.0f B per token per MoE layer",
			m.MoEDispatchBytesPerTokenLayer(false), m.MoEDispatchBytesPerTokenLayer(true), m.MoECombineBytesPerTokenLayer())
	}
	var act [3]float64
	for i, rc := range []job.RecomputeGranularity{job.RecomputeNone, job.RecomputeSelective, job.RecomputeFull} {
		b, err := modelActivationBytesPerToken(m, rc)
		if err != nil {
			return err
		}
		act[i] = b / (1 << 20)
	}
	row("model states", "%.1f GiB unsharded: %.1f weights (BF16), %.1f gradients (FP32), %.1f Adam (FP32 master, 2 moments)",
		modelStatesBytes(m)/memory.GiB, memory.WeightBytesPerParam*m.TotalParams()/memory.GiB,
		memory.GradientBytesPerParam*m.TotalParams()/memory.GiB, memory.OptimizerBytesPerParam*m.TotalParams()/memory.GiB)
	row("activations", "%.2f MiB per token (every layer, embedding and logits; BF16, FlashAttention, one GPU); %.2f with selective recompute, %.2f with full",
		act[0], act[1], act[2])
	return tw.Flush()
}

func mtp(m job.Model) string {
	if m.MTPLayers > 0 {
		return fmt.Sprintf(", plus %d MTP (not counted)", m.MTPLayers)
	}
	return ""
}

// modelStatesBytes is the model's states unsharded: weights, gradients and
// Adam's states of every parameter, 18 bytes each.
func modelStatesBytes(m job.Model) float64 {
	return (memory.WeightBytesPerParam + memory.GradientBytesPerParam + memory.OptimizerBytesPerParam) * m.TotalParams()
}

// modelActivationBytesPerToken is what one microbatch keeps per token through
// the whole model on one GPU (tp1 pp1 vpp1 ep1, FlashAttention) under rc:
// memory.Model.Chunk(0, 0).PerToken, every layer plus the embedding's token
// ids and the output layer's input and logits.
func modelActivationBytesPerToken(m job.Model, rc job.RecomputeGranularity) (float64, error) {
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: "H100-SXM", GPUs: 1, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 1, BudgetTokens: 1, Recompute: rc}, ContextTokens: 1}
	mem, err := memory.New(j, compute.FlashAttention)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", m.Name, err)
	}
	return mem.Chunk(0, 0).PerToken, nil
}
