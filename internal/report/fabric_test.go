package report

import (
	"encoding/json"
	"github.com/dcpsim/dcpsim/results"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFabric: the fabric section lists every variant beside the
// paper's production job and names the one closest to it, and the closing
// prose quotes that variant's numbers.
func TestWriteFabric(t *testing.T) {
	dir := t.TempDir()
	point := func(i int, variant string, steps map[string]float64) results.SweepPoint {
		return results.SweepPoint{Index: i, Name: variant, Axes: results.Axes{{Key: "variant", Value: variant}},
			Summary: *stepSummary("production-256k-fabric", "H800", 2048, 4, 24, steps, threePolicies)}
	}
	sw := sweepJSON{Points: []results.SweepPoint{
		point(0, "nics8", map[string]float64{"hydra": 8, "mcore": 15.5, "static": 18.8}),
		point(1, "nics2", map[string]float64{"hydra": 17, "mcore": 20, "static": 28}),
	}}
	data, err := json.Marshal(sw)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, fabricSweep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fabricSweep, "sweep.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	fp := writeFabric(&w, dir)
	got := w.String()
	for _, want := range []string{
		"| nics8 | 8 / 15.9 (×0.50) | 15.5 / 19.9 (×0.78) | 18.8 / 25.2 (×0.75) | 1.94 / 1.25 (×1.55) | 2.35 / 1.59 (×1.48) | 20.0 |",
		"| nics2 | 17 / 15.9 (×1.07) | 20 / 19.9 (×1.01) | 28 / 25.2 (×1.11) |",
		"closest to the paper's is nics2 (mean |here ÷ paper − 1| = 6%)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("fabric section lacks %q:\n%s", want, got)
		}
	}
	if fp == nil || fp.Closest != "nics2" {
		t.Fatalf("closest %+v", fp)
	}
	sums := testbedSums()
	sums["production-256k"] = stepSummary("production-256k", "H800", 2048, 4, 24, map[string]float64{"hydra": 8, "mcore": 15.5, "static": 18.8}, threePolicies)
	d := newProseData(sums, nil, fidelityTargets(sums, nil))
	d.Fabric = fp
	var pw strings.Builder
	writeProse(&pw, d)
	if b := strings.Join(strings.Fields(bullet(t, pw.String(), "Production")), " "); !strings.Contains(b, "nics2 lies closest to the paper: steps HyDra 17.0 s, Mcore 20.0 s, static 28.0 s") {
		t.Errorf("production bullet does not quote the closest fabric:\n%s", b)
	}
	if w.Reset(); writeFabric(&w, t.TempDir()) != nil || !strings.Contains(w.String(), "Missing:") {
		t.Errorf("no sweep: %q", w.String())
	}
}
