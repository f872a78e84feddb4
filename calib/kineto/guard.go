package kineto

import (
	"fmt"
	"io"
)

// Shape limits on the JSON text, checked by a guard in front of the JSON
// decoder, byte by byte, before anything is decoded: each bounds what one
// piece of a hostile file can make the decoder buffer or do (see docs/limits.md).
const (
	// MaxTraceWhitespace bounds a run of whitespace between two tokens
	// (pretty-printed traces indent by tens of bytes): the JSON decoder
	// scans a run again each time it refills, so an unbounded run costs
	// time quadratic in its length.
	MaxTraceWhitespace = 64 << 10
	// MaxTraceNesting bounds how deep arrays and objects nest (a trace's
	// deepest, an op's Input Dims inside its args, is 6): the decoder keeps
	// a state per level.
	MaxTraceNesting = 64
	// MaxTraceStringBytes bounds one JSON string (a kernel name of a
	// templated C++ kernel is a few KiB).
	MaxTraceStringBytes = 1 << 20
	// MaxTraceEventBytes bounds one element of a top-level array (one
	// traceEvents or deviceProperties entry), which the decoder holds whole.
	MaxTraceEventBytes = 16 << 20
)

// guardError is a guard's refusal: the byte offset and the bound.
type guardError struct {
	offset int64
	what   string
}

func (e *guardError) Error() string {
	return fmt.Sprintf("byte %d: %s: not a profiler trace dcpsim reads", e.offset, e.what)
}

// guard passes JSON text through, failing with a guardError at the first
// byte past a shape limit (the variables below, set from the constants
// above; tests lower them). It tracks strings (with their escapes) so that
// brackets and spaces inside them count as text.
type guard struct {
	r        io.Reader
	off      int64 // bytes passed before the current Read's
	depth    int
	inString bool
	escape   bool
	strStart int64 // the current string's opening quote
	spaces   int   // the current whitespace run
	elem     int64 // where the current depth >= 3 value began; -1 when none
	err      error
}

// The shape limits a guard applies; tests lower them.
var (
	guardWhitespace  = MaxTraceWhitespace
	guardNesting     = MaxTraceNesting
	guardStringBytes = int64(MaxTraceStringBytes)
	guardEventBytes  = int64(MaxTraceEventBytes)
)

func newGuard(r io.Reader) *guard { return &guard{r: r, elem: -1} }

func (g *guard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	for i, c := range p[:n] {
		pos := g.off + int64(i)
		if g.inString {
			switch {
			case g.escape:
				g.escape = false
			case c == '\\':
				g.escape = true
			case c == '"':
				g.inString = false
			}
			if pos-g.strStart > guardStringBytes {
				return g.fail(i, pos, fmt.Sprintf("a string longer than %d bytes (MaxTraceStringBytes), from byte %d", guardStringBytes, g.strStart))
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			if g.spaces++; g.spaces > guardWhitespace {
				return g.fail(i, pos, fmt.Sprintf("more than %d bytes of whitespace in a row (MaxTraceWhitespace)", guardWhitespace))
			}
			continue
		case '"':
			g.inString, g.strStart = true, pos
		case '{', '[':
			if g.depth++; g.depth > guardNesting {
				return g.fail(i, pos, fmt.Sprintf("arrays and objects nested more than %d deep (MaxTraceNesting)", guardNesting))
			}
			if g.depth == 3 {
				g.elem = pos
			}
		case '}', ']':
			if g.depth == 3 {
				g.elem = -1
			}
			g.depth--
		}
		g.spaces = 0
		if g.elem >= 0 && pos-g.elem > guardEventBytes {
			return g.fail(i, pos, fmt.Sprintf("an entry of a top-level array longer than %d bytes (MaxTraceEventBytes), from byte %d", guardEventBytes, g.elem))
		}
	}
	g.off += int64(n)
	return n, err
}

// fail records the refusal at byte pos (the i-th of this Read) and passes
// the bytes before it.
func (g *guard) fail(i int, pos int64, what string) (int, error) {
	g.err = &guardError{offset: pos, what: what}
	g.off += int64(i)
	return i, g.err
}
