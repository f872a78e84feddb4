package cbc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/milp"
)

// TestCancelKillsGroup: a cancelled solve kills what cbc started too, so
// nothing writes into (or makes again) its dcpsim-cbc-* folder after the
// solve removed it (issue 24 item 13).
func TestCancelKillsGroup(t *testing.T) {
	s := fake(t, "orphan.sh")
	m, _ := knapsack(3)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.Solve(ctx, m, milp.Limits{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
	assertNoTempFiles(t, s)
	time.Sleep(2 * time.Second) // past the stand-in's child's 1.5 s
	assertNoTempFiles(t, s)
}

// TestInterruptRemovesFolder: a process solving under a context SIGTERM
// cancels (as the CLI's is) and sent SIGTERM mid-solve returns from Solve with
// its folder removed and cbc's process group gone.
func TestInterruptRemovesFolder(t *testing.T) {
	if dir := os.Getenv("DCPSIM_CBC_INTERRUPT_DIR"); dir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		s := &Solver{Path: os.Getenv("DCPSIM_CBC_INTERRUPT_SCRIPT"), TempDir: dir}
		m, _ := knapsack(3)
		os.WriteFile(filepath.Join(os.Getenv("DCPSIM_CBC_INTERRUPT_READY"), "pid"), []byte("go"), 0o644)
		_, err := s.Solve(ctx, m, milp.Limits{})
		if !errors.Is(err, context.Canceled) {
			os.Exit(3)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("child process")
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "orphan.sh"))
	dir, ready := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestInterruptRemovesFolder$")
	cmd.Env = append(os.Environ(), "DCPSIM_CBC_INTERRUPT_DIR="+dir, "DCPSIM_CBC_INTERRUPT_SCRIPT="+script, "DCPSIM_CBC_INTERRUPT_READY="+ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the solve's folder to exist (cbc started), then interrupt.
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, _ := os.ReadDir(dir)
		if len(left) == 1 && strings.HasPrefix(left[0].Name(), "dcpsim-cbc-") {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no solve folder appeared in %s", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let cbc's stand-in start its child
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	time.Sleep(2 * time.Second) // past the stand-in's child's 1.5 s
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("left behind after SIGTERM: %v", left)
	}
}

// TestMissingTMPDIR: a TMPDIR that does not exist is named as TMPDIR, with
// what to do, not as a bare "stat" error (issue 24 item 20).
func TestMissingTMPDIR(t *testing.T) {
	s := fake(t, "sleep.sh")
	t.Setenv("TMPDIR", "/nonexistent/dir")
	s.TempDir = ""
	m, _ := knapsack(3)
	_, err := s.Solve(context.Background(), m, milp.Limits{})
	for _, w := range []string{"TMPDIR = /nonexistent/dir", "set TMPDIR to an existing, writable folder"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want it to say %q", err, w)
		}
	}
	s.TempDir = "/nonexistent/other"
	if _, err := s.Solve(context.Background(), m, milp.Limits{}); err == nil || !strings.Contains(err.Error(), "/nonexistent/other (Solver.TempDir)") {
		t.Errorf("err = %v, want it to name Solver.TempDir", err)
	}
}
