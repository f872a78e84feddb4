package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/calibrate"
	"github.com/dcpsim/dcpsim/job"
)

const costsOpUsage = `  dcpsim costs attention --gpu KIND --seq S [--heads H] [--qk-head-dim D]
                         [--v-head-dim DV] [--causal] [--json]
  dcpsim costs gemm --gpu KIND --m M --n N --k K [--precision bf16|fp8] [--json]
  dcpsim costs memory-bound --gpu KIND --bytes B [--json]

  The cost model's price of one operator on one GPU of a calibration profile, as
  calib prices every op of a simulated layer, for a person to set beside their own
  kernel timings:

  attention: the causal core attention (FlashAttention) of one sequence of S
  tokens with H query heads (default 32) of head dims D (default 128) and DV
  (default D): forward c·S²/(peak·η_fwd(S)), c = H·(D + DV), and backward
  (3D + 2DV)/(D + DV) times its FLOPs at η_bwd(S), with the profile's head-dim-128
  and 256 curves interpolated in D. JSON keys fwd_seconds and bwd_seconds (a
  contract) and the achieved TFLOP/s by FlashAttention's FLOP convention. Only
  causal attention is modelled (what training runs): --causal=false is refused.

  gemm: an M×K by K×N product, max(2MNK/(peak·η_gemm(3/(1/M + 1/N + 1/K))),
  2(MK + KN + MN)/(HBM·memory_bound_efficiency)); the kernel launch the cost model
  adds per kernel of a layer is not in it. --precision fp8 prices an FP8 (E4M3)
  GEMM with a BF16 output against the profile's FP8 peak and gemm_fp8 curve,
  bytes MK + KN + 2MN, as FP8 training does (the input casts are memory-bound
  kernels of their own: 4 bytes an element); a GPU without FP8 tensor cores is
  refused. JSON key seconds (a contract) and the achieved TFLOP/s.

  memory-bound: a kernel moving B HBM bytes (norms, elementwise, the
  quantisation a precision change would add): B/(HBM·memory_bound_efficiency).
  JSON key seconds.

  Sizes in [1, 2^40] (heads and head dims in [1, 2^16], S in [1, 2^25]).`

// opProfile resolves --gpu: the calibration profile of the GPU kind.
func opProfile(kind string) (*calib.Profile, error) {
	if kind == "" {
		return nil, badInput("--gpu: required, a calibration profile name (known: %v)", calib.ProfileNames())
	}
	prof, err := calib.LookupProfile(kind)
	if err != nil {
		return nil, badInput("--gpu %q: %v", kind, err)
	}
	return prof, nil
}

// sizeFlag checks a positive size flag.
func sizeFlag(name string, v, hi float64) error {
	if !(v >= 1 && v <= hi) || math.IsNaN(v) || v != math.Trunc(v) {
		return badInput("--%s %v: must be an integer in [1, %g]", name, v, hi)
	}
	return nil
}

func runCostsAttention(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("costs attention", costsOpUsage, stderr)
	gpu := fs.String("gpu", "", "calibration profile of the GPU kind (e.g. H800)")
	seq := fs.Float64("seq", 0, "sequence length in tokens")
	heads := fs.Float64("heads", 32, "query heads on the GPU")
	dqk := fs.Float64("qk-head-dim", 128, "query/key head dimension")
	dv := fs.Float64("v-head-dim", 0, "value head dimension (0: the qk head dim)")
	causal := fs.Bool("causal", true, "causal mask (the only one modelled)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := onlyFlags(fs, args, "costs attention"); err != nil {
		return err
	}
	if *dv == 0 {
		*dv = *dqk
	}
	for _, f := range []struct {
		name   string
		v, max float64
	}{{"seq", *seq, job.MaxContextTokens}, {"heads", *heads, 1 << 16}, {"qk-head-dim", *dqk, 1 << 16}, {"v-head-dim", *dv, 1 << 16}} {
		if err := sizeFlag(f.name, f.v, f.max); err != nil {
			return err
		}
	}
	if !*causal {
		return badInput("--causal=false: the cost model prices causal attention only (what training runs); a non-causal kernel is not modelled")
	}
	prof, err := opProfile(*gpu)
	if err != nil {
		return err
	}
	out := calibrate.PriceAttention(prof, int(*seq), int(*heads), int(*dqk), int(*dv))
	if *asJSON {
		return json.NewEncoder(stdout).Encode(out)
	}
	_, err = fmt.Fprintf(stdout, "causal attention of %d tokens, %d heads of d_qk %d, d_v %d on one %s: forward %.6g s (%.1f TFLOP/s, %.1f%% of peak), backward %.6g s (%.1f TFLOP/s, %.1f%%)\n",
		out.SeqTokens, out.Heads, out.HeadDimQK, out.HeadDimV, out.GPU, out.FwdSeconds, out.FwdTFLOPs, 100*out.FwdFraction, out.BwdSeconds, out.BwdTFLOPs, 100*out.BwdFraction)
	return err
}

func runCostsGEMM(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("costs gemm", costsOpUsage, stderr)
	gpu := fs.String("gpu", "", "calibration profile of the GPU kind (e.g. H800)")
	m := fs.Float64("m", 0, "rows (tokens)")
	n := fs.Float64("n", 0, "output features")
	k := fs.Float64("k", 0, "contraction")
	precision := fs.String("precision", "bf16", "bf16 or fp8")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := onlyFlags(fs, args, "costs gemm"); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"m", *m}, {"n", *n}, {"k", *k}} {
		if err := sizeFlag(f.name, f.v, 1<<40); err != nil {
			return err
		}
	}
	if *precision != "bf16" && *precision != "fp8" {
		return badInput("--precision %q: want bf16 or fp8", *precision)
	}
	prof, err := opProfile(*gpu)
	if err != nil {
		return err
	}
	out, err := calibrate.PriceGEMM(prof, *m, *n, *k, *precision == "fp8")
	if err != nil {
		return badInput("--precision fp8: %v", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(out)
	}
	_, err = fmt.Fprintf(stdout, "GEMM %g×%g by %g×%g (%s) on one %s: %.6g s, %.1f TFLOP/s (%.1f%% of the %.0f TFLOP/s peak), %s-bound\n",
		out.M, out.K, out.K, out.N, out.Precision, out.GPU, out.Seconds, out.TFLOPs, 100*out.TFLOPs/out.PeakTFLOPs, out.PeakTFLOPs, out.Bound)
	return err
}

func runCostsMemory(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("costs memory-bound", costsOpUsage, stderr)
	gpu := fs.String("gpu", "", "calibration profile of the GPU kind (e.g. H800)")
	size := fs.Float64("bytes", 0, "HBM bytes the kernel reads and writes")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := onlyFlags(fs, args, "costs memory-bound"); err != nil {
		return err
	}
	if err := sizeFlag("bytes", *size, 1<<40); err != nil {
		return err
	}
	prof, err := opProfile(*gpu)
	if err != nil {
		return err
	}
	out := calibrate.PriceMemoryBound(prof, *size)
	if *asJSON {
		return json.NewEncoder(stdout).Encode(out)
	}
	_, err = fmt.Fprintf(stdout, "a memory-bound kernel moving %s on one %s: %.6g s (%.1f GB/s)\n", formatBytes(*size), out.GPU, out.Seconds, out.GBps)
	return err
}

// onlyFlags parses args, which must be flags only.
func onlyFlags(fs *cmdFlags, args []string, what string) error {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("%s takes only flags, got %q", what, pos)
	}
	return nil
}
