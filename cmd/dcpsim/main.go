// Command dcpsim simulates long-context LLM training under dynamic context
// parallelism and compares scheduling policies on identical batches.
//
// Usage:
//
//	dcpsim <command> [flags]
//
// Commands (dcpsim <command> --help prints the synopsis and the flags,
// dcpsim help <command> the whole help):
//
//	calibrate        measure operator costs (cpu, cuda) or read a CSV, fit, write a profile
//	compare          compare two results folders of one scenario: step-time change with a 95% CI
//	costs collective the cost model's price of one collective (time, algbw, busbw as nccl-tests)
//	export megatron  Megatron-LM arguments for a scenario's layout, batch and model
//	import           a scenario from Megatron-LM arguments or a NeMo Megatron-Bridge recipe
//	memory           per-GPU memory of a scenario by stage and GPU kind (states, activations at B, HBM)
//	merge            join the folders of a sharded sweep or search
//	models           model presets and their derived quantities
//	plan             plan one batch with a DCP policy (a summary, or JSON lines for --batches)
//	report           write results/REPORT.md: our numbers beside the paper's
//	run              simulate a scenario's policies, or --batches in load mode
//	scenarios        list, show or check scenario files
//	search           rank a scenario's [search] layouts and policies (pruned, resumable, shardable)
//	serve            serve results folders read-only on 127.0.0.1, with an index of every folder
//	sweep            run a scenario's [sweep] points in parallel (resumable, shardable)
//	trace            write one iteration as Chakra execution traces for ASTRA-sim (one file per GPU)
//	validate         predicted step times beside published Megatron-LM runs
//	version          print the version and VCS revision (also dcpsim --version)
//	workload stats   length statistics of a scenario's batches or of a length file
//	help [command]   help for a command
//
// Exit status: 0 on success, 1 on a failure while running, 2 on bad input or
// usage (a scenario, length file or flag that is wrong; the message names the
// file, key or flag and what is allowed).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/experiment"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitInput   = 2
)

// badInput formats an error caused by the user's input (exit status 2).
func badInput(format string, args ...any) error { return badinput.Errorf(format, args...) }

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // flags and arguments, shown by help
	run     func(args []string, stdout, stderr io.Writer) error
	// helpArgs make run print its help with its flags (default "-h"; a
	// command whose flags belong to a subcommand names it first).
	helpArgs []string
}

func commands() map[string]command {
	cmds := []command{
		scenariosCommand(),
		modelsCommand(),
		memoryCommand(),
		planCommand(),
		runCommand(),
		sweepCommand(),
		searchCommand(),
		mergeCommand(),
		compareCommand(),
		reportCommand(),
		serveCommand(),
		calibrateCommand(),
		costsCommand(),
		workloadCommand(),
		traceCommand(),
		importCommand(),
		exportCommand(),
		{name: "validate", summary: "predicted step times beside published Megatron-LM runs", usage: experiment.ValidateUsage, run: runValidate},
		{
			name:    "version",
			summary: "print the version and VCS revision",
			usage:   "dcpsim version",
			run: func(_ []string, stdout, _ io.Writer) error {
				fmt.Fprintln(stdout, version())
				return nil
			},
		},
	}
	m := make(map[string]command, len(cmds))
	for _, c := range cmds {
		m[c.name] = c
	}
	return m
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one dcpsim invocation and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		printUsage(stderr, cmds)
		if len(args) == 0 {
			return exitInput
		}
		return exitOK
	}
	if args[0] == "help" {
		if len(args) == 1 {
			printUsage(stdout, cmds)
			return exitOK
		}
		c, ok := cmds[args[1]]
		if !ok || len(args) > 2 {
			fmt.Fprintf(stderr, "dcpsim help: unknown command %q; commands: %s\n", strings.Join(args[1:], " "), strings.Join(names(cmds), ", "))
			return exitInput
		}
		printHelp(stdout, c, true)
		return exitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dcpsim: unknown command %q; commands: %s (see dcpsim help)\n", args[0], strings.Join(names(cmds), ", "))
		return exitInput
	}
	if len(args) == 2 && isHelpFlag(args[1]) { // the synopsis and flags; dcpsim help <command> has the rest
		printHelp(stdout, c, false)
		return exitOK
	}
	err := c.run(args[1:], stdout, stderr)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	// An error may quote what a file or a process gave: printed escaped.
	fmt.Fprintf(stderr, "dcpsim %s: %s\n", c.name, badinput.Printable(err.Error()))
	if isBadInput(err) {
		return exitInput
	}
	return exitFailure
}

// isBadInput reports whether err blames the user's input (exit status 2): a
// flag, a scenario file, a batch line, a shard folder, or a batch a policy
// cannot plan.
func isBadInput(err error) bool { return badinput.Is(err) }

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool { return arg == "-h" || arg == "--help" || arg == "-help" }

// printHelp writes c's help to w: the whole help (full: dcpsim help CMD),
// or the short one (CMD --help: the synopsis and the flags), from the
// command's own flag set.
func printHelp(w io.Writer, c command, full bool) {
	args := slices.Clone(c.helpArgs)
	if args == nil {
		args = []string{"-h"}
	}
	if full {
		args[len(args)-1] = helpFull
	}
	var buf bytes.Buffer
	if err := c.run(args, io.Discard, &buf); errors.Is(err, flag.ErrHelp) {
		w.Write(buf.Bytes())
		return
	}
	writeHelpHeader(w, c.name, c.usage)
}

// writeHelpHeader writes a command's summary and usage.
func writeHelpHeader(w io.Writer, name, usage string) {
	top, _, _ := strings.Cut(name, " ")
	fmt.Fprintf(w, "dcpsim %s: %s\n\nusage:\n%s\n", name, commands()[top].summary, usage)
}
func names(cmds map[string]command) []string {
	n := make([]string, 0, len(cmds))
	for k := range cmds {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

func printUsage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "dcpsim: simulate long-context training under dynamic context parallelism")
	fmt.Fprintln(w, "\nusage: dcpsim <command> [flags]\n\ncommands:")
	for _, n := range names(cmds) {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "  help       help for a command: dcpsim help <command>")
	fmt.Fprintln(w, "\ndcpsim --version (or dcpsim version) prints the build's version and VCS revision.")
	fmt.Fprintln(w, "\nexit status: 0 ok, 1 failure, 2 bad input or usage")
}

// cmdFlags is a command's flag set with what its help prints: the
// command's name, its usage (the synopsis, up to the first blank line, then
// the long text) and where help goes.
type cmdFlags struct {
	*flag.FlagSet
	name, usage string
	stderr      io.Writer
}

// newFlagSet returns the flags of command name (usage its synopsis and long
// text): errors are returned, not printed, and not followed by the help.
func newFlagSet(name, usage string, stderr io.Writer) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &cmdFlags{FlagSet: fs, name: name, usage: usage, stderr: stderr}
}

// helpFull is the argument printHelp passes a command to have it print its
// whole help (dcpsim help CMD) instead of the short one (CMD --help).
const helpFull = "--help-full"

// printHelp writes the command's help to w: its summary, usage and flags;
// the short form gives the usage's synopsis only (the lines before its
// first blank line) and says where the rest is.
func (fs *cmdFlags) printHelp(w io.Writer, full bool) {
	usage := fs.usage
	if !full {
		usage, _, _ = strings.Cut(usage, "\n\n")
	}
	writeHelpHeader(w, fs.name, usage)
	if hasFlags(fs.FlagSet) {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if !full && usage != fs.usage {
		fmt.Fprintf(w, "\nthe whole help, what the command does and writes: dcpsim help %s\n", strings.Fields(fs.name)[0])
	}
}

// hasFlags reports whether fs defines any flag.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args: -h or --help prints the short help to stderr and
// returns flag.ErrHelp (helpFull alone the whole help); a flag error is
// bad input naming the flag, with the nearest defined flag when one is
// close, and where the help is.
func parseFlags(fs *cmdFlags, args []string) error {
	if len(args) == 1 && args[0] == helpFull {
		fs.printHelp(fs.stderr, true)
		return flag.ErrHelp
	}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.printHelp(fs.stderr, false)
		return err
	}
	msg := err.Error()
	if bad, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		if near := nearestFlag(fs.FlagSet, strings.TrimLeft(bad, "-")); near != "" {
			msg += "; did you mean --" + near + "?"
		}
	}
	return badInput("%s (the flags: dcpsim %s --help)", msg, fs.name)
}

// nearestFlag is the defined flag closest to name (at most 2 edits, or name
// a prefix of it), "" when none is.
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, and returns the positional ones in order.
func parseInterspersed(fs *cmdFlags, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// version reports the module version and VCS revision from the build info.
func version() string {
	b := experiment.ReadBuild()
	if !b.OK {
		return "dcpsim (unknown build)"
	}
	v := "dcpsim " + b.Version
	if b.Revision != "" {
		v += " " + b.Revision
	}
	if b.Modified {
		v += " (modified)"
	}
	return v + " " + b.GoVersion
}
