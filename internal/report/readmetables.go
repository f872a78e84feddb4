package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// README.md and the docs/ pages quote tables of REPORT.md between markers,
// so their results are the report's, never typed by hand:
//
//	<!-- from results/REPORT.md: ## Headline ratios, table 1 -->
//	| ... |
//	<!-- end -->
//
// RefreshReadmeTables rewrites every such block of one page from the report;
// a test fails when a page's blocks differ from the committed REPORT.md's.

// readmeMarker matches a block's opening marker: the section's heading and
// the table's position in it (1-based).
var readmeMarker = regexp.MustCompile(`^<!-- from results/REPORT\.md: (#+ .*), table (\d+) -->$`)

// readmeEnd closes a block.
const readmeEnd = "<!-- end -->"

// reportTable returns the n-th table (1-based: a run of lines starting with
// '|') of the section of report headed heading.
func reportTable(report []byte, heading string, n int) ([]string, error) {
	lines := strings.Split(string(report), "\n")
	start := -1
	for i, l := range lines {
		if l == heading {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("REPORT.md has no section %q", heading)
	}
	level := strings.Index(heading, " ")
	count := 0
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if h := strings.Index(l, " "); strings.HasPrefix(l, "#") && h > 0 && h <= level && strings.Trim(l[:h], "#") == "" {
			break // the next section of the same or a higher level
		}
		if !strings.HasPrefix(l, "|") || i > start && strings.HasPrefix(lines[i-1], "|") {
			continue
		}
		if count++; count < n {
			continue
		}
		var table []string
		for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			table = append(table, lines[i])
		}
		return table, nil
	}
	return nil, fmt.Errorf("REPORT.md's section %q has no table %d", heading, n)
}

// RefreshReadmeTables returns the page readme (named name in errors) with
// every quoted block replaced by the current table of report; an error
// names a marker without its end, a section or a table the report does not
// have.
func RefreshReadmeTables(name string, readme, report []byte) ([]byte, error) {
	lines := strings.Split(string(readme), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		m := readmeMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		table, err := reportTable(report, m[1], n)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		end := i + 1
		for end < len(lines) && lines[end] != readmeEnd {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("%s:%d: %q without %q", name, i+1, lines[i], readmeEnd)
		}
		out = append(out, table...)
		out = append(out, readmeEnd)
		i = end
	}
	return []byte(strings.Join(out, "\n")), nil
}

// ReadmeTablesCurrent reports whether the page readme's (named name) quoted
// blocks hold the report's tables, and how many blocks it has.
func ReadmeTablesCurrent(name string, readme, report []byte) (current bool, blocks int, err error) {
	fresh, err := RefreshReadmeTables(name, readme, report)
	if err != nil {
		return false, 0, err
	}
	for _, l := range strings.Split(string(readme), "\n") {
		if readmeMarker.MatchString(l) {
			blocks++
		}
	}
	return bytes.Equal(fresh, readme), blocks, nil
}
