package scenarios

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/job"
)

// Problem is one thing wrong with a scenario file.
type Problem struct {
	// Line is the 1-based line of the offending key, or 0 when unknown.
	Line int
	// Key is the dotted key, or empty.
	Key string
	// Message says what is wrong and what is allowed.
	Message string
}

// Error lists every problem found in one scenario file. It is the error type of
// all bad-input failures of this package.
type Error struct {
	// File is the scenario file (or embedded preset) name.
	File string
	// Problems are in file order where lines are known.
	Problems []Problem
}

// Is makes every scenario error bad input (badinput.Err).
func (e *Error) Is(target error) bool { return target == badinput.Err }

// Error prints one "file:line: message" line per problem.
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, p.Line, p.Message)
		} else {
			fmt.Fprintf(&b, "%s: %s", e.File, p.Message)
		}
	}
	return b.String()
}

// parser accumulates problems for one file.
type parser struct {
	file     string
	lines    map[string]int
	problems []Problem
	// meanLengths, when set, caches the workload's mean sequence length by
	// context (a search checks thousands of layouts of one workload).
	meanLengths map[int]float64
	// known are the policy names a list may hold: the built-in ones and the
	// scenario's [run.external.NAME] ones (nil before [run] is read).
	known []string
}

func (p *parser) addf(key string, format string, args ...any) {
	p.problems = append(p.problems, Problem{Line: lineOf(p.lines, key), Key: key, Message: fmt.Sprintf(format, args...)})
}

// addErr turns err (possibly joined *job.FieldError values) into problems, with
// keyPrefix prepended to each field key (e.g. "workload." for context_tokens).
func (p *parser) addErr(err error, keyPrefix func(string) string) {
	fields, others := job.FieldErrors(err)
	for _, f := range fields {
		key := keyPrefix(f.Key)
		p.addf(key, "%s = %v: %s", key, f.Value, f.Rule)
	}
	for _, o := range others {
		p.addf("", "%v", o)
	}
}

func (p *parser) err() error {
	if len(p.problems) == 0 {
		return nil
	}
	sort.SliceStable(p.problems, func(i, j int) bool {
		li, lj := p.problems[i].Line, p.problems[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0
		}
		return li < lj
	})
	return &Error{File: p.file, Problems: p.problems}
}

// decodeErr reports a type mismatch found while decoding a table.
func (p *parser) decodeErr(table string, err error) {
	p.problems = append(p.problems, tomlProblem(err, table))
}

// typeErrRE matches BurntSushi/toml's type-mismatch errors, which are plain
// fmt errors: `toml: line 15 (last key "parallel.pp"): incompatible types: ...`.
var typeErrRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`)

// tomlProblem turns an error of the TOML decoder into a Problem with the line
// and key it names; fallbackKey stands in when it names none.
func tomlProblem(err error, fallbackKey string) Problem {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		key := pe.LastKey
		if key == "" {
			key = fallbackKey
		}
		msg := pe.Message
		if key != "" {
			msg = key + ": " + msg
		}
		return Problem{Line: pe.Position.Line, Key: key, Message: msg}
	}
	if m := typeErrRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Key: m[2], Message: m[2] + ": " + m[3]}
	}
	msg := err.Error()
	if fallbackKey != "" {
		msg = fallbackKey + ": " + msg
	}
	return Problem{Key: fallbackKey, Message: msg}
}
