package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// syntheticTrace is the kineto package's project-made trace (synthetic:
// generated from the cost model's prices, not recorded on a GPU).
var syntheticTrace = filepath.Join("..", "..", "calib", "kineto", "testdata", "synthetic-h100-llama-step.json.gz")

// TestCalibrateFromTrace: --from-trace prints the comparison and, with --out,
// fits the curves the trace determines, sourcing each to the file and its
// SHA-256; without --out it writes nothing.
func TestCalibrateFromTrace(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := dcpsim(t, "calibrate", "--from-trace", syntheticTrace, "--gpu", "H100-SXM")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	for _, want := range []string{"563 GPU kernels", "Per step", "Unclassified kernels", "my_fused_rope_kernel",
		"left out of the fit:", "non-causal attention", "no --out: nothing fitted", "all_gather;bytes=436224000;ranks=8"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	out := filepath.Join(dir, "h100-trace.toml")
	code, stdout, stderr = dcpsim(t, "calibrate", "--from-trace", syntheticTrace, "--gpu", "H100-SXM", "--out", out, "--name", "h100-mine")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(syntheticTrace)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	prof, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	src := "fit:" + syntheticTrace + " " + hex.EncodeToString(sum[:])
	for _, key := range []string{"[gemm.half]", "[attention_fwd.max]", "[attention_bwd.half]"} {
		i := strings.Index(string(prof), key)
		if i < 0 || !strings.Contains(string(prof)[i:i+400], src) {
			t.Errorf("%s is not sourced %q", key, src)
		}
	}
	if !strings.Contains(string(prof), `name = "h100-mine"`) || !strings.Contains(stdout, "with the fitted profile, per class:") ||
		!strings.Contains(stdout, "gemm_fp8: not fitted, the base's values kept") {
		t.Errorf("profile or output incomplete:\n%s", stdout)
	}
}

// TestCalibrateFromTraceBadInput: bad traces and flags are exit 2 naming
// the problem.
func TestCalibrateFromTraceBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gz, err := os.ReadFile(syntheticTrace)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	// One GEMM of 4096³ that "took" a microsecond: 137 PFLOP/s.
	fast := `{"traceEvents": [
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 50, "args": {"External id": 7, "Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas", "pid": 0, "tid": 7, "ts": 10, "dur": 1, "args": {"External id": 7, "device": 0, "stream": 7, "grid": [32, 32, 1], "block": [384, 1, 1]}}
]}`
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from-trace", syntheticTrace}, "--from-trace needs --gpu KIND"},
		{[]string{"--from-trace", syntheticTrace, "--gpu", "Z80"}, `--gpu "Z80"`},
		{[]string{"--from-trace", syntheticTrace, "--gpu", "H800", "--base", "H800"}, "not both"},
		{[]string{"--from-trace", syntheticTrace, "--gpu", "H800", "--name", "x"}, "--name goes with --out"},
		{[]string{"--from-trace", syntheticTrace, "--gpu", "H800", "--budget", "1s"}, "--budget does not go with --from-trace"},
		{[]string{"--gpu", "H800", "--out", filepath.Join(dir, "p.toml")}, "--gpu goes with --from-trace"},
		{[]string{"--from-trace", filepath.Join(dir, "none.json"), "--gpu", "H800"}, "no such file"},
		{[]string{"--from-trace", write("half.json", plain.Bytes()[:plain.Len()/2]), "--gpu", "H100-SXM"}, "truncated JSON"},
		{[]string{"--from-trace", write("half.json.gz", gz[:len(gz)/2]), "--gpu", "H100-SXM"}, "half.json.gz"},
		{[]string{"--from-trace", write("scenario.json", []byte(`{"name": "not a trace"}`)), "--gpu", "H100-SXM"}, "not a PyTorch profiler trace: no traceEvents"},
		{[]string{"--from-trace", write("fast.json", []byte(fast)), "--gpu", "H100-SXM"}, "are the durations in microseconds?"},
	} {
		code, stdout, stderr := dcpsim(t, append([]string{"calibrate"}, c.args...)...)
		if code != exitInput || !strings.Contains(stdout+stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, %s%s; want 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}
