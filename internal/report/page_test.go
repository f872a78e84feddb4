package report

import (
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/internal/report/pages"
	"github.com/dcpsim/dcpsim/results"
)

// renderPage is p's page as WritePage writes it into a new folder.
func renderPage(t *testing.T, p *results.Page) string {
	t.Helper()
	dir := t.TempDir()
	name, err := WritePage(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	if name != pages.File {
		t.Fatalf("WritePage wrote %q, want %q", name, pages.File)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// count is how often re matches s.
func count(s, re string) int { return len(regexp.MustCompile(re).FindAllStringIndex(s, -1)) }

// runPage is the page of testSummary's run with hostile names: a scenario
// and a policy that try to close the script and open markup.
func runPage() *results.Page {
	s := testSummary()
	s.Scenario = `evil</script><b>"&'`
	s.Policies[1].Policy = `mc</script><script>alert(1)</script>`
	tls := []results.Timeline{testTimeline("hydra"), testTimeline(s.Policies[1].Policy)}
	tls[0].RankRoles = map[int]string{3: `busiest</script>`}
	return &results.Page{Title: s.Scenario, Files: []string{"breakdown.png", "breakdown.svg", "iterations.csv", "manifest.json",
		"summary.json", "throughput.svg", "trace-hydra.json"},
		Run: &results.RunPage{Summary: s, Rows: testRows(), Timelines: tls}}
}

// TestRunPage: a run's page has the table with every column (its meaning
// as the header's title), a row per policy (the failed one marked), a
// timeline per iteration drawn with a bar per forward and backward pass
// and the trace linked only where the folder has it, every SVG figure
// inline with its caption, every file linked; what a name holds is
// escaped, never markup or script; the same page is the same bytes.
func TestRunPage(t *testing.T) {
	p := runPage()
	html := renderPage(t, p)
	if again := renderPage(t, runPage()); again != html {
		t.Error("the same run's page differs on a rewrite")
	}
	cols := RunColumns(p.Run.Summary, true)
	if n := count(html, `<th scope="col" title="[^"]+"`); n < 1+len(cols) {
		t.Errorf("%d headers with a meaning, want at least %d (the run table's)", n, 1+len(cols))
	}
	for _, c := range cols {
		if !strings.Contains(html, "<button type=\"button\">"+escaped(c.Name)+"</button>") {
			t.Errorf("the run table lacks column %q", c.Name)
		}
	}
	if !strings.Contains(html, `<tr class="failed" title="boom">`) {
		t.Error("the failed policy's row is not marked with its error")
	}
	if n := count(html, `<div class="timeline" id="timeline-\d+">`); n != 2 {
		t.Errorf("%d timelines, want 2", n)
	}
	tl := pages.NewTimeline("t", "hydra", "", &p.Run.Timelines[0])
	if tl.Bars() != 12 || len(tl.Data.Tracks) != 4 {
		t.Errorf("hydra's timeline: %d bars on %d tracks, want 12 (the forward and backward passes) on 4 (2 stages × 2 ranks)", tl.Bars(), len(tl.Data.Tracks))
	}
	if !strings.Contains(html, `data-trace="trace-hydra.json"`) || count(html, `data-trace=`) != 1 {
		t.Error("the trace link: want hydra's alone (the folder has no trace of the other)")
	}
	for _, fig := range []string{"breakdown", "throughput"} {
		if !strings.Contains(html, `<figure><img src="`+fig+`.svg" alt="`+fig+`"><figcaption>`+escaped(figureCaptions[fig])+`</figcaption></figure>`) {
			t.Errorf("figure %s is not inline with its caption", fig)
		}
	}
	if strings.Contains(html, `src="breakdown.png"`) {
		t.Error("a PNG is drawn beside its SVG")
	}
	for _, f := range p.Files {
		if !strings.Contains(html, `<li><a href="`+f+`">`+f+`</a></li>`) {
			t.Errorf("file %s is not linked", f)
		}
	}
	// Three script elements (two timelines' data, the page's script), each
	// closed once: no name closed one early or opened another.
	if o, c := strings.Count(html, "<script"), strings.Count(html, "</script>"); o != 3 || c != 3 {
		t.Errorf("%d <script and %d </script>, want 3 each:\n%s", o, c, html)
	}
	if strings.Contains(html, "<b>") || strings.Contains(html, "alert(1)</script>") {
		t.Error("a name's markup reached the page unescaped")
	}
	if !strings.Contains(html, "<h1>evil&lt;/script&gt;&lt;b&gt;&#34;&amp;&#39;</h1>") {
		t.Error("the title is not the scenario's name, escaped")
	}
	// No URL but the SVG namespace and the Perfetto UI's (opened on a
	// click, with its documentation's in a comment): the page needs no
	// network.
	for _, u := range regexp.MustCompile(`https?://[^'"\s)]+`).FindAllString(html, -1) {
		switch u {
		case "http://www.w3.org/2000/svg", "https://ui.perfetto.dev", "https://perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui":
		default:
			t.Errorf("the page names %s: it must need no network", u)
		}
	}
}

// escaped is s as html/template writes it in text.
func escaped(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		case '+':
			b.WriteString("&#43;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// rankedSearchRows are searchRows ranked by tokens per day, each with a
// 95% interval so that some tie the leader.
func rankedSearchRows(gpus ...int) []results.SearchRow {
	rows := searchRows(gpus...)
	var ok []int
	for i := range rows {
		if rows[i].Status == results.SearchOK {
			ok = append(ok, i)
			rows[i].StepSecondsCI95 = 0.1
		}
	}
	slices.SortStableFunc(ok, func(a, b int) int { return cmp.Compare(rows[b].TokensPerDay, rows[a].TokensPerDay) })
	for rank, i := range ok {
		rows[i].Rank = rank + 1
	}
	return rows
}

// TestFolderPages: the page of a sweep, a search (with and without a
// token target), a comparison and a validation has its tables: the
// search's ranking marks the leader and its ties, answers the target and
// draws it as a rule; the comparison names each row's test.
func TestFolderPages(t *testing.T) {
	sum := testSummary()
	sweep := renderPage(t, &results.Page{Title: "sw", Sweep: &results.SweepPage{Points: []results.SweepPoint{
		{Name: "p000-gpus16", Summary: *sum}, {Name: "p001-gpus32", Summary: *sum}}}})
	if n := count(sweep, `<tr`); n != 1+2*len(sum.Policies) {
		t.Errorf("the sweep's table has %d rows, want a header and %d", n-1, 2*len(sum.Policies))
	}
	if !strings.Contains(sweep, `href="points/p001-gpus32/summary.json"`) {
		t.Error("the sweep's rows do not link their points")
	}

	rows := rankedSearchRows(64, 128)
	target := &results.SearchTarget{Tokens: 1e12, Days: 100}
	search := renderPage(t, &results.Page{Title: "se", Files: []string{"search-pareto.svg"}, Search: &results.SearchPage{Model: "m", Iterations: 4,
		WarmupIterations: 1, Rungs: []int{2, 4}, Counts: map[string]int{results.SearchOK: 24, results.SearchOutOfMemory: 2}, Candidates: rows, Target: target}})
	for _, want := range []string{`id="answer-table"`, `id="ranked-table"`, `id="pareto-chart"`, `id="best-table"`, `<tr class="leader"`,
		`<tr class="answer"`, `"rules":[{"y":10,"label":"1e+12 tokens in 100.0 days"`, `search-pareto.svg`, "Candidates by status: ok 24, out-of-memory 2"} {
		if !strings.Contains(search, want) {
			t.Errorf("the search's page lacks %s", want)
		}
	}
	ranked := results.RankedSearchRows(rows)
	ties := 0
	for _, r := range ranked[1:] {
		if r.TiesWith(ranked[0]) {
			ties++
		}
	}
	if n := count(search, `<tr class="tie"`); n != ties {
		t.Errorf("%d rows marked as ties, want the %d whose interval overlaps the leader's", n, ties)
	}
	// The best per policy at each of the two sizes.
	best := search[strings.Index(search, `id="best-table"`):]
	best = best[:strings.Index(best, "</table>")]
	if n := count(best, `<tr>`) - 1; n != 6 { // less the header's
		t.Errorf("the best-per-policy table has %d rows, want 3 policies × 2 sizes", n)
	}
	plain := renderPage(t, &results.Page{Title: "se", Search: &results.SearchPage{Candidates: rows}})
	if strings.Contains(plain, `id="answer-table"`) || strings.Contains(plain, `"label":"`) && strings.Contains(plain, "tokens in") {
		t.Error("a search without a target shows an answer")
	}

	c := testComparison()
	comp := renderPage(t, &results.Page{Comparison: c, Files: results.CompareFiles})
	if !strings.Contains(comp, `<button type="button">test</button>`) || !strings.Contains(comp, `<td class="text" data-key="welch">welch</td>`) {
		t.Error("the comparison's page does not name each row's test")
	}
	if !strings.Contains(comp, `<tr class="significant"`) {
		t.Error("the significant change is not marked")
	}

	val := renderPage(t, &results.Page{Title: "validation", Validation: validationSample})
	if n := count(val, `<tr`); n != 1+len(validationSample) {
		t.Errorf("the validation's table has %d rows, want %d", n-1, len(validationSample))
	}

	if _, err := PageDoc(&results.Page{Title: "nothing"}); err == nil {
		t.Error("a page of nothing: no error")
	}
}

// TestWriteIndex: the index of a folder links each results folder (not
// one inside another, a hidden one or one behind a symbolic link) to its
// page, or to the folder when it has none, and REPORT.md; rewritten, it is
// the same bytes.
func TestWriteIndex(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "results")
	for _, f := range []string{"run-a/summary.json", "run-a/index.html", "sweeps/b/sweep.json", "sweeps/b/index.html", "sweeps/b/points/p0/summary.json",
		"search/search.json", ".hidden/summary.json", "deep/1/2/3/4/5/6/7/summary.json", "REPORT.md", "outside/summary.json", "notes/readme.txt"} {
		root := dir
		if strings.HasPrefix(f, "outside/") {
			root = base
		}
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := WriteIndex(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, pages.File))
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	var hrefs []string
	for _, m := range regexp.MustCompile(`<li><a href="([^"#][^"]*)">`).FindAllStringSubmatch(html, -1) {
		hrefs = append(hrefs, m[1])
	}
	want := []string{"run-a/index.html", "search/", "sweeps/b/index.html", "REPORT.md"}
	if strings.Join(hrefs, " ") != strings.Join(want, " ") {
		t.Errorf("the index links %v, want %v", hrefs, want)
	}
	if !strings.Contains(html, "<title>results · dcpsim index</title>") {
		t.Error("the index is not titled with the folder's name")
	}
	if err := WriteIndex(dir); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, pages.File)); !bytes.Equal(again, b) {
		t.Error("the index differs on a rewrite")
	}
	if err := WriteIndex(filepath.Join(base, "missing")); err == nil {
		t.Error("a missing folder: no error")
	}
}
