package scenarios

import (
	"slices"
	"strconv"
	"strings"
)

// keyLines maps each dotted key of a TOML document to the line (1-based) where it
// is first written. BurntSushi/toml keeps key positions private, so error messages
// about unknown or out-of-range keys get their line numbers from this small scan.
// It understands [table] and [[array]] headers, bare, quoted and dotted keys, and
// skips multi-line strings and arrays; keys inside inline tables map to the line of
// the table's own key (lineOf falls back to the longest known prefix). Array-table
// keys are recorded without indices, at their first occurrence.
func keyLines(src string) map[string]int {
	lines := make(map[string]int)
	record := func(key string, n int) {
		if _, ok := lines[key]; !ok {
			lines[key] = n
		}
	}
	var table []string
	inMultiString := ""
	depth := 0 // open brackets of a multi-line array value
	// An array value's elements that are inline tables are recorded as
	// key[i] (array is its key, elem the next index), and so are the tables
	// of an array of tables, [[key]] (arrayTables counts them per key).
	array, elem, braces := "", 0, 0
	arrayTables := map[string]int{}
	var indexed []string // the table's path with its [[array]] index, or nil
	elements := func(key, text string, n int) {
		eachChar(text, func(_ int, c byte, kind charKind) bool {
			switch {
			case kind != plain:
			case c == '{':
				if braces == 0 {
					record(key+"["+strconv.Itoa(elem)+"]", n)
					elem++
				}
				braces++
			case c == '}':
				braces--
			}
			return true
		})
	}
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		t := strings.TrimSpace(line)
		if inMultiString != "" {
			if strings.Contains(t, inMultiString) {
				inMultiString = ""
			}
			continue
		}
		if depth > 0 {
			if array != "" {
				elements(array, t, n)
			}
			depth += bracketBalance(t)
			continue
		}
		if t == "" || t[0] == '#' {
			continue
		}
		if t[0] == '[' {
			inner := strings.TrimPrefix(t, "[[")
			inner = strings.TrimPrefix(inner, "[")
			if end := strings.Index(inner, "]"); end >= 0 {
				inner = inner[:end]
			}
			table = splitKey(inner)
			name := strings.Join(table, ".")
			record(name, n)
			indexed = nil
			if strings.HasPrefix(t, "[[") {
				i := arrayTables[name]
				arrayTables[name] = i + 1
				indexed = append(slices.Clone(table[:len(table)-1]), table[len(table)-1]+"["+strconv.Itoa(i)+"]")
				record(strings.Join(indexed, "."), n)
			}
			continue
		}
		eq := keyValueSplit(t)
		if eq < 0 {
			continue
		}
		key := append(append([]string{}, table...), splitKey(t[:eq])...)
		full := strings.Join(key, ".")
		record(full, n)
		if indexed != nil {
			full = strings.Join(append(slices.Clone(indexed), splitKey(t[:eq])...), ".")
			record(full, n)
		}
		value := strings.TrimSpace(t[eq+1:])
		for _, q := range []string{`"""`, `'''`} {
			if strings.HasPrefix(value, q) && !strings.Contains(value[len(q):], q) {
				inMultiString = q
			}
		}
		if inMultiString == "" && strings.HasPrefix(value, "[") {
			array, elem, braces = full, 0, 0
			elements(full, value, n)
			depth = bracketBalance(value)
		}
	}
	return lines
}

// lineOf returns the line of key, or of its longest recorded prefix, or 0.
func lineOf(lines map[string]int, key string) int {
	for k := key; k != ""; {
		if n, ok := lines[k]; ok {
			return n
		}
		dot := strings.LastIndex(k, ".")
		if dot < 0 {
			break
		}
		k = k[:dot]
	}
	return 0
}

// charKind says where a byte of a TOML line lies relative to quoted strings.
type charKind int

const (
	plain     charKind = iota // outside any quoted string
	quoteMark                 // the opening or closing quote itself
	quoted                    // inside a quoted string
)

// eachChar calls f for every byte of t with its charKind; f returns false to stop.
// Basic ("...") and literal ('...') strings are recognised; escapes are not, which
// is enough for keys and for finding '=', '[', ']' and '#'.
func eachChar(t string, f func(i int, c byte, kind charKind) bool) {
	var quote byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		kind := plain
		switch {
		case quote != 0 && c == quote:
			quote, kind = 0, quoteMark
		case quote != 0:
			kind = quoted
		case c == '"' || c == '\'':
			quote, kind = c, quoteMark
		}
		if !f(i, c, kind) {
			return
		}
	}
}

// keyValueSplit returns the index of the '=' that separates a key from its value,
// ignoring '=' inside quoted keys, or -1.
func keyValueSplit(t string) int {
	at := -1
	eachChar(t, func(i int, c byte, kind charKind) bool {
		if kind == plain && c == '=' {
			at = i
			return false
		}
		return true
	})
	return at
}

// splitKey splits a possibly dotted, possibly quoted key into its parts.
func splitKey(k string) []string {
	var parts []string
	var cur strings.Builder
	eachChar(k, func(_ int, c byte, kind charKind) bool {
		switch {
		case kind == quoteMark:
		case kind == plain && c == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
		return true
	})
	return append(parts, strings.TrimSpace(cur.String()))
}

// bracketBalance counts '[' minus ']' outside strings and comments.
func bracketBalance(t string) int {
	bal := 0
	eachChar(t, func(_ int, c byte, kind charKind) bool {
		if kind != plain {
			return true
		}
		switch c {
		case '#':
			return false
		case '[':
			bal++
		case ']':
			bal--
		}
		return true
	})
	return bal
}

// MaxNesting bounds how deeply a scenario file may nest arrays and inline
// tables ('[' and '{' open at once, a table header's brackets included): the
// TOML decoder's cost grows steeply with the depth (a 36 KB file of nested
// inline tables took 1.5 GiB and seconds), and no scenario needs more than a
// few levels.
const MaxNesting = 32

// tooDeep scans src lexically, as TOML writes it, for '[' and '{' outside
// strings and comments, and returns the 1-based line where more than limit of
// them are open at once, or 0. It understands basic strings with escapes,
// literal strings, their multi-line forms and comments; it does not check
// that the brackets match (the decoder does).
func tooDeep(src string, limit int) int {
	line, depth := 1, 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '\n':
			line++
		case '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case '[', '{':
			if depth++; depth > limit {
				return line
			}
		case ']', '}':
			depth = max(depth-1, 0)
		case '"', '\'':
			i, line = skipString(src, i, line)
		}
	}
	return 0
}

// skipString returns the index of the last byte of the string that opens at
// src[i] (a quote) and the line it ends on. A one-line string ends, if
// unterminated, before the line's end; a multi-line one may end in up to two
// more quotes, which belong to it.
func skipString(src string, i, line int) (int, int) {
	q := src[i]
	multi := strings.HasPrefix(src[i:], strings.Repeat(string(q), 3))
	if multi {
		i += 2
	}
	for i++; i < len(src); i++ {
		switch src[i] {
		case '\\':
			if q == '"' && i+1 < len(src) {
				i++ // an escape: skip the escaped byte
				if src[i] == '\n' {
					line++
				}
			}
		case '\n':
			if !multi {
				return i - 1, line
			}
			line++
		case q:
			if !multi {
				return i, line
			}
			if strings.HasPrefix(src[i:], strings.Repeat(string(q), 3)) {
				i += 2
				for k := 0; k < 2 && i+1 < len(src) && src[i+1] == q; k++ {
					i++
				}
				return i, line
			}
		}
	}
	return i, line
}
