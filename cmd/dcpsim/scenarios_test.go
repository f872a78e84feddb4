package main

import (
	"strings"
	"testing"
)

// TestScenarioFlagEverywhere: every command that reads a scenario takes it
// by --scenario as well as as its argument, and refuses it named twice.
func TestScenarioFlagEverywhere(t *testing.T) {
	code, byFlag, stderr := dcpsim(t, "memory", "--scenario", "testbed-32k")
	if code != exitOK {
		t.Fatalf("memory --scenario: exit %d: %s", code, stderr)
	}
	if _, byArg, _ := dcpsim(t, "memory", "testbed-32k"); byArg != byFlag {
		t.Errorf("memory --scenario S and memory S differ:\n%s\n%s", byFlag, byArg)
	}
	for _, cmd := range []string{"sweep", "search", "trace", "memory", "run"} {
		code, _, stderr := dcpsim(t, cmd, "--scenario", "testbed-32k", "testbed-256k")
		if code != exitInput || !strings.Contains(stderr, "testbed-256k") {
			t.Errorf("%s with a scenario named twice: exit %d, %s", cmd, code, stderr)
		}
	}
}
