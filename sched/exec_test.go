package sched

import (
	"strings"
	"testing"
)

func TestCPExecNames(t *testing.T) {
	names := CPExecNames()
	if want := []string{"ulysses", "ring", "ulysses-ring", "all-gather-kv"}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("CPExecNames() = %v, want %v", names, want)
	}
	for _, n := range names {
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
	for _, e := range []CPExec{0, AllGatherKV + 1} {
		if _, err := e.MarshalText(); err == nil || e.Valid() {
			t.Errorf("CPExec(%d) must be invalid and not marshal", int(e))
		}
	}
}
