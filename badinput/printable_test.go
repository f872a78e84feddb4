package badinput

import "testing"

// TestPrintable: control and format characters and invalid UTF-8 become Go
// escapes; other text, newlines and tabs (PrintableLine: those too) stay.
func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want, line string }{
		{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"},
		{"clear\x1b[2J", `clear\x1b[2J`, `clear\x1b[2J`},
		{"title\x1b]0;pwned\x07", `title\x1b]0;pwned\x07`, `title\x1b]0;pwned\x07`},
		{"c1\u009b31m", `c1\x9b31m`, `c1\x9b31m`},
		{"bidi\u202eevil", `bidi\u202eevil`, `bidi\u202eevil`},
		{"del\x7f", `del\x7f`, `del\x7f`},
		{"bad\xffutf8", `bad\xffutf8`, `bad\xffutf8`},
		{"two\nlines\ttab", "two\nlines\ttab", `two\nlines\ttab`},
		{"µs ≤ 1", "µs ≤ 1", "µs ≤ 1"},
	} {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := PrintableLine(c.in); got != c.line {
			t.Errorf("PrintableLine(%q) = %q, want %q", c.in, got, c.line)
		}
	}
}
