//go:build race

package costmodel

// raceEnabled: the race detector's sync.Pool drops items at random, so
// allocation counts that rely on a warm scratch do not hold.
const raceEnabled = true
