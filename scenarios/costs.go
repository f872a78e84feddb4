package scenarios

import (
	"fmt"
	"path/filepath"

	"github.com/dcpsim/dcpsim/calib"
)

// ProfilePath is [costs] profile resolved against the scenario file's folder, or
// "" when the scenario uses the embedded profile of cluster.gpu.
func (s *Scenario) ProfilePath() string {
	f := s.ProfileFile
	if f == "" || filepath.IsAbs(f) {
		return f
	}
	return filepath.Join(filepath.Dir(s.File), f)
}

// Profile returns the calibration profile the scenario's costs come from: the
// file named by [costs] profile (for example one written by dcpsim calibrate),
// read (at most safeio.MaxProfileBytes) and validated now, or else the
// embedded profile of cluster.gpu.
func (s *Scenario) Profile() (*calib.Profile, error) {
	switch {
	case s.ProfileFile == "":
		return calib.LookupProfile(s.Job.Cluster.GPU)
	case s.profile != nil:
		return s.profile, nil
	}
	return s.readProfile()
}

// readProfile reads and validates the [costs] profile file.
func (s *Scenario) readProfile() (*calib.Profile, error) {
	p, err := calib.ReadProfileFile(s.ProfilePath())
	if err != nil {
		return nil, &Error{File: s.File, Problems: []Problem{{Line: lineOf(s.lines, "costs.profile"), Key: "costs.profile",
			Message: fmt.Sprintf("costs.profile = %q: %v", s.ProfileFile, err)}}}
	}
	return p, nil
}
