package badinput

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every control or format character (C0 but
// newline and tab, DEL, C1, bidirectional and zero-width format characters)
// and every byte of invalid UTF-8 written as a Go escape (\x1b, \u202e), so
// that text from an input (a device name, a process's message) printed in a
// table or an error cannot move the cursor, recolour, clear or retitle a
// terminal. Text without such characters is returned unchanged.
func Printable(s string) string {
	if !strings.ContainsFunc(s, needsEscape) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// PrintableLine is Printable with newlines and tabs escaped too: a value
// that must stay on one line of a table.
func PrintableLine(s string) string {
	if strings.ContainsAny(s, "\n\t") {
		s = lineBreaks.Replace(s)
	}
	return Printable(s)
}

// lineBreaks escapes what Printable leaves: newlines and tabs.
var lineBreaks = strings.NewReplacer("\n", `\n`, "\t", `\t`)

// needsEscape reports whether r must not reach a terminal raw.
func needsEscape(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}
