package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/internal/report"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dcpsim/dcpsim/scenarios"
)

// twoOutcomes are two different runs: the tiny scenario's three policies with
// timelines (three traces), and its static policy alone at another cap (one
// trace, another scenario hash).
func twoOutcomes(t *testing.T) (a, b *Outcome, sa, sb *scenarios.Scenario) {
	t.Helper()
	sa = parse(t, tiny)
	sb = parse(t, strings.Replace(tiny, "cap = 8", "cap = 16", 1))
	var err error
	if a, err = Run(sa, Options{Timelines: true}); err != nil {
		t.Fatal(err)
	}
	if b, err = Run(sb, Options{Policy: "static", Timelines: true}); err != nil {
		t.Fatal(err)
	}
	if a.Summary.Hash == b.Summary.Hash {
		t.Fatal("the two outcomes have one hash")
	}
	return a, b, sa, sb
}

// checkFolder fails unless dir is a complete results folder: its manifest
// lists exactly its other files and names summary.json's hash; and unless
// dir's parent holds no temporary (dot) entries.
func checkFolder(t *testing.T, dir string) Manifest {
	t.Helper()
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var got []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "manifest.json" {
			got = append(got, e.Name())
		}
	}
	if !slices.Equal(got, m.Files) {
		t.Errorf("%s holds %v, its manifest lists %v", dir, got, m.Files)
	}
	var s struct {
		Hash string `json:"scenario_sha256"`
	}
	b, _ = os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(b, &s); err != nil || s.Hash != m.Hash {
		t.Errorf("summary.json hash %q (%v), manifest %q", s.Hash, err, m.Hash)
	}
	noTemporaries(t, filepath.Dir(dir))
	return m
}

// noTemporaries fails if dir (or any folder below it) holds a dot-name: a
// temporary file or folder left behind.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".") && path != dir {
			t.Errorf("left behind: %s", path)
		}
		return nil
	})
}

// TestWriteRunConcurrent: several runs writing one folder at once (under
// -race in make test) always leave a complete folder of one of them (its
// manifest lists exactly its files, its summary is the manifest's) and no
// temporary folder.
func TestWriteRunConcurrent(t *testing.T) {
	a, b, sa, sb := twoOutcomes(t)
	dir := filepath.Join(t.TempDir(), "out")
	for round := range 4 {
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for g := range 8 {
			wg.Go(func() {
				out, sc := a, sa
				if g%2 == 1 {
					out, sc = b, sb
				}
				_, errs[g] = WriteRun(context.Background(), dir, sc, out, nil)
			})
		}
		wg.Wait()
		for g, err := range errs {
			if err != nil {
				t.Errorf("round %d writer %d: %v", round, g, err)
			}
		}
		m := checkFolder(t, dir)
		if m.Hash != a.Summary.Hash && m.Hash != b.Summary.Hash {
			t.Errorf("round %d: manifest of neither run: %+v", round, m)
		}
	}
}

// TestWriteRunReplacesStaleFiles: a rerun into an earlier results folder
// leaves only the new run's files of dcpsim (no trace of a policy it did not
// run), and keeps what the earlier manifest did not list (a file added by
// hand, a folder), unlisted in the new manifest; a file of the user's that
// the new run would write is refused, the folder left as it was.
func TestWriteRunReplacesStaleFiles(t *testing.T) {
	a, b, sa, sb := twoOutcomes(t)
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := WriteRun(context.Background(), dir, sa, a, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("mine"), 0o644)
	os.MkdirAll(filepath.Join(dir, "extra"), 0o755)
	os.WriteFile(filepath.Join(dir, "extra", "x"), []byte("mine"), 0o644)
	files, err := WriteRun(context.Background(), dir, sb, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var m Manifest
	json.Unmarshal(mb, &m)
	if want := []string{"iterations.csv", "summary.json", "timings.json", "trace-static.json"}; !slices.Equal(m.Files, want) || len(files) != 5 {
		t.Errorf("files %v (returned %v), want %v", m.Files, files, want)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"NOTES.md", "extra", "iterations.csv", "manifest.json", "summary.json", "timings.json", "trace-static.json"}; !slices.Equal(names, want) {
		t.Errorf("folder holds %v, want %v", names, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "extra", "x")); string(b) != "mine" {
		t.Errorf("extra/x: %q", b)
	}
	// A name of the user's that the new run writes: refused, nothing changed.
	os.WriteFile(filepath.Join(dir, "trace-hydra.json"), []byte("mine"), 0o644)
	before, _ := os.ReadDir(dir)
	if _, err := WriteRun(context.Background(), dir, sa, a, nil); !badinput.Is(err) || !strings.Contains(err.Error(), "trace-hydra.json") {
		t.Errorf("a user's trace-hydra.json: %v, want bad input naming it", err)
	}
	after, _ := os.ReadDir(dir)
	if len(before) != len(after) {
		t.Errorf("folder changed: %v → %v", before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "trace-hydra.json")); string(b) != "mine" {
		t.Errorf("trace-hydra.json: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "manifest.json")); !bytes.Equal(b, mb) {
		t.Error("the earlier results were replaced")
	}
	noTemporaries(t, filepath.Dir(dir))
}

// TestWriteRunRefusesForeignFolder: --out naming a non-empty folder without a
// dcpsim manifest (think `--out ~`), a file, a link or the working folder is
// bad input naming it, and nothing there changes.
func TestWriteRunRefusesForeignFolder(t *testing.T) {
	sc := parse(t, tiny)
	out, err := Run(sc, Options{Policy: "static"})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	home := filepath.Join(root, "home")
	os.MkdirAll(filepath.Join(home, "src"), 0o755)
	os.WriteFile(filepath.Join(home, "notes.txt"), []byte("mine"), 0o644)
	// A manifest.json that is not dcpsim's does not make a folder replaceable.
	os.WriteFile(filepath.Join(home, "manifest.json"), []byte(`{"name": "npm"}`), 0o644)
	file := filepath.Join(root, "file")
	os.WriteFile(file, []byte("mine"), 0o644)
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(root, "empty"), link); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(root, "empty"), 0o755)
	for _, dir := range []string{home, file, link, "/"} {
		_, err := WriteRun(context.Background(), dir, sc, out, nil)
		if !badinput.Is(err) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v, want bad input naming it", dir, err)
		}
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 3 {
		t.Errorf("home changed: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "notes.txt")); string(b) != "mine" {
		t.Errorf("notes.txt: %q", b)
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Errorf("file: %q", b)
	}
	noTemporaries(t, root)
	// The working folder would vanish under the process.
	t.Chdir(filepath.Join(root, "empty"))
	if _, err := WriteRun(context.Background(), ".", sc, out, nil); !badinput.Is(err) {
		t.Errorf("--out .: %v, want bad input", err)
	}
	// An empty folder is replaced.
	t.Chdir(root)
	if _, err := WriteRun(context.Background(), "empty", sc, out, nil); err != nil {
		t.Errorf("empty folder: %v", err)
	}
	checkFolder(t, filepath.Join(root, "empty"))
}

// cancelAfter is a context whose Err turns context.Canceled after n calls.
type cancelAfter struct {
	context.Context
	n *atomic.Int64
}

func newCancelAfter(n int64) cancelAfter {
	c := cancelAfter{Context: context.Background(), n: new(atomic.Int64)}
	c.n.Store(n)
	return c
}

func (c cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestWriteRunInterrupted: an injected failure or a cancelled context at any
// file leaves no temporary folder or file: a new folder is not created, an
// earlier one is left exactly as it was.
func TestWriteRunInterrupted(t *testing.T) {
	a, b, sa, sb := twoOutcomes(t)
	for _, earlier := range []bool{false, true} {
		root := t.TempDir()
		dir := filepath.Join(root, "out")
		var before []byte
		if earlier {
			if _, err := WriteRun(context.Background(), dir, sb, b, nil); err != nil {
				t.Fatal(err)
			}
			before, _ = os.ReadFile(filepath.Join(dir, "manifest.json"))
		}
		check := func(what string, err error, want string) {
			t.Helper()
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", what, err, want)
			}
			noTemporaries(t, root)
			if !earlier {
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("%s: %s created", what, dir)
				}
				return
			}
			if m, _ := os.ReadFile(filepath.Join(dir, "manifest.json")); string(m) != string(before) {
				t.Errorf("%s: the earlier folder changed", what)
			}
			checkFolder(t, dir)
		}
		// Without figures: 6 files, then the publication; with them the
		// figures come third (drawn once: they are slow under -race).
		for _, c := range []struct {
			after   int
			figures bool
		}{{0, false}, {1, false}, {2, false}, {4, false}, {5, false}, {2, true}, {3, true}} {
			writeFailHook = c.after
			var figures Drawer
			if c.figures {
				figures = report.Figures{}
			}
			_, err := WriteRun(context.Background(), dir, sa, a, figures)
			writeFailHook = -1
			check(fmt.Sprintf("fail after %d (figures %v)", c.after, c.figures), err, "injected failure")
		}
		for n := range int64(7) {
			_, err := WriteRun(newCancelAfter(n), dir, sa, a, nil)
			check(fmt.Sprint("cancel after ", n), err, "context canceled")
		}
	}
}
