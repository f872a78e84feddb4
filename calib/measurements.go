package calib

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/internal/safeio"
)

// measurementColumns is the header of a measurements CSV, in the order
// WriteMeasurements writes it.
var measurementColumns = []string{"operation", "shape", "seconds", "repeats"}

var (
	operationRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	shapeKeyRE  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// MaxMeasurementLineBytes bounds one line of a measurements CSV (its rows
// are a few dozen bytes): a longer one is refused as it is read, so a
// hostile file costs at most this much of one line's buffer.
const MaxMeasurementLineBytes = 1 << 16

// ReadMeasurements reads a measurements CSV: a header naming the columns
// operation, shape, seconds and repeats (in any order, no others), then one row per
// measurement (Measurement documents the fields). Lines starting with '#' are
// comments (provenance notes); blank lines are skipped. Errors name the file and
// line as "name:line: ...". Operations are checked for syntax here and for meaning
// by Fit.
func ReadMeasurements(r io.Reader, name string) ([]Measurement, error) {
	cr := csv.NewReader(safeio.LineLimit(r, MaxMeasurementLineBytes, ""))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file: need the header %s", name, strings.Join(measurementColumns, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	line, _ := cr.FieldPos(0)
	col := map[string]int{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		if !slices.Contains(measurementColumns, h) {
			return nil, fmt.Errorf("%s:%d: unknown column %q (the header is %s)", name, line, h, strings.Join(measurementColumns, ","))
		}
		if _, dup := col[h]; dup {
			return nil, fmt.Errorf("%s:%d: column %q given twice", name, line, h)
		}
		col[h] = i
	}
	for _, h := range measurementColumns {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("%s:%d: missing column %q (the header is %s)", name, line, h, strings.Join(measurementColumns, ","))
		}
	}

	var ms []Measurement
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %w", name, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields, the header has %d", name, line, len(rec), len(header))
		}
		m, err := parseMeasurement(rec[col["operation"]], rec[col["shape"]], rec[col["seconds"]], rec[col["repeats"]])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// parseMeasurement checks and converts the four fields of one row.
func parseMeasurement(op, shape, seconds, repeats string) (Measurement, error) {
	op = strings.TrimSpace(op)
	if !operationRE.MatchString(op) {
		return Measurement{}, fmt.Errorf("operation %q: must match %s", op, operationRE)
	}
	sh, err := ParseShape(shape)
	if err != nil {
		return Measurement{}, err
	}
	sec, err := strconv.ParseFloat(strings.TrimSpace(seconds), 64)
	if err != nil || !(sec > 0) || math.IsInf(sec, 0) {
		return Measurement{}, fmt.Errorf("seconds = %q: must be a positive finite number", seconds)
	}
	rep, err := strconv.Atoi(strings.TrimSpace(repeats))
	if err != nil || rep < 1 {
		return Measurement{}, fmt.Errorf("repeats = %q: must be an integer >= 1", repeats)
	}
	return Measurement{Operation: op, Shape: sh, Seconds: sec, Repeats: rep}, nil
}

// ParseShape parses a shape "key=value;key=value" of positive or zero integers
// (keys [a-z][a-z0-9_]*, each at most once); the empty string is an empty shape.
func ParseShape(s string) (map[string]int64, error) {
	shape := map[string]int64{}
	s = strings.TrimSpace(s)
	if s == "" {
		return shape, nil
	}
	for part := range strings.SplitSeq(s, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || !shapeKeyRE.MatchString(k) {
			return nil, fmt.Errorf("shape %q: %q is not key=value with a key matching %s", s, part, shapeKeyRE)
		}
		if _, dup := shape[k]; dup {
			return nil, fmt.Errorf("shape %q: key %q given twice", s, k)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("shape %q: %s = %q: must be an integer >= 0", s, k, v)
		}
		shape[k] = n
	}
	return shape, nil
}

// FormatShape writes a shape as ParseShape reads it, keys sorted.
func FormatShape(shape map[string]int64) string {
	keys := make([]string, 0, len(shape))
	for k := range shape {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(shape[k], 10))
	}
	return b.String()
}

// WriteMeasurements writes ms as a measurements CSV that ReadMeasurements reads
// back unchanged: the header, then one row each, shape keys sorted and seconds in
// the shortest form that round-trips.
func WriteMeasurements(w io.Writer, ms []Measurement) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(measurementColumns); err != nil {
		return err
	}
	for i, m := range ms {
		rec := []string{m.Operation, FormatShape(m.Shape), strconv.FormatFloat(m.Seconds, 'g', -1, 64), strconv.Itoa(m.Repeats)}
		if _, err := parseMeasurement(rec[0], rec[1], rec[2], rec[3]); err != nil {
			return fmt.Errorf("calib: measurement %d: %w", i+1, err)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
