//go:build unix

package cbc

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a new process group and makes its cancellation kill
// that group (cbc and anything it started), not cbc alone.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Called while cbc is not yet reaped, so its pid still names its group.
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
}
