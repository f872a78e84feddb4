package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/internal/report/chakra"
)

// traceScenario is a 64-GPU scenario (DeepSeek-V2-Lite with 28 layers on
// H20s, tp 2, pp 2 × vpp 2, ep 8: 16 HDP ranks a stage) written to a
// temporary file.
func traceScenario(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace-tiny.toml")
	src := `name = "trace-tiny"

[cluster]
gpu = "H20"
gpus = 64

[model]
preset = "deepseek-v2-lite"
layers = 28

[parallel]
tp = 2
pp = 2
vpp = 2
ep = 8
budget_tokens = 8192

[workload]
preset = "long-256k"
context_tokens = 32768
batch_tokens = 524288

[run]
iterations = 2
warmup_iterations = 1
policies = ["hydra"]
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTraceWritesChakra: dcpsim trace writes one readable .et file per NPU
// of --ranks and the communicator files, a line for each on stdout and the
// wall time on stderr.
func TestTraceWritesChakra(t *testing.T) {
	sc := traceScenario(t)
	out := filepath.Join(t.TempDir(), "traces")
	code, stdout, stderr := dcpsim(t, "trace", sc, "--policy", "hydra", "--format", "chakra", "--ranks", "0,1,32-33,1", "--out", out, "--prefix", "tr")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 6 || !strings.Contains(stderr, "4 NPUs") || !strings.Contains(stderr, " s\n") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	for _, npu := range []string{"0", "1", "32", "33"} {
		f, err := os.Open(filepath.Join(out, "tr."+npu+".et"))
		if err != nil {
			t.Fatal(err)
		}
		md, nodes, err := chakra.ReadTrace(f)
		f.Close()
		if err != nil || len(nodes) == 0 || md.Version != chakra.SchemaVersion {
			t.Fatalf("NPU %s: %d nodes, %v", npu, len(nodes), err)
		}
	}
	for _, f := range []string{"comm_groups.json", "comm_groups.names.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// --astra-config writes ASTRA-sim's configuration of the cluster too.
	astra := filepath.Join(t.TempDir(), "astra")
	code, stdout, stderr = dcpsim(t, "trace", sc, "--policy", "hydra", "--ranks", "0-63", "--out", out, "--astra-config", astra)
	if code != exitOK || !strings.Contains(stdout, filepath.Join(astra, "system-roofline.json")) {
		t.Fatalf("--astra-config: exit %d:\n%s%s", code, stdout, stderr)
	}
	for f, want := range map[string]string{"network.yml": "npus_count: [ 8, 8 ]", "system.json": `"roofline-enabled": 0`,
		"system-roofline.json": `"roofline-enabled": 1`, "remote-memory.json": "NO_MEMORY_EXPANSION"} {
		if b, err := os.ReadFile(filepath.Join(astra, f)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v\n%s", f, err, b)
		}
	}
	// The default prefix is the policy's name.
	code, stdout, stderr = dcpsim(t, "trace", sc, "--policy", "hydra", "--ranks", "5", "--out", out, "--iteration", "0")
	if code != exitOK || !strings.Contains(stdout, filepath.Join(out, "hydra.5.et")) {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
}

// TestTraceBadInput: every bad flag exits 2 naming the value and what is
// allowed.
func TestTraceBadInput(t *testing.T) {
	sc := traceScenario(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "nope", "--ranks", "0", "--out", out}, "nope"},
		{[]string{"--ranks", "0", "--out", out}, "--policy is required"},
		{[]string{"--policy", "hydra", "--out", out}, "--ranks is required"},
		{[]string{"--policy", "hydra", "--ranks", "0"}, "--out is required"},
		{[]string{"--policy", "hydra", "--ranks", "x", "--out", out}, `--ranks "x": "x" is not an NPU id`},
		{[]string{"--policy", "hydra", "--ranks", "3-1", "--out", out}, `"3-1" is not a range`},
		{[]string{"--policy", "hydra", "--ranks", "-1", "--out", out}, "not an NPU id"},
		{[]string{"--policy", "hydra", "--ranks", "0-4096", "--out", out}, "more than 4096 NPUs"},
		{[]string{"--policy", "hydra", "--ranks", "0-2000,3000-5100", "--out", out}, "more than 4096 NPUs"},
		{[]string{"--policy", "hydra", "--ranks", "0,64", "--out", out}, "NPU 64 outside [0, 64)"},
		{[]string{"--policy", "hydra", "--ranks", "0", "--out", out, "--iteration", "2"}, "--iteration 2: outside scenario trace-tiny's iterations [0, 2)"},
		{[]string{"--policy", "hydra", "--ranks", "0", "--out", out, "--iteration", "-3"}, "--iteration -3"},
		{[]string{"--policy", "hydra", "--ranks", "0", "--out", file}, "is a file"},
		{[]string{"--policy", "hydra", "--ranks", "0", "--out", out, "--astra-config", file}, "--astra-config " + file + ": is a file"},
		{[]string{"--policy", "hydra", "--ranks", "0", "--out", out, "--format", "perfetto"}, "only chakra"},
		{[]string{"--policy", "hydra", "--ranks", "0", "--out", out, "--prefix", "a/b"}, "--prefix"},
		{[]string{"--policy", "hydra", "--ranks", "0", "--out", out, "extra"}, "unexpected arguments"},
	} {
		code, _, stderr := dcpsim(t, append([]string{"trace", sc}, c.args...)...)
		if code != exitInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused trace created %s", out)
	}
}
