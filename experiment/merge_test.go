package experiment

import (
	"bytes"
	"context"
	"github.com/dcpsim/dcpsim/badinput"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadPoint feeds merge's shard reader arbitrary point.json,
// summary.json and manifest.json bytes (beside a valid iterations.csv, in a
// folder named as a valid point): Merge must never panic, must refuse what
// it refuses as bad input, must leave the shard as it was, and must never
// write outside its --out: the sentinel folder holding the shard and the
// output must hold nothing else afterwards.
func FuzzReadPoint(f *testing.F) {
	seed := f.TempDir()
	if _, err := Sweep(context.Background(), tinySweep(f), SweepOptions{Dir: seed, Jobs: 1}); err != nil {
		f.Fatal(err)
	}
	pdirs, _ := filepath.Glob(filepath.Join(seed, "points", "p0000-*"))
	if len(pdirs) != 1 {
		f.Fatalf("point folders %v", pdirs)
	}
	name := filepath.Base(pdirs[0])
	read := func(file string) []byte {
		b, err := os.ReadFile(filepath.Join(pdirs[0], file))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	point, summary, manifest, iterations := read("point.json"), read("summary.json"), read("manifest.json"), read("iterations.csv")
	sub := func(b []byte, old, new string) []byte { return bytes.Replace(b, []byte(old), []byte(new), 1) }
	// A one-point sweep merges: the copy is exercised too.
	single := sub(point, `"total_points": 2`, `"total_points": 1`)
	f.Add(single, summary, manifest)
	f.Add(point, summary, manifest)
	f.Add(sub(single, `"name": "`+name+`"`, `"name": "../../x"`), summary, manifest)
	f.Add(sub(single, `"name": "`+name+`"`, `"name": ".."`), summary, manifest)
	f.Add(sub(point, `"total_points": 2`, `"total_points": -1`), summary, manifest)
	f.Add(sub(point, `"total_points": 2`, `"total_points": 1000000000000`), summary, manifest)
	f.Add(sub(single, `"index": 0`, `"index": -1`), summary, manifest)
	f.Add(single, append(bytes.Clone(summary), "{}"...), manifest)
	f.Add(single, summary, sub(manifest, `"summary.json"`, `"../../summary.json"`))
	f.Add([]byte("null"), []byte("{"), []byte(""))
	f.Fuzz(func(t *testing.T, point, summary, manifest []byte) {
		root := t.TempDir()
		shard := filepath.Join(root, "shard")
		pdir := filepath.Join(shard, "points", name)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{"point.json": point, "summary.json": summary, "manifest.json": manifest, "iterations.csv": iterations}
		for n, b := range files {
			if err := os.WriteFile(filepath.Join(pdir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(root, "a", "b", "out")
		_, err := Merge(context.Background(), out, []string{shard}, nil)
		if err != nil && !badinput.Is(err) {
			t.Fatalf("not bad input: %v", err)
		}
		allowed := map[string]bool{"shard": true, "shard/points": true, "shard/points/" + name: true, "a": true, "a/b": true}
		for n := range files {
			allowed["shard/points/"+name+"/"+n] = true
		}
		filepath.WalkDir(root, func(path string, d fs.DirEntry, werr error) error {
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if rel != "." && !allowed[rel] && rel != "a/b/out" && !strings.HasPrefix(rel, "a/b/out/") {
				t.Errorf("merge wrote outside --out: %s", rel)
			}
			return nil
		})
		for n, b := range files {
			if got, _ := os.ReadFile(filepath.Join(pdir, n)); !bytes.Equal(got, b) {
				t.Errorf("merge changed the shard's %s", n)
			}
		}
		if err == nil {
			for n := range files {
				if got, _ := os.ReadFile(filepath.Join(out, "points", name, n)); !bytes.Equal(got, files[n]) {
					t.Errorf("merged %s differs from the shard's", n)
				}
			}
		} else if _, serr := os.Stat(out); serr == nil {
			t.Errorf("refused (%v) but wrote %s", err, out)
		}
	})
}
