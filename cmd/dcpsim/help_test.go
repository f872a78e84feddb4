package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched/policies"
)

// TestHelpFitsAScreen: `dcpsim X --help` prints the synopsis and the flags
// (at most 45 lines) and points to `dcpsim help X`, which prints the whole
// help: the same opening, the long text and the same flags. Both exit 0;
// a command with flags lists them; plan's and run's whole help list every
// policy.
func TestHelpFitsAScreen(t *testing.T) {
	for name := range commands() {
		var full, short, errA, errB bytes.Buffer
		ca := run([]string{"help", name}, &full, &errA)
		cb := run([]string{name, "--help"}, &short, &errB)
		if ca != exitOK || cb != exitOK || full.Len() == 0 || short.Len() == 0 || errA.Len()+errB.Len() > 0 {
			t.Errorf("%s: help exit %d (%d bytes), --help exit %d (%d bytes), stderr %q %q", name, ca, full.Len(), cb, short.Len(), errA.String(), errB.String())
			continue
		}
		for _, h := range []string{full.String(), short.String()} {
			if !strings.HasPrefix(h, "dcpsim "+name) || !strings.Contains(h, "\nusage:\n") {
				t.Errorf("%s: help does not open with its summary and usage:\n%s", name, h)
			}
			if name != "models" && name != "version" && !strings.Contains(h, "\nflags:\n") {
				t.Errorf("%s: help lists no flags:\n%s", name, h)
			}
		}
		if n := strings.Count(short.String(), "\n"); n > 45 {
			t.Errorf("%s --help: %d lines, more than a screen:\n%s", name, n, short.String())
		}
		if short.Len() < full.Len() && !strings.Contains(short.String(), "dcpsim help "+name) {
			t.Errorf("%s --help does not say where the rest is", name)
		}
		_, flags, _ := strings.Cut(short.String(), "\nflags:\n")
		flags, _, _ = strings.Cut(flags, "\n\nthe whole help")
		if !strings.Contains(full.String(), flags) {
			t.Errorf("%s: the whole help lacks the short help's flags", name)
		}
		if name == "plan" || name == "run" {
			for _, p := range policies.Names() {
				if !strings.Contains(full.String(), "\n    "+p+" ") {
					t.Errorf("%s: help does not list policy %s", name, p)
				}
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"help", "nope"}, &out, &errOut); code != exitInput || !strings.Contains(errOut.String(), "unknown command") {
		t.Errorf("help nope: exit %d, %q", code, errOut.String())
	}
}

// TestFlagTypo: a mistyped flag exits 2 with one line: the error, the
// nearest flag and where the flags are, not the whole help.
func TestFlagTypo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "testbed-32k", "--no-file"}, "did you mean --no-files?"},
		{[]string{"search", "search-h800-4k", "--tokenz", "1e12"}, "did you mean --tokens?"},
		{[]string{"sweep", "weak-scaling", "--zzzzzz"}, "(the flags: dcpsim sweep --help)"},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		if code != exitInput || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q: want one line with %q", tc.args, code, errOut.String(), tc.want)
		}
	}
	if near := nearestFlag(newFlagSet("x", "", nil).FlagSet, "anything"); near != "" {
		t.Errorf("no flags, nearest %q", near)
	}
}

// TestDocListsEveryCommand: the package doc's command list names every
// command, so it cannot fall behind again.
func TestDocListsEveryCommand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	for name := range commands() {
		if !strings.Contains(doc, "\n\t"+name+" ") {
			t.Errorf("the package doc of main.go does not list %q", name)
		}
	}
}

// TestVersionFlag: dcpsim --version prints what dcpsim version prints.
func TestVersionFlag(t *testing.T) {
	var a, b, e bytes.Buffer
	if run([]string{"--version"}, &a, &e) != exitOK || run([]string{"version"}, &b, &e) != exitOK || a.String() != b.String() ||
		!strings.HasPrefix(a.String(), "dcpsim ") || e.Len() > 0 {
		t.Errorf("--version %q, version %q, stderr %q", a.String(), b.String(), e.String())
	}
}
