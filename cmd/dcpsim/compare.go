package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/report"
)

// compareUsage is dcpsim compare's help; its method paragraph is
// results.CompareMethod, the text the table's footer prints.
var compareUsage = `  dcpsim compare A B [--force] [--fail-on-regression PCT] [--out DIR] [--json]

  Compare two results folders of one scenario: two folders of dcpsim run
  (summary.json, iterations.csv, manifest.json), or two of dcpsim sweep or
  merge (points/<point>/, each a run folder; points are paired by their swept
  axes). For each policy (of each point) it prints the measured iterations
  used on each side, the step means of A and B, the change B over A in %
  with its 95% confidence interval, whether the change is significant, and
  tokens/day, the PP and DP bubbles and the peak memory per GPU A → B. A
  policy or point in one folder only is listed "only in A" or "only in B",
  one that failed "failed in A" or "failed in B". A line says what the two
  folders record differently: seed, policies, layout, how each policy ran
  (CP execution, the options it chose itself), the dcpsim revision, and the
  scenario hash, which covers the scenario text and every policy option (a
  forced option such as [run.options.hydra] cap shows only there).

  Method: ` + wrapText(results.CompareMethod, len("  Method: "), 78, "  ") + `

  A and B must be of one scenario (the name in summary.json, or the sweep's
  in point.json): folders of two scenarios are refused with exit 2 naming
  both, unless --force. Both folders are untrusted: every file is read with
  a bound and decoded strictly (a summary.json that is not dcpsim's is
  refused), manifest.json and iterations.csv are checked against
  summary.json (a truncated iterations.csv is refused) and sweep points as
  dcpsim merge checks them; a missing, unreadable or foreign folder or file
  is exit 2 naming it.

  --out DIR also writes DIR/compare.json (the --json object), DIR/compare.csv
  (one row per policy, or point and policy) and the figure DIR/compare.png
  and DIR/compare.svg (the change per policy with its interval as error bars,
  filled where significant) and DIR/index.html (the page: both tables,
  sortable, and the figure), each file atomically; DIR is created when
  absent and must be neither A nor B. --json prints the JSON object instead
  of the table.

  Exit status: 0; 1 with --fail-on-regression PCT when some policy's step
  mean got slower by more than PCT percent and the change is significant
  (the policies are listed on stderr); 2 for bad input.`

func compareCommand() command {
	return command{name: "compare", summary: "compare two results folders of one scenario (runs or sweeps): step-time change with a 95% CI",
		usage: compareUsage, run: runCompare}
}

// runCompare parses the flags, compares the two folders, prints the table
// (or the JSON object), writes --out's files and maps regressions to exit 1.
func runCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compare", compareUsage, stderr)
	force := fs.Bool("force", false, "compare folders of different scenarios")
	failPct := fs.Float64("fail-on-regression", 0, "exit 1 when a policy's step mean is significantly slower by more than `PCT` percent")
	out := fs.String("out", "", "also write compare.json, compare.csv, compare.png, compare.svg and index.html into `DIR`")
	asJSON := fs.Bool("json", false, "print the comparison as one JSON object instead of the table")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return badInput("dcpsim compare takes two results folders A and B, got %d arguments %q", len(pos), pos)
	}
	failSet := false
	fs.Visit(func(f *flag.Flag) { failSet = failSet || f.Name == "fail-on-regression" })
	if failSet && !(*failPct >= 0 && *failPct <= 1e6) {
		return badInput("--fail-on-regression %g: must be a percentage in [0, 1e6]", *failPct)
	}
	if *out != "" {
		if err := checkCompareOut(*out, pos[0], pos[1]); err != nil {
			return err
		}
	}
	c, err := experiment.Compare(pos[0], pos[1], experiment.CompareOptions{Force: *force})
	if err != nil {
		return err
	}
	if *asJSON {
		err = results.WriteComparisonJSON(stdout, c)
	} else {
		err = report.WriteComparisonTable(stdout, c)
	}
	if err != nil {
		return err
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return badInput("--out %s: cannot create the folder: %v", *out, err)
		}
		files, err := report.WriteComparison(*out, c)
		if err != nil {
			return err
		}
		info := stdout
		if *asJSON { // stdout is the JSON object alone
			info = stderr
		}
		fmt.Fprintf(info, "wrote %s/: %s\n", strings.TrimSuffix(*out, "/"), strings.Join(files, ", "))
	}
	if !failSet {
		return nil
	}
	if reg := c.Regressions(*failPct); len(reg) > 0 {
		parts := make([]string, len(reg))
		for i := range reg {
			parts[i] = fmt.Sprintf("%s %s", escapeControls(reg[i].Label()), reg[i].FormatChange())
		}
		what := "policy"
		if len(reg) > 1 {
			what = "policies"
		}
		return fmt.Errorf("--fail-on-regression %g: %d %s slower in B by more than %g%%, significantly (change, 95%% CI): %s",
			*failPct, len(reg), what, *failPct, strings.Join(parts, "; "))
	}
	return nil
}

// checkCompareOut refuses an --out that is not a folder (or a new name), is
// a symbolic link, or is one of the compared folders.
func checkCompareOut(out, a, b string) error {
	fi, err := os.Lstat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return badInput("--out %s: %v", out, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return badInput("--out %s: a symbolic link: give a folder (nothing is written through a link)", out)
	case !fi.IsDir():
		return badInput("--out %s: not a folder: give a folder for compare.json, compare.csv and the figure", out)
	}
	for _, in := range []struct{ name, dir string }{{"A", a}, {"B", b}} {
		if st, err := os.Stat(in.dir); err == nil && os.SameFile(fi, st) {
			return badInput("--out %s: is results folder %s %s: give another folder", out, in.name, in.dir)
		}
	}
	return nil
}

// wrapText wraps text into lines of at most width characters (a longer
// word stands alone): the first continues a line already start characters
// long, every other starts with indent.
func wrapText(text string, start, width int, indent string) string {
	var b strings.Builder
	n := start
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+len([]rune(w)) > width:
			b.WriteString("\n" + indent)
			n = len(indent)
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len([]rune(w))
	}
	return b.String()
}
