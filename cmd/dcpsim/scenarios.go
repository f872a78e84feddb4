package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/scenarios"
)

const scenariosUsage = `  dcpsim scenarios [list]             list the embedded scenarios
  dcpsim scenarios show [--source] S  show scenario S (an embedded name or a .toml file)
  dcpsim scenarios check FILE...      validate scenario files; exit 2 if any is bad
  dcpsim scenarios new                print a commented minimal scenario to start from

  check says of a valid scenario that names programs (the command of a
  [run.external.NAME] policy) which they are: run, sweep, search and trace
  start them only with --allow-exec. It warns (exit 0) when a GPU's worst case
  at the budget, model states + reserve + B tokens' activations, exceeds its
  HBM (dcpsim memory S gives every stage): a plan that fills a rank to B then
  runs out of memory on its first iteration. new's output passes check.`

func scenariosCommand() command {
	return command{
		name:     "scenarios",
		summary:  "list, show or check scenario files",
		usage:    scenariosUsage,
		run:      runScenarios,
		helpArgs: []string{"show", "-h"},
	}
}

func runScenarios(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "list" {
		if len(args) > 1 {
			return badInput("scenarios list takes no arguments, got %q", args[1:])
		}
		return report.WriteScenarioList(stdout)
	}
	switch args[0] {
	case "show":
		fs := newFlagSet("scenarios show", scenariosUsage, stderr)
		source := fs.Bool("source", false, "print the TOML text instead of the resolved settings")
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return badInput("scenarios show takes one scenario (name or file), got %d arguments", fs.NArg())
		}
		return showScenario(stdout, fs.Arg(0), *source)
	case "check":
		if len(args) < 2 {
			return badInput("scenarios check needs at least one file")
		}
		var bad []error
		for _, f := range args[1:] {
			sc, err := scenarios.Resolve(f)
			if err != nil {
				fmt.Fprintln(stderr, err)
				bad = append(bad, err)
				continue
			}
			pts, _ := sc.Points()
			for _, n := range sc.Notes {
				fmt.Fprintf(stdout, "note %s: %s\n", escapeControls(f), n)
			}
			warnMemory(stdout, f, sc)
			progs := experiment.Programs(sc)
			if len(progs) == 0 {
				fmt.Fprintf(stdout, "ok   %s (%s, %d point(s))\n", escapeControls(f), escapeControls(sc.Name), len(pts))
				continue
			}
			// A scenario that names programs is valid, but running it runs
			// them: say which, and that they need consent.
			fmt.Fprintf(stdout, "ok   %s (%s, %d point(s)); it names %d program(s), which run, sweep, search and trace start only with --allow-exec:\n",
				escapeControls(f), escapeControls(sc.Name), len(pts), len(progs))
			for _, p := range progs {
				fmt.Fprintf(stdout, "       %s\n", p)
			}
		}
		if len(bad) > 0 {
			return badInput("%d of %d scenario(s) invalid", len(bad), len(args)-1)
		}
		return nil
	case "new":
		if len(args) > 1 {
			return badInput("scenarios new takes no arguments, got %q", args[1:])
		}
		_, err := io.WriteString(stdout, scenarios.Template)
		return err
	}
	return badInput("unknown scenarios subcommand %q (list, show, check, new)", args[0])
}

// warnMemory prints a warning when a GPU of sc's base layout cannot hold a
// plan that fills a rank to the budget (report.NewMemoryReport's worst row):
// the scenario is valid, and its first iteration would run out of memory.
func warnMemory(w io.Writer, file string, sc *scenarios.Scenario) {
	r, err := report.NewMemoryReport(sc)
	if err != nil || r.Fits || len(r.Rows) == 0 {
		return
	}
	worst := r.Rows[r.Worst]
	fmt.Fprintf(w, "warn %s: stage %d (%s) needs %.1f GiB at B = %d tokens per rank (states %.1f, activations %.1f, reserve %.1f) of %.1f GiB of HBM: a plan that fills a rank to B runs out of memory (lower budget_tokens, or budget_tokens = \"auto\"; dcpsim memory %s)\n",
		escapeControls(file), worst.Stage, worst.Kind, worst.TotalBytes/(1<<30), worst.BudgetTokens,
		(worst.WeightsBytes+worst.GradientsBytes+worst.OptimizerBytes)/(1<<30), worst.ActivationBytes/(1<<30), worst.ReserveBytes/(1<<30),
		worst.HBMBytes/(1<<30), escapeControls(file))
}

// resolveScenario loads an embedded scenario or a file; empty means the default.
// scenarioFlag registers --scenario on fs: every command that reads a
// scenario takes it as its argument or by --scenario, as run and plan do.
func scenarioFlag(fs *cmdFlags) *string {
	return fs.String("scenario", "", "embedded scenario name or .toml file (or give it as the argument)")
}

// withScenarioFlag puts --scenario's value (flagVal) in front of the
// positional arguments; a scenario named both ways is bad input.
func withScenarioFlag(flagVal string, pos []string) ([]string, error) {
	if flagVal == "" {
		return pos, nil
	}
	if len(pos) > 0 {
		return nil, badInput("--scenario %s and the argument %q: name the scenario once", flagVal, pos[0])
	}
	return []string{flagVal}, nil
}

func resolveScenario(arg string) (*scenarios.Scenario, error) {
	if arg == "" {
		arg = scenarios.DefaultPreset
	}
	return scenarios.Resolve(arg)
}

func showScenario(w io.Writer, arg string, source bool) error {
	sc, err := scenarios.Resolve(arg)
	if err != nil {
		return err
	}
	if source {
		var scErr *scenarios.Error
		data, err := scenarios.PresetSource(arg)
		if errors.As(err, &scErr) {
			return badInput("--source is for embedded scenarios; read the file %s directly", arg)
		}
		_, err = w.Write(data)
		return err
	}
	// A scenario file's strings (description, paths) are printed escaped: a
	// description holding terminal escape codes must not drive the terminal.
	var b bytes.Buffer
	if err := report.WriteScenario(&b, sc); err != nil {
		return err
	}
	_, err = io.WriteString(w, escapeControls(b.String()))
	return err
}

// escapeControls is badinput.Printable: text a file or a process gave,
// printed without driving the terminal.
func escapeControls(s string) string { return badinput.Printable(s) }

// drawer is report's figures and pages, without the figures when
// noFigures (the page, index.html, is always written).
func drawer(noFigures bool) experiment.Drawer {
	return report.Figures{NoFigures: noFigures}
}
