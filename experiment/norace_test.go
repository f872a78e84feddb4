//go:build !race

package experiment

// raceEnabled: the race detector is off (see race_test.go).
const raceEnabled = false
