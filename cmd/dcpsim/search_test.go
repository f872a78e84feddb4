package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSearchCommand runs dcpsim search on a small space: the --json lines
// carry the contract's keys for every candidate, the tables answer the
// planner's questions, and shards merge into the same files.
func TestSearchCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s")
	code, stdout, stderr := dcpsim(t, "search", "testdata/search-small.toml", "--out", out, "--json", "--jobs", "2")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2*2*3*2*2*2 {
		t.Errorf("%d JSON lines, want one per candidate (96)", len(lines))
	}
	keys := []string{"tp", "pp", "vpp", "ep", "budget_tokens", "recompute", "policy", "gpus", "tokens_per_day", "step_seconds_mean", "peak_memory_bytes", "status"}
	ok := 0
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, k := range keys {
			if _, has := m[k]; !has {
				t.Errorf("line %d: no %q", i+1, k)
			}
		}
		if m["status"] == "ok" {
			ok++
			if m["tokens_per_day"].(float64) <= 0 {
				t.Errorf("line %d: ok without tokens/day", i+1)
			}
		}
	}
	if ok == 0 {
		t.Error("no ok candidate")
	}
	for _, f := range []string{"search.json", "search.csv", "search-pareto.png", "search-best.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// The tables, read back from evals/ (nothing simulated again).
	code, stdout, stderr = dcpsim(t, "search", "testdata/search-small.toml", "--out", out, "--tokens", "1e11", "--days", "10", "--top", "3")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "simulated 0 runs") {
		t.Errorf("stderr lacks the wall-time line of a search read back whole: %s", stderr)
	}
	for _, want := range []string{"the 3 best of", "best layout per policy at 32 GPUs (the answer's cluster size)", "1e+11 tokens in 10.0 days needs 10.00 B tokens/day", "answer: 32 GPUs", "hydra", "static"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// Shards and merge give the same search.json.
	s0, s1, merged := filepath.Join(dir, "0"), filepath.Join(dir, "1"), filepath.Join(dir, "m")
	for i, d := range []string{s0, s1} {
		if code, _, stderr := dcpsim(t, "search", "testdata/search-small.toml", "--out", d, "--shard", []string{"0/2", "1/2"}[i]); code != exitOK {
			t.Fatalf("shard %d: exit %d: %s", i, code, stderr)
		}
	}
	if code, stdout, stderr := dcpsim(t, "merge", "--out", merged, s0, s1); code != exitOK || !strings.Contains(stdout, "merged 2 shards") {
		t.Fatalf("merge: exit %d: %s%s", code, stdout, stderr)
	}
	a, _ := os.ReadFile(filepath.Join(out, "search.json"))
	b, _ := os.ReadFile(filepath.Join(merged, "search.json"))
	if len(a) == 0 || string(a) != string(b) {
		t.Error("merged search.json differs from the unsharded one")
	}
}

func TestSearchCommandBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"search"}, "takes one scenario"},
		{[]string{"search", "testbed-256k"}, "has no [search]"},
		{[]string{"search", "testdata/search-small.toml", "--jobs", "0"}, "--jobs 0"},
		{[]string{"search", "testdata/search-small.toml", "--tokens", "1e12"}, "exactly one of --days"},
		{[]string{"search", "testdata/search-small.toml", "--tokens", "1e12", "--by", "2000-01-01"}, "the date has passed"},
		{[]string{"search", "testdata/search-small.toml", "--tokens", "1e12", "--by", "soon"}, "want a date"},
		{[]string{"search", "testdata/search-small.toml", "--days", "3"}, "--tokens 0"},
		{[]string{"search", "testdata/search-small.toml", "--shard", "2/2"}, "--shard"},
		{[]string{"search", "testdata/search-small.toml", "--out", "testdata"}, "not a dcpsim search folder"},
	} {
		code, stdout, stderr := dcpsim(t, c.args...)
		if code != exitInput || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stdout+stderr, c.want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tg, err := parseTarget(1e12, 0, "2026-12-12", now)
	if err != nil || tg.Tokens != 1e12 || tg.Days != 9.5 {
		t.Errorf("--by: %+v, %v", tg, err)
	}
	if tg, err := parseTarget(0, 0, "", now); tg != nil || err != nil {
		t.Errorf("no target: %+v, %v", tg, err)
	}
	// Issue 41 class 4: --by is bounded as --days is (a date 2.9M days
	// ahead printed 106,752 days: time.Duration saturates at 292 years).
	if _, err := parseTarget(1e12, 0, "9999-12-31", now); err == nil || !strings.Contains(err.Error(), "--by 9999-12-31: 2912106.5 days from today: must be in (0, 36500]") {
		t.Errorf("--by 9999-12-31: %v", err)
	}
	if tg, err := parseTarget(1e12, 0, "2126-11-08", now); err != nil || tg.Days != 36499.5 {
		t.Errorf("--by 100 years ahead: %+v, %v", tg, err)
	}
}

// TestMergeSearchHostile: tampered search shards are refused with exit 2
// naming the file, and nothing is written.
func TestMergeSearchHostile(t *testing.T) {
	dir := t.TempDir()
	s0, s1 := filepath.Join(dir, "0"), filepath.Join(dir, "1")
	for i, d := range []string{s0, s1} {
		if code, _, stderr := dcpsim(t, "search", "testdata/search-small.toml", "--out", d, "--shard", []string{"0/2", "1/2"}[i], "--no-figures"); code != exitOK {
			t.Fatalf("shard %d: %s", i, stderr)
		}
	}
	good, err := os.ReadFile(filepath.Join(s1, "search-shard.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, data, want string }{
		{"unknown key", strings.Replace(string(good), `"search":`, `"bogus": 1, "search":`, 1), "unknown field"},
		{"bad status", strings.Replace(string(good), `"status": "invalid"`, `"status": "great"`, 1), `status "great"`},
		{"trailing data", string(good) + "{}", "after the JSON value"},
		{"not JSON", "\x00\x01", "invalid character"},
		{"other search", strings.Replace(string(good), `"search": "search-small"`, `"search": "other"`, 1), "a shard of another search"},
	} {
		if err := os.WriteFile(filepath.Join(s1, "search-shard.json"), []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "m-"+strings.ReplaceAll(c.name, " ", "-"))
		code, stdout, stderr := dcpsim(t, "merge", "--out", out, s0, s1)
		if code != exitInput || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "search-shard.json") {
			t.Errorf("%s: exit %d, %s%s; want 2 naming the file and %q", c.name, code, stdout, stderr, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: merge wrote %s", c.name, out)
		}
	}
}
