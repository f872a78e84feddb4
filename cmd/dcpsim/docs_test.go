package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines is the README's budget: a front door a newcomer reads in
// five minutes, everything else in docs/.
const maxReadmeLines = 300

// docPage is one Markdown page of the documentation, its lines split and
// its fenced blocks marked.
type docPage struct {
	rel   string // relative to the repository root, with slashes
	lines []string
	code  []bool // lines[i] is inside a fenced block (fences included)
}

// readDocPages reads README.md and every docs/*.md of the repository at root.
func readDocPages(t *testing.T, root string) []docPage {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append([]string{filepath.Join(root, "README.md")}, paths...)
	var pages []docPage
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		pg := docPage{rel: filepath.ToSlash(rel), lines: strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")}
		in := false
		for _, l := range pg.lines {
			fence := strings.HasPrefix(l, "```")
			pg.code = append(pg.code, in || fence)
			if fence {
				in = !in
			}
		}
		pages = append(pages, pg)
	}
	return pages
}

// mdLink matches a Markdown link or image target; inline code is removed
// from a line before it is matched.
var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// headingAnchor is the anchor GitHub gives a heading: lower case, every
// character but letters, digits, spaces, hyphens and underscores dropped,
// spaces turned into hyphens.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a page's headings, a repeated one numbered
// as GitHub numbers it (name, name-1, ...).
func (pg docPage) anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for i, l := range pg.lines {
		if pg.code[i] || !strings.HasPrefix(l, "#") {
			continue
		}
		a := headingAnchor(strings.TrimSpace(strings.TrimLeft(l, "#")))
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocs: the documentation's shape. README.md stays within its budget
// and maps every docs/ page; every link to a file of the repository (and a
// heading in it) resolves; no page cites a path outside the repository
// (the project's shared/ folder is not in a clone); every docs/ page opens
// with its title and a paragraph saying what it covers.
func TestDocs(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pages := readDocPages(t, root)
	byRel := map[string]docPage{}
	for _, pg := range pages {
		byRel[pg.rel] = pg
	}
	readme := pages[0]
	if n := len(readme.lines); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move a topic to docs/ and link it from the README's map", n, maxReadmeLines)
	}
	linked := map[string]bool{}
	for _, pg := range pages {
		dir := filepath.Dir(filepath.FromSlash(pg.rel))
		for i, l := range pg.lines {
			if strings.Contains(l, "shared/") {
				t.Errorf("%s:%d: cites shared/, which is not in the repository: cite the paper or the file in the repository instead", pg.rel, i+1)
			}
			if pg.code[i] {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := pg.rel
				if file != "" {
					dest = filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(file)))
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
						t.Errorf("%s:%d: link %s: %s is not in the repository", pg.rel, i+1, target, dest)
						continue
					}
				}
				if pg.rel == "README.md" {
					linked[dest] = true
				}
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				to, ok := byRel[dest]
				if !ok {
					continue // a Markdown file outside README.md and docs/: not checked for headings
				}
				if !to.anchors()[frag] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", pg.rel, i+1, target, dest, frag)
				}
			}
		}
	}
	for _, pg := range pages[1:] {
		if !linked[pg.rel] {
			t.Errorf("%s is not linked from README.md's map of docs/", pg.rel)
		}
		if len(pg.lines) < 3 || !strings.HasPrefix(pg.lines[0], "# ") || pg.lines[1] != "" || !isProse(pg.lines[2]) {
			t.Errorf("%s: want a '# Title' line, a blank line, then a paragraph saying what the page covers", pg.rel)
		}
	}
}

// isProse reports whether a Markdown line starts a paragraph (not a heading,
// a table, a fence, a list, an image or an HTML comment).
func isProse(line string) bool {
	if strings.TrimSpace(line) == "" {
		return false
	}
	for _, p := range []string{"#", "|", "```", "- ", "* ", "1. ", "<", "!["} {
		if strings.HasPrefix(line, p) {
			return false
		}
	}
	return true
}

// TestDocsGoPolicyExample: the Go policy docs/policies.md shows is
// examples/gopolicy/firstfit.go, which a test runs, line for line.
func TestDocsGoPolicyExample(t *testing.T) {
	root := filepath.Join("..", "..")
	src, err := os.ReadFile(filepath.Join(root, "examples", "gopolicy", "firstfit.go"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "policies.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "```go\n"+string(src)+"```\n") {
		t.Error("docs/policies.md's Go policy differs from examples/gopolicy/firstfit.go: paste the file into the page's ```go block")
	}
}

// TestHeadingAnchor: GitHub's anchors for the headings the pages link to.
func TestHeadingAnchor(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"Reading the table", "reading-the-table"},
		{"HyDra's θ/c", "hydras-θc"},
		{"`dcpsim search --json`", "dcpsim-search---json"},
		{"One plan, up close: `dcpsim plan`", "one-plan-up-close-dcpsim-plan"},
		{"Megatron-LM 2021-22 on A100s", "megatron-lm-2021-22-on-a100s"},
	} {
		if got := headingAnchor(c.heading); got != c.want {
			t.Errorf("headingAnchor(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}
