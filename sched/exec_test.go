package sched

import (
	"strings"
	"testing"
)

func TestCPExecNames(t *testing.T) {
	for _, n := range CPExecNames() {
		e, err := ParseCPExec(n)
		if err != nil || e.String() != n {
			t.Errorf("ParseCPExec(%q) = %v, %v", n, e, err)
		}
		var d CPExec
		if err := d.UnmarshalText([]byte(n)); err != nil || d != e {
			t.Errorf("UnmarshalText(%q) = %v, %v", n, d, err)
		}
		if b, err := e.MarshalText(); err != nil || string(b) != n {
			t.Errorf("MarshalText(%v) = %q, %v", e, b, err)
		}
	}
	if _, err := ParseCPExec("zigzag"); err == nil || !strings.Contains(err.Error(), "ulysses-ring") {
		t.Errorf("unknown exec: err = %v, want one listing the names", err)
	}
	if _, err := CPExec(0).MarshalText(); err == nil {
		t.Errorf("the zero CPExec must not marshal")
	}
}
