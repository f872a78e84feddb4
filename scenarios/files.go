package scenarios

import "github.com/dcpsim/dcpsim/calib"

// LoadFiles reads and validates the files a scenario refers to, [costs]
// profile and workload.file, and keeps them, so a scenario that parses but
// names a missing or broken file is bad input when it is loaded (exit 2,
// file:line:key), never a failure half-way through a run. Load and Resolve
// call it; a scenario from Parse alone reads its files when Profile or
// NewSampler first needs them.
func (s *Scenario) LoadFiles() error {
	if s.ProfileFile != "" && s.profile == nil {
		p, err := s.readProfile()
		if err != nil {
			return err
		}
		s.profile = p
	}
	if s.Workload.File != "" && s.lengths == nil {
		lengths, err := s.ReadLengthFile()
		if err != nil {
			return err
		}
		if err := s.checkLengths(lengths); err != nil {
			return err
		}
		s.lengths = lengths
	}
	return nil
}

// loaded are the files LoadFiles read (nil until then).
type loaded struct {
	profile *calib.Profile
	lengths []int
}
