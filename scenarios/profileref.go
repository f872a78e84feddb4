package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/internal/safeio"
)

// ProfileRef identifies one calibration profile a run priced a GPU kind
// with: summary.json's and manifest.json's "profiles".
type ProfileRef struct {
	// Kind is the cluster's GPU kind (cluster.gpu or a pool's gpu) it prices.
	Kind string `json:"kind"`
	// Name is the profile's own name (it may differ from Kind with a [costs]
	// profile file).
	Name string `json:"name"`
	// File is calib/profiles/<name>.toml for an embedded profile, else the
	// [costs] profile file as resolved; SHA256 is the SHA-256 of its text.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Uncalibrated lists the compute curves the job's model reads that a
	// [costs] profile file kept from the embedded profile of its name (did
	// not calibrate); empty for an embedded profile.
	Uncalibrated []string `json:"uncalibrated,omitempty"`
}

// ProfileRefs returns the identity of each profile the scenario's costs
// come from, in rank order (job.Cluster.Kinds).
func (s *Scenario) ProfileRefs() ([]ProfileRef, error) {
	profs, err := s.Profiles()
	if err != nil {
		return nil, err
	}
	kinds := s.Job.Cluster.Kinds()
	out := make([]ProfileRef, len(profs))
	for i, p := range profs {
		ref := ProfileRef{Kind: kinds[i].GPU, Name: p.Name}
		var data []byte
		if s.ProfileFile != "" && !s.Job.Cluster.Mixed() {
			ref.File = s.ProfilePath()
			data, err = safeio.ReadFile(ref.File, safeio.MaxProfileBytes)
			ref.Uncalibrated = s.uncalibrated(p)
		} else {
			ref.File = "calib/profiles/" + p.Name + ".toml"
			data, err = calib.EmbeddedProfileSource(p.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", ref.File, err)
		}
		sum := sha256.Sum256(data)
		ref.SHA256 = hex.EncodeToString(sum[:])
		out[i] = ref
	}
	return out, nil
}

// uncalibrated lists the compute curves the model reads (gemm, and the
// attention curves of its head dimension: the d-128 ones below 256, the
// d-256 ones above 128, calib.Compute.AttentionEfficiency) that a profile
// file kept from the embedded profile of its name, i.e. did not calibrate.
func (s *Scenario) uncalibrated(p *calib.Profile) []string {
	base, err := calib.LookupProfile(p.Name)
	if err != nil {
		return nil // not derived from an embedded profile: every constant is its own
	}
	d := s.Job.Model.HeadDimQK
	type curve struct {
		key        string
		own, embed calib.Curve
	}
	read := []curve{{calib.CurveGEMM, p.GEMM, base.GEMM}}
	if d < 256 {
		read = append(read, curve{calib.CurveAttentionFwd, p.AttentionFwd, base.AttentionFwd}, curve{calib.CurveAttentionBwd, p.AttentionBwd, base.AttentionBwd})
	}
	if d > 128 {
		read = append(read, curve{calib.CurveAttentionFwdD256, p.AttentionFwdD256, base.AttentionFwdD256},
			curve{calib.CurveAttentionBwdD256, p.AttentionBwdD256, base.AttentionBwdD256})
	}
	var out []string
	for _, c := range read {
		if c.own == c.embed {
			out = append(out, fmt.Sprintf("%s (read at d_qk %d): not calibrated, from the embedded %s profile", c.key, d, p.Name))
		}
	}
	return out
}
