package launchcfg

// A strict reader of the YAML subset recipes are written in: block
// mappings and sequences, flow sequences and mappings, plain and quoted
// scalars, comments. Anchors, aliases, tags, block scalars, complex keys,
// several documents and tabs in indentation are refused with the line:
// nothing a recipe needs, and each a way to make a small file large
// (aliases) or ambiguous. Sizes are bounded (MaxYAMLBytes, MaxYAMLDepth,
// MaxYAMLNodes).

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of a YAML recipe.
const (
	// MaxYAMLBytes bounds a recipe's size.
	MaxYAMLBytes = 1 << 20
	// MaxYAMLDepth bounds the nesting of mappings and sequences.
	MaxYAMLDepth = 32
	// MaxYAMLNodes bounds the scalars, mappings and sequences of a recipe.
	MaxYAMLNodes = 200_000
)

// NodeKind is what a YAML node holds.
type NodeKind int

// The node kinds.
const (
	// Scalar is a string, number, boolean or null (Value, Null).
	Scalar NodeKind = iota
	// Mapping is keys and values in the order written.
	Mapping
	// Sequence is items in order.
	Sequence
)

// Node is one YAML value.
type Node struct {
	// Kind says which of the fields below hold the value.
	Kind NodeKind
	// Line is where the node starts (1-based).
	Line int
	// Value is a scalar's text (unquoted); Quoted says it was quoted (never
	// a number, boolean or null); Null says it was empty, null or ~.
	Value  string
	Quoted bool
	Null   bool
	// Keys and Values are a mapping's entries in order.
	Keys   []string
	Values []*Node
	// Items are a sequence's.
	Items []*Node
}

// Get returns the value of a mapping's key (nil when absent or not a
// mapping).
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != Mapping {
		return nil
	}
	for i, k := range n.Keys {
		if k == key {
			return n.Values[i]
		}
	}
	return nil
}

// yamlLine is one line of content: its indentation, its text without the
// comment and trailing blanks, and its number.
type yamlLine struct {
	indent int
	text   string
	num    int
}

type yamlParser struct {
	name  string
	lines []yamlLine
	pos   int
	nodes int
}

// ParseYAML reads a recipe (name names it in errors). The top level must
// be a mapping.
func ParseYAML(data []byte, name string) (*Node, error) {
	if len(data) > MaxYAMLBytes {
		return nil, fmt.Errorf("%s: %d bytes: a recipe may have at most %d", name, len(data), MaxYAMLBytes)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s: not UTF-8 text", name)
	}
	p := &yamlParser{name: name}
	if err := p.split(string(data)); err != nil {
		return nil, err
	}
	if len(p.lines) == 0 {
		return nil, fmt.Errorf("%s: empty: a recipe is a mapping of sections (model:, train:, ...)", name)
	}
	first := p.lines[0]
	if first.indent != 0 {
		return nil, p.errf(first.num, "the first line is indented")
	}
	root, err := p.block(0, 1)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.lines) {
		return nil, p.errf(p.lines[p.pos].num, "unexpected indentation or content after the top-level mapping")
	}
	if root.Kind != Mapping {
		return nil, p.errf(root.Line, "the top level must be a mapping of keys (model:, train:, ...)")
	}
	return root, nil
}

func (p *yamlParser) errf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, line, fmt.Sprintf(format, args...))
}

// split cuts the text into content lines, dropping comments, blank lines
// and the document markers; a flow collection spanning lines is joined
// into its first line.
func (p *yamlParser) split(text string) error {
	raw := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	docs := 0
	for i := 0; i < len(raw); i++ {
		num := i + 1
		line := raw[i]
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		if indent < len(line) && line[indent] == '\t' {
			return p.errf(num, "a tab in the indentation: indent with spaces")
		}
		body, err := stripComment(line[indent:])
		if err != nil {
			return p.errf(num, "%v", err)
		}
		body = strings.TrimRight(body, " \t")
		switch {
		case body == "":
			continue
		case indent == 0 && (body == "---" || strings.HasPrefix(body, "--- ")):
			if docs++; docs > 1 || len(p.lines) > 0 {
				return p.errf(num, "a second document: a recipe is one document")
			}
			if rest := strings.TrimSpace(body[3:]); rest != "" {
				return p.errf(num, "content after ---: start the mapping on the next line")
			}
			continue
		case indent == 0 && body == "...":
			for j := i + 1; j < len(raw); j++ {
				if b, _ := stripComment(raw[j]); strings.TrimSpace(b) != "" {
					return p.errf(j+1, "content after the end of the document (...)")
				}
			}
			i = len(raw)
			continue
		case indent == 0 && strings.HasPrefix(body, "%"):
			return p.errf(num, "YAML directives (%s) are not supported", body)
		}
		// A flow collection left open continues on the next lines.
		for depth := flowDepth(body); depth > 0; depth = flowDepth(body) {
			if i+1 >= len(raw) {
				return p.errf(num, "an unclosed [ or {")
			}
			i++
			next, err := stripComment(raw[i])
			if err != nil {
				return p.errf(i+1, "%v", err)
			}
			body += " " + strings.TrimSpace(next)
			if len(body) > MaxYAMLBytes {
				return p.errf(num, "a flow collection longer than the file")
			}
		}
		p.lines = append(p.lines, yamlLine{indent: indent, text: body, num: num})
	}
	return nil
}

// scanUnquoted calls visit with the index of every byte of s outside a
// quoted scalar, until visit returns false, and returns the quote left
// open at the end (0 when none). A quote opens a quoted scalar only where
// one may start: at the start, or after a blank, "[", "{", "," or ":".
func scanUnquoted(s string, visit func(i int) bool) (open byte) {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
				} else {
					quote = 0
				}
			}
		case quote == '"':
			if c == '\\' {
				i++
			} else if c == '"' {
				quote = 0
			}
		case (c == '\'' || c == '"') && (i == 0 || strings.ContainsRune(" \t[{,:", rune(s[i-1]))):
			quote = c
		default:
			if !visit(i) {
				return 0
			}
		}
	}
	return quote
}

// stripComment removes a comment (# at the start or after a blank,
// outside quotes); an unclosed quote is an error.
func stripComment(s string) (string, error) {
	end := len(s)
	open := scanUnquoted(s, func(i int) bool {
		if s[i] == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t') {
			end = i
			return false
		}
		return true
	})
	if open != 0 {
		return "", fmt.Errorf("an unclosed %c quote (a quoted scalar must end on its line)", open)
	}
	return s[:end], nil
}

// flowDepth is how many [ and { are open at the end of s, outside quotes.
func flowDepth(s string) int {
	depth := 0
	scanUnquoted(s, func(i int) bool {
		switch s[i] {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		}
		return true
	})
	return depth
}

func (p *yamlParser) node(kind NodeKind, line int) (*Node, error) {
	if p.nodes++; p.nodes > MaxYAMLNodes {
		return nil, p.errf(line, "more than %d values: a recipe may have at most that many", MaxYAMLNodes)
	}
	return &Node{Kind: kind, Line: line}, nil
}

// isSeqItem reports whether a line's text is a block sequence item.
func isSeqItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// block reads the mapping or sequence whose lines start at p.pos, indented
// by indent.
func (p *yamlParser) block(indent, depth int) (*Node, error) {
	l := p.lines[p.pos]
	if depth > MaxYAMLDepth {
		return nil, p.errf(l.num, "nested more than %d deep (MaxYAMLDepth)", MaxYAMLDepth)
	}
	if isSeqItem(l.text) {
		return p.sequence(indent, depth)
	}
	return p.mapping(indent, depth)
}

func (p *yamlParser) mapping(indent, depth int) (*Node, error) {
	m, err := p.node(Mapping, p.lines[p.pos].num)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent < indent {
			break
		}
		if l.indent > indent {
			return nil, p.errf(l.num, "unexpected indentation (%d spaces where the mapping's keys have %d)", l.indent, indent)
		}
		if isSeqItem(l.text) {
			return nil, p.errf(l.num, "a sequence item among a mapping's keys")
		}
		key, rest, err := p.splitKey(l)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[key]; dup {
			return nil, p.errf(l.num, "key %q repeated (first on line %d)", key, first)
		}
		seen[key] = l.num
		p.pos++
		var v *Node
		if rest != "" {
			v, err = p.inline(rest, l.num, depth+1)
		} else if p.pos < len(p.lines) && (p.lines[p.pos].indent > indent || p.lines[p.pos].indent == indent && isSeqItem(p.lines[p.pos].text)) {
			v, err = p.block(p.lines[p.pos].indent, depth+1)
		} else {
			v, err = p.node(Scalar, l.num)
			if err == nil {
				v.Null = true
			}
		}
		if err != nil {
			return nil, err
		}
		m.Keys = append(m.Keys, key)
		m.Values = append(m.Values, v)
	}
	return m, nil
}

// splitKey splits "key: value" (value may be empty) at the first ": " or
// final ":" outside quotes and brackets.
func (p *yamlParser) splitKey(l yamlLine) (key, rest string, err error) {
	s := l.text
	if strings.HasPrefix(s, "? ") || s == "?" {
		return "", "", p.errf(l.num, "complex keys (?) are not supported")
	}
	i := keyEnd(s)
	if i < 0 {
		return "", "", p.errf(l.num, "%q: want key: value", clip(s))
	}
	k, err := p.scalar(strings.TrimSpace(s[:i]), l.num)
	if err != nil {
		return "", "", err
	}
	if k.Null && !k.Quoted {
		return "", "", p.errf(l.num, "an empty key")
	}
	return k.Value, strings.TrimSpace(s[i+1:]), nil
}

// keyEnd is the index of the ':' ending a mapping key in s, or -1 (also
// when a flow collection starts first).
func keyEnd(s string) int {
	end := -1
	scanUnquoted(s, func(i int) bool {
		switch {
		case s[i] == '[' || s[i] == '{':
			return false
		case s[i] == ':' && (i+1 == len(s) || s[i+1] == ' '):
			end = i
			return false
		}
		return true
	})
	return end
}

func (p *yamlParser) sequence(indent, depth int) (*Node, error) {
	seq, err := p.node(Sequence, p.lines[p.pos].num)
	if err != nil {
		return nil, err
	}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent < indent || l.indent == indent && !isSeqItem(l.text) {
			break
		}
		if l.indent > indent {
			return nil, p.errf(l.num, "unexpected indentation (%d spaces where the sequence's items have %d)", l.indent, indent)
		}
		content := strings.TrimLeft(strings.TrimPrefix(l.text, "-"), " ")
		var item *Node
		switch {
		case content == "":
			p.pos++
			if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
				item, err = p.block(p.lines[p.pos].indent, depth+1)
			} else if item, err = p.node(Scalar, l.num); err == nil {
				item.Null = true
			}
		case isSeqItem(content) || keyEnd(content) >= 0:
			// "- key: value" or "- - x": the item is a block whose first
			// line starts at the content's column.
			p.lines[p.pos] = yamlLine{indent: indent + len(l.text) - len(content), text: content, num: l.num}
			item, err = p.block(p.lines[p.pos].indent, depth+1)
		default:
			p.pos++
			item, err = p.inline(content, l.num, depth+1)
		}
		if err != nil {
			return nil, err
		}
		seq.Items = append(seq.Items, item)
	}
	return seq, nil
}

// inline reads a value written on its key's or item's line: a flow
// collection or a scalar.
func (p *yamlParser) inline(s string, line, depth int) (*Node, error) {
	if s[0] == '[' || s[0] == '{' {
		f := flowReader{p: p, s: s, line: line}
		n, err := f.value(depth)
		if err != nil {
			return nil, err
		}
		f.blanks()
		if f.i != len(f.s) {
			return nil, p.errf(line, "%q after the flow collection", clip(f.s[f.i:]))
		}
		return n, nil
	}
	if i := keyEnd(s); i >= 0 && s[0] != '"' && s[0] != '\'' {
		return nil, p.errf(line, "%q: a mapping must start on its own line", clip(s))
	}
	return p.scalar(s, line)
}

// scalar reads one scalar: quoted, or plain (refusing the indicators of
// the features left out).
func (p *yamlParser) scalar(s string, line int) (*Node, error) {
	n, err := p.node(Scalar, line)
	if err != nil {
		return nil, err
	}
	switch {
	case s == "" || s == "~" || s == "null" || s == "Null" || s == "NULL":
		n.Null = true
		return n, nil
	case s[0] == '"':
		v, err := strconv.Unquote(s)
		if err != nil || !strings.HasSuffix(s, `"`) || len(s) < 2 {
			return nil, p.errf(line, "%s: a malformed double-quoted string", clip(s))
		}
		n.Value, n.Quoted = v, true
		return n, nil
	case s[0] == '\'':
		if len(s) < 2 || s[len(s)-1] != '\'' {
			return nil, p.errf(line, "%s: a malformed single-quoted string", clip(s))
		}
		inner := s[1 : len(s)-1]
		if strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
			return nil, p.errf(line, "%s: a malformed single-quoted string", clip(s))
		}
		n.Value, n.Quoted = strings.ReplaceAll(inner, "''", "'"), true
		return n, nil
	}
	switch s[0] {
	case '&', '*':
		return nil, p.errf(line, "%s: anchors and aliases are not supported (write the value out)", clip(s))
	case '!':
		return nil, p.errf(line, "%s: tags are not supported", clip(s))
	case '|', '>':
		return nil, p.errf(line, "%s: block scalars are not supported (quote the text on one line)", clip(s))
	case '@', '`', '%':
		return nil, p.errf(line, "%s: a plain scalar cannot start with %q", clip(s), s[0])
	case ']', '}', ',':
		return nil, p.errf(line, "%s: unexpected %q", clip(s), s[0])
	}
	n.Value = s
	return n, nil
}

// flowReader reads a flow collection: [a, b, [c]] or {k: v}.
type flowReader struct {
	p    *yamlParser
	s    string
	i    int
	line int
}

func (f *flowReader) blanks() {
	for f.i < len(f.s) && f.s[f.i] == ' ' {
		f.i++
	}
}

func (f *flowReader) value(depth int) (*Node, error) {
	if depth > MaxYAMLDepth {
		return nil, f.p.errf(f.line, "nested more than %d deep (MaxYAMLDepth)", MaxYAMLDepth)
	}
	f.blanks()
	if f.i >= len(f.s) {
		return nil, f.p.errf(f.line, "a flow collection ends early")
	}
	switch f.s[f.i] {
	case '[':
		return f.collection(']', depth)
	case '{':
		return f.collection('}', depth)
	}
	return f.flowScalar()
}

// collection reads [items] or {key: value, ...} from the opening bracket.
func (f *flowReader) collection(end byte, depth int) (*Node, error) {
	kind := Sequence
	if end == '}' {
		kind = Mapping
	}
	n, err := f.p.node(kind, f.line)
	if err != nil {
		return nil, err
	}
	f.i++
	seen := map[string]bool{}
	for {
		f.blanks()
		if f.i < len(f.s) && f.s[f.i] == end {
			f.i++
			return n, nil
		}
		if kind == Mapping {
			k, err := f.flowScalar()
			if err != nil {
				return nil, err
			}
			f.blanks()
			if f.i >= len(f.s) || f.s[f.i] != ':' {
				return nil, f.p.errf(f.line, "a flow mapping entry without ':'")
			}
			f.i++
			if seen[k.Value] {
				return nil, f.p.errf(f.line, "key %q repeated", k.Value)
			}
			seen[k.Value] = true
			v, err := f.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Keys = append(n.Keys, k.Value)
			n.Values = append(n.Values, v)
		} else {
			v, err := f.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Items = append(n.Items, v)
		}
		f.blanks()
		switch {
		case f.i < len(f.s) && f.s[f.i] == ',':
			f.i++
		case f.i < len(f.s) && f.s[f.i] == end:
		default:
			return nil, f.p.errf(f.line, "a flow collection needs ',' or %q", end)
		}
	}
}

// flowScalar reads a quoted scalar or a plain one up to , : ] or }.
func (f *flowReader) flowScalar() (*Node, error) {
	f.blanks()
	start := f.i
	if f.i < len(f.s) && (f.s[f.i] == '"' || f.s[f.i] == '\'') {
		q := f.s[f.i]
		for f.i++; f.i < len(f.s); f.i++ {
			if q == '"' && f.s[f.i] == '\\' {
				f.i++
				continue
			}
			if f.s[f.i] == q {
				if q == '\'' && f.i+1 < len(f.s) && f.s[f.i+1] == '\'' {
					f.i++
					continue
				}
				f.i++
				return f.p.scalar(f.s[start:f.i], f.line)
			}
		}
		return nil, f.p.errf(f.line, "an unclosed quote in a flow collection")
	}
	for f.i < len(f.s) && !strings.ContainsRune(",]}", rune(f.s[f.i])) && (f.s[f.i] != ':' || f.i+1 < len(f.s) && f.s[f.i+1] != ' ' && f.s[f.i+1] != ',' && f.s[f.i+1] != '}') {
		if f.s[f.i] == '[' || f.s[f.i] == '{' {
			return nil, f.p.errf(f.line, "an unexpected %q in a flow scalar", f.s[f.i])
		}
		f.i++
	}
	return f.p.scalar(strings.TrimSpace(f.s[start:f.i]), f.line)
}

// clip shortens text quoted in an error.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
