package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ncclTestsText is a short nccl-tests all_gather output over 16 ranks on two
// hosts (its times made up, its layout nccl-tests').
const ncclTestsText = `# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703
# Collective test starting: all_gather_perf
# Using devices
#  Rank  0 Group  0 Pid   1000 on      node0 device  0 [0000:01:00] NVIDIA H800
#  Rank  1 Group  0 Pid   1001 on      node0 device  1 [0000:02:00] NVIDIA H800
#  Rank  2 Group  0 Pid   1002 on      node0 device  2 [0000:03:00] NVIDIA H800
#  Rank  3 Group  0 Pid   1003 on      node0 device  3 [0000:04:00] NVIDIA H800
#  Rank  4 Group  0 Pid   1004 on      node0 device  4 [0000:05:00] NVIDIA H800
#  Rank  5 Group  0 Pid   1005 on      node0 device  5 [0000:06:00] NVIDIA H800
#  Rank  6 Group  0 Pid   1006 on      node0 device  6 [0000:07:00] NVIDIA H800
#  Rank  7 Group  0 Pid   1007 on      node0 device  7 [0000:08:00] NVIDIA H800
#  Rank  8 Group  0 Pid   1008 on      node1 device  0 [0000:01:00] NVIDIA H800
#  Rank  9 Group  0 Pid   1009 on      node1 device  1 [0000:02:00] NVIDIA H800
#  Rank 10 Group  0 Pid   1010 on      node1 device  2 [0000:03:00] NVIDIA H800
#  Rank 11 Group  0 Pid   1011 on      node1 device  3 [0000:04:00] NVIDIA H800
#  Rank 12 Group  0 Pid   1012 on      node1 device  4 [0000:05:00] NVIDIA H800
#  Rank 13 Group  0 Pid   1013 on      node1 device  5 [0000:06:00] NVIDIA H800
#  Rank 14 Group  0 Pid   1014 on      node1 device  6 [0000:07:00] NVIDIA H800
#  Rank 15 Group  0 Pid   1015 on      node1 device  7 [0000:08:00] NVIDIA H800
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        16384     float    none      -1    120.0    8.74    8.19      0    118.0    8.89    8.33      0
    16777216       262144     float    none      -1    700.0   23.97   22.47      0    690.0   24.31   22.80      0
   268435456      4194304     float    none      -1   8000.0   33.55   31.46      0   7950.0   33.77   31.66      0
  1073741824     16777216     float    none      -1  30000.0   35.79   33.55      0  29800.0   36.03   33.78      0
`

func TestCalibrateFromNCCLTests(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ag.txt")
	if err := os.WriteFile(in, []byte(ncclTestsText), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "h800-fabric.toml")
	code, stdout, stderr := dcpsim(t, "calibrate", "--from-nccl-tests", in, "--base", "H800", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	for _, want := range []string{"all_gather over 16 ranks on 2 node(s) (8 per node) on NVIDIA H800: 4 sizes, 8 timings",
		"collective_inter", "all_gather_inter", "measured (out-of-place) beside the cost model", "1073741824         30000.0", "wrote profile"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	prof, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(prof), "fit:"+in) {
		t.Errorf("the profile does not source its fitted constants to the file: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from-nccl-tests", in, "--out", out}, "--from needs --base"},
		{[]string{"--from-nccl-tests", in, "--from", in, "--base", "H800", "--out", out}, "give one file to fit"},
		{[]string{"--from-nccl-tests", filepath.Join(dir, "none.txt"), "--base", "H800", "--out", out}, "no such file"},
		{[]string{"--nccl-ranks", "8", "--base", "H800", "--out", out}, "--nccl-ranks goes with --from-nccl-tests"},
		{[]string{"--from-nccl-tests", "/dev/zero", "--base", "H800", "--out", out}, "file too large"},
	} {
		code, stdout, stderr := dcpsim(t, append([]string{"calibrate"}, c.args...)...)
		if code != exitInput || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%v: exit %d, %s%s; want 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte(strings.Replace(ncclTestsText, "30000.0", "30.0", 1)), 0o644)
	if code, _, stderr := dcpsim(t, "calibrate", "--from-nccl-tests", bad, "--base", "H800", "--out", out); code != exitInput ||
		!strings.Contains(stderr, "line 26: algbw 35.79 GB/s but size/time") {
		t.Errorf("wrong units: exit %d, %s", code, stderr)
	}
}

// TestRunNamesItsProfile: a run on another kind's profile file says so in
// its header and records the profile (name, file, SHA-256) in summary.json
// and manifest.json.
func TestRunNamesItsProfile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ag.txt")
	os.WriteFile(in, []byte(ncclTestsText), 0o644)
	prof := filepath.Join(dir, "h800-fabric.toml")
	if code, _, stderr := dcpsim(t, "calibrate", "--from-nccl-tests", in, "--base", "H800", "--out", prof); code != exitOK {
		t.Fatal(stderr)
	}
	scen := filepath.Join(dir, "s.toml")
	text := `name = "on-h800-profile"
[cluster]
gpu = "H20"
gpus = 64
[model]
preset = "paper-mla"
[parallel]
tp = 1
pp = 4
ep = 8
budget_tokens = 8192
recompute = "full"
[workload]
preset = "long-256k"
context_tokens = 32768
batch_tokens = 524288
[run]
iterations = 2
warmup_iterations = 1
policies = ["hydra"]
[costs]
profile = "h800-fabric.toml"
`
	os.WriteFile(scen, []byte(text), 0o644)
	out := filepath.Join(dir, "run")
	code, stdout, stderr := dcpsim(t, "run", scen, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"profile: H800 prices the cluster's H20 (" + prof, "attention_fwd (read at d_qk 192): not calibrated, from the embedded H800 profile"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("header lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"summary.json", "manifest.json"} {
		b, _ := os.ReadFile(filepath.Join(out, f))
		if !strings.Contains(string(b), `"name": "H800"`) || !strings.Contains(string(b), `"kind": "H20"`) || !strings.Contains(string(b), `"sha256": "`) {
			t.Errorf("%s does not record the profile", f)
		}
	}
}
