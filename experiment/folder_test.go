package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRemoveStaleTemporaries (issue 24 item 15): the temporary point folders
// a killed sweep left are removed; a live writer's (locked), a fresh one, a
// link and names that are not dcpsim's temporaries are not.
func TestRemoveStaleTemporaries(t *testing.T) {
	points := filepath.Join(t.TempDir(), "points")
	os.MkdirAll(points, 0o755)
	long := time.Now().Add(-time.Hour)
	mk := func(name string, age time.Time) string {
		p := filepath.Join(points, name)
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, "summary.json"), []byte("{}"), 0o644)
		os.Chtimes(p, age, age)
		return p
	}
	mk(".p0000-a.tmp-1", long)
	mk(".p0001-b.tmp-2-old0", long)
	mk(".p0002-c.tmp-3", time.Now()) // just created: its writer locks it a moment later
	mk(".hidden", long)              // not a temporary name
	mk("p0003-d", long)              // a point
	target := filepath.Join(points, "p0004-e")
	live, err := newStagedDir(target, pointFiles)
	if err != nil {
		t.Fatal(err)
	}
	defer live.discard()
	if live.lock == nil {
		t.Skip("no advisory locks here")
	}
	os.Chtimes(live.tmp, long, long)
	os.Symlink(t.TempDir(), filepath.Join(points, ".p0005-f.tmp-4"))
	removed := removeStaleTemporaries(points)
	if want := []string{".p0000-a.tmp-1", ".p0001-b.tmp-2-old0"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for _, n := range []string{".p0002-c.tmp-3", ".hidden", "p0003-d", filepath.Base(live.tmp), ".p0005-f.tmp-4"} {
		if _, err := os.Lstat(filepath.Join(points, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	// Once published (its lock released), the point is an ordinary folder.
	if err := live.publish(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Error(err)
	}
}
