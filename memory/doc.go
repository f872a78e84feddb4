// Package memory is dcpsim's per-GPU memory model: what a GPU of each pipeline
// stage holds during a training iteration, and so whether a plan can run.
//
// # Model states (States)
//
// Per GPU of a stage, for the parameters it holds (dense ones over tp, the
// embedding on the first stage and the output layer on the last; routed
// experts over tp·ep):
//
//   - weights: BF16, 2 bytes per parameter;
//   - gradients: FP32 main gradients, 4 bytes per parameter (Megatron-LM
//     accumulates and reduces BF16 training's gradients in FP32 unless
//     --grad-reduce-in-bf16; megatron/training/theoretical_memory_usage.py
//     counts 6 + 12/DP bytes per parameter with the distributed optimizer,
//     18 without);
//   - optimizer: Adam's FP32 master weight and two moments, 12 bytes per
//     parameter, sharded over the data-parallel group under
//     job.GradReduceScatter (the distributed optimizer: dense parameters over
//     the HDP pool's G ranks, which are the DP × CP ranks of the stage;
//     routed experts over the expert-data-parallel group of G/ep ranks), and
//     whole on every GPU under job.GradAllReduce (Megatron-LM 2021-22, the
//     validate rows);
//   - under FP8 training (job.PrecisionFP8), the FP8 copy and transpose of
//     every layer weight, 2 bytes per parameter (FP8WeightBytesPerParam).
//
// # Activations (Chunk, LayerBytes)
//
// What one layer keeps for its backward pass, per token of a rank's shard,
// follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in
// Large Transformer Models", arXiv 2205.05198, §4, Table 2), generalised by
// layer kind as research/costmodel.md §7.2 does. Every term is 2 bytes per
// element (BF16) unless said otherwise; under tensor parallelism a term is
// either split over the t ranks (the outputs of column-parallel GEMMs and the
// inputs of row-parallel ones) or replicated on each of them (the norms'
// inputs and outputs, the dropout masks, the router), and sequence
// parallelism splits the replicated ones too:
//
//	attention: norm input 2h, QKV input (the norm output) 2h, MLA latents
//	           2·2·q_lora + 2·(kv_lora + rope) + 2·kv_lora          replicated
//	           Q, K 2·(n_h + n_kv)·d_qk, V 2·n_kv·d_v,
//	           output-projection input 2·n_h·d_v, gate 4·n_h·d_v      split
//	           FlashAttention's log-sum-exp 4·n_h (FP32)             split
//	           Megatron softmax: per score (query × key) and head:
//	           softmax output 2, dropout mask 1, dropout output 2     split
//	           output dropout mask 1·h                               replicated
//	dense FFN: norm input 2h, first-GEMM input 2h, dropout mask h  replicated
//	           GELU 2·f + 2·f (activation input, down input),
//	           SwiGLU 4·f + 2·f (gate and up outputs, down input)    split
//	MoE FFN:   norm input 2h, norm output 2h, router logits 4·E (FP32),
//	           k·(2h permuted input + 2h expert output)              replicated
//	           k·6·f_e (each visited expert's SwiGLU), 6·f_s per shared
//	           expert                                                split
//
// Under FP8 training the inputs of the FP8 GEMMs are kept as their FP8 casts,
// 1 byte an element: the QKV input, MLA's q_up and kv_up inputs, the
// output-projection input, the first FFN GEMM's input, the down projection's
// input, and each routed copy's permuted input (Transformer Engine saves the
// FP8 inputs for the weight gradient; DeepSeek-V3 §3.3.3 caches them in FP8
// too); the rest stays BF16.
//
// For Megatron-LM's GPT (MHA, GELU with f = 4h, dropout, softmax attention)
// this is Korthikanti's Table 2 exactly: sbh(34 + 5as/h) per layer without
// parallelism, sbh(10 + 24/t + 5as/(ht)) with TP, sbh/t·(34 + 5as/h) with TP
// and SP. Dropout is tied to the kernel: compute.MegatronSoftmax is Megatron-LM
// 2021-22 with p = 0.1 everywhere (the published GPT runs); FlashAttention is
// today's trainers, which train without dropout (Llama, DeepSeek, Qwen set it
// to 0).
//
// Recompute (job.Parallel.Recompute): selective drops what the core attention
// keeps (Korthikanti §5: the softmax output, its dropout mask and output; for
// FlashAttention its log-sum-exp), and its backward rebuilds them for one
// layer at a time; full keeps only each layer's input, 2h per token
// (replicated without SP), and the backward rebuilds one whole layer's
// activations at a time (the transient counted in Chunk.Backward). With
// job.Parallel.RecomputeLayers = N only the first N layers of each chunk are
// recomputed (Megatron's --recompute-method block) and the others keep
// everything.
//
// The first stage's first chunk adds the embedding's token ids (8 bytes per
// token) and dropout mask (h bytes, with dropout); the last stage's last
// chunk adds the output layer's input and FP32 logits, 4h + 4V/t per token
// (theoretical_memory_usage.py's 4·sbh·(1 + V/h), the logits split over the
// vocabulary-parallel TP ranks).
//
// With context parallelism a rank holds its shard of every sequence: its
// tokens, and for the softmax kernel the scores of its s/k queries against
// all s keys, Σ s²/k. MoE assumes balanced routing: each rank's experts
// receive k tokens per token it holds.
//
// # Peak memory
//
// A stage keeps the activations of every chunk it has run forward and not yet
// backward. With variable-length microbatches the peak follows from the order
// of a rank's ops, which sim/step computes from the simulated schedule
// (step.ActivationSizer, Result.Stages[s].Ranks[r].PeakActivationBytes). Peak
// per GPU = states + reserve + peak activations, against the kind's HBM.
//
// # Reserve
//
// ReserveBytes is held back on every GPU for the CUDA context, NCCL's
// communicator buffers, cuBLAS/attention workspaces and the caching
// allocator's fragmentation: 10 GB, an assumption sourced in its doc.
package memory
