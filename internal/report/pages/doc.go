// Package pages writes the HTML page of a results folder (index.html) and
// the index of the results folders under a root: self-contained pages that
// open from file:// with no network. A page is a Doc (sections of sortable
// tables, figures, pipeline timelines and charts) that internal/report
// builds from the results package's types; pages renders it with
// html/template, its styles and script inline, its figures relative
// (<img src="NAME.svg">), its timelines and charts drawn in the browser
// from their data embedded as JSON.
package pages
