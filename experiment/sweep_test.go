package experiment

import (
	"context"
	"errors"
	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/internal/report"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/scenarios"
)

// tinySweep is the tiny scenario with HyDra alone, swept over two caps.
func tinySweep(t testing.TB) *scenarios.Scenario {
	t.Helper()
	src := strings.Replace(tiny, `policies = ["hydra", "mcore", "static"]`, `policies = ["hydra"]`, 1)
	src = strings.Replace(src, "\n[run.options.mcore]\nstall_model = \"megatron-dev\"\n", "", 1)
	return parse(t, src+"\n[sweep]\ngpus = [48]\n\n[sweep.options.hydra]\ncap = [4, 8]\n")
}

// pointDirs are the point folders of a sweep folder.
func pointDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(dir, "points"))
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(dir, "points", e.Name()))
	}
	return out
}

// TestSweepRefusesForeignFolder: a sweep into a non-empty folder that is
// no sweep folder (no points/, no sweep.json) is bad input naming it, and
// nothing there changes.
func TestSweepRefusesForeignFolder(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	_, err := Sweep(context.Background(), tinySweep(t), SweepOptions{Dir: dir, Jobs: 1})
	if !badinput.Is(err) || !strings.Contains(err.Error(), dir) {
		t.Errorf("%v, want bad input naming %s", err, dir)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("folder changed: %v", entries)
	}
}

// TestSweepInterrupted: a sweep whose context is cancelled (before it starts,
// or after some checks) stops with context.Canceled and leaves no temporary
// file or folder, only complete points; the same sweep then completes,
// skipping them.
func TestSweepInterrupted(t *testing.T) {
	sc := tinySweep(t)
	// A point takes 9 checks: its start, 3 iterations, 4 files and the
	// publication; so 12 stops in the second point.
	for _, n := range []int64{0, 1, 3, 6, 8, 12} {
		dir := filepath.Join(t.TempDir(), "sweep")
		_, err := Sweep(newCancelAfter(n), sc, SweepOptions{Dir: dir, Jobs: 1, Figures: report.Figures{}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancel after %d: %v", n, err)
		}
		noTemporaries(t, filepath.Dir(dir))
		done := pointDirs(t, dir)
		if n == 12 && len(done) != 1 {
			t.Errorf("cancel after 12: points %v, want the first", done)
		}
		for _, p := range done {
			if _, err := loadPoint(p, false); err != nil {
				t.Errorf("cancel after %d: incomplete point left: %v", n, err)
			}
		}
		res, err := Sweep(context.Background(), sc, SweepOptions{Dir: dir, Jobs: 2})
		if err != nil || res.Skipped != len(done) {
			t.Errorf("cancel after %d: resumed %+v (%v), want %d skipped", n, res, err, len(done))
		}
	}
}

// TestSweepResumeRechecksPoints: a resumed sweep skips only point folders
// that pass every check: one whose summary.json was altered is simulated
// again and replaced whole; one that holds a file its manifest does not list
// (the user's: replacing the point would delete it) is refused, naming the
// file, before anything is simulated, and resumes once it is moved away.
func TestSweepResumeRechecksPoints(t *testing.T) {
	sc := tinySweep(t)
	dir := t.TempDir()
	if _, err := Sweep(context.Background(), sc, SweepOptions{Dir: dir, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	pts := pointDirs(t, dir)
	if len(pts) != 2 {
		t.Fatalf("points %v", pts)
	}
	sum := filepath.Join(pts[0], "summary.json")
	b, _ := os.ReadFile(sum)
	altered := strings.Replace(string(b), `"step_seconds_mean": `, `"step_seconds_mean": 1`, 1)
	os.WriteFile(sum, []byte(altered), 0o644)
	extra := filepath.Join(pts[1], "extra.sh")
	os.WriteFile(extra, []byte("#!/bin/sh\n"), 0o755)
	if _, err := Sweep(context.Background(), sc, SweepOptions{Dir: dir, Jobs: 2}); !badinput.Is(err) || !strings.Contains(err.Error(), extra) {
		t.Fatalf("resume with %s: %v, want bad input naming it", extra, err)
	}
	if b, _ := os.ReadFile(sum); string(b) != altered {
		t.Error("a point was simulated again before the refusal")
	}
	if _, err := os.Stat(extra); err != nil {
		t.Errorf("extra.sh is gone: %v", err)
	}
	os.Remove(extra)
	res, err := Sweep(context.Background(), sc, SweepOptions{Dir: dir, Jobs: 2})
	if err != nil || res.Skipped != 1 {
		t.Fatalf("resume: %+v (%v), want the altered point simulated again", res, err)
	}
	for _, p := range pts {
		if _, err := loadPoint(p, false); err != nil {
			t.Error(err)
		}
	}
}
