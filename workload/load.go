package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

const (
	// maxTextLine bounds a line of a plain-text length file.
	maxTextLine = 1 << 20
	// maxJSONLine bounds a line of a JSONL file; records may hold whole documents.
	maxJSONLine = 1 << 28
	// maxListedKeys bounds the keys an error message lists.
	maxListedKeys = 20
	// lengthColumn is the CSV column ReadLengths reads (matched case-insensitively).
	lengthColumn = "length"
)

// Bounds of one length file (ReadLengths, ReadJSONL), enforced while reading:
// every length read is kept (8 bytes each, plus the slice's growth), so a
// 400 MB file of one-digit lines, or 300M lines on a pipe, used to exhaust
// memory. At the bounds the lengths take 64 MiB (a refused 9M-line pipe peaks
// under 256 MiB).
const (
	// MaxLengthFileBytes bounds the bytes of a length file.
	MaxLengthFileBytes = 1 << 30
	// MaxLengthFileLines bounds the lines of a length file (blank and comment
	// lines included), and so its lengths.
	MaxLengthFileLines = 1 << 23
)

// lineLimit and byteLimit are the bounds in force (tests lower them).
var (
	lineLimit       = MaxLengthFileLines
	byteLimit int64 = MaxLengthFileBytes
)

// lengthList collects lengths in fixed-size chunks, so reading n lengths
// holds n·8 bytes plus one chunk, without a growing slice's copies and
// garbage (up to 3× that at the bound); ints makes the one slice returned.
type lengthList struct {
	chunks [][]int
	n      int
}

const lengthChunk = 1 << 16

func (l *lengthList) add(v int) {
	if l.n%lengthChunk == 0 {
		l.chunks = append(l.chunks, make([]int, 0, lengthChunk))
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, v)
	l.n++
}

func (l *lengthList) ints() []int {
	out := make([]int, 0, l.n)
	for i, c := range l.chunks {
		out = append(out, c...)
		l.chunks[i] = nil
	}
	return out
}

// boundedReader fails with errFileTooLarge once more than limit bytes were read.
type boundedReader struct {
	r     io.Reader
	name  string
	limit int64
	n     int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.n > b.limit {
		return 0, b.err()
	}
	if rest := b.limit + 1 - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.limit {
		return n, b.err()
	}
	return n, err
}

func (b *boundedReader) err() error {
	return &tooLargeError{fmt.Sprintf("%s: more than %d bytes: too large (the limit of a length file, MaxLengthFileBytes)", b.name, b.limit)}
}

// tooLargeError is the error of a length file past a bound; it names the
// file and the bound, and is passed on as it is.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string { return e.msg }

// errFileTooLarge matches every *tooLargeError under errors.Is.
var errFileTooLarge = errors.New("length file too large")

func (e *tooLargeError) Is(target error) bool { return target == errFileTooLarge }

// tooManyLines is the error of a length file with more than MaxLengthFileLines lines.
func tooManyLines(name string) error {
	return &tooLargeError{fmt.Sprintf("%s:%d: more than %d lines: too large (the limit of a length file, MaxLengthFileLines)", name, lineLimit+1, lineLimit)}
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// readLine returns the next line with its terminator, io.EOF when none is left, or an
// error when the line is longer than limit bytes.
func readLine(br *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	buf = buf[:0]
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit {
			return nil, fmt.Errorf("line longer than %d bytes (allowed: at most %d)", len(buf), limit)
		}
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(buf) == 0 {
				return nil, io.EOF
			}
			return buf, nil
		default:
			return nil, err
		}
	}
}

// lineReader reads the numbered lines of one input, at most limit bytes each,
// dropping a UTF-8 byte-order mark at the start; errors name "name:line".
type lineReader struct {
	br    *bufio.Reader
	name  string
	limit int
	buf   []byte
	n     int // number of the line last returned
}

func newLineReader(r io.Reader, name string, limit int) *lineReader {
	r = &boundedReader{r: r, name: name, limit: byteLimit}
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), name: name, limit: limit}
}

// next returns the next line without surrounding white space, or io.EOF. The
// slice is valid until the following call.
func (lr *lineReader) next() ([]byte, error) {
	raw, err := readLine(lr.br, lr.buf, lr.limit)
	if errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	if errors.Is(err, errFileTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", lr.name, lr.n+1, err)
	}
	if lr.n == lineLimit {
		return nil, tooManyLines(lr.name)
	}
	lr.buf = raw
	lr.n++
	if lr.n == 1 {
		raw = bytes.TrimPrefix(raw, utf8BOM)
	}
	return bytes.TrimSpace(raw), nil
}

// clip quotes s for an error message, shortened if long.
func clip(s string) string {
	const n = 40
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}

// clipRaw shortens raw JSON for an error message without quoting it again.
func clipRaw(s string) string {
	const n = 40
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// parseLength parses a decimal integer length in [1, MaxSequenceTokens].
func parseLength(s string) (int, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, fmt.Errorf("length %s out of range (allowed: [1, %d])", clip(s), MaxSequenceTokens)
		}
		return 0, fmt.Errorf("length %s is not an integer (allowed: an integer in [1, %d])", clip(s), MaxSequenceTokens)
	}
	if v < 1 || v > MaxSequenceTokens {
		return 0, fmt.Errorf("length %d out of range (allowed: [1, %d])", v, MaxSequenceTokens)
	}
	return int(v), nil
}

// looksNumeric reports whether a line reads as an attempted number rather than a header.
func looksNumeric(s string) bool {
	c := s[0]
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.'
}

// ReadLengths reads sequence lengths in tokens from r; name identifies r in errors, which
// read "name:line: ...". Two formats are accepted, told apart by the first line that is
// not blank and not a comment:
//   - plain text: one integer per line; blank lines and lines starting with '#' (after
//     leading spaces) are ignored;
//   - CSV: a header row with a "length" column (any position, case-insensitive; other
//     columns ignored), then one record per line with as many fields as the header. Blank
//     records and lines starting with '#' are ignored; quoted fields may not span lines.
//
// Every length must be an integer in [1, MaxSequenceTokens]; an input with no lengths is an
// error. A UTF-8 byte-order mark and CRLF line ends are accepted.
func ReadLengths(r io.Reader, name string) ([]int, error) {
	lr := newLineReader(r, name, maxTextLine)
	var lengths lengthList
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		s := string(line)
		if s == "" || s[0] == '#' {
			continue
		}
		if lengths.n == 0 && !looksNumeric(s) {
			return readCSVLengths(lr.br, name, s, lr.n)
		}
		v, err := parseLength(s)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, lr.n, err)
		}
		lengths.add(v)
	}
	if lengths.n == 0 {
		return nil, fmt.Errorf("%s:%d: no lengths (the input is empty or holds only blank and comment lines; allowed: at least one integer in [1, %d])",
			name, max(lr.n, 1), MaxSequenceTokens)
	}
	return lengths.ints(), nil
}

// csvFields splits one CSV line and trims its fields.
func csvFields(line string) ([]string, error) {
	cr := csv.NewReader(strings.NewReader(line))
	cr.FieldsPerRecord = -1
	rec, err := cr.Read()
	if err != nil {
		return nil, err
	}
	for i := range rec {
		rec[i] = strings.TrimSpace(rec[i])
	}
	return rec, nil
}

// quoteAll renders column names for an error message.
func quoteAll(names []string) string {
	q := make([]string, 0, min(len(names), maxListedKeys)+1)
	for i, s := range names {
		if i == maxListedKeys {
			q = append(q, fmt.Sprintf("... %d more", len(names)-i))
			break
		}
		q = append(q, clip(s))
	}
	return strings.Join(q, ", ")
}

// readCSVLengths reads the records after the header line (line headerLine of the input).
func readCSVLengths(br *bufio.Reader, name, headerText string, headerLine int) ([]int, error) {
	header, err := csvFields(headerText)
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s:%d: bad CSV header: %w", name, headerLine, err)
	}
	col := -1
	for i, h := range header {
		if strings.EqualFold(h, lengthColumn) {
			if col >= 0 {
				return nil, fmt.Errorf("%s:%d: CSV header has two %q columns (%d and %d; allowed: one)", name, headerLine, lengthColumn, col+1, i+1)
			}
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("%s:%d: %s is not an integer length, and as a CSV header it has no %q column (columns: %s)",
			name, headerLine, clip(headerText), lengthColumn, quoteAll(header))
	}

	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.ReuseRecord = true
	var lengths lengthList
	lastLine := headerLine
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, errFileTooLarge) {
				return nil, err
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				if errors.Is(pe.Err, errFileTooLarge) {
					return nil, pe.Err
				}
				return nil, fmt.Errorf("%s:%d: %w", name, headerLine+pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s:%d: %w", name, lastLine+1, err)
		}
		line, _ := cr.FieldPos(0)
		line += headerLine
		lastLine = line
		if line > lineLimit {
			return nil, tooManyLines(name)
		}
		blank := true
		for _, f := range rec {
			if strings.TrimSpace(f) != "" {
				blank = false
				break
			}
		}
		if blank || strings.HasPrefix(strings.TrimSpace(rec[0]), "#") {
			continue
		}
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s:%d: record has %d fields (allowed: %d, as in the header: %s)", name, line, len(rec), len(header), quoteAll(header))
		}
		v, err := parseLength(strings.TrimSpace(rec[col]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: column %q: %w", name, line, header[col], err)
		}
		lengths.add(v)
	}
	if lengths.n == 0 {
		return nil, fmt.Errorf("%s:%d: CSV header but no lengths (allowed: at least one record)", name, lastLine)
	}
	return lengths.ints(), nil
}

// ReadJSONL reads sequence lengths in tokens from r, one JSON object per line, taking the
// value of field; name identifies r in errors, which read "name:line: ...". Blank lines are
// skipped. The value must be a JSON number with an integral value in
// [1, MaxSequenceTokens] (4096 and 4096.0 are accepted, 4096.5, "4096" and null are not);
// a record without the field is an error listing the keys it has. Lines may be up to
// 256 MiB long; an input with no records is an error.
func ReadJSONL(r io.Reader, name, field string) ([]int, error) {
	if field == "" {
		return nil, fmt.Errorf("%s: empty JSON field name (allowed: the name of a numeric field)", name)
	}
	lr := newLineReader(r, name, maxJSONLine)
	var lengths lengthList
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object: %w", name, lr.n, err)
		}
		if obj == nil {
			return nil, fmt.Errorf("%s:%d: not a JSON object: null", name, lr.n)
		}
		if key, ok := duplicateKey(line, len(obj)); ok {
			return nil, fmt.Errorf("%s:%d: key %s given twice (allowed: each key once; the value taken would be ambiguous)", name, lr.n, clip(key))
		}
		val, ok := obj[field]
		if !ok {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, fmt.Errorf("%s:%d: no field %q (keys present: %s)", name, lr.n, field, quoteAll(keys))
		}
		v, err := jsonLength(val)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: field %q: %w", name, lr.n, field, err)
		}
		lengths.add(v)
	}
	if lengths.n == 0 {
		return nil, fmt.Errorf("%s:%d: no records (allowed: at least one JSON object with field %q)", name, max(lr.n, 1), field)
	}
	return lengths.ints(), nil
}

// duplicateKey returns the first top-level key given twice in line, one valid
// JSON object that decoded into a map of distinct keys (keys compared as
// encoding/json unescapes them): json.Unmarshal silently keeps the last value
// of a key given twice, which the --batches decoder refuses too.
func duplicateKey(line []byte, distinct int) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if _, err := dec.Token(); err != nil { // '{'
		return "", false
	}
	seen := make(map[string]struct{}, distinct)
	var skip json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := tok.(string)
		if _, dup := seen[key]; dup {
			return key, true
		}
		seen[key] = struct{}{}
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// jsonLength converts a JSON value holding an integral number in [1, MaxSequenceTokens].
func jsonLength(raw json.RawMessage) (int, error) {
	s := string(bytes.TrimSpace(raw))
	kind := ""
	switch {
	case s == "":
		kind = "empty"
	case s[0] == '"':
		kind = "a string"
	case s[0] == '{':
		kind = "an object"
	case s[0] == '[':
		kind = "an array"
	case s == "true" || s == "false":
		kind = "a boolean"
	case s == "null":
		kind = "null"
	}
	if kind != "" {
		return 0, fmt.Errorf("value %s is %s (allowed: an integral JSON number in [1, %d])", clipRaw(s), kind, MaxSequenceTokens)
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v < 1 || v > MaxSequenceTokens {
			return 0, fmt.Errorf("length %d out of range (allowed: [1, %d])", v, MaxSequenceTokens)
		}
		return int(v), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("value %s is not a number (allowed: an integral JSON number in [1, %d])", clipRaw(s), MaxSequenceTokens)
	}
	if !(f >= 1 && f <= MaxSequenceTokens) {
		return 0, fmt.Errorf("length %s out of range (allowed: [1, %d])", clipRaw(s), MaxSequenceTokens)
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("length %s is not an integer (allowed: an integral number in [1, %d])", clipRaw(s), MaxSequenceTokens)
	}
	return int(f), nil
}
