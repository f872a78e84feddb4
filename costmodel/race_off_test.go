//go:build !race

package costmodel

// raceEnabled: see race_on_test.go.
const raceEnabled = false
