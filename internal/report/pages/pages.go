package pages

import (
	"embed"
	"html/template"
	"io"
	"math"
	"strconv"
)

// File is the name of a results folder's page.
const File = "index.html"

// Doc is one page: a title, lines under it, sections, and the folder's
// files.
type Doc struct {
	// Title is the page's heading and title; Kind what the folder is
	// ("run", "sweep", "search", "compare", "validation", "index").
	Title string
	Kind  string
	// Lines are short paragraphs under the title (the layout, the rules).
	Lines []string
	// Sections are the page's parts in order; the page's contents list
	// links each by its ID.
	Sections []Section
	// Files are the folder's files, linked at the end.
	Files []Link
}

// Section is one part of a page: text, then its tables, charts, timelines
// and figures.
type Section struct {
	// ID is the section's anchor (unique in the page); Title its heading.
	ID, Title string
	// Text are paragraphs; Notes a list under them.
	Text  []string
	Notes []string
	// Tables, Charts, Timelines and Figures, in that order.
	Tables    []*Table
	Charts    []*Chart
	Timelines []*Timeline
	Figures   []Figure
	// Links are a list of links (the index of folders).
	Links []Link
}

// Link is a link with its text; Note follows it.
type Link struct {
	Text, Href, Note string
}

// Figure is a figure drawn into the folder (an SVG file), shown inline
// with its caption.
type Figure struct {
	// Src is the file, relative to the page; Alt its short name.
	Src, Alt string
	// Caption says what it shows.
	Caption string
}

// Table is a table whose rows sort by any column (a click on its header);
// each column's meaning shows on hover.
type Table struct {
	// ID is the table's id in the page (unique); Caption its title.
	ID, Caption string
	Columns     []Column
	Rows        []Row
	// Note follows the table (what it leaves out, where the rest is).
	Note string
}

// Column is a table's column: its header, what it means, and whether its
// cells are text (left-aligned, sorted as text) or numbers.
type Column struct {
	Name, Meaning string
	Text          bool
}

// Row is one row of a table; Class marks it ("leader", "tie", "answer",
// "significant", "failed"), Title says why on hover.
type Row struct {
	Class, Title string
	Cells        []Cell
}

// Cell is one cell: its text, the key it sorts by ("" sorts last), and
// an optional link.
type Cell struct {
	Text, Key, Href string
}

// Num is a number cell: v formatted with strconv's 'f' at prec digits,
// sorted by v; NaN and infinities show as "-" and sort last.
func Num(v float64, prec int) Cell {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Cell{Text: "-"}
	}
	return Cell{Text: strconv.FormatFloat(v, 'f', prec, 64), Key: key(v)}
}

// NumText is a number cell shown as text and sorted by v.
func NumText(text string, v float64) Cell {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Cell{Text: text}
	}
	return Cell{Text: text, Key: key(v)}
}

// Text is a text cell.
func Text(s string) Cell { return Cell{Text: s, Key: s} }

// key is v as a sort key.
func key(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

//go:embed assets
var assets embed.FS

// page is the page template; its style and script are inline constants.
var (
	page   = template.Must(template.New("page.html.tmpl").ParseFS(assets, "assets/page.html.tmpl"))
	style  = template.CSS(mustRead("assets/page.css"))
	script = template.JS(mustRead("assets/page.js"))
)

// mustRead is an embedded asset's text.
func mustRead(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Write renders d as a self-contained HTML page.
func Write(w io.Writer, d *Doc) error {
	return page.Execute(w, struct {
		*Doc
		Style  template.CSS
		Script template.JS
	}{d, style, script})
}
