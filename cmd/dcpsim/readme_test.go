package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "print the actual output of every README example that differs (to paste in)")

// readmeExample is one fenced block of README.md that shows commands: each
// "$ " line is a command, and the lines after it, up to the next command or
// the fence, are what it prints (stdout, then stderr).
type readmeExample struct {
	line     int // of the command, 1-based
	command  string
	expected []string
}

// readmeExamples reads README.md's examples: the fenced blocks whose first
// line is a "$ " command.
func readmeExamples(t *testing.T, path string) []readmeExample {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []readmeExample
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "$ ") {
			continue
		}
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			if strings.HasPrefix(lines[i], "$ ") {
				out = append(out, readmeExample{line: i + 1, command: strings.TrimPrefix(lines[i], "$ ")})
				continue
			}
			ex := &out[len(out)-1]
			ex.expected = append(ex.expected, lines[i])
		}
	}
	for i := range out { // the blank lines between two commands' outputs
		for n := len(out[i].expected); n > 0 && strings.TrimSpace(out[i].expected[n-1]) == ""; n-- {
			out[i].expected = out[i].expected[:n-1]
		}
	}
	return out
}

// matchLines reports whether got shows what want shows: line by line equal
// (trailing spaces aside), where a wanted line "[...]" stands for any number
// of lines and a wanted line ending in "[...]" for any line that begins with
// what precedes it.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	w := strings.TrimRight(want[0], " ")
	if w == "[...]" {
		for k := 0; k <= len(got); k++ {
			if matchLines(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 {
		return false
	}
	g := strings.TrimRight(got[0], " ")
	if prefix, ok := strings.CutSuffix(w, "[...]"); ok {
		if !strings.HasPrefix(g, strings.TrimRight(prefix, " ")) {
			return false
		}
	} else if w != g {
		return false
	}
	return matchLines(want[1:], got[1:])
}

// TestREADMEExamples runs every command README.md and docs/*.md show, each
// page in a scratch folder of its own (a "$ cat F" example writes F there
// from the lines it shows; the repository's scenarios/, validation/, calib/
// and examples/ are linked in), and compares what it prints with what the
// page says it prints: a changed output fails here, so the documentation
// cannot drift from the program.
func TestREADMEExamples(t *testing.T) {
	if raceEnabled {
		t.Skip("the README's examples are not concurrency tests; they run without -race")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	total := 0
	for _, page := range pages {
		rel, err := filepath.Rel(root, page)
		if err != nil {
			t.Fatal(err)
		}
		examples := readmeExamples(t, page)
		total += len(examples)
		if len(examples) > 0 {
			t.Run(rel, func(t *testing.T) { runPageExamples(t, root, rel, examples) })
		}
	}
	if total < 10 {
		t.Fatalf("found %d examples in README.md and docs/; are they laid out as expected?", total)
	}
}

// runPageExamples runs the examples of one page (rel, relative to root) in
// a scratch folder of its own.
func runPageExamples(t *testing.T, root, rel string, examples []readmeExample) {
	dir := t.TempDir()
	for _, d := range []string{"scenarios", "validation", "calib", "examples"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	for _, ex := range examples {
		fields := strings.Fields(ex.command)
		var got []string
		switch fields[0] {
		case "cat":
			if len(fields) != 2 || strings.Contains(fields[1], "/") {
				t.Fatalf("%s:%d: cat takes one file name here", rel, ex.line)
			}
			if err := os.WriteFile(fields[1], []byte(strings.Join(ex.expected, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		case "dcpsim":
			if strings.Contains(ex.command, "examples/policies/") {
				if _, err := exec.LookPath("python3"); err != nil {
					// The external-policy example runs a Python program; .ci/run
					// installs python3 where it is missing.
					t.Logf("%s:%d: skipped: no python3 on PATH for %s", rel, ex.line, ex.command)
					continue
				}
			}
			var stdout, stderr bytes.Buffer
			run(fields[1:], &stdout, &stderr)
			got = strings.Split(strings.TrimSuffix(stdout.String()+stderr.String(), "\n"), "\n")
		default:
			t.Fatalf("%s:%d: %q: only dcpsim and cat commands are checked", rel, ex.line, ex.command)
		}
		if !matchLines(ex.expected, got) {
			if *updateReadme {
				fmt.Printf("=== %s:%d: $ %s\n%s\n", rel, ex.line, ex.command, strings.Join(got, "\n"))
			}
			t.Errorf("%s:%d: $ %s: the output differs from the page's (go test ./cmd/dcpsim -run READMEExamples -update-readme prints it)", rel, ex.line, ex.command)
		}
	}
}

// TestMatchLines: the elision rules.
func TestMatchLines(t *testing.T) {
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb", true},
		{"a\nb", "a\nc", false},
		{"a  \nb", "a\nb   ", true},
		{"a\n[...]\nd", "a\nb\nc\nd", true},
		{"a\n[...]\nd", "a\nd", true},
		{"a\n[...]\nd", "a\nb", false},
		{"x = 1 [...]", "x = 1, y = 2", true},
		{"x = 1 [...]", "x = 2", false},
		{"a", "a\nb", false},
	} {
		if got := matchLines(strings.Split(c.want, "\n"), strings.Split(c.got, "\n")); got != c.ok {
			t.Errorf("matchLines(%q, %q) = %v, want %v", c.want, c.got, got, c.ok)
		}
	}
}
