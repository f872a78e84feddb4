//go:build race

package main

// raceEnabled: the race detector multiplies memory, so peak-memory bounds of
// child processes are not checked under it.
const raceEnabled = true
