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
