// Package safeio is dcpsim's file safety at the edge: it reads untrusted
// files with a size bound enforced while reading, so a hostile input
// (/dev/zero, a 10 GB "scenario") is refused with the limit named instead of
// exhausting memory, and it writes outputs atomically (WriteFileAtomic: a
// temporary file in the destination folder renamed into place, so a crash
// never leaves a half-written output) under safe names (SafeName).
package safeio

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Size limits of the files dcpsim reads, by kind.
const (
	// MaxScenarioBytes bounds a scenario TOML file (the presets are ~3 KiB).
	MaxScenarioBytes = 1 << 20
	// MaxProfileBytes bounds a calibration profile TOML file.
	MaxProfileBytes = 1 << 20
	// MaxMeasurementBytes bounds a calibration measurements CSV.
	MaxMeasurementBytes = 64 << 20
	// MaxResultBytes bounds one results-folder JSON file read back
	// (summary.json, point.json, manifest.json, sweep.json).
	MaxResultBytes = 256 << 20
	// MaxValidationTableBytes bounds a dcpsim validate table (CSV, one
	// published run per line; the committed one is ~2 KiB).
	MaxValidationTableBytes = 1 << 20
)

// ErrTooLarge is wrapped by the error of a read that passed its bound.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the file at path, failing once more than max bytes have
// been read (whatever the file claims its size is).
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(Limit(f, max, path))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Limit returns a reader of r that fails with an error wrapping ErrTooLarge,
// naming name and max, once more than max bytes have been read.
func Limit(r io.Reader, max int64, name string) io.Reader {
	return &limited{r: r, left: max, max: max, name: name}
}

type limited struct {
	r         io.Reader
	left, max int64
	name      string
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, l.err()
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n - int(-l.left), l.err()
	}
	return n, err
}

func (l *limited) err() error {
	return fmt.Errorf("%s: %w: more than %d bytes (the limit for this kind of file)", l.name, ErrTooLarge, l.max)
}

// LineLimit returns a reader of r that fails with an error wrapping
// ErrTooLarge, naming name, the line and max, once a line (the bytes between
// two newlines) grows past max bytes (name "" leaves the name out, for a
// caller that adds it): a line-oriented parser reading it
// (encoding/csv, bufio.Scanner) then never buffers more than max bytes of one
// line, whatever the file holds.
func LineLimit(r io.Reader, max int, name string) io.Reader {
	return &lineLimited{r: r, max: max, name: name, line: 1}
}

type lineLimited struct {
	r         io.Reader
	max, run  int // the longest line allowed; the current line's bytes so far
	line      int
	name      string
	exhausted bool
}

func (l *lineLimited) Read(p []byte) (int, error) {
	if l.exhausted {
		return 0, l.err()
	}
	n, err := l.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			l.run, l.line = 0, l.line+1
			continue
		}
		if l.run++; l.run > l.max {
			l.exhausted = true
			return i, l.err()
		}
	}
	return n, err
}

func (l *lineLimited) err() error {
	if l.name == "" {
		return fmt.Errorf("line %d: %w: a line longer than %d bytes", l.line, ErrTooLarge, l.max)
	}
	return fmt.Errorf("%s:%d: %w: a line longer than %d bytes", l.name, l.line, ErrTooLarge, l.max)
}
