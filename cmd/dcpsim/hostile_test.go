package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dcpsim/dcpsim/experiment"
)

// copyTree copies the folder src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// editJSON rewrites the JSON object in path through edit.
func editJSON(t *testing.T, path string, edit func(m map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// listTree returns every path below root, relative to it.
func listTree(root string) []string {
	var out []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(root, path); err == nil && rel != "." {
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// TestMergeHostileShards: a shard folder is untrusted input. Each tampered
// shard is refused with exit 2 and a message naming the file and the key;
// nothing at all is written (not --out, and above all nothing outside it);
// merge never panics or allocates by a count it read.
func TestMergeHostileShards(t *testing.T) {
	dir := t.TempDir()
	sc := writeTiny(t, dir, "tiny-hostile", `["hydra", "static"]`, sweepTail)
	good := filepath.Join(dir, "good")
	if code, _, errOut := dcpsim(t, "sweep", sc, "--out", good, "--no-figures"); code != exitOK {
		t.Fatalf("sweep: exit %d: %s", code, errOut)
	}
	entries, _ := os.ReadDir(filepath.Join(good, "points"))
	p0 := entries[0].Name()
	point := func(f string) string { return filepath.Join("points", p0, f) }
	setPoint := func(key string, v any) func(string) {
		return func(shard string) {
			editJSON(t, filepath.Join(shard, point("point.json")), func(m map[string]any) {
				if key == "total_points" {
					m[key] = v
				} else {
					m["point"].(map[string]any)[key] = v
				}
			})
		}
	}
	write := func(f, s string) func(string) {
		return func(shard string) { os.WriteFile(filepath.Join(shard, f), []byte(s), 0o644) }
	}
	for _, c := range []struct {
		name   string
		tamper func(shard string)
		want   string
	}{
		{"name-escapes", setPoint("name", "../../x"), `point.json: point.name = "../../x": must be a file-safe name`},
		{"name-dot", setPoint("name", ".."), `point.json: point.name = "..": must be a file-safe name`},
		{"name-of-other-index", setPoint("name", strings.Replace(p0, "p0000", "p0001", 1)), `must start with "p0000-"`},
		{"total-negative", setPoint("total_points", -1), "point.json: total_points = -1: must be in [1, 10000]"},
		{"total-huge", setPoint("total_points", 1e12), "point.json: total_points = 1000000000000: must be in [1, 10000]"},
		{"index-outside", setPoint("index", 99), "point.json: point.index = 99: must be in [0, total_points = 4)"},
		{"point-corrupt", write(point("point.json"), "{"), "point.json: invalid: unexpected EOF"},
		{"point-missing", func(s string) { os.Remove(filepath.Join(s, point("point.json"))) }, "point.json: missing"},
		{"manifest-missing", func(s string) { os.Remove(filepath.Join(s, point("manifest.json"))) }, "manifest.json: missing"},
		{"manifest-lists-outside", func(s string) {
			editJSON(t, filepath.Join(s, point("manifest.json")), func(m map[string]any) { m["files"] = []string{"../../x", "summary.json"} })
		}, `manifest.json: files = "../../x": must be a file-safe name`},
		{"summary-altered", func(s string) {
			editJSON(t, filepath.Join(s, point("summary.json")), func(m map[string]any) { m["gpus"] = 1 })
		}, "summary.json: not the summary in point.json"},
		{"summary-unknown-key", func(s string) {
			editJSON(t, filepath.Join(s, point("summary.json")), func(m map[string]any) { m["evil"] = 1 })
		}, `summary.json: invalid: json: unknown field "evil"`},
		{"summary-trailing", func(s string) {
			f, _ := os.OpenFile(filepath.Join(s, point("summary.json")), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("{}")
			f.Close()
		}, "summary.json: invalid: data after the JSON object"},
		{"summary-link", func(s string) {
			os.Remove(filepath.Join(s, point("summary.json")))
			os.Symlink("/etc/passwd", filepath.Join(s, point("summary.json")))
		}, "summary.json: invalid: not a regular file"},
		{"iterations-corrupt", write(point("iterations.csv"), "a,b\n"), "iterations.csv: invalid: record on line 1: wrong number of fields"},
		{"extra-file", write(point("evil.sh"), "#!/bin/sh\n"), "evil.sh: not listed in manifest.json"},
		{"not-a-folder", write(filepath.Join("points", "README"), "hi"), "README: not a point folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			shard := filepath.Join(root, "shard")
			copyTree(t, good, shard)
			c.tamper(shard)
			before := listTree(root)
			out := filepath.Join(root, "deep", "out")
			code, _, errOut := dcpsim(t, "merge", "--out", out, "--no-figures", shard)
			if code != exitInput || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s", code, c.want, errOut)
			}
			if after := listTree(root); !slices.Equal(before, after) {
				t.Errorf("merge wrote %v", slices.DeleteFunc(after, func(p string) bool { return slices.Contains(before, p) }))
			}
		})
	}

	// A folder that is neither empty nor a sweep folder is no --out.
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, "notes.txt"), []byte("mine"), 0o644)
	if code, _, errOut := dcpsim(t, "merge", "--out", home, "--no-figures", good); code != exitInput || !strings.Contains(errOut, home) {
		t.Errorf("merge --out home: exit %d: %s", code, errOut)
	}
	if got := listTree(home); !slices.Equal(got, []string{"notes.txt"}) {
		t.Errorf("home holds %v", got)
	}
	// The untampered shard merges, into a folder that had an earlier merge.
	out := filepath.Join(dir, "merged")
	for range 2 {
		if code, _, errOut := dcpsim(t, "merge", "--out", out, "--no-figures", good); code != exitOK {
			t.Fatalf("merge: exit %d: %s", code, errOut)
		}
	}
	if got, want := listTree(filepath.Join(out, "points")), listTree(filepath.Join(good, "points")); !slices.Equal(got, want) {
		t.Errorf("merged points %v, want %v", got, want)
	}
}

// TestMergeCommittedSweep: the committed reference sweeps (whose point
// manifests, written before point folders were published whole, do not list
// point.json) still merge.
func TestMergeCommittedSweep(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	code, stdout, errOut := dcpsim(t, "merge", "--out", out, "--no-figures", filepath.Join("..", "..", "results", "weak-scaling"))
	if code != exitOK || !strings.Contains(stdout, "merged 8 points") {
		t.Fatalf("exit %d: %s%s", code, stdout, errOut)
	}
}

// TestRunOutFolder: dcpsim run refuses an --out that is neither new, empty
// nor an earlier results folder (exit 2, nothing changed there), and a rerun
// into an earlier results folder leaves only the new run's files.
func TestRunOutFolder(t *testing.T) {
	dir := t.TempDir()
	sc := writeTiny(t, dir, "tiny-out", `["hydra", "static"]`, "")
	home := filepath.Join(dir, "home")
	os.MkdirAll(filepath.Join(home, "src"), 0o755)
	os.WriteFile(filepath.Join(home, "notes.txt"), []byte("mine"), 0o644)
	code, _, errOut := dcpsim(t, "run", sc, "--out", home)
	if code != exitInput || !strings.Contains(errOut, home+" is not empty and holds no dcpsim manifest.json") {
		t.Errorf("run --out home: exit %d: %s", code, errOut)
	}
	if got := listTree(home); !slices.Equal(got, []string{"notes.txt", "src"}) {
		t.Errorf("home holds %v", got)
	}

	out := filepath.Join(dir, "out")
	if code, _, errOut := dcpsim(t, "run", sc, "--out", out); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := dcpsim(t, "run", sc, "--out", out, "--policy", "static"); code != exitOK {
		t.Fatalf("rerun: exit %d: %s", code, errOut)
	}
	var m experiment.Manifest
	b, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if got := listTree(out); !slices.Equal(got, slices.Sorted(slices.Values(append(m.Files, "manifest.json")))) ||
		slices.Contains(got, "trace-hydra.json") {
		t.Errorf("after the rerun: %v, manifest %v", got, m.Files)
	}
	if got := listTree(dir); slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(filepath.Base(p), ".") }) {
		t.Errorf("temporary files left: %v", got)
	}
}

// cancelAfter is a context whose Err turns context.Canceled after n calls
// (and whose Done is then closed), as if SIGINT came at that point.
type cancelAfter struct {
	context.Context
	n      *atomic.Int64
	cancel context.CancelFunc
}

func (c cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		c.cancel()
		return context.Canceled
	}
	return nil
}

// TestInterrupted: SIGINT (the command's context cancelled) while dcpsim run
// or sweep simulates or writes: exit 1, "interrupted", and no temporary file
// or folder, no half-written folder.
func TestInterrupted(t *testing.T) {
	dir := t.TempDir()
	sc := writeTiny(t, dir, "tiny-int", `["hydra", "static"]`, "")
	sw := writeTiny(t, dir, "tiny-int-sweep", `["hydra", "static"]`, sweepTail)
	saved := interruptContext
	defer func() { interruptContext = saved }()
	// The run checks before each of its 3 iterations, then before each file.
	for _, n := range []int64{0, 2, 4, 6} {
		interruptContext = func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			c := cancelAfter{Context: ctx, n: new(atomic.Int64), cancel: cancel}
			c.n.Store(n)
			return c, cancel
		}
		for _, args := range [][]string{{"run", sc}, {"sweep", sw, "--jobs", "1"}} {
			out := filepath.Join(dir, "out")
			code, _, errOut := dcpsim(t, append(args, "--out", out)...)
			if code != exitFailure || !strings.Contains(errOut, "interrupted") {
				t.Errorf("%v after %d checks: exit %d: %s", args, n, code, errOut)
			}
			if args[0] == "run" {
				if _, err := os.Stat(out); err == nil {
					t.Errorf("%v after %d checks: %s written", args, n, out)
				}
			}
			for _, p := range listTree(dir) {
				if strings.HasPrefix(filepath.Base(p), ".") {
					t.Errorf("%v after %d checks: %s left behind", args, n, p)
				}
			}
			os.RemoveAll(out)
		}
	}
}
