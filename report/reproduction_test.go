package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReproductionUpToDate: results/REPORT.md is what WriteReproduction writes
// from the committed results, so the report never drifts from its generator or
// data.
func TestReproductionUpToDate(t *testing.T) {
	dir := filepath.Join("..", "results")
	want, err := os.ReadFile(filepath.Join(dir, "REPORT.md"))
	if err != nil {
		t.Skipf("no committed report: %v", err)
	}
	var b strings.Builder
	if err := WriteReproduction(&b, dir); err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("results/REPORT.md is stale: run make figures (or dcpsim report) and commit it")
	}
	if strings.Contains(b.String(), "Missing") {
		t.Errorf("the report names missing results: run make figures")
	}
}
