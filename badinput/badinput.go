// Package badinput is the one mark of an error that blames the user's input
// (a scenario key, a length file, a batch line, a shard folder, a policy
// option, a batch a policy cannot plan) rather than dcpsim: the CLI exits 2
// on exactly these. Every layer marks its errors with this package, and one
// test finds them all: errors.Is(err, badinput.Err). It imports only the
// standard library, so every package may use it.
package badinput

import (
	"errors"
	"fmt"
)

// Err is matched (errors.Is) by every error that blames the input.
var Err = errors.New("bad input")

// marked is an error that blames the input without saying so in its text.
type marked struct{ error }

func (marked) Is(target error) bool { return target == Err }

func (m marked) Unwrap() error { return m.error }

// Errorf formats an error (fmt.Errorf, %w included) that matches Err; its
// text is the formatted message alone.
func Errorf(format string, args ...any) error { return marked{fmt.Errorf(format, args...)} }

// Mark returns err marked as bad input (nil for nil), its text unchanged.
func Mark(err error) error {
	if err == nil {
		return nil
	}
	return marked{err}
}

// sentinel is a named kind of bad input.
type sentinel struct{ text string }

func (s *sentinel) Error() string { return s.text }

func (*sentinel) Is(target error) bool { return target == Err }

// Sentinel returns a new error value with its own text that matches Err as
// well as itself: a package's own kind of bad input (e.g.
// sched.ErrInvalidInput).
func Sentinel(text string) error { return &sentinel{text: text} }

// Is reports whether err blames the input.
func Is(err error) bool { return errors.Is(err, Err) }
