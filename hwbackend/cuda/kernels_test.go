package cuda

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKernelSourceBalanced checks that (), [] and {} nest in attentionSource
// once // comments are dropped: a cheap guard against a broken edit, since
// NVRTC only sees the source on a GPU machine.
func TestKernelSourceBalanced(t *testing.T) {
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var stack []rune
	for n, line := range strings.Split(attentionSource, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		for _, r := range line {
			switch r {
			case '(', '[', '{':
				stack = append(stack, r)
			case ')', ']', '}':
				if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
					t.Fatalf("line %d: unmatched %q: %s", n+1, r, line)
				}
				stack = stack[:len(stack)-1]
			}
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed %q", string(stack))
	}
}

// TestKernelNames checks that the source defines exactly the kernels the
// backend looks up with cuModuleGetFunction.
func TestKernelNames(t *testing.T) {
	re := regexp.MustCompile(`extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(attentionSource, -1) {
		got = append(got, m[1])
	}
	want := kernelNames()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("kernels in source %v, backend looks up %v", got, want)
	}
	for _, name := range []string{"attn_fwd_128_128", "attn_bwd_128_128", "attn_bwd_dot", "f32_to_bf16", "fill_bf16"} {
		if !slices.Contains(got, name) {
			t.Errorf("kernel %s missing", name)
		}
	}
}

// TestKernelConstants checks that the tile sizes in the source match the Go
// side, and that every kernel's shared memory fits an sm_90 block.
func TestKernelConstants(t *testing.T) {
	for name, want := range map[string]int{"BM": attnBlock, "BN": attnBlock, "PAD": attnPad} {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindStringSubmatch(attentionSource)
		if m == nil {
			t.Fatalf("#define %s not found", name)
		}
		if got, _ := strconv.Atoi(m[1]); got != want {
			t.Errorf("%s = %d in the source, %d in Go", name, got, want)
		}
	}
	for _, d := range supportedHeadDims {
		for _, n := range []int{fwdSharedBytes(d), bwdSharedBytes(d)} {
			if n > optInSharedBytes {
				t.Errorf("%v: %d B of shared memory exceeds %d", d, n, optInSharedBytes)
			}
		}
	}
	if got := fwdSharedBytes(headDims{64, 64}); got != 2*(64*72*3) {
		t.Errorf("fwdSharedBytes(64,64) = %d", got)
	}
	if got := bwdSharedBytes(headDims{192, 192}); got != 121344 {
		t.Errorf("bwdSharedBytes(192,192) = %d, want 121344", got)
	}
}

// TestKernelsOnHostEmulation compiles attentionSource with g++ against
// testdata/emulate.cc, which runs every kernel on CPU threads (warp shuffles
// and mma.sync emulated per the PTX fragment layouts) and compares O, the LSE
// and dQ, dK, dV with a double-precision reference. It checks the algorithm
// and the fragment bookkeeping, not NVRTC, the inline PTX or speed.
func TestKernelsOnHostEmulation(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs a C++ emulation; skipped with -short")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not found")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "attention.cu"), []byte(attentionSource), 0o644); err != nil {
		t.Fatal(err)
	}
	harness, err := filepath.Abs(filepath.Join("testdata", "emulate.cc"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "emulate")
	build := exec.CommandContext(ctx, gxx, "-std=c++20", "-O1", "-pthread", "-fno-strict-aliasing", "-w",
		"-I", dir, "-o", bin, harness)
	if out, err := build.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "barrier") && strings.Contains(string(out), "No such file") {
			t.Skipf("g++ lacks C++20 <barrier>: %s", out)
		}
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin).CombinedOutput()
	t.Logf("emulation:\n%s", out)
	if err != nil {
		t.Fatalf("emulation failed: %v", err)
	}
}

// TestKernelSourceCompilesForNVPTX compiles attentionSource to PTX for sm_80
// with clang's CUDA front end, where clang is installed: a type check of the
// C++ and of the inline-asm operands without a CUDA toolkit. NVRTC (EDG-based)
// may still disagree in corners; only a GPU machine settles that.
func TestKernelSourceCompilesForNVPTX(t *testing.T) {
	var clang string
	for _, name := range []string{"clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"} {
		if p, err := exec.LookPath(name); err == nil {
			clang = p
			break
		}
	}
	if clang == "" {
		t.Skip("clang not found")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "attention.cu")
	if err := os.WriteFile(src, []byte(attentionSource), 0o644); err != nil {
		t.Fatal(err)
	}
	prelude, err := filepath.Abs(filepath.Join("testdata", "clang_prelude.cuh"))
	if err != nil {
		t.Fatal(err)
	}
	ptx := filepath.Join(dir, "attention.ptx")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_80",
		"-nocudainc", "-nocudalib", "-O0", "-std=c++17", "-Xclang", "-target-feature", "-Xclang", "+ptx70",
		"-include", prelude, "-S", "-o", ptx, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		for _, why := range []string{"Unknown target", "unable to create target", "CUDA installation", "unsupported"} {
			if strings.Contains(string(out), why) {
				t.Skipf("this clang cannot target NVPTX here: %s", out)
			}
		}
		t.Fatalf("clang: %v\n%s", err, out)
	}
	text, err := os.ReadFile(ptx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kernelNames() {
		if !strings.Contains(string(text), ".entry "+k+"(") {
			t.Errorf("PTX has no entry %s", k)
		}
	}
	if !strings.Contains(string(text), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") {
		t.Error("PTX has no bf16 mma.sync")
	}
}
