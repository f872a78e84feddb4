package job

import (
	"errors"
	"fmt"
)

// FieldError is one invalid setting: the scenario key it came from (dotted, as it
// is spelled in a scenario file, e.g. "parallel.pp"), the offending value and the
// rule or allowed range it breaks. The scenario parser adds the file and line.
type FieldError struct {
	// Key is the dotted scenario key, e.g. "parallel.ep" or "model.kv_heads".
	Key string
	// Value is the value as given.
	Value any
	// Rule says what is allowed, e.g. "must be in [1, 1024]".
	Rule string
}

// Error formats the problem as "key = value: rule".
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s = %v: %s", e.Key, e.Value, e.Rule)
}

// fieldErr is shorthand for a *FieldError with a formatted rule.
func fieldErr(key string, value any, format string, args ...any) error {
	return &FieldError{Key: key, Value: value, Rule: fmt.Sprintf(format, args...)}
}

// checkRange reports a FieldError when v lies outside [lo, hi].
func checkRange(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fieldErr(key, v, "must be in [%d, %d]", lo, hi)
	}
	return nil
}

// FieldErrors flattens an error tree built with errors.Join and returns every
// *FieldError in it, in order, together with the errors that are not field errors.
func FieldErrors(err error) (fields []*FieldError, others []error) {
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				walk(inner)
			}
			return
		}
		var fe *FieldError
		if errors.As(e, &fe) {
			fields = append(fields, fe)
			return
		}
		others = append(others, e)
	}
	walk(err)
	return fields, others
}
