package badinput

import (
	"errors"
	"fmt"
	"testing"
)

// TestMarks: every way of marking matches Err through wrapping, keeps its
// text, and an unmarked error does not match.
func TestMarks(t *testing.T) {
	kind := Sentinel("invalid scheduling input")
	base := errors.New("plain")
	for _, c := range []struct {
		name string
		err  error
		text string
		bad  bool
	}{
		{"Errorf", Errorf("x = %d: must be in [1, 2]", 3), "x = 3: must be in [1, 2]", true},
		{"Errorf wrapping", Errorf("file.toml: %w", base), "file.toml: plain", true},
		{"Mark", Mark(base), "plain", true},
		{"wrapped mark", fmt.Errorf("iteration 2: %w", Mark(base)), "iteration 2: plain", true},
		{"sentinel", fmt.Errorf("%w: B = 0", kind), "invalid scheduling input: B = 0", true},
		{"plain", fmt.Errorf("disk full: %w", base), "disk full: plain", false},
	} {
		if got := Is(c.err); got != c.bad || c.err.Error() != c.text {
			t.Errorf("%s: Is = %v (want %v), text %q (want %q)", c.name, got, c.bad, c.err.Error(), c.text)
		}
	}
	if Mark(nil) != nil {
		t.Error("Mark(nil) is not nil")
	}
	if err := Errorf("%w", kind); !errors.Is(err, kind) || errors.Is(err, Sentinel("invalid scheduling input")) {
		t.Error("a sentinel must match itself and no other sentinel of the same text")
	}
	if !errors.Is(Mark(base), base) {
		t.Error("Mark hides the error it marks")
	}
}
