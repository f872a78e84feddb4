package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeTablesCurrent: the results tables README.md and docs/*.md quote
// are REPORT.md's (dcpsim report --readme PAGE refreshes them; make figures
// does for every page).
func TestReadmeTablesCurrent(t *testing.T) {
	rep, err := os.ReadFile(filepath.Join("..", "..", "results", "REPORT.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, page := range append([]string{filepath.Join("..", "..", "README.md")}, docs...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.ToSlash(strings.TrimPrefix(page, filepath.Join("..", "..")+string(filepath.Separator)))
		ok, blocks, err := ReadmeTablesCurrent(name, text, rep)
		if err != nil {
			t.Fatal(err)
		}
		if name == "README.md" && blocks < 2 {
			t.Errorf("README.md quotes %d tables of REPORT.md, want at least 2 (the headline results)", blocks)
		}
		total += blocks
		if !ok {
			t.Errorf("%s's results tables differ from results/REPORT.md's: run dcpsim report --results results --readme %s (make figures does)", name, name)
		}
	}
	if total < 5 {
		t.Errorf("README.md and docs/ quote %d tables of REPORT.md in all, want at least 5: are the markers laid out as expected?", total)
	}
}

// TestRefreshReadmeTables: a block takes the n-th table of its section (its
// subsections included, the next section not), stale rows are replaced, the rest is untouched, and
// a missing section or end marker is an error naming the line.
func TestRefreshReadmeTables(t *testing.T) {
	rep := []byte("# R\n\n## A\n\n| a | 1 |\n|---|---|\n\ntext\n\n| b | 2 |\n\n### A.1\n\n| c | 3 |\n\n## B\n\n| d | 4 |\n")
	readme := []byte("x\n<!-- from results/REPORT.md: ## A, table 2 -->\n| old |\n<!-- end -->\ny\n<!-- from results/REPORT.md: ### A.1, table 1 -->\n<!-- end -->\n")
	got, err := RefreshReadmeTables("README.md", readme, rep)
	if err != nil {
		t.Fatal(err)
	}
	want := "x\n<!-- from results/REPORT.md: ## A, table 2 -->\n| b | 2 |\n<!-- end -->\ny\n<!-- from results/REPORT.md: ### A.1, table 1 -->\n| c | 3 |\n<!-- end -->\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct{ readme, want string }{
		{"<!-- from results/REPORT.md: ## C, table 1 -->\n<!-- end -->", `README.md:1: REPORT.md has no section "## C"`},
		{"<!-- from results/REPORT.md: ## B, table 2 -->\n<!-- end -->", `README.md:1: REPORT.md's section "## B" has no table 2`},
		{"a\n<!-- from results/REPORT.md: ## B, table 1 -->\n| d |", "README.md:2:"},
		{"<!-- from results/REPORT.md: ## A, table 4 -->\n<!-- end -->", `has no table 4`}, // A.1's table is A's third; B's is not its fourth
	} {
		if _, err := RefreshReadmeTables("README.md", []byte(c.readme), rep); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.readme, err, c.want)
		}
	}
	if _, err := RefreshReadmeTables("docs/memory.md", []byte("a\n<!-- from results/REPORT.md: ## C, table 1 -->\n<!-- end -->"), rep); err == nil || !strings.HasPrefix(err.Error(), "docs/memory.md:2: ") {
		t.Errorf("an error names the page it is in: %v", err)
	}
}
