package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// csvTexter is implemented by a field type whose CSV cell is not one of the
// plain kinds (a histogram, a set of options).
type csvTexter interface {
	// CSVText is the field's CSV cell.
	CSVText() string
}

var csvTexterType = reflect.TypeFor[csvTexter]()

// csvColumn is one column: its name and the path of field indexes to it.
type csvColumn struct {
	name  string
	index []int
}

// csvColumns lists T's columns: its exported fields in order, each named by
// its json tag (the one name a field has in every output), embedded structs
// flattened as encoding/json flattens them; fields tagged json:"-" are left
// out. A field must be a string, bool, integer or float, or implement
// csvTexter.
func csvColumns(t reflect.Type) ([]csvColumn, error) {
	var cols []csvColumn
	var walk func(t reflect.Type, prefix []int) error
	walk = func(t reflect.Type, prefix []int) error {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !(f.Anonymous && f.Type.Kind() == reflect.Struct) {
				continue // as encoding/json: an unexported embedded struct's fields still count
			}
			index := append(append([]int(nil), prefix...), i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "-" {
				continue
			}
			if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
				if err := walk(f.Type, index); err != nil {
					return err
				}
				continue
			}
			if tag == "" {
				return fmt.Errorf("report: %s.%s has no json name for its CSV column", t.Name(), f.Name)
			}
			if !f.Type.Implements(csvTexterType) {
				switch f.Type.Kind() {
				case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
					reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
				default:
					return fmt.Errorf("report: %s.%s (%s) has no CSV form", t.Name(), f.Name, f.Type)
				}
			}
			cols = append(cols, csvColumn{name: tag, index: index})
		}
		return nil
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("report: CSV rows must be structs, not %s", t)
	}
	if err := walk(t, nil); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c.name] {
			return nil, fmt.Errorf("report: %s: column %q twice", t.Name(), c.name)
		}
		seen[c.name] = true
	}
	return cols, nil
}

// CSVHeader returns the header WriteCSV writes for rows of type T.
func CSVHeader[T any]() ([]string, error) {
	cols, err := csvColumns(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return names, nil
}

// WriteCSV writes rows with encoding/csv: the header (CSVHeader), then one
// record per row. Floats are written in their shortest exact form
// (strconv 'g', -1), so a value read back is the value written.
func WriteCSV[T any](w io.Writer, rows []T) error {
	cols, err := csvColumns(reflect.TypeFor[T]())
	if err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	rec := make([]string, len(cols))
	for i, c := range cols {
		rec[i] = c.name
	}
	if err := cw.Write(rec); err != nil {
		return err
	}
	for i := range rows {
		v := reflect.ValueOf(&rows[i]).Elem()
		for j, c := range cols {
			rec[j] = csvCell(v.FieldByIndex(c.index))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvCell formats one value of a kind csvColumns accepted.
func csvCell(v reflect.Value) string {
	if t, ok := v.Interface().(csvTexter); ok {
		return t.CSVText()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Float32, reflect.Float64:
		return formatFloat(v.Float())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	default:
		return strconv.FormatInt(v.Int(), 10)
	}
}

// formatFloat is a float's CSV form: its shortest exact decimal.
func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
