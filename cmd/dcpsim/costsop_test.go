package main

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
)

// TestCostsOps checks dcpsim costs attention, gemm and memory-bound against
// the formulas their help states, from the profile's constants by hand.
func TestCostsOps(t *testing.T) {
	p, err := calib.LookupProfile("H800")
	if err != nil {
		t.Fatal(err)
	}
	peak := p.TensorPeak(false) // sustained in training (calib.Profile.SustainedEfficiency)
	curve := func(c calib.Curve, x float64) float64 { return c.Max.Value * x / (x + c.Half.Value) }
	rel := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Abs(want) }

	// Attention at d = 128 (the 128 curves alone) and MLA's d_qk 192, d_v
	// 128 (halfway between the 128 and 256 curves: w = (192 − 128)/128).
	for _, c := range []struct {
		args    []string
		h, dqk  float64
		dv, w   float64
		seq     float64
		bwdMult float64
	}{
		{[]string{"--seq", "32768"}, 32, 128, 128, 0, 32768, 2.5},
		{[]string{"--seq", "4096", "--heads", "128", "--qk-head-dim", "192", "--v-head-dim", "128"}, 128, 192, 128, 0.5, 4096, (3*192 + 2*128) / 320.0},
	} {
		code, out, stderr := dcpsim(t, append([]string{"costs", "attention", "--gpu", "H800", "--json"}, c.args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		flops := c.h * (c.dqk + c.dv) * c.seq * c.seq
		etaF := (1-c.w)*curve(p.AttentionFwd, c.seq) + c.w*curve(p.AttentionFwdD256, c.seq)
		etaB := (1-c.w)*curve(p.AttentionBwd, c.seq) + c.w*curve(p.AttentionBwdD256, c.seq)
		if f := got["fwd_seconds"].(float64); !rel(f, flops/(peak*etaF)) {
			t.Errorf("%v: fwd_seconds %g, want %g", c.args, f, flops/(peak*etaF))
		}
		if b := got["bwd_seconds"].(float64); !rel(b, c.bwdMult*flops/(peak*etaB)) {
			t.Errorf("%v: bwd_seconds %g, want %g", c.args, b, c.bwdMult*flops/(peak*etaB))
		}
	}

	// A square GEMM (compute-bound) and a thin one (memory-bound).
	for _, c := range []struct {
		m, n, k float64
		bound   string
	}{{8192, 8192, 8192, "compute"}, {1, 8192, 8192, "memory"}} {
		code, out, stderr := dcpsim(t, "costs", "gemm", "--gpu", "H800", "--json", "--m", f(c.m), "--n", f(c.n), "--k", f(c.k))
		if code != exitOK {
			t.Fatalf("gemm: exit %d: %s", code, stderr)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		x := 3 / (1/c.m + 1/c.n + 1/c.k)
		want := max(2*c.m*c.n*c.k/(peak*curve(p.GEMM, x)), 2*(c.m*c.k+c.k*c.n+c.m*c.n)/(p.HBMBytesPerSecond.Value*p.MemoryBoundEfficiency.Value))
		if s := got["seconds"].(float64); !rel(s, want) || got["bound"] != c.bound {
			t.Errorf("gemm %gx%gx%g: %g s %v, want %g s %s", c.m, c.n, c.k, s, got["bound"], want, c.bound)
		}
	}

	// The same at FP8: the FP8 peak and gemm_fp8, bytes mk + kn + 2mn.
	{
		const m, n, k = 4096, 7168, 16384
		code, out, stderr := dcpsim(t, "costs", "gemm", "--gpu", "H800", "--json", "--precision", "fp8", "--m", f(m), "--n", f(n), "--k", f(k))
		if code != exitOK {
			t.Fatalf("gemm fp8: exit %d: %s", code, stderr)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		x := 3 / (1.0/m + 1.0/n + 1.0/k)
		want := max(2*m*n*k/(p.TensorPeak(true)*curve(p.GEMMFP8, x)), (m*k+k*n+2*m*n)/(p.HBMBytesPerSecond.Value*p.MemoryBoundEfficiency.Value))
		if s := got["seconds"].(float64); !rel(s, want) || got["precision"] != "fp8" || got["bound"] != "compute" {
			t.Errorf("gemm fp8: %g s %v %v, want %g s fp8 compute", s, got["precision"], got["bound"], want)
		}
	}

	code, out, _ := dcpsim(t, "costs", "memory-bound", "--gpu", "H800", "--bytes", "1073741824", "--json")
	var mb map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &mb) != nil {
		t.Fatalf("memory-bound: exit %d: %s", code, out)
	}
	if want := float64(1<<30) / (p.HBMBytesPerSecond.Value * p.MemoryBoundEfficiency.Value); !rel(mb["seconds"].(float64), want) {
		t.Errorf("memory-bound: %v s, want %g", mb["seconds"], want)
	}
}

// f is a flag value.
func f(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func TestCostsOpsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"costs", "attention", "--seq", "4096"}, "--gpu: required"},
		{[]string{"costs", "attention", "--gpu", "Z80", "--seq", "4096"}, `--gpu "Z80"`},
		{[]string{"costs", "attention", "--gpu", "H800"}, "--seq 0"},
		{[]string{"costs", "attention", "--gpu", "H800", "--seq", "1.5"}, "--seq 1.5"},
		{[]string{"costs", "attention", "--gpu", "H800", "--seq", "4096", "--causal=false"}, "causal attention only"},
		{[]string{"costs", "attention", "--gpu", "H800", "--seq", "4096", "--heads", "NaN"}, "--heads NaN"},
		{[]string{"costs", "gemm", "--gpu", "H800", "--m", "1", "--n", "1"}, "--k 0"},
		{[]string{"costs", "gemm", "--gpu", "A100-80G", "--m", "1", "--n", "1", "--k", "1", "--precision", "fp8"}, "A100-80G has no FP8 tensor cores"},
		{[]string{"costs", "gemm", "--gpu", "H800", "--m", "1", "--n", "1", "--k", "1", "--precision", "fp16"}, "want bf16 or fp8"},
		{[]string{"costs", "gemm", "--gpu", "H800", "--m", "1e13", "--n", "1", "--k", "1"}, "--m 1e+13"},
		{[]string{"costs", "memory-bound", "--gpu", "H800"}, "--bytes 0"},
		{[]string{"costs", "memory-bound", "--gpu", "H800", "--bytes", "8", "extra"}, "takes only flags"},
		{[]string{"costs", "flops"}, "costs takes a subcommand: collective, attention, gemm or memory-bound"},
	} {
		code, stdout, stderr := dcpsim(t, c.args...)
		if code != exitInput || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stdout+stderr, c.want)
		}
	}
}
