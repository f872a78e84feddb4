package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/internal/report"
)

// TestReportCommand: dcpsim report writes report.WriteReproduction's text to
// DIR/REPORT.md (or --out) and says so; extra arguments are bad input (exit 2)
// and write nothing. The report's content, and results/REPORT.md being up to
// date, are tested in package report.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	var want strings.Builder
	if err := report.WriteReproduction(&want, dir); err != nil {
		t.Fatal(err)
	}
	def := filepath.Join(dir, "REPORT.md")
	other := filepath.Join(t.TempDir(), "other.md")
	for _, tc := range []struct {
		args []string
		out  string
	}{
		{[]string{"report", "--results", dir}, def},
		{[]string{"report", "--results", dir, "--out", other}, other},
	} {
		code, stdout, errOut := dcpsim(t, tc.args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		if !strings.Contains(stdout, "wrote "+tc.out) {
			t.Errorf("%v: stdout %q does not name %s", tc.args, stdout, tc.out)
		}
		got, err := os.ReadFile(tc.out)
		if err != nil || string(got) != want.String() {
			t.Errorf("%v: %s is not WriteReproduction's text (%v)", tc.args, tc.out, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.md")
	if code, _, errOut := dcpsim(t, "report", "--results", dir, "--out", bad, "extra"); code != exitInput || !strings.Contains(errOut, "unexpected arguments") {
		t.Errorf("extra argument: exit %d, want 2 (%s)", code, errOut)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a report was written after bad input")
	}
	// A --results folder that does not exist used to give a report naming
	// "Missing results/..." (not the folder given).
	file := filepath.Join(dir, "REPORT.md")
	for _, res := range []string{filepath.Join(dir, "nonexistent"), file} {
		code, _, errOut := dcpsim(t, "report", "--results", res, "--out", bad)
		if code != exitInput || !strings.Contains(errOut, "--results "+res+": not a folder") {
			t.Errorf("--results %s: exit %d, want 2 (%s)", res, code, errOut)
		}
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a report was written for a missing results folder")
	}
}

// TestReportReadmePages: --readme is repeatable; each page's quoted blocks
// are refreshed from the report it writes, a page already current is left
// as it was, and a block naming a section the report lacks is bad input
// naming the page and line.
func TestReportReadmePages(t *testing.T) {
	dir := t.TempDir()
	pages := t.TempDir()
	stale := filepath.Join(pages, "README.md")
	current := filepath.Join(pages, "topic.md")
	const marker = "<!-- from results/REPORT.md: ## Headline ratios, table 1 -->"
	if err := os.WriteFile(stale, []byte("# r\n"+marker+"\n| old |\n<!-- end -->\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(current, []byte("# t\nno tables here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := dcpsim(t, "report", "--results", dir, "--readme", stale, "--readme", current)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "refreshed the tables of "+stale) || !strings.Contains(stdout, "the tables of "+current+" are current") {
		t.Errorf("stdout %q does not name both pages", stdout)
	}
	got, err := os.ReadFile(stale)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "| old |") || !strings.Contains(string(got), marker+"\n| scenario | HyDra over Mcore DCP") || !strings.HasSuffix(string(got), "<!-- end -->\nafter\n") {
		t.Errorf("%s not refreshed from the report:\n%s", stale, got)
	}
	if got, err := os.ReadFile(current); err != nil || string(got) != "# t\nno tables here\n" {
		t.Errorf("%s changed: %q (%v)", current, got, err)
	}
	bad := filepath.Join(pages, "bad.md")
	if err := os.WriteFile(bad, []byte("x\n<!-- from results/REPORT.md: ## No such section, table 1 -->\n<!-- end -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := dcpsim(t, "report", "--results", dir, "--readme", current, "--readme", bad); code != exitInput || !strings.Contains(errOut, bad+":2: ") {
		t.Errorf("a page quoting a missing section: exit %d, want 2 naming %s:2 (%s)", code, bad, errOut)
	}
}
