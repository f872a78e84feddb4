package experiment

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// The files of a search folder.
const (
	searchStateFile = "search-state.json"
	searchJSONFile  = "search.json"
	searchCSVFile   = "search.csv"
	searchShardFile = "search-shard.json"
	searchEvalsDir  = "evals"
	// maxEvalBytes bounds one evaluation file (a few hundred bytes plus
	// 8-30 bytes per measured iteration, at most MaxIterations of them).
	maxEvalBytes = 1 << 20
	// maxSearchFileBytes bounds a shard's search-shard.json read by merge
	// (about 1 KiB per candidate, MaxSearchCandidates of them).
	maxSearchFileBytes = 256 << 20
)

// MaxShards bounds a sweep's or search's shard count (--shard I/N): more
// shards than a search's most candidates (or a sweep's points) would only
// start empty processes, and merge refuses a search shard file past it.
const MaxShards = scenarios.MaxSearchCandidates

// searchEval is one candidate's run at one rung: Dir/evals/<id>-r<rung>.json,
// reused by a resumed search of the same scenario text and revision.
type searchEval struct {
	SearchSHA  string `json:"search_sha256"`
	Revision   string `json:"vcs_revision"`
	ID         int    `json:"id"`
	Name       string `json:"name"`
	Rung       int    `json:"rung"`
	Iterations int    `json:"iterations"`
	// Status is empty for a run that simulated every iteration, else
	// failed, out-of-memory or skipped with Reason.
	Status       string `json:"status"`
	Reason       string `json:"reason"`
	BudgetTokens int    `json:"budget_tokens"`
	// Steps are the measured iterations' step times and Tokens the tokens
	// each trained: what was measured. The figures are derived from them (and
	// a resumed search checks that they are; evalStore.load).
	Steps  []float64 `json:"steps"`
	Tokens []int64   `json:"tokens"`
	results.SearchFigures
}

// searchState is search-state.json: the mark of a dcpsim search folder.
type searchState struct {
	Search    string `json:"search"`
	SearchSHA string `json:"search_sha256"`
}

// evalStore reads and writes a search folder's evaluations.
type evalStore struct {
	dir, sha, revision string
	// warmup is the scenario's run.warmup_iterations; price its
	// run.dollars_per_gpu_hour.
	warmup int
	price  float64
	// batchTokens gives the tokens of a candidate's batch k (nil: not
	// checked).
	batchTokens func(c *scenarios.Candidate, k int) (int64, error)
}

// openEvalStore checks dir (absent, empty, or a dcpsim search folder of the
// same scenario name; never a link), creates it and evals/, and marks it.
// Evaluations of another version of the scenario are removed.
func openEvalStore(dir string, sc *scenarios.Scenario) (*evalStore, error) {
	st, err := readSearchState(dir)
	if err != nil {
		return nil, err
	}
	sha := SweepHash(sc)
	if st != nil && st.Search != sc.Name {
		return nil, badInput("%s: a dcpsim search folder of %q, not of %q; choose another --out", dir, st.Search, sc.Name)
	}
	if err := checkCreatable(dir, dir); err != nil {
		return nil, err
	}
	evals := filepath.Join(dir, searchEvalsDir)
	if st != nil && st.SearchSHA != sha {
		if err := os.RemoveAll(evals); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(evals, 0o755); err != nil {
		return nil, badInput("%s: %v", dir, err)
	}
	if fi, err := os.Lstat(evals); err != nil || !fi.IsDir() {
		return nil, badInput("%s: %s must be a folder", dir, evals)
	}
	removeStaleTemporaries(evals) // a killed search's half-written evaluations
	if err := safeio.WriteFileAtomic(filepath.Join(dir, searchStateFile), func(w io.Writer) error {
		return encodeJSON(w, searchState{Search: sc.Name, SearchSHA: sha})
	}); err != nil {
		return nil, err
	}
	return &evalStore{dir: dir, sha: sha, revision: ReadBuild().RevisionTag(), warmup: sc.Run.WarmupIterations, price: sc.Run.DollarsPerGPUHour}, nil
}

// readSearchState checks dir and reads its mark: nil for an absent or empty
// folder; an error for a link, a file, or a non-empty folder that is not a
// search folder.
func readSearchState(dir string) (*searchState, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, badInput("%s: %v", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return nil, badInput("%s: must be a folder (not a link or a file)", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, badInput("%s: %v", dir, err)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	path := filepath.Join(dir, searchStateFile)
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, badInput("%s: not empty and not a dcpsim search folder (no %s); choose another --out", dir, searchStateFile)
	}
	data, err := safeio.ReadFile(path, 1<<16)
	if err != nil {
		return nil, badInput("%s: %v", path, err)
	}
	var st searchState
	if err := decodeStrictJSON(data, &st); err != nil || st.Search == "" {
		return nil, badInput("%s: not a dcpsim search state (%v)", path, err)
	}
	return &st, nil
}

// decodeStrictJSON decodes one JSON value with no unknown fields and nothing
// after it.
func decodeStrictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// evalPath is candidate id's evaluation at rung r.
func (s *evalStore) evalPath(id, r int) string {
	return filepath.Join(s.dir, searchEvalsDir, strconv.Itoa(id)+"-r"+strconv.Itoa(r)+".json")
}

// load returns the stored evaluation of candidate c at rung r on n
// iterations when one of this scenario text and revision is there and it
// holds together (checkEval): a file whose figures are not those of its
// steps, whose tokens are not its batches', or that is out of range is not
// reused, and the run is simulated again.
func (s *evalStore) load(c *scenarios.Candidate, r, n int) (searchEval, bool) {
	path := s.evalPath(c.ID, r)
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return searchEval{}, false
	}
	data, err := safeio.ReadFile(path, maxEvalBytes)
	if err != nil {
		return searchEval{}, false
	}
	return s.parseEval(data, c, r, n)
}

// parseEval decodes an evaluation file's bytes strictly and checks it is
// candidate c's at rung r on n iterations, of this scenario text and
// revision, and holds together (checkEval).
func (s *evalStore) parseEval(data []byte, c *scenarios.Candidate, r, n int) (searchEval, bool) {
	var ev searchEval
	if decodeStrictJSON(data, &ev) != nil || ev.SearchSHA != s.sha || ev.Revision != s.revision || ev.ID != c.ID ||
		ev.Name != c.Name || ev.Rung != r || ev.Iterations != n || len(ev.Steps) > n || !validEvalStatus(ev.Status) ||
		s.checkEval(&ev, c) != nil {
		return searchEval{}, false
	}
	return ev, true
}

// checkEval checks that an evaluation read back holds together: a failure
// carries no measurements; a run carries one step and one token count per
// measured iteration (the rung's iterations after its warm-up), each step
// finite and positive; its tokens are its batches' (a policy that defers
// sequences: at most what its batches brought so far); its mean, p95 and
// tokens per day are those of its steps and tokens and its $ per 1T tokens
// that of its throughput, exactly as a run computes them (stepFigures); its
// other figures are in range. The steps and tokens themselves are what was
// measured: whoever can write the folder can still change those, so a
// search resumes only from folders one trusts.
func (s *evalStore) checkEval(ev *searchEval, c *scenarios.Candidate) error {
	if ev.Status != "" {
		if len(ev.Steps) != 0 || len(ev.Tokens) != 0 || ev.SearchFigures != (results.SearchFigures{}) {
			return errors.New("a failure with figures")
		}
		return nil
	}
	w := rungWarmup(s.warmup, ev.Iterations)
	m := ev.Iterations - w
	if len(ev.Steps) != m || len(ev.Tokens) != m {
		return fmt.Errorf("%d steps and %d token counts for %d measured iterations", len(ev.Steps), len(ev.Tokens), m)
	}
	d, err := policies.Lookup(c.Policy)
	defers := err != nil || d.Defers // an external policy may defer
	var tokens float64
	var trained, seen int64
	for i, st := range ev.Steps {
		if !(st > 0) || math.IsInf(st, 0) {
			return fmt.Errorf("step %d: %v s", i, st)
		}
		tk := ev.Tokens[i]
		if tk < 1 {
			return fmt.Errorf("tokens %d: %d", i, tk)
		}
		if s.batchTokens != nil {
			if i == 0 { // what the warm-up iterations brought
				for k := range w {
					bt, err := s.batchTokens(c, k)
					if err != nil {
						return err
					}
					seen += bt
				}
			}
			bt, err := s.batchTokens(c, w+i)
			if err != nil {
				return err
			}
			seen += bt
			trained += tk
			if !defers && tk != bt || defers && trained > seen {
				return fmt.Errorf("iteration %d: %d tokens, its batch %d", w+i, tk, bt)
			}
		}
		tokens += float64(tk)
	}
	mean, p95, tpd := stepFigures(ev.Steps, tokens)
	f := ev.SearchFigures
	if f.StepSecondsMean != mean || f.StepSecondsP95 != p95 || f.TokensPerDay != tpd ||
		f.DollarsPer1TTokens != dollarsPer1TTokens(c.Scenario.Job.Cluster.GPUs, s.price, tpd) {
		return errors.New("figures not those of its steps")
	}
	for _, v := range []float64{f.PeakMemoryBytes, f.HBMBytes} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return errors.New("memory out of range")
		}
	}
	for _, v := range []float64{f.PPBubbleShare, f.DPBubbleShare, f.MFU} {
		if !(v >= 0 && v <= 1) {
			return errors.New("a share out of [0, 1]")
		}
	}
	return nil
}

// batchTokens is the tokens of candidate c's batch k (every candidate of a
// cluster size trains the same batches; searcher.batches samples them once).
func (s *searcher) batchTokens(c *scenarios.Candidate, k int) (int64, error) {
	batches, err := s.batches(c.Scenario)
	if err != nil {
		return 0, err
	}
	if k < 0 || k >= len(batches) {
		return 0, fmt.Errorf("iteration %d outside the scenario's %d", k, len(batches))
	}
	var t int64
	for _, l := range batches[k].Lengths {
		t += int64(l)
	}
	return t, nil
}

// validEvalStatus reports whether st is a status an evaluation may carry.
func validEvalStatus(st string) bool {
	return slices.Contains([]string{"", results.SearchFailed, results.SearchOutOfMemory, results.SearchSkipped}, st)
}

// save writes an evaluation.
func (s *evalStore) save(ev *searchEval) error {
	ev.SearchSHA, ev.Revision = s.sha, s.revision
	return safeio.WriteFileAtomic(s.evalPath(ev.ID, ev.Rung), func(w io.Writer) error { return encodeJSON(w, ev) })
}

// writeSearch writes search.json, search.csv and (with figures) the figures
// and the page (with the token target when not nil) into dir, and removes a
// shard file an earlier sharded run left there.
func writeSearch(ctx context.Context, dir string, f *SearchFile, figures Drawer, target *results.SearchTarget) ([]string, error) {
	w := &resultWriter{ctx: ctx, dir: dir}
	if err := w.write(searchJSONFile, func(out io.Writer) error { return writeSearchJSON(out, f) }); err != nil {
		return nil, err
	}
	if err := w.write(searchCSVFile, func(out io.Writer) error { return results.WriteCSV(out, f.Candidates) }); err != nil {
		return nil, err
	}
	if figures != nil {
		if err := w.check("the figures"); err != nil {
			return nil, err
		}
		names, err := figures.SearchFigures(dir, f.Candidates)
		if err != nil {
			return nil, err
		}
		w.files = append(w.files, names...)
	}
	if err := w.check("index.html"); err != nil {
		return nil, err
	}
	names, err := writePage(figures, dir, results.Page{Title: f.Search, Search: &results.SearchPage{Model: f.Model, Seed: f.Seed,
		Iterations: f.Iterations, WarmupIterations: f.WarmupIterations, Rungs: f.Rungs, DollarsPerGPUHour: f.DollarsPerGPUHour,
		Counts: f.Counts, Candidates: f.Candidates, Target: target}}, w.files)
	if err != nil {
		return nil, err
	}
	w.files = append(w.files, names...)
	if err := os.Remove(filepath.Join(dir, searchShardFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	slices.Sort(w.files)
	return w.files, nil
}

// writeSearchShard writes a shard's search-shard.json.
func writeSearchShard(ctx context.Context, dir string, f *SearchFile) ([]string, error) {
	w := &resultWriter{ctx: ctx, dir: dir}
	if err := w.write(searchShardFile, func(out io.Writer) error { return writeSearchJSON(out, f) }); err != nil {
		return nil, err
	}
	return w.files, nil
}

// writeSearchJSON writes f exactly as encodeJSON does, a candidate at a
// time: the encoder would hold the whole file encoded twice (compact, then
// indented), about 300 MB for 200,000 candidates.
func writeSearchJSON(w io.Writer, f *SearchFile) error {
	head := *f
	head.Candidates = nil
	var b bytes.Buffer
	if err := encodeJSON(&b, &head); err != nil {
		return err
	}
	const tail = "\"candidates\": null\n}\n" // Candidates is the last field
	hb, ok := bytes.CutSuffix(b.Bytes(), []byte(tail))
	if !ok {
		return errors.New("search file: candidates is not the last field")
	}
	bw := bufio.NewWriter(w)
	bw.Write(hb)
	switch {
	case f.Candidates == nil:
		bw.WriteString(tail)
	case len(f.Candidates) == 0:
		bw.WriteString("\"candidates\": []\n}\n")
	default:
		bw.WriteString("\"candidates\": [\n")
		for i := range f.Candidates {
			rb, err := json.MarshalIndent(&f.Candidates[i], "    ", "  ")
			if err != nil {
				return err
			}
			bw.WriteString("    ")
			bw.Write(rb)
			if i < len(f.Candidates)-1 {
				bw.WriteString(",")
			}
			bw.WriteString("\n")
		}
		bw.WriteString("  ]\n}\n")
	}
	return bw.Flush()
}

// IsSearchShard reports whether dir holds a search shard's
// search-shard.json (dcpsim merge then joins searches, not sweeps).
func IsSearchShard(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, searchShardFile))
	return err == nil && fi.Mode().IsRegular()
}

// MergeSearchResult says what MergeSearch did.
type MergeSearchResult struct {
	// File is the merged search.json.
	File SearchFile
	// Files are the files written.
	Files []string
}

// MergeSearch joins the search-shard.json files of a sharded search's
// folders into out (search.json, search.csv, the figures) exactly as the
// unsharded search writes them. The shard files are untrusted: each is read
// bounded and strictly, and they must be of one search text, every shard
// once, with disjoint groups and candidate IDs that together are every
// candidate of the space (CandidatesTotal), each file's counts those of its
// candidates; else the error matches badinput.Err and names the file. out
// must not be a shard's folder (the merge would replace its shard file).
func MergeSearch(ctx context.Context, out string, srcs []string, figures Drawer) (*MergeSearchResult, error) {
	var files []SearchFile
	for _, dir := range srcs {
		if sameFolder(out, dir) {
			return nil, badInput("--out %s: is the shard folder %s, whose %s the merge would replace; merge into another folder", out, dir, searchShardFile)
		}
		path := filepath.Join(dir, searchShardFile)
		if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
			return nil, badInput("%s: no %s (a folder of dcpsim search --shard I/N)", dir, searchShardFile)
		}
		data, err := safeio.ReadFile(path, maxSearchFileBytes)
		if err != nil {
			return nil, badInput("%s: %v", path, err)
		}
		var f SearchFile
		if err := decodeStrictJSON(data, &f); err != nil {
			return nil, badInput("%s: %v", path, err)
		}
		if err := checkShardFile(path, &f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, badInput("dcpsim merge: no shard folders")
	}
	first := files[0]
	seenShard := map[int]string{}
	seenGroup := map[string]bool{}
	seenID := map[int]bool{}
	merged := first
	merged.Shard, merged.Shards, merged.Groups, merged.Candidates = 0, 1, nil, nil
	for i, f := range files {
		path := filepath.Join(srcs[i], searchShardFile)
		if f.Search != first.Search || f.SearchSHA != first.SearchSHA || f.Shards != first.Shards ||
			f.Seed != first.Seed || f.Iterations != first.Iterations || f.WarmupIterations != first.WarmupIterations ||
			f.Top != first.Top || f.Eta != first.Eta || f.Margin != first.Margin || !slices.Equal(f.Rungs, first.Rungs) ||
			f.DollarsPerGPUHour != first.DollarsPerGPUHour || f.Model != first.Model || f.CandidatesTotal != first.CandidatesTotal {
			return nil, badInput("%s: a shard of another search (%s, sha256 %.12s, %d shards) than %s's (%s, %.12s, %d)",
				path, f.Search, f.SearchSHA, f.Shards, srcs[0], first.Search, first.SearchSHA, first.Shards)
		}
		if prev, ok := seenShard[f.Shard]; ok {
			return nil, badInput("%s: shard %d/%d given twice (also %s)", path, f.Shard, f.Shards, prev)
		}
		seenShard[f.Shard] = path
		for _, g := range f.Groups {
			if seenGroup[g] {
				return nil, badInput("%s: group %q is in two shards", path, g)
			}
			seenGroup[g] = true
		}
		for _, r := range f.Candidates {
			if seenID[r.ID] {
				return nil, badInput("%s: candidate %d is in two shards", path, r.ID)
			}
			seenID[r.ID] = true
		}
		merged.Groups = append(merged.Groups, f.Groups...)
		merged.Candidates = append(merged.Candidates, f.Candidates...)
	}
	if len(seenShard) != first.Shards {
		var missing []string
		for i := range first.Shards {
			if _, ok := seenShard[i]; !ok {
				missing = append(missing, fmt.Sprintf("%d/%d", i, first.Shards))
			}
		}
		return nil, badInput("dcpsim merge: shards %s of %s are missing", strings.Join(missing, ", "), first.Search)
	}
	if len(seenID) != first.CandidatesTotal {
		var missing []string
		for id := range first.CandidatesTotal {
			if !seenID[id] && len(missing) < 20 {
				missing = append(missing, strconv.Itoa(id))
			}
		}
		if first.CandidatesTotal-len(seenID) > len(missing) {
			missing = append(missing, "...")
		}
		return nil, badInput("dcpsim merge: the shards of %s hold %d of its %d candidates (missing ids %s): a shard file lost some",
			first.Search, len(seenID), first.CandidatesTotal, strings.Join(missing, ", "))
	}
	// Groups in the unsharded order: by their first candidate's ID.
	firstID := map[string]int{}
	for _, r := range merged.Candidates {
		if id, ok := firstID[r.Group]; !ok || r.ID < id {
			firstID[r.Group] = r.ID
		}
	}
	slices.SortFunc(merged.Groups, func(a, b string) int { return firstID[a] - firstID[b] })
	finishSearchFile(&merged)
	st, err := readSearchState(out)
	if err != nil {
		return nil, err
	}
	if st != nil && st.Search != merged.Search {
		return nil, badInput("%s: a dcpsim search folder of %q, not of %q; choose another --out", out, st.Search, merged.Search)
	}
	if err := checkCreatable(out, out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, badInput("%s: %v", out, err)
	}
	if err := safeio.WriteFileAtomic(filepath.Join(out, searchStateFile), func(w io.Writer) error {
		return encodeJSON(w, searchState{Search: merged.Search, SearchSHA: merged.SearchSHA})
	}); err != nil {
		return nil, err
	}
	names, err := writeSearch(ctx, out, &merged, figures, nil)
	if err != nil {
		return nil, err
	}
	return &MergeSearchResult{File: merged, Files: names}, nil
}

// checkShardFile checks one shard file's own consistency: bounded counts,
// known statuses, candidates of its groups.
func checkShardFile(path string, f *SearchFile) error {
	switch {
	case f.Search == "" || f.SearchSHA == "":
		return badInput("%s: search and search_sha256 are required", path)
	case f.Shards < 2 || f.Shard < 0 || f.Shard >= f.Shards || f.Shards > MaxShards:
		return badInput("%s: shard %d of %d: need 0 <= shard < shards, 2 <= shards <= %d (MaxShards)", path, f.Shard, f.Shards, MaxShards)
	case len(f.Candidates) > scenarios.MaxSearchCandidates:
		return badInput("%s: %d candidates; at most %d", path, len(f.Candidates), scenarios.MaxSearchCandidates)
	case f.CandidatesTotal < 1 || f.CandidatesTotal > scenarios.MaxSearchCandidates:
		return badInput("%s: candidates_total = %d: must be in [1, %d]", path, f.CandidatesTotal, scenarios.MaxSearchCandidates)
	}
	groups := map[string]bool{}
	for _, g := range f.Groups {
		groups[g] = true
	}
	for _, r := range f.Candidates {
		if !groups[r.Group] {
			return badInput("%s: candidate %d's group %q is not in groups", path, r.ID, r.Group)
		}
		if !slices.Contains(results.SearchStatuses, r.Status) {
			return badInput("%s: candidate %d: status %q; known: %s", path, r.ID, r.Status, strings.Join(results.SearchStatuses, ", "))
		}
		if r.ID < 0 || r.ID >= f.CandidatesTotal {
			return badInput("%s: candidate id %d out of [0, %d) (candidates_total)", path, r.ID, f.CandidatesTotal)
		}
	}
	counts := map[string]int{}
	for _, r := range f.Candidates {
		counts[r.Status]++
	}
	if !maps.Equal(counts, f.Counts) {
		return badInput("%s: counts %v are not those of its %d candidates (%v)", path, f.Counts, len(f.Candidates), counts)
	}
	return nil
}
