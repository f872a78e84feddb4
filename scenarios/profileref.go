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

// uncalibrated lists the compute curves the model reads (gemm, gemm_fp8
// under FP8 training, and the attention curves of its head dimension,
// compute.Compute.AttentionEfficiency: the neighbouring knots of d_qk among 128,
// 192 when the profile has the d192 curves, and 256) that a profile file kept
// from the embedded profile of its name, i.e. did not calibrate, and says
// when MLA's d_qk 192 is interpolated for want of d192 curves.
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
	if s.Job.Parallel.FP8() {
		read = append(read, curve{calib.CurveGEMMFP8, p.GEMMFP8, base.GEMMFP8})
	}
	lo, hi := 128, 256
	d192 := p.HasCurve(calib.CurveAttentionFwdD192)
	if d192 && d > 128 && d < 256 {
		if d <= 192 {
			hi = 192
		} else {
			lo = 192
		}
	}
	if d < hi {
		switch lo {
		case 128:
			read = append(read, curve{calib.CurveAttentionFwd, p.AttentionFwd, base.AttentionFwd}, curve{calib.CurveAttentionBwd, p.AttentionBwd, base.AttentionBwd})
		case 192:
			read = append(read, curve{calib.CurveAttentionFwdD192, p.AttentionFwdD192, base.AttentionFwdD192}, curve{calib.CurveAttentionBwdD192, p.AttentionBwdD192, base.AttentionBwdD192})
		}
	}
	if d > lo {
		switch hi {
		case 192:
			read = append(read, curve{calib.CurveAttentionFwdD192, p.AttentionFwdD192, base.AttentionFwdD192}, curve{calib.CurveAttentionBwdD192, p.AttentionBwdD192, base.AttentionBwdD192})
		case 256:
			read = append(read, curve{calib.CurveAttentionFwdD256, p.AttentionFwdD256, base.AttentionFwdD256}, curve{calib.CurveAttentionBwdD256, p.AttentionBwdD256, base.AttentionBwdD256})
		}
	}
	var out []string
	for _, c := range read {
		if c.own == c.embed {
			out = append(out, fmt.Sprintf("%s (read at d_qk %d): not calibrated, from the embedded %s profile", c.key, d, p.Name))
		}
	}
	if !d192 && d > 128 && d < 256 {
		out = append(out, fmt.Sprintf("attention at d_qk %d: no attention_fwd_d192/attention_bwd_d192 curves, so interpolated between the d-128 and d-256 ones (measure d_qk 192 and fit to calibrate it)", d))
	}
	return out
}
