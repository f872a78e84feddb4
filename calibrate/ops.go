package calibrate

import (
	"fmt"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
)

// AttentionCost is the cost model's price of one causal core attention
// (dcpsim costs attention --json's object; fwd_seconds and bwd_seconds are
// a contract).
type AttentionCost struct {
	GPU         string  `json:"gpu"`
	SeqTokens   int     `json:"seq_tokens"`
	Heads       int     `json:"heads"`
	HeadDimQK   int     `json:"qk_head_dim"`
	HeadDimV    int     `json:"v_head_dim"`
	Causal      bool    `json:"causal"`
	FwdFLOPs    float64 `json:"fwd_flops"`
	BwdFLOPs    float64 `json:"bwd_flops"`
	FwdSeconds  float64 `json:"fwd_seconds"`
	BwdSeconds  float64 `json:"bwd_seconds"`
	FwdTFLOPs   float64 `json:"fwd_tflops"`
	BwdTFLOPs   float64 `json:"bwd_tflops"`
	PeakTFLOPs  float64 `json:"peak_tflops"`
	FwdFraction float64 `json:"fwd_efficiency"`
	BwdFraction float64 `json:"bwd_efficiency"`
}

// GEMMCost is the cost model's price of one GEMM (dcpsim costs gemm
// --json's object; seconds is a contract).
type GEMMCost struct {
	GPU        string  `json:"gpu"`
	M          float64 `json:"m"`
	N          float64 `json:"n"`
	K          float64 `json:"k"`
	Precision  string  `json:"precision"`
	FLOPs      float64 `json:"flops"`
	Seconds    float64 `json:"seconds"`
	TFLOPs     float64 `json:"tflops"`
	PeakTFLOPs float64 `json:"peak_tflops"`
	Bound      string  `json:"bound"`
}

// MemoryCost is the cost model's price of one memory-bound kernel (dcpsim
// costs memory-bound --json's object).
type MemoryCost struct {
	GPU     string  `json:"gpu"`
	Bytes   float64 `json:"bytes"`
	Seconds float64 `json:"seconds"`
	GBps    float64 `json:"gbps"`
}

// opCompute is a Compute of one GPU (tp 1) of prof for a model with the
// given attention heads and dims (the only model fields the ops read).
func opCompute(prof *calib.Profile, heads, dqk, dv int) *compute.Compute {
	m := job.Model{QueryHeads: heads, KVHeads: heads, HeadDimQK: dqk, HeadDimV: dv}
	return &compute.Compute{Profile: prof, Job: job.Job{Model: m, Parallel: job.Parallel{TP: 1}}}
}

// PriceAttention prices the causal core attention of one sequence of seq
// tokens with heads query heads of head dims dqk and dv on one GPU of prof.
func PriceAttention(prof *calib.Profile, seq, heads, dqk, dv int) AttentionCost {
	c := opCompute(prof, heads, dqk, dv)
	m := c.Job.Model
	out := AttentionCost{GPU: prof.Name, SeqTokens: seq, Heads: m.QueryHeads, HeadDimQK: m.HeadDimQK, HeadDimV: m.HeadDimV, Causal: true,
		FwdFLOPs: m.AttentionFwdFLOPs(seq), FwdSeconds: c.AttentionFwdSeconds(seq, 1, seq), BwdSeconds: c.AttentionBwdSeconds(seq, 1, seq),
		PeakTFLOPs: prof.PeakBF16FLOPs.Value / 1e12}
	out.BwdFLOPs = out.FwdFLOPs * m.AttentionBwdFactor()
	out.FwdTFLOPs, out.BwdTFLOPs = out.FwdFLOPs/out.FwdSeconds/1e12, out.BwdFLOPs/out.BwdSeconds/1e12
	out.FwdFraction, out.BwdFraction = out.FwdTFLOPs/out.PeakTFLOPs, out.BwdTFLOPs/out.PeakTFLOPs
	return out
}

// PriceGEMM prices an m×k by k×n product on one GPU of prof, in BF16 or, with
// fp8, FP8 with a BF16 output; a GPU without FP8 tensor cores is an error.
func PriceGEMM(prof *calib.Profile, m, n, k float64, fp8 bool) (GEMMCost, error) {
	c := opCompute(prof, 1, 1, 1)
	g := compute.GEMMShape{M: m, N: n, K: k, Count: 1}
	if fp8 && !prof.HasFP8() {
		return GEMMCost{}, fmt.Errorf("%s has no FP8 tensor cores (its profile has no peak_fp8_flops and gemm_fp8)", prof.Name)
	}
	out := GEMMCost{GPU: prof.Name, M: g.M, N: g.N, K: g.K, Precision: "bf16", FLOPs: g.FLOPs(), Seconds: c.GEMMSeconds(g),
		PeakTFLOPs: prof.PeakBF16FLOPs.Value / 1e12, Bound: "compute"}
	if fp8 {
		out.Precision, out.Seconds, out.PeakTFLOPs = "fp8", c.FP8GEMMSeconds(g), prof.PeakFP8FLOPs.Value/1e12
	}
	out.TFLOPs = out.FLOPs / out.Seconds / 1e12
	if cs, ms := c.GEMMRoofline(g, fp8); ms >= cs {
		out.Bound = "memory"
	}
	return out, nil
}

// PriceMemoryBound prices a memory-bound kernel moving bytes HBM bytes on one
// GPU of prof.
func PriceMemoryBound(prof *calib.Profile, bytes float64) MemoryCost {
	out := MemoryCost{GPU: prof.Name, Bytes: bytes, Seconds: opCompute(prof, 1, 1, 1).MemorySeconds(bytes)}
	out.GBps = bytes / out.Seconds / 1e9
	return out
}
