package report

import (
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

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
