package pages_test

// The pages in a real browser: headless Chromium driven by chromedp opens
// the pages of a small run, sweep, search, comparison and validation from
// file:// and checks what a person would see; then the committed results/
// when make figures has written its index.html.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/internal/report/pages"
	"github.com/dcpsim/dcpsim/results"
	"github.com/dcpsim/dcpsim/scenarios"
)

// hangGuard bounds each step in the browser (a load, a script, a click, a
// screenshot) so that a hung Chromium fails the test instead of stalling it;
// it is no measurement: nothing asserts how long a step takes.
const hangGuard = 2 * time.Minute

// browserNames are the programs tried, in order, for a Chromium.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// findBrowser is the path of a Chromium on PATH ("" when none; then
// DCPSIM_BROWSER may name one).
func findBrowser() string {
	if p := os.Getenv("DCPSIM_BROWSER"); p != "" {
		return p
	}
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// artifactDir is where the screenshots go: $DCPSIM_ARTIFACTS/browser, or
// a folder of the system's temporary folder (kept after the test, never
// in the repository).
func artifactDir(t *testing.T) string {
	base := os.Getenv("DCPSIM_ARTIFACTS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "dcpsim-artifacts")
	}
	dir := filepath.Join(base, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one headless Chromium tab and what it reported: console
// errors, uncaught exceptions, failed loads, and requests that left the
// file system.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	errors   []string
	requests []string
}

// newBrowser starts headless Chromium, or skips the test with a note when
// there is none; with DCPSIM_BROWSER_REQUIRED=1 (.ci/run sets it, after
// installing Debian's chromium) a missing browser fails the test instead.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the browser test starts Chromium")
	}
	path := findBrowser()
	if path == "" {
		msg := fmt.Sprintf("no Chromium found (tried %s, and $DCPSIM_BROWSER)", strings.Join(browserNames, ", "))
		if os.Getenv("DCPSIM_BROWSER_REQUIRED") == "1" {
			t.Fatal(msg + ", and DCPSIM_BROWSER_REQUIRED=1: install Debian's chromium (.ci/run does)")
		}
		t.Skip(msg + ": the browser test is skipped; install Debian's chromium (.ci/run does) to run it")
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("allow-file-access-from-files", false))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				b.errors = append(b.errors, "console: "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			what := d.Text
			if d.Exception != nil {
				what += " " + d.Exception.Description
			}
			b.errors = append(b.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, what))
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				b.errors = append(b.errors, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if u := ev.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
				b.requests = append(b.requests, u)
			}
		}
	})
	if err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return b
}

// open loads the page at path from file:// and waits for its script to
// finish; it fails on any console error, exception, failed load or
// request off the file system since the last open.
func (b *browser) open(t *testing.T, path string) {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.errors, b.requests = nil, nil
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(b.ctx, hangGuard)
	defer cancel()
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	if err := chromedp.Do(ctx, chromedp.Navigate(u.String()), chromedp.WaitReady(chromedp.CSS(`html[data-ready="true"]`))); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b.check(t, path)
}

// check fails on what the page reported.
func (b *browser) check(t *testing.T, path string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		t.Errorf("%s: %s", path, e)
	}
	for _, r := range b.requests {
		t.Errorf("%s: a request off the file system (the page must need no network): %s", path, r)
	}
}

// eval runs a script in the page and decodes its result into out.
func (b *browser) eval(t *testing.T, js string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, hangGuard)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](js))
	if err != nil {
		t.Fatalf("evaluating %.60q: %v", js, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("evaluating %.60q: decoding %.100s: %v", js, raw, err)
	}
}

// screenshot keeps a full-page screenshot of the open page as name.png in
// the artifacts folder.
func (b *browser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, hangGuard)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readmeShot keeps, when DCPSIM_README_SHOTS names a folder, a small
// screenshot of the open page as name.png there: 1280 × 900 CSS pixels
// from the top of the element sel, at 0.55 scale (README.md's pictures:
// DCPSIM_README_SHOTS=docs/img go test ./internal/report/pages -run
// 'TestBrowser$').
func (b *browser) readmeShot(t *testing.T, name, sel string) {
	t.Helper()
	dir := os.Getenv("DCPSIM_README_SHOTS")
	if dir == "" {
		return
	}
	var top float64
	b.eval(t, fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().top + window.scrollY`, sel), &top)
	ctx, cancel := context.WithTimeout(b.ctx, hangGuard)
	defer cancel()
	res, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng,
		Clip: &page.Viewport{X: 0, Y: max(top-8, 0), Width: 1280, Height: 900, Scale: 0.55}, CaptureBeyondViewport: ptr(true)})
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), res.Data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ptr is a pointer to v.
func ptr[T any](v T) *T { return &v }

// figuresLoad checks that every figure of the page loaded and that the
// page shows every SVG figure of its folder.
func (b *browser) figuresLoad(t *testing.T, page string) {
	t.Helper()
	var imgs []struct {
		Src    string  `json:"src"`
		Loaded bool    `json:"loaded"`
		Width  float64 `json:"width"`
	}
	b.eval(t, `Array.from(document.images).map(i => ({src: i.getAttribute('src'), loaded: i.complete, width: i.naturalWidth}))`, &imgs)
	shown := map[string]bool{}
	for _, im := range imgs {
		shown[im.Src] = true
		if !im.Loaded || im.Width <= 0 {
			t.Errorf("%s: figure %s did not load", page, im.Src)
		}
	}
	svgs, err := filepath.Glob(filepath.Join(filepath.Dir(page), "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svgs {
		if !shown[filepath.Base(s)] {
			t.Errorf("%s: figure %s is not on the page", page, filepath.Base(s))
		}
	}
}

// sortReorders clicks the header of a numeric column of the page's table
// tableID whose cells differ, twice, and checks the rows follow: ascending,
// then descending, each time the same rows.
func (b *browser) sortReorders(t *testing.T, page, tableID string) {
	t.Helper()
	var cols int
	b.eval(t, fmt.Sprintf(`document.querySelectorAll('#%s thead th').length`, tableID), &cols)
	keys := func(col int) []string {
		var ks []string
		b.eval(t, fmt.Sprintf(`Array.from(document.querySelectorAll('#%s tbody tr')).map(r => r.cells[%d].getAttribute('data-key') || '')`, tableID, col), &ks)
		return ks
	}
	rowsText := func() []string {
		var rs []string
		b.eval(t, fmt.Sprintf(`Array.from(document.querySelectorAll('#%s tbody tr')).map(r => r.textContent)`, tableID), &rs)
		return rs
	}
	for col := 1; col < cols; col++ {
		var text bool
		b.eval(t, fmt.Sprintf(`document.querySelectorAll('#%s thead th')[%d].classList.contains('text')`, tableID, col), &text)
		before := keys(col)
		distinct := slices.Compact(slices.Sorted(slices.Values(before)))
		if text || len(distinct) < 2 || slices.Contains(before, "") {
			continue
		}
		rows := slices.Sorted(slices.Values(rowsText()))
		reordered := false
		for _, dir := range []string{"ascending", "descending"} {
			ctx, cancel := context.WithTimeout(b.ctx, hangGuard)
			err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#%s thead th:nth-child(%d) button`, tableID, col+1))))
			cancel()
			if err != nil {
				t.Fatalf("%s: clicking column %d: %v", page, col, err)
			}
			after := keys(col)
			var sorted bool
			b.eval(t, fmt.Sprintf(`(() => { const k = Array.from(document.querySelectorAll('#%s tbody tr')).map(r => parseFloat(r.cells[%d].getAttribute('data-key')));
				return k.every((v, i) => i == 0 || (%q == 'ascending' ? k[i-1] <= v : k[i-1] >= v)); })()`, tableID, col, dir), &sorted)
			if !sorted {
				t.Errorf("%s: table %s sorted %s by column %d: keys %v", page, tableID, dir, col, after)
			}
			if !slices.Equal(after, before) {
				reordered = true
			}
			if got := slices.Sorted(slices.Values(rowsText())); !slices.Equal(got, rows) {
				t.Errorf("%s: table %s: sorting changed the rows themselves", page, tableID)
			}
			var aria string
			b.eval(t, fmt.Sprintf(`document.querySelectorAll('#%s thead th')[%d].getAttribute('aria-sort')`, tableID, col), &aria)
			if aria != dir {
				t.Errorf("%s: column %d's aria-sort %q after the click, want %q", page, col, aria, dir)
			}
		}
		if !reordered {
			t.Errorf("%s: table %s: sorting column %d left the rows in their order both ways", page, tableID, col)
		}
		return
	}
	t.Errorf("%s: table %s has no numeric column with distinct values to sort", page, tableID)
}

// writeFolders writes a small run (and a second one to compare it with),
// sweep, search and validation under dir through the CLI's drawer, and
// returns the run's outcome and the search's ok candidates.
func writeFolders(t *testing.T, dir string) (*experiment.Outcome, int) {
	t.Helper()
	ctx := context.Background()
	draw := report.Figures{}
	var run *experiment.Outcome
	for _, seed := range []uint64{1, 2} {
		sc, err := scenarios.Preset("testbed-32k")
		if err != nil {
			t.Fatal(err)
		}
		sc.Run.Iterations, sc.Run.WarmupIterations, sc.Run.Seed = 4, 1, seed
		out, err := experiment.Run(sc, experiment.Options{Timelines: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := experiment.WriteRun(ctx, filepath.Join(dir, fmt.Sprintf("run-seed%d", seed)), sc, out, draw); err != nil {
			t.Fatal(err)
		}
		if seed == 1 {
			run = out
		}
	}
	c, err := experiment.Compare(filepath.Join(dir, "run-seed1"), filepath.Join(dir, "run-seed2"), experiment.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "compare"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := report.WriteComparison(filepath.Join(dir, "compare"), c); err != nil {
		t.Fatal(err)
	}
	sw, err := scenarios.Load(filepath.Join("testdata", "browser-sweep.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := experiment.Sweep(ctx, sw, experiment.SweepOptions{Dir: filepath.Join(dir, "sweep"), Jobs: 2, Figures: draw}); err != nil {
		t.Fatal(err)
	}
	se, err := scenarios.Load(filepath.Join("testdata", "browser-search.toml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := experiment.Search(ctx, se, experiment.SearchOptions{Dir: filepath.Join(dir, "search"), Jobs: 2, Figures: draw,
		Target: &results.SearchTarget{Tokens: 1e11, Days: 7}})
	if err != nil {
		t.Fatal(err)
	}
	table := filepath.Join("..", "..", "..", "validation", "megatron-lm.csv")
	rs, _, err := experiment.ValidateTables([]string{table})
	if err != nil {
		t.Fatal(err)
	}
	if err := experiment.WriteValidationFolder(filepath.Join(dir, "validation"), []string{table}, rs, draw); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteIndex(dir); err != nil {
		t.Fatal(err)
	}
	return run, res.File.Counts[results.SearchOK]
}

// TestBrowser opens every page of a small run, comparison, sweep, search
// and validation, and their index, in headless Chromium: no console
// error, no request off the file system, every figure loads, sorting a
// column reorders the rows, each timeline draws a bar per forward and
// backward pass of its iteration, hover and zoom answer, the search's
// chart draws its candidates and the target's line. A screenshot of each
// page is kept in the artifacts folder.
func TestBrowser(t *testing.T) {
	b := newBrowser(t)
	dir := t.TempDir()
	out, ok := writeFolders(t, dir)
	shots := artifactDir(t)
	t.Logf("screenshots in %s", shots)

	// The index links every folder's page.
	b.open(t, filepath.Join(dir, pages.File))
	var links []string
	b.eval(t, `Array.from(document.querySelectorAll('#folders a')).map(a => a.getAttribute('href'))`, &links)
	want := []string{"compare/index.html", "run-seed1/index.html", "run-seed2/index.html", "search/index.html", "sweep/index.html", "validation/index.html"}
	if !slices.Equal(links, want) {
		t.Errorf("the index links %v, want %v", links, want)
	}
	b.screenshot(t, shots, "index")

	// The run: its table sorts, its timelines draw every pass, hover and
	// zoom answer.
	run := filepath.Join(dir, "run-seed1", pages.File)
	b.open(t, run)
	b.readmeShot(t, "page-run", "#table")
	b.figuresLoad(t, run)
	b.sortReorders(t, run, "run-table")
	var bars []int
	b.eval(t, `Array.from(document.querySelectorAll('.timeline')).map(t => t.querySelectorAll('rect.op.k0, rect.op.k1').length)`, &bars)
	if len(bars) != len(out.Timelines) {
		t.Fatalf("%d timelines drawn, want %d", len(bars), len(out.Timelines))
	}
	for i := range out.Timelines {
		tl := &out.Timelines[i]
		n := 0
		for _, s := range tl.Slices {
			if s.Kind == results.Forward || s.Kind == results.Backward {
				n++
			}
		}
		if n == 0 || bars[i] != n {
			t.Errorf("%s's timeline draws %d bars, want %d (its forward and backward passes)", tl.Policy, bars[i], n)
		}
	}
	var tip string
	b.eval(t, `(() => { const r = document.querySelector('.timeline rect.op.k1').getBoundingClientRect();
		document.querySelector('.timeline rect.op.k1').dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.x + 1, clientY: r.y + 1}));
		const tip = document.getElementById('tooltip'); return tip.hidden ? '' : tip.textContent; })()`, &tip)
	if !strings.Contains(tip, "backward, microbatch ") {
		t.Errorf("hovering a backward bar shows %q", tip)
	}
	var transforms [2]string
	b.eval(t, `document.querySelector('.timeline g.view').getAttribute('transform')`, &transforms[0])
	zctx, zcancel := context.WithTimeout(b.ctx, hangGuard)
	defer zcancel()
	if err := chromedp.Do(zctx, chromedp.Click(chromedp.CSS(`.timeline button[data-zoom="in"]`))); err != nil {
		t.Fatal(err)
	}
	b.eval(t, `document.querySelector('.timeline g.view').getAttribute('transform')`, &transforms[1])
	if !strings.Contains(transforms[0], "scale(1,1)") || !strings.Contains(transforms[1], "scale(2,1)") {
		t.Errorf("zoom in: the view's transform went from %q to %q", transforms[0], transforms[1])
	}
	b.check(t, run)
	b.screenshot(t, shots, "run")

	// The sweep, the comparison and the validation: tables sort, figures
	// load.
	for _, c := range []struct{ folder, table string }{{"sweep", "sweep-table"}, {"compare", "compare-table"}, {"validation", "validation-table"}} {
		page := filepath.Join(dir, c.folder, pages.File)
		b.open(t, page)
		b.figuresLoad(t, page)
		b.sortReorders(t, page, c.table)
		b.check(t, page)
		b.screenshot(t, shots, c.folder)
	}

	// The search: the ranking marks the leader, the chart draws every ok
	// candidate and the target's line, the answer is marked.
	search := filepath.Join(dir, "search", pages.File)
	b.open(t, search)
	b.readmeShot(t, "page-search", "#answer")
	b.figuresLoad(t, search)
	b.sortReorders(t, search, "ranked-table")
	var chart struct {
		Points int    `json:"points"`
		Rule   string `json:"rule"`
		Leader int    `json:"leader"`
		Answer int    `json:"answer"`
	}
	b.eval(t, `({points: +document.querySelector('#pareto-chart').getAttribute('data-points'),
		rule: Array.from(document.querySelectorAll('#pareto-chart text')).map(t => t.textContent).filter(s => s.includes('tokens in')).join(),
		leader: document.querySelectorAll('#ranked-table tr.leader').length,
		answer: document.querySelectorAll('#answer-table tr.answer').length})`, &chart)
	if chart.Points != ok || ok == 0 {
		t.Errorf("the chart draws %d points, want the %d ok candidates", chart.Points, ok)
	}
	if chart.Rule != "1e+11 tokens in 7.0 days" || chart.Leader != 1 || chart.Answer != 1 {
		t.Errorf("the search page: target line %q, %d leader rows, %d answer rows; want the line and one of each", chart.Rule, chart.Leader, chart.Answer)
	}
	b.check(t, search)
	b.screenshot(t, shots, "search")
}

// TestBrowserCommittedResults opens results/index.html, as make figures
// writes it, and every folder page it links: offline, every figure loads
// and every page shows its tables. It skips with a note when results/ has
// no index.html yet (make figures writes it).
func TestBrowserCommittedResults(t *testing.T) {
	index := filepath.Join("..", "..", "..", "results", pages.File)
	if _, err := os.Stat(index); err != nil {
		t.Skipf("no %s: make figures writes it (and a page in each results folder); skipped", index)
	}
	b := newBrowser(t)
	shots := artifactDir(t)
	b.open(t, index)
	var links []string
	b.eval(t, `Array.from(document.querySelectorAll('#folders a')).map(a => a.getAttribute('href'))`, &links)
	if len(links) == 0 {
		t.Fatalf("%s links no folder", index)
	}
	for _, l := range links {
		if !strings.HasSuffix(l, "/"+pages.File) {
			t.Errorf("%s: folder %s has no page", index, l)
			continue
		}
		page := filepath.Join(filepath.Dir(index), filepath.FromSlash(l))
		b.open(t, page)
		b.figuresLoad(t, page)
		var tables, rows int
		b.eval(t, `document.querySelectorAll('table.sortable').length`, &tables)
		b.eval(t, `document.querySelectorAll('table.sortable tbody tr').length`, &rows)
		if tables == 0 || rows == 0 {
			t.Errorf("%s: %d tables, %d rows", page, tables, rows)
		}
		var empty []string
		b.eval(t, `Array.from(document.querySelectorAll('div.timeline, div.chart')).filter(e => !(+(e.getAttribute('data-bars') || e.getAttribute('data-points')) > 0)).map(e => e.id)`, &empty)
		if len(empty) > 0 {
			t.Errorf("%s: timelines or charts that draw nothing: %v", page, empty)
		}
		b.screenshot(t, shots, "results-"+strings.ReplaceAll(filepath.Dir(l), "/", "-"))
	}
}
