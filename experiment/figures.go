package experiment

import "github.com/dcpsim/dcpsim/results"

// Drawer draws the figures of a results folder into dir and returns the
// names it wrote. dcpsim's CLI passes report.Figures; a nil Drawer draws
// none. Being an interface keeps experiment, and any program that runs
// scenarios through it, free of the plotting stack.
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
}
