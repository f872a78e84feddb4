package report

import "github.com/dcpsim/dcpsim/results"

// Figures draws results folders' figures and writes their pages: the
// Drawer the CLI hands to experiment (experiment.Drawer), so that
// experiment never imports the plotting stack.
type Figures struct {
	// NoFigures draws no figure (--no-figures); the pages are still
	// written.
	NoFigures bool
}

// Page writes the folder's index.html (WritePage).
func (f Figures) Page(dir string, p *results.Page) (string, error) {
	return WritePage(dir, p)
}

// RunFigures draws a run's figures (WriteRunFigures).
func (f Figures) RunFigures(dir string, s *results.Summary, rows []results.IterationRow, tls []results.Timeline) ([]string, error) {
	if f.NoFigures {
		return nil, nil
	}
	return WriteRunFigures(dir, s, rows, tls)
}

// SweepFigures draws a sweep's figures and its timing figures
// (WriteSweepFigures, WriteSweepTimingFigures).
func (f Figures) SweepFigures(dir string, pts []results.SweepPoint, t *results.SweepTimings) ([]string, error) {
	if f.NoFigures {
		return nil, nil
	}
	names, err := WriteSweepFigures(dir, pts)
	if err != nil {
		return nil, err
	}
	more, err := WriteSweepTimingFigures(dir, pts, t)
	return append(names, more...), err
}

// SearchFigures draws a search's figures (WriteSearchFigures).
func (f Figures) SearchFigures(dir string, cands []results.SearchRow) ([]string, error) {
	if f.NoFigures {
		return nil, nil
	}
	return WriteSearchFigures(dir, cands)
}

// ValidationFigures draws a validation's predicted-against-measured figure.
func (f Figures) ValidationFigures(dir string, rs []results.ValidationResult) ([]string, error) {
	if f.NoFigures {
		return nil, nil
	}
	return ValidationFigures(dir, rs)
}
