package experiment

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/scenarios"
)

// A scenario file is shared like data, but its [run.external.NAME] tables
// name programs that a run starts: consent comes from the person running
// dcpsim, never from the file. Run, Sweep, Search and ChakraTrace start a
// scenario's programs only when their options allow it (AllowExec, which the
// CLI sets from --allow-exec), and refuse the scenario otherwise, before
// anything is simulated (CheckExec); startExternal, the one place a program
// starts, checks it again.

// Program is a program a scenario names: an external policy's process.
type Program struct {
	// Policy is the policy's name, [run.external.Policy].
	Policy string
	// Command is the program and its arguments.
	Command []string
	// Dir is the folder it runs in (the scenario file's).
	Dir string
}

// String is the program as a person should read it before allowing it:
// the table, its command (each word quoted, escapes shown) and its folder.
func (p Program) String() string {
	words := make([]string, len(p.Command))
	for i, w := range p.Command {
		words[i] = strconv.Quote(w)
	}
	return fmt.Sprintf("[run.external.%s] command = [%s] in %s", badinput.PrintableLine(p.Policy), strings.Join(words, ", "), strconv.Quote(p.Dir))
}

// ErrExecNotAllowed is matched (errors.Is) by the error of a run that would
// start a scenario's programs without consent; it is bad input.
var ErrExecNotAllowed = badinput.Sentinel("dcpsim starts a scenario's programs only with --allow-exec")

// Programs lists the programs a run of sc would start, by policy name: the
// external policies among the policies it runs (those given, else
// run.policies, sweep.policies and search.policies).
func Programs(sc *scenarios.Scenario, policies ...string) []Program {
	names := slices.Clone(policies)
	if len(policies) == 0 {
		names = slices.Clone(sc.Run.Policies)
		if sc.Sweep != nil {
			names = append(names, sc.Sweep.Policies...)
		}
		if sc.Search != nil {
			names = append(names, sc.Search.Policies...)
		}
	}
	var out []Program
	for _, name := range slices.Compact(slices.Sorted(slices.Values(names))) {
		if ext, ok := sc.Run.External[name]; ok {
			out = append(out, Program{Policy: name, Command: ext.Command, Dir: scenarioDir(sc)})
		}
	}
	return out
}

// scenarioDir is the folder a scenario's programs run in.
func scenarioDir(sc *scenarios.Scenario) string { return filepath.Dir(sc.File) }

// CheckExec refuses to run sc (its policies given, else all of them,
// Programs) when it names programs and allow is false: the error wraps
// ErrExecNotAllowed and lists them.
func CheckExec(sc *scenarios.Scenario, allow bool, policies ...string) error {
	progs := Programs(sc, policies...)
	if len(progs) == 0 || allow {
		return nil
	}
	lines := make([]string, len(progs))
	for i, p := range progs {
		lines[i] = "  " + p.String()
	}
	return fmt.Errorf("scenario %s would start %d program(s):\n%s\na scenario file can name any program: %w (read the scenario and the programs first)",
		sc.Name, len(progs), strings.Join(lines, "\n"), ErrExecNotAllowed)
}
