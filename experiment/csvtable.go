package experiment

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dcpsim/dcpsim/badinput"
)

// csvRow is what a table's row decoder makes of one record: the value, the
// problems of its fields, whether the value is kept, and a problem that ends
// the table (a budget exceeded) when stop is not nil.
type csvRow[T any] struct {
	value    T
	problems []error
	keep     bool
	stop     error
}

// decodeCSVTable reads a validation table: CSV whose first line passes
// isHeader (columns named in the error), then at most maxRows kept rows of
// exactly len(columns) fields each, every record handed to row with its
// line. It returns every problem at once, each naming name:line (and the
// column where the row decoder names one), with an error that matches
// badinput.Err; a table without a row is an error too.
func decodeCSVTable[T any](r io.Reader, name string, columns []string, isHeader func([]string) bool, maxRows int,
	row func(rec []string, cr *csv.Reader, line int) csvRow[T]) ([]T, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // counted below, with the line named
	header, err := cr.Read()
	if err == io.EOF {
		return nil, badInput("%s: empty; the first line must be the header %s", name, strings.Join(columns, ","))
	}
	if err != nil {
		return nil, badInput("%s: %w", name, err)
	}
	if !isHeader(header) {
		return nil, badInput("%s:1: header %q: must be exactly %s", name, strings.Join(header, ","), strings.Join(columns, ","))
	}
	var rows []T
	var problems []error
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				problems = append(problems, fmt.Errorf("%s:%d:%d: %w", name, pe.Line, pe.Column, pe.Err))
			} else {
				problems = append(problems, fmt.Errorf("%s: %w", name, err))
			}
			break
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(columns) {
			problems = append(problems, fmt.Errorf("%s:%d: %d fields, want %d (%s)", name, line, len(rec), len(columns), strings.Join(columns, ",")))
			continue
		}
		if len(rows) == maxRows {
			problems = append(problems, fmt.Errorf("%s:%d: more than %d runs", name, line, maxRows))
			break
		}
		d := row(rec, cr, line)
		problems = append(problems, d.problems...)
		if d.stop != nil {
			problems = append(problems, d.stop)
			break
		}
		if d.keep {
			rows = append(rows, d.value)
		}
	}
	if len(problems) > 0 {
		return nil, badinput.Mark(errors.Join(problems...))
	}
	if len(rows) == 0 {
		return nil, badInput("%s: no run after the header", name)
	}
	return rows, nil
}
