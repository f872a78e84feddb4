package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
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

func TestLengthCDF(t *testing.T) {
	if _, err := LengthCDF(nil, "empty"); err == nil {
		t.Error("LengthCDF(nil) succeeded, want an error")
	}
	lengths := []int{1, 10, 10, 100, 1000}
	p, err := LengthCDF(lengths, "t")
	if err != nil {
		t.Fatal(err)
	}
	// Each curve ends at (max length, 1); the sequence curve passes (10, 0.6);
	// the Σ s² curve at 100 holds (1+100+100+10^4)/(10^4+10^6+201).
	seq, tok, sq := lengthCurves(lengths)
	for _, c := range []plotter.XYs{seq, tok, sq} {
		if last := c[len(c)-1]; last.X != 1000 || last.Y != 1 {
			t.Errorf("curve ends at %v, want (1000, 1)", last)
		}
	}
	if pt := seq[1]; pt.X != 10 || pt.Y != 0.6 {
		t.Errorf("sequence CDF point %v, want (10, 0.6)", pt)
	}
	if pt, want := sq[2], 10201.0/1010201; pt.X != 100 || pt.Y != want {
		t.Errorf("Σ s² CDF point %v, want (100, %g)", pt, want)
	}
	if err := SavePlot(p, filepath.Join(t.TempDir(), "x.pdf"), vg.Inch, vg.Inch); err == nil {
		t.Error("SavePlot accepted .pdf")
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
