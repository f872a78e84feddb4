package calib

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fitCBC fits seconds = a + b·nodes + c·iterations by least squares to the
// rows of calib/planner/cbc_flexsp_solves.csv, returning a, b, c and R².
func fitCBC(t *testing.T) (a, b, c, r2 float64, n int) {
	t.Helper()
	f, err := os.Open(filepath.Join("planner", "cbc_flexsp_solves.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var m [3][4]float64 // normal equations, augmented
	var xs [][3]float64
	var ys []float64
	for _, row := range rows[1:] {
		nodes, err1 := strconv.ParseFloat(row[5], 64)
		iters, err2 := strconv.ParseFloat(row[6], 64)
		secs, err3 := strconv.ParseFloat(row[8], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad row %v", row)
		}
		x := [3]float64{1, nodes, iters}
		for i := range 3 {
			for j := range 3 {
				m[i][j] += x[i] * x[j]
			}
			m[i][3] += x[i] * secs
		}
		xs, ys = append(xs, x), append(ys, secs)
	}
	for i := range 3 { // Gauss-Jordan; the matrix is positive definite
		for r := range 3 {
			if r != i {
				f := m[r][i] / m[i][i]
				for k := range 4 {
					m[r][k] -= f * m[i][k]
				}
			}
		}
	}
	a, b, c = m[0][3]/m[0][0], m[1][3]/m[1][1], m[2][3]/m[2][2]
	var mean, ssRes, ssTot float64
	for _, y := range ys {
		mean += y / float64(len(ys))
	}
	for i, x := range xs {
		fit := a + b*x[1] + c*x[2]
		ssRes += (ys[i] - fit) * (ys[i] - fit)
		ssTot += (ys[i] - mean) * (ys[i] - mean)
	}
	return a, b, c, 1 - ssRes/ssTot, len(ys)
}

// TestCBCProvenance: calib.CBC is the least-squares fit of the committed
// measurement (every CBC solve of FlexSP plans of long-256k batches on
// pools of 128 to 2,048 ranks at node limits 1, 20 and 200), each constant
// positive and citing the file.
func TestCBCProvenance(t *testing.T) {
	a, b, c, r2, n := fitCBC(t)
	t.Logf("%d solves: %.4g s per solve + %.4g s per node + %.4g s per simplex iteration, R² = %.3f", n, a, b, c, r2)
	if n < 500 || r2 < 0.7 {
		t.Errorf("%d solves, R² = %.3f: the work counts no longer explain the solve times", n, r2)
	}
	for name, want := range map[string]struct {
		got Const
		fit float64
	}{"SolveSeconds": {CBC.SolveSeconds, a}, "NodeSeconds": {CBC.NodeSeconds, b}, "IterationSeconds": {CBC.IterationSeconds, c}} {
		checkMeasurementSource(t, "CBC."+name, want.got.Source)
		if !(want.fit > 0) || math.Abs(want.got.Value-want.fit) > 0.01*want.fit {
			t.Errorf("CBC.%s = %g, the fit gives %.4g", name, want.got.Value, want.fit)
		}
	}
}
