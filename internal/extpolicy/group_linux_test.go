package extpolicy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCloseKillsWhatItLeft (issue 41): a policy that starts a child in the
// background and answers normally leaves nothing running once Close
// returns, whether the child holds its pipes or not: its process group is
// killed after it exits, and Close does not wait for the child's pipes.
func TestCloseKillsWhatItLeft(t *testing.T) {
	for _, mode := range []string{"background", "detached"} {
		t.Run(mode, func(t *testing.T) { closeKills(t, mode) })
	}
}

func closeKills(t *testing.T, mode string) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("DCPSIM_FAKE_PIDFILE", pidFile)
	p := start(t, mode, 10*time.Second)
	if _, err := p.Plan([]int{10}, testInputs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if err := p.Close(); err != nil { // "still running 5s after its stdin closed": it waited for the child's pipes
		t.Errorf("Close = %v", err)
	}
	// SIGKILL was sent before Close returned; the child is a zombie (or
	// reaped) once the kernel has delivered it.
	for deadline := time.Now().Add(30 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the background child %d still runs after Close", pid)
		}
	}
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}
