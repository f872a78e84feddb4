//go:build unix

package costmodel

import "syscall"

// processCPUSeconds is the CPU time the test process has used (user +
// system, every thread: the garbage collector's included), for benchmarks on
// a shared machine where wall time counts the other processes too; ok is
// false where it cannot be read.
func processCPUSeconds() (sec float64, ok bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9, true
}
