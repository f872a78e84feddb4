//go:build race

package experiment

// raceEnabled: the race detector is on; tests that only move hundreds of MB
// through one goroutine skip (they take seconds under it and check no
// concurrency).
const raceEnabled = true
