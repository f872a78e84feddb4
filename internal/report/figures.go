package report

import "github.com/dcpsim/dcpsim/results"

// Figures draws results folders' figures: the Drawer the CLI hands to
// experiment (experiment.Drawer), so that experiment never imports the
// plotting stack.
type Figures struct{}

// RunFigures draws a run's figures (WriteRunFigures).
func (Figures) RunFigures(dir string, s *results.Summary, rows []results.IterationRow, tls []results.Timeline) ([]string, error) {
	return WriteRunFigures(dir, s, rows, tls)
}

// SweepFigures draws a sweep's figures and its timing figures
// (WriteSweepFigures, WriteSweepTimingFigures).
func (Figures) SweepFigures(dir string, pts []results.SweepPoint, t *results.SweepTimings) ([]string, error) {
	names, err := WriteSweepFigures(dir, pts)
	if err != nil {
		return nil, err
	}
	more, err := WriteSweepTimingFigures(dir, pts, t)
	return append(names, more...), err
}

// SearchFigures draws a search's figures (WriteSearchFigures).
func (Figures) SearchFigures(dir string, cands []results.SearchRow) ([]string, error) {
	return WriteSearchFigures(dir, cands)
}

// ValidationFigures draws a validation's predicted-against-measured figure.
func (Figures) ValidationFigures(dir string, rs []results.ValidationResult) ([]string, error) {
	return ValidationFigures(dir, rs)
}
