package experiment

import (
	"slices"

	"github.com/dcpsim/dcpsim/results"
)

// Drawer draws the figures of a results folder into dir and returns the
// names it wrote, and writes the folder's page. dcpsim's CLI passes
// report.Figures; a nil Drawer draws none and writes no page. Being an
// interface keeps experiment, and any program that runs scenarios through
// it, free of the plotting stack.
type Drawer interface {
	// RunFigures draws a run's figures from its summary, iterations and
	// timelines.
	RunFigures(dir string, s *results.Summary, rows []results.IterationRow, tls []results.Timeline) ([]string, error)
	// SweepFigures draws a sweep's figures from its points and timings.
	SweepFigures(dir string, pts []results.SweepPoint, t *results.SweepTimings) ([]string, error)
	// SearchFigures draws a search's figures from its candidates.
	SearchFigures(dir string, cands []results.SearchRow) ([]string, error)
	// ValidationFigures draws a validation's predicted-against-measured
	// figure.
	ValidationFigures(dir string, rs []results.ValidationResult) ([]string, error)
	// Page writes the folder's page, index.html, from what p holds (the
	// folder's files among it, written before) and returns its name.
	Page(dir string, p *results.Page) (string, error)
}

// writePage writes dir's page through figures (none when nil) and
// returns the names written; files are the folder's other files, more
// those written after the page (the manifest).
func writePage(figures Drawer, dir string, p results.Page, files []string, more ...string) ([]string, error) {
	if figures == nil {
		return nil, nil
	}
	p.Files = slices.Sorted(slices.Values(append(slices.Clone(files), more...)))
	name, err := figures.Page(dir, &p)
	if err != nil {
		return nil, err
	}
	return []string{name}, nil
}
