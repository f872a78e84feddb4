package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlexSPWithoutCBC: on a machine without cbc (an empty PATH), dcpsim run
// skips flexsp with a note naming the Debian package and exits 0 when the
// other policies ran; plan --batches and run --batches with flexsp exit 2
// naming the package; plan --scenario exits 2 alike.
func TestFlexSPWithoutCBC(t *testing.T) {
	dir := t.TempDir()
	sc := writeTiny(t, dir, "tiny-flexsp", `["hydra", "flexsp"]`, "")
	batches := filepath.Join(dir, "b.jsonl")
	if err := os.WriteFile(batches, []byte(`{"ranks": 4, "budget_tokens": 1000, "lengths": [3000, 200, 100]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	code, out, errOut := dcpsim(t, "run", "--no-files", sc)
	if code != exitOK || !strings.Contains(out, "flexsp: skipped: policy flexsp needs the cbc program (Debian package coinor-cbc") ||
		!strings.Contains(out, "skipped (below)") {
		t.Errorf("run: exit %d:\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"plan", "--policy", "flexsp", "--batches", batches},
		{"run", "--policy", "flexsp", "--batches", batches, "--costs", "load"},
		{"plan", "--policy", "flexsp", "--scenario", sc},
	} {
		code, out, errOut := dcpsim(t, args...)
		if code != exitInput || !strings.Contains(errOut, "coinor-cbc") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
