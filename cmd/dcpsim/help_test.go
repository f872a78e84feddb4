package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched/policies"
)

// TestHelpIsOneText: `dcpsim help X` and `dcpsim X --help` print the same
// text, exit 0, and a command with flags lists them; plan's and run's help
// list every policy.
func TestHelpIsOneText(t *testing.T) {
	for name := range commands() {
		var a, b, errA, errB bytes.Buffer
		ca := run([]string{"help", name}, &a, &errA)
		cb := run([]string{name, "--help"}, &b, &errB)
		if ca != exitOK || cb != exitOK || a.String() != b.String() || a.Len() == 0 || errA.Len()+errB.Len() > 0 {
			t.Errorf("%s: help exit %d (%d bytes), --help exit %d (%d bytes), stderr %q %q; the texts must be equal",
				name, ca, a.Len(), cb, b.Len(), errA.String(), errB.String())
		}
		if !strings.HasPrefix(a.String(), "dcpsim "+name) || !strings.Contains(a.String(), "\nusage:\n") {
			t.Errorf("%s: help does not open with its summary and usage:\n%s", name, a.String())
		}
		if name != "models" && name != "version" && !strings.Contains(a.String(), "\nflags:\n") {
			t.Errorf("%s: help lists no flags:\n%s", name, a.String())
		}
		if name == "plan" || name == "run" {
			for _, p := range policies.Names() {
				if !strings.Contains(a.String(), "\n    "+p+" ") {
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
