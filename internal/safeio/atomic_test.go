package safeio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	if err := WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "complete"); return err }); err != nil {
		t.Fatal(err)
	}
	// A failing writer leaves the old file alone and no temp file behind.
	boom := errors.New("boom")
	err := WriteFileAtomic(path, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want it to wrap the writer's", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "complete" {
		t.Errorf("file holds %q after a failed rewrite, want the old content", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the folder, want 1 (no temp files)", len(entries))
	}
}

// TestSafeName: names derived from scenarios and policies stay inside their
// parent folder and within [a-z0-9._-].
func TestSafeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"hydra", "hydra"},
		{"mcore-v1.2_x", "mcore-v1.2_x"},
		{"testbed-256k", "testbed-256k"},
		{"../../etc", "etc"},
		{"A/B C", "a-b-c"},
		{"..", "unnamed"},
		{"", "unnamed"},
		{"é", "unnamed"},
		{"weak-scaling/hy3/gpus=8192", "weak-scaling-hy3-gpus-8192"},
		{".hidden", "hidden"},
	} {
		if got := SafeName(tc.in); got != tc.want {
			t.Errorf("SafeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
