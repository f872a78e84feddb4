// Package workload produces the sequence lengths a simulated long-context training job
// consumes: synthetic length distributions, loaders for real length data, a batch sampler
// that is deterministic per (seed, iteration), and summaries of a set of lengths.
//
// # Why the shape matters
//
// The HyDra paper (§2.2) describes the long-context corpora DCP is built for: lengths span
// four orders of magnitude up to 256K tokens, more than 85% of sequences are below 2K and
// fewer than 0.6% above 32K. Packing equalises tokens, not attention work (Σ s²), so the
// rare long sequences dominate the cost of a batch. The presets reproduce that shape,
// following the published statistics of ByteScale, WLB-LLM, DCP and Llama 3
// (each preset's doc names its source).
//
// # Distributions
//
// A [Distribution] draws integer lengths in tokens from an explicitly passed math/rand/v2
// Source; every draw goes through gonum's stat/distuv with that source
// set, never through a global generator. The families are
//   - [LogNormal]: log-normal with a given median and σ, truncated to [LowTokens, HighTokens]
//     by inverse-CDF sampling (u uniform on [F(min), F(max)], then the normal quantile);
//   - [TruncatedPareto]: bounded power law, L = x_min / (1 − u·(1 − (x_min/x_max)^α))^(1/α);
//   - [Mixture]: a weighted choice among components (weights positive, normalised);
//   - [Empirical]: a piecewise-linear CDF table, built by [NewEmpirical].
//
// Integer lengths: a continuous draw x becomes ⌊x + ½⌋ (round half up), clamped to
// [max(1, ⌈LowTokens⌉), ⌊HighTokens⌋]. CDF is the law of that integer, not of x: for an
// integer n inside the range, CDF(n) = F(n + ½), so the fraction of draws ≤ n converges
// to CDF(n) exactly, and CDF(t) for a non-integer t equals CDF(⌊t⌋).
//
// # Presets
//
// [Preset] and [PresetNames] give the named distributions: "long-256k" (the §6.2 mixture
// exactly: 0.95 log-normal, median 400, σ 1.2 on [16, 262144]; 0.05 truncated Pareto,
// x_min 2048, α 0.8, x_max 262144), "long-32k" (the same shape with both components
// truncated at 32768), "byted-like" (the §6.2 stress variant, close to ByteScale's Byted
// corpus) and "byted-2m" (ByteScale's Byted corpus at a 2M context, meeting the statistics
// its §3.1 and §8.2 state; see [Byted2M]). Measured on 10⁶ draws, long-256k gives P(L ≤ 2K) ≈ 0.867 and P(L > 32K) ≈ 0.46%,
// as the paper requires.
//
// # Real data
//
// [ReadLengths] reads one integer per line or a CSV file with a "length" column;
// [ReadJSONL] reads one JSON object per line and takes one integer field. Both take an
// io.Reader and a display name (the package does no file I/O), accept lengths in
// [1, MaxSequenceTokens], and report bad input as "name:line: what, allowed range".
//
// # Batches
//
// A [Sampler] turns a distribution ([NewSampler]) or a loaded list ([NewListSampler]) into
// global batches of exactly [BatchSpec].TargetTokens tokens, the way packed pretraining
// batches are filled: sequences are appended while the batch holds fewer tokens than the
// target and the piece that would overshoot is cut to fill the batch exactly. A sequence
// longer than the context is either split into context-sized pieces plus the remainder
// ([Split]) or discarded ([Drop]). Batch k draws from a fresh PCG seeded from (Seed, k)
// through a SplitMix64 mixer, so Batch(k) is a pure function of the sampler and k: the
// order of calls, concurrency and GOMAXPROCS do not change it. The one stateful reading of
// a list, [Sequential], is defined in closed form as well: iteration k covers tokens
// [k·T, (k+1)·T) of the file's token stream repeated end to end.
//
// # Summaries
//
// [Summarize] computes what `dcpsim workload stats` prints: count, tokens, min, max, mean,
// Σ s², percentiles and, per threshold, the share of sequences, tokens and Σ s² above it.
// [Batch.Stats] gives the per-batch line of that report: sequences, Σ s, Σ s², the longest
// sequence and E[s²]/E[s].
//
// Results are deterministic on a given platform: the same seed gives byte-identical
// batches across runs and GOMAXPROCS settings. (Floating-point contractions differ between
// architectures, so a length on the boundary of a rounding step may differ across them.)
package workload
