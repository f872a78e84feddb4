// Package safeio reads untrusted files with a size bound enforced while
// reading, so a hostile input (/dev/zero, a 10 GB "scenario") is refused with
// the limit named instead of exhausting memory.
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
