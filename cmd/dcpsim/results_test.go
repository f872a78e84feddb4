package main

import (
	"encoding/json"
	"github.com/dcpsim/dcpsim/results"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/experiment"
)

// writeTiny writes the tiny scenario (vpp 1) with policies and an optional
// extra TOML tail, and returns its path.
func writeTiny(t *testing.T, dir, name, policies, tail string) string {
	t.Helper()
	f := filepath.Join(dir, name+".toml")
	s := strings.NewReplacer("VPP", "1", "POLICIES", policies, `name = "tiny"`, `name = "`+name+`"`).Replace(tinyScenario) + tail
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRunWritesResults: dcpsim run writes every promised file under --out,
// manifest.json last, with the summary matching the table; bad input exits 2;
// an injected failure leaves no partial file (and no manifest).
func TestRunWritesResults(t *testing.T) {
	dir := t.TempDir()
	sc := writeTiny(t, dir, "tiny-files", `["hydra", "mcore"]`, "")
	out := filepath.Join(dir, "res")
	code, stdout, errOut := dcpsim(t, "run", sc, "--out", out, "--trace-ranks", "0,3")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := []string{"index.html", "iterations.csv", "manifest.json", "summary.json", "timings.json", "trace-hydra.json", "trace-mcore.json"}
	for _, fig := range []string{"throughput", "breakdown", "step-time", "mb-time", "cp-degrees", "memory", "timeline-hydra", "timeline-mcore"} {
		want = append(want, fig+".png", fig+".svg")
	}
	slices.Sort(want)
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
		if info, _ := e.Info(); info.Size() == 0 {
			t.Errorf("%s is empty", e.Name())
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	if !strings.Contains(stdout, "wrote "+out) {
		t.Errorf("stdout does not name the folder:\n%s", stdout)
	}
	var m experiment.Manifest
	b, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err := json.Unmarshal(b, &m); err != nil || m.Scenario != "tiny-files" || len(m.Hash) != 64 || len(m.Files) != len(want)-1 {
		t.Errorf("manifest %+v (%v)", m, err)
	}
	var tr struct {
		TraceEvents []struct {
			Tid int `json:"tid"`
		} `json:"traceEvents"`
	}
	b, _ = os.ReadFile(filepath.Join(out, "trace-hydra.json"))
	if err := json.Unmarshal(b, &tr); err != nil || len(tr.TraceEvents) == 0 {
		t.Errorf("trace: %v, %d events", err, len(tr.TraceEvents))
	}

	// Bad input: exit 2, nothing written.
	for _, args := range [][]string{
		{"run", filepath.Join(dir, "missing.toml"), "--out", filepath.Join(dir, "bad1")},
		{"run", sc, "--trace-ranks", "x", "--out", filepath.Join(dir, "bad2")},
		{"run", sc, "--dollars-per-gpu-hour", "-1", "--out", filepath.Join(dir, "bad3")},
		{"run", "--batches", sc, "--policy", "hydra", "--no-files"},
		{"run", sc, "--policy", "megatron", "--out", filepath.Join(dir, "bad4")},
		{"run", sc, "--trace-ranks", "0,9999", "--out", filepath.Join(dir, "bad5")},
	} {
		if code, _, errOut := dcpsim(t, args...); code != exitInput {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	for _, d := range []string{"bad1", "bad2", "bad3", "bad4", "bad5"} {
		if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
			t.Errorf("%s written after bad input", d)
		}
	}
}

const sweepTail = `
[sweep]
budget_tokens = [4096, 8192]

[sweep.options.hydra]
cap = [8, 16]
`

// readSweep returns sweep.json with the measured Go planner times (the only
// non-deterministic numbers) zeroed.
func readSweep(t *testing.T, dir string) experiment.SweepFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sf experiment.SweepFile
	if err := json.Unmarshal(b, &sf); err != nil {
		t.Fatal(err)
	}
	return sf
}

func sameSweep(t *testing.T, what string, a, b experiment.SweepFile) {
	t.Helper()
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	if string(x) != string(y) {
		t.Errorf("%s: sweeps differ:\n%s\n%s", what, x, y)
	}
}

// TestSweepResumeAndShards: an interrupted sweep resumed gives the same
// sweep.json as an uninterrupted one (and skips the finished points); shards
// merged equal the unsharded sweep; merge refuses incomplete shards.
func TestSweepResumeAndShards(t *testing.T) {
	dir := t.TempDir()
	sc := writeTiny(t, dir, "tiny-sweep", `["hydra", "static"]`, sweepTail)
	full := filepath.Join(dir, "full")
	if code, out, errOut := dcpsim(t, "sweep", sc, "--out", full, "--jobs", "2"); code != exitOK || !strings.Contains(out, "4 simulated") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	ref := readSweep(t, full)
	if len(ref.Points) != 4 || ref.Points[3].Axes[1] != (results.Axis{Key: "hydra.cap", Value: "16"}) || ref.Points[0].Axes[0].Key != "budget_tokens" {
		t.Fatalf("points %+v", ref.Points)
	}
	for _, f := range []string{"sweep.csv", "sweep-hydra-cap.png", "sweep-hydra-cap.svg"} {
		if _, err := os.Stat(filepath.Join(full, f)); err != nil {
			t.Error(err)
		}
	}

	// Interrupted: shard 0/2 ran, and one point of shard 1 left half-written.
	res := filepath.Join(dir, "resumed")
	if code, _, errOut := dcpsim(t, "sweep", sc, "--out", res, "--shard", "0/2"); code != exitOK {
		t.Fatalf("shard: exit %d: %s", code, errOut)
	}
	half := filepath.Join(res, "points", "p0001-budget-4096-hydra.cap-16")
	os.MkdirAll(half, 0o755)
	os.WriteFile(filepath.Join(half, "summary.json"), []byte("{"), 0o644)
	code, out, errOut := dcpsim(t, "sweep", sc, "--out", res)
	if code != exitOK || !strings.Contains(out, "2 simulated, 2 already there") {
		t.Fatalf("resume: exit %d: %s%s", code, out, errOut)
	}
	sameSweep(t, "resumed", ref, readSweep(t, res))

	// Shards in separate folders, merged.
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for i, d := range []string{a, b} {
		if code, _, errOut := dcpsim(t, "sweep", sc, "--out", d, "--shard", []string{"0/2", "1/2"}[i]); code != exitOK {
			t.Fatalf("shard %d: exit %d: %s", i, code, errOut)
		}
	}
	if code, _, errOut := dcpsim(t, "merge", "--out", filepath.Join(dir, "m1"), a); code != exitInput || !strings.Contains(errOut, "2 of 4 points missing") {
		t.Errorf("merge of one shard: exit %d: %s", code, errOut)
	}
	merged := filepath.Join(dir, "merged")
	if code, _, errOut := dcpsim(t, "merge", "--out", merged, a, b); code != exitOK {
		t.Fatalf("merge: exit %d: %s", code, errOut)
	}
	sameSweep(t, "merged", ref, readSweep(t, merged))

	// Bad input.
	for _, args := range [][]string{{"sweep", sc, "--shard", "2/2"}, {"sweep", writeTiny(t, dir, "nosweep", `["hydra"]`, "")}, {"merge", a}} {
		if code, _, errOut := dcpsim(t, args...); code != exitInput {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}
