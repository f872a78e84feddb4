package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/dcpsim/dcpsim/results"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/scenarios"
)

// TestSearchEvalsForged (issue 41 class 3): an evaluation file edited to
// promote its candidate is not believed by a resumed search: figures that
// are not those of its steps (tokens per day 9.99e15, steps kept), or tokens
// that are not its batches' (with the figures made to agree), are simulated
// again, and the search writes what it wrote before the edit.
func TestSearchEvalsForged(t *testing.T) {
	sc := parseSearch(t, strings.Replace(searchSmall, "gpus = [32, 64]", "gpus = [32]", 1))
	dir := t.TempDir()
	r1 := runSearch(t, sc, SearchOptions{Dir: dir})
	want, err := os.ReadFile(filepath.Join(dir, searchJSONFile))
	if err != nil {
		t.Fatal(err)
	}
	// An ok evaluation at the last rung: the one the ranking reads.
	var path string
	evals, _ := filepath.Glob(filepath.Join(dir, searchEvalsDir, "*.json"))
	for _, p := range evals {
		var ev searchEval
		b, _ := os.ReadFile(p)
		if json.Unmarshal(b, &ev) == nil && ev.Status == "" && ev.Iterations == sc.Run.Iterations {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("no ok evaluation at the last rung")
	}
	for _, c := range []struct {
		name string
		edit func(ev *searchEval)
	}{
		{"tokens per day", func(ev *searchEval) { ev.TokensPerDay = 9.99e15 }},
		{"tokens, figures agreeing", func(ev *searchEval) {
			var tokens float64
			for i := range ev.Tokens {
				ev.Tokens[i] *= 1000
				tokens += float64(ev.Tokens[i])
			}
			ev.StepSecondsMean, ev.StepSecondsP95, ev.TokensPerDay = stepFigures(ev.Steps, tokens)
			ev.DollarsPer1TTokens = dollarsPer1TTokens(32, sc.Run.DollarsPerGPUHour, ev.TokensPerDay)
		}},
		{"a step left out", func(ev *searchEval) {
			ev.Steps, ev.Tokens = ev.Steps[1:], ev.Tokens[1:]
			var tokens float64
			for _, tk := range ev.Tokens {
				tokens += float64(tk)
			}
			ev.StepSecondsMean, ev.StepSecondsP95, ev.TokensPerDay = stepFigures(ev.Steps, tokens)
			ev.DollarsPer1TTokens = dollarsPer1TTokens(32, sc.Run.DollarsPerGPUHour, ev.TokensPerDay)
		}},
		{"a share out of range", func(ev *searchEval) { ev.MFU = 7 }},
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var ev searchEval
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		c.edit(&ev)
		if b, err = json.Marshal(ev); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r2 := runSearch(t, sc, SearchOptions{Dir: dir})
		got, _ := os.ReadFile(filepath.Join(dir, searchJSONFile))
		if r2.Simulations != 1 || r2.Reused != r1.Simulations-1 || !bytes.Equal(got, want) {
			t.Errorf("%s: %d simulated, %d reused of %d; search.json unchanged: %v", c.name, r2.Simulations, r2.Reused, r1.Simulations, bytes.Equal(got, want))
		}
	}
}

// FuzzEvalFile: no evaluation file makes reading it back panic, and one that
// is reused holds together: as many steps and token counts as measured
// iterations, its batches' tokens, and the figures of its steps.
func FuzzEvalFile(f *testing.F) {
	sc := parseSearch(f, strings.Replace(searchSmall, "gpus = [32, 64]", "gpus = [32]", 1))
	cands, err := sc.Candidates()
	if err != nil {
		f.Fatal(err)
	}
	c := &cands[0]
	store := &evalStore{sha: "s", revision: "r", warmup: 1, price: 2,
		batchTokens: func(*scenarios.Candidate, int) (int64, error) { return 1000, nil }}
	good := searchEval{SearchSHA: "s", Revision: "r", ID: c.ID, Name: c.Name, Rung: 1, Iterations: 3,
		Steps: []float64{1.5, 2.5}, Tokens: []int64{1000, 1000}}
	good.StepSecondsMean, good.StepSecondsP95, good.TokensPerDay = stepFigures(good.Steps, 2000)
	good.DollarsPer1TTokens = dollarsPer1TTokens(c.Scenario.Job.Cluster.GPUs, 2, good.TokensPerDay)
	b, _ := json.Marshal(good)
	f.Add(b)
	f.Add(bytes.Replace(b, []byte(`"tokens_per_day":`), []byte(`"tokens_per_day":9.99e15,"x":`), 1))
	f.Add([]byte(`{"search_sha256": "s", "vcs_revision": "r", "status": "failed", "reason": "x", "rung": 1, "iterations": 3}`))
	f.Add([]byte(`{"steps": [1e308, -0, NaN]}`))
	if _, ok := store.parseEval(b, c, 1, 3); !ok {
		f.Fatal("the seed evaluation is not reused")
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, ok := store.parseEval(data, c, 1, 3)
		if !ok || ev.Status != "" {
			return
		}
		if len(ev.Steps) != 2 || len(ev.Tokens) != 2 || ev.Tokens[0] != 1000 || ev.Tokens[1] != 1000 {
			t.Fatalf("reused %+v", ev)
		}
		if mean, _, tpd := stepFigures(ev.Steps, 2000); ev.StepSecondsMean != mean || ev.TokensPerDay != tpd {
			t.Fatalf("reused figures %+v not its steps'", ev.SearchFigures)
		}
	})
}

// TestMergeSearchComplete (issue 41 class 3): a shard that lost a candidate
// is refused by merge (7 of 8 candidates merged without a word), whether its
// counts were fixed up or not; and --out may not be a shard's folder, whose
// shard file the merge would delete.
func TestMergeSearchComplete(t *testing.T) {
	sc := parseSearch(t, strings.Replace(searchSmall, "gpus = [32, 64]", "gpus = [32]", 1))
	dir := t.TempDir()
	s0, s1 := filepath.Join(dir, "s0"), filepath.Join(dir, "s1")
	runSearch(t, sc, SearchOptions{Dir: s0, Shard: 0, Shards: 2})
	runSearch(t, sc, SearchOptions{Dir: s1, Shard: 1, Shards: 2})
	shardFile := filepath.Join(s1, searchShardFile)
	good, err := os.ReadFile(shardFile)
	if err != nil {
		t.Fatal(err)
	}
	drop := func(fixCounts bool) []byte {
		var f SearchFile
		if err := json.Unmarshal(good, &f); err != nil {
			t.Fatal(err)
		}
		last := f.Candidates[len(f.Candidates)-1]
		f.Candidates = f.Candidates[:len(f.Candidates)-1]
		if fixCounts {
			if f.Counts[last.Status]--; f.Counts[last.Status] == 0 {
				delete(f.Counts, last.Status)
			}
		}
		b, _ := json.Marshal(f)
		return b
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"a candidate deleted", drop(false), "counts map["},
		{"a candidate deleted, counts fixed", drop(true), "candidates (missing ids "},
	} {
		os.WriteFile(shardFile, c.data, 0o644)
		out := filepath.Join(dir, "merged")
		_, err := MergeSearch(context.Background(), out, []string{s0, s1}, nil)
		if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: %s written", c.name, out)
		}
	}
	os.WriteFile(shardFile, good, 0o644)
	for _, out := range []string{s0, s0 + "/.", filepath.Join(s0, "..", "s0")} {
		_, err := MergeSearch(context.Background(), out, []string{s0, s1}, nil)
		if err == nil || !strings.Contains(err.Error(), "is the shard folder") {
			t.Errorf("merge --out %s: %v", out, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s0, searchShardFile)); err != nil {
		t.Errorf("the shard's file: %v", err)
	}
	if _, err := MergeSearch(context.Background(), filepath.Join(dir, "merged"), []string{s0, s1}, nil); err != nil {
		t.Errorf("the untouched shards: %v", err)
	}
}

// TestWriteSearchJSON: the search file written a candidate at a time is
// byte for byte what the JSON encoder writes, with candidates, with none and
// without the list.
func TestWriteSearchJSON(t *testing.T) {
	sc := parseSearch(t, strings.Replace(searchSmall, "gpus = [32, 64]", "gpus = [32]", 1))
	res := runSearch(t, sc, SearchOptions{Dir: t.TempDir()})
	for _, cands := range [][]results.SearchRow{res.File.Candidates, {}, nil} {
		f := res.File
		f.Candidates = cands
		var want, got bytes.Buffer
		if err := encodeJSON(&want, &f); err != nil {
			t.Fatal(err)
		}
		if err := writeSearchJSON(&got, &f); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%d candidates: written differently (%d bytes, want %d)", len(cands), got.Len(), want.Len())
		}
	}
}
