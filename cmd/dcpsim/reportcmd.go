package main

import (
	"bytes"
	"cmp"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/internal/safeio"
)

const reportUsage = `  dcpsim report [--results DIR] [--out FILE] [--readme PAGE.md]... [--index]

  Write the reproduction report (default DIR/REPORT.md, DIR = results) from the
  results folders make figures writes: every run scenario the HyDra paper has
  numbers for (testbed-32k, testbed-256k, production-256k and its what-if
  production-256k-node-ulysses, hy3-8k), the weak-scaling sweep and the cap sweep
  production-256k-cap. Our numbers stand beside the paper's published ones, each
  labelled with its section, with the ratio between them; a scenario folder that is
  missing from DIR is named, not skipped silently. DIR itself must exist.

  With --readme (repeatable): also refresh the results tables each page quotes
  from the report (the blocks between "<!-- from results/REPORT.md: <heading>,
  table <n> -->" and "<!-- end -->"), so README.md's and docs/*.md's numbers are
  the report's. A page whose tables are current is left untouched.

  With --index: also write DIR/index.html, the page that links every results
  folder under DIR (a run's, sweep's, search's, compare --out's or validate
  --out's folder, found by its summary.json, sweep.json, search.json,
  compare.json or validation.json; not inside another results folder, nor
  through a symbolic link) to its own index.html, and REPORT.md; it opens
  from file:// (dcpsim serve DIR serves the same index, always current).`

func reportCommand() command {
	return command{name: "report", summary: "write results/REPORT.md: our numbers beside the paper's", usage: reportUsage, run: runReport}
}

// runReport parses the flags and writes report.WriteReproduction's text to the
// report file atomically.
func runReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", reportUsage, stderr)
	dir := fs.String("results", "results", "results folder")
	out := fs.String("out", "", "report file (default <results>/REPORT.md)")
	var pages stringList
	fs.Var(&pages, "readme", "also refresh the tables this page quotes from the report; repeat for several")
	index := fs.Bool("index", false, "also write <results>/index.html: a page linking every results folder under it")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("unexpected arguments %q", pos)
	}
	if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
		return badInput("--results %s: not a folder (the results folder make figures writes; default results)", *dir)
	}
	if *out == "" {
		*out = filepath.Join(*dir, "REPORT.md")
	}
	if err := checkOutFile("--out", *out); err != nil {
		return err
	}
	for _, page := range pages {
		if err := checkOutFile("--readme", page); err != nil {
			return err
		}
		if err := checkNotInput("--out", *out, "--readme", page); err != nil {
			return err
		}
	}
	if err := safeio.WriteFileAtomic(*out, func(w io.Writer) error { return report.WriteReproduction(w, *dir) }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	if *index {
		if err := report.WriteIndex(*dir); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(*dir, "index.html"))
	}
	if len(pages) == 0 {
		return nil
	}
	rep, err := safeio.ReadFile(*out, safeio.MaxResultBytes)
	if err != nil {
		return err
	}
	for _, page := range pages {
		if err := refreshPageTables(page, rep, stdout); err != nil {
			return err
		}
	}
	return nil
}

// refreshPageTables rewrites the results tables page quotes from the report
// rep, atomically, and says so; a page already current is not written.
func refreshPageTables(page string, rep []byte, stdout io.Writer) error {
	text, err := safeio.ReadFile(page, safeio.MaxResultBytes)
	if err != nil {
		return badInput("--readme: %v", err)
	}
	fresh, err := report.RefreshReadmeTables(page, text, rep)
	if err != nil {
		return badInput("--readme: %v", err)
	}
	if bytes.Equal(fresh, text) {
		fmt.Fprintf(stdout, "the tables of %s are current\n", page)
		return nil
	}
	if err := safeio.WriteFileAtomic(page, func(w io.Writer) error { _, err := w.Write(fresh); return err }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "refreshed the tables of %s\n", page)
	return nil
}

// runValidate prints dcpsim validate's table, or its JSON lines, for a table of published runs.
func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", experiment.ValidateUsage, stderr)
	var tables stringList
	fs.Var(&tables, "table", "validation table (CSV); repeat for several")
	asJSON := fs.Bool("json", false, "one JSON object per run")
	fit := fs.String("fit", "", "fit this GPU's sustained_efficiency on half A of the at-scale tables' rows and report half B")
	out := fs.String("out", "", "also write a results folder: validation.json, validation.csv, the predicted-vs-measured figure")
	if pos, err := parseInterspersed(fs, args); err != nil || len(pos) > 0 || len(tables) == 0 {
		return cmp.Or(err, badInput("want --table FILE.csv (repeatable) and no arguments (got %q)", pos))
	}
	if len(tables) > experiment.MaxValidationTables {
		return badInput("--table given %d times: at most %d tables", len(tables), experiment.MaxValidationTables)
	}
	if *fit != "" {
		if *asJSON {
			return badInput("--fit and --json: --fit prints its own table")
		}
		var runs []experiment.AtScaleRun
		for _, t := range tables {
			rs, err := experiment.ReadAtScaleTable(t)
			if err != nil {
				return err
			}
			runs = append(runs, rs...)
		}
		f, err := experiment.FitSustainedEfficiency(runs, *fit)
		if err != nil {
			return err
		}
		return experiment.WriteSustainedFit(stdout, f)
	}
	return validateTables(tables, *asJSON, *out, stdout)
}

// validateTables predicts the tables (experiment.ValidateTables) and writes
// the predictions beside the measurements: one Megatron-LM table as
// report.WriteValidationTable, anything else grouped by source family
// (report.WriteAtScaleValidation); with asJSON one object per run and line
// (results.WriteValidationJSON). With out set it also writes the results
// folder out (experiment.WriteValidationFolder, with its figure).
func validateTables(paths []string, asJSON bool, out string, w io.Writer) error {
	if out != "" {
		if err := experiment.CheckResultsFolder(out); err != nil {
			return err
		}
	}
	res, atScale, err := experiment.ValidateTables(paths)
	if err != nil {
		return err
	}
	switch {
	case asJSON:
		err = results.WriteValidationJSON(w, res)
	case !atScale && len(paths) == 1:
		err = report.WriteValidationTable(w, res)
	default:
		err = report.WriteAtScaleValidation(w, res, experiment.FamilySoftware())
	}
	if err != nil || out == "" {
		return err
	}
	return experiment.WriteValidationFolder(out, paths, res, report.Figures{})
}

// stringList is a flag that may be given several times, each value kept in
// order.
type stringList []string

// String joins the values with commas.
func (l *stringList) String() string { return strings.Join(*l, ",") }

// Set appends one value.
func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
