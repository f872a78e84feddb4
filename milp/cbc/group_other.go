//go:build !unix

package cbc

import "os/exec"

// ownGroup leaves cmd as it is: cancellation kills cbc alone.
func ownGroup(cmd *exec.Cmd) {}
