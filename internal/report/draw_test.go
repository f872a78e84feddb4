package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// figureFiles are NAME.png and NAME.svg of each name, sorted.
func figureFiles(names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n+".png", n+".svg")
	}
	slices.Sort(out)
	return out
}

// checkFigureFiles checks that got is want, that dir holds exactly those files,
// none empty, and that the PNGs decode.
func checkFigureFiles(t *testing.T, dir string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var inDir []string
	for _, e := range entries {
		inDir = append(inDir, e.Name())
	}
	if !slices.Equal(inDir, want) {
		t.Errorf("folder holds %q, want %q", inDir, want)
	}
	for _, name := range got {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", name)
		}
		switch filepath.Ext(name) {
		case ".png":
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case ".svg":
			if !bytes.Contains(b, []byte("<svg")) {
				t.Errorf("%s holds no <svg element", name)
			}
		}
	}
}

func TestEcdfPoints(t *testing.T) {
	pts := ecdfPoints([]float64{3, 1, 2, 2, -1}, true)
	want := []struct{ x, y float64 }{{1, 0}, {1, 0.25}, {2, 0.75}, {3, 1}}
	if len(pts) != len(want) {
		t.Fatalf("points %v, want %v", pts, want)
	}
	for i, w := range want {
		if pts[i].X != w.x || pts[i].Y != w.y {
			t.Errorf("point %d = %v, want %v", i, pts[i], w)
		}
	}
	big := make([]float64, 100000)
	for i := range big {
		big[i] = float64(i)
	}
	if pts := ecdfPoints(big, false); len(pts) > 2100 || pts[len(pts)-1].Y != 1 {
		t.Errorf("%d points ending at %v, want at most ~2000 ending at 1", len(pts), pts[len(pts)-1])
	}
}

// TestTicks: logTicks labels at least two ticks inside a short range; pow2Ticks
// sits at each integer of its log2 range, labelled with the power of two.
func TestTicks(t *testing.T) {
	labelled := 0
	for _, tk := range logTicks.Ticks(0.002, 0.005) {
		if tk.Label != "" {
			labelled++
		}
	}
	if labelled < 2 {
		t.Errorf("logTicks(0.002, 0.005) labels %d ticks, want at least 2", labelled)
	}
	var got []float64
	var labels []string
	for _, tk := range pow2Ticks.Ticks(0, 4) {
		got = append(got, tk.Value)
		labels = append(labels, tk.Label)
	}
	if want := []float64{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("pow2Ticks(0, 4) at %v, want %v", got, want)
	}
	if want := []string{"1", "2", "4", "8", "16"}; !slices.Equal(labels, want) {
		t.Errorf("pow2Ticks(0, 4) labelled %q, want %q", labels, want)
	}
}
