package scenarios

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dcpsim/dcpsim/workload"
)

// LengthFilePath is the workload's length file resolved against the folder of
// the scenario file, or "" when the scenario draws from a distribution.
func (s *Scenario) LengthFilePath() string {
	f := s.Workload.File
	if f == "" || filepath.IsAbs(f) {
		return f
	}
	return filepath.Join(filepath.Dir(s.File), f)
}

// ReadLengthFile reads the workload's length file (text/CSV or JSONL, per
// Workload.Format). Problems in the file are reported as "file:line: ...".
func (s *Scenario) ReadLengthFile() ([]int, error) {
	lengths, err := ReadLengths(s.LengthFilePath(), s.Workload.Format, s.Workload.Field)
	var pe *os.PathError
	if errors.As(err, &pe) {
		return nil, &Error{File: s.File, Problems: []Problem{{Line: lineOf(s.lines, "workload.file"), Key: "workload.file",
			Message: fmt.Sprintf("workload.file = %q: %v", s.Workload.File, err)}}}
	}
	return lengths, err
}

// ReadLengths reads a length file: format "lengths" (one integer per line, or
// CSV with a length column), "jsonl" (field holds the length), or "" to choose
// by the extension (.jsonl). The readers bound the file's size while reading.
func ReadLengths(path, format, field string) ([]int, error) {
	if format == "" {
		format = "lengths"
		if strings.HasSuffix(path, ".jsonl") {
			format = "jsonl"
		}
	}
	if format != "lengths" && format != "jsonl" {
		return nil, fmt.Errorf("format = %q: must be lengths or jsonl", format)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if format == "jsonl" {
		return workload.ReadJSONL(f, path, field)
	}
	return workload.ReadLengths(f, path)
}

// NewSampler returns the scenario's batch sampler: from its distribution, or from
// its length file, which it reads.
func (s *Scenario) NewSampler() (*workload.Sampler, error) {
	spec := s.BatchSpec()
	if s.Workload.Distribution != nil {
		return workload.NewSampler(s.Workload.Distribution, spec)
	}
	lengths := s.lengths
	if lengths == nil {
		var err error
		if lengths, err = s.ReadLengthFile(); err != nil {
			return nil, err
		}
	}
	if err := s.checkLengths(lengths); err != nil { // a sweep point's batch may be larger
		return nil, err
	}
	return workload.NewListSampler(lengths, s.Workload.Order, spec)
}

// checkLengths bounds the sequences per batch a length file implies at this
// scenario's batch size.
func (s *Scenario) checkLengths(lengths []int) error {
	spec := s.BatchSpec()
	var sum float64
	for _, l := range lengths {
		sum += float64(min(l, s.Workload.ContextTokens))
	}
	if mean := sum / float64(len(lengths)); float64(spec.TargetTokens)/mean > MaxSequencesPerBatch {
		return &Error{File: s.File, Problems: []Problem{{Line: lineOf(s.lines, "workload.batch_tokens"), Key: "workload.batch_tokens",
			Message: fmt.Sprintf("workload.batch_tokens = %d: expected %.3g sequences per batch at the file's mean length of %.0f tokens; must be <= %d",
				spec.TargetTokens, float64(spec.TargetTokens)/mean, mean, MaxSequencesPerBatch)}}}
	}
	return nil
}
