package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
)

// TestProfileRefs checks the identity a run records of its profiles: the
// embedded one's file and hash, and a [costs] profile file's, with the
// compute curves the file kept from the embedded profile listed.
func TestProfileRefs(t *testing.T) {
	sc, err := Parse([]byte(searchBase), "s.toml")
	if err != nil {
		t.Fatal(err)
	}
	refs, err := sc.ProfileRefs()
	if err != nil {
		t.Fatal(err)
	}
	src, _ := calib.EmbeddedProfileSource("H800")
	sum := sha256.Sum256(src)
	if len(refs) != 1 || refs[0].Kind != "H800" || refs[0].Name != "H800" || refs[0].File != "calib/profiles/H800.toml" ||
		refs[0].SHA256 != hex.EncodeToString(sum[:]) || len(refs[0].Uncalibrated) != 0 {
		t.Errorf("embedded: %+v", refs)
	}
	// A profile file of the H100-SXM with its GEMM curve changed, on H20s.
	dir := t.TempDir()
	h100, _ := calib.EmbeddedProfileSource("H100-SXM")
	text := string(h100)
	i := strings.Index(text, "[gemm.max]")
	j := strings.Index(text[i:], "value = ") + i
	k := strings.Index(text[j:], "\n") + j
	text = text[:j] + "value = 0.7" + text[k:]
	if err := os.WriteFile(filepath.Join(dir, "mine.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s.toml")
	scen := strings.Replace(searchBase, `gpu = "H800"`, `gpu = "H20"`, 1) + "[costs]\nprofile = \"mine.toml\"\n"
	sc, err = Parse([]byte(scen), file)
	if err != nil {
		t.Fatal(err)
	}
	refs, err = sc.ProfileRefs()
	if err != nil {
		t.Fatal(err)
	}
	sum = sha256.Sum256([]byte(text))
	r := refs[0]
	if r.Kind != "H20" || r.Name != "H100-SXM" || r.File != filepath.Join(dir, "mine.toml") || r.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("profile file: %+v", r)
	}
	got := strings.Join(r.Uncalibrated, "\n")
	if strings.Contains(got, "gemm") || !strings.Contains(got, "attention_fwd (read at d_qk 128): not calibrated, from the embedded H100-SXM profile") ||
		strings.Contains(got, "d256") {
		t.Errorf("uncalibrated (Qwen3-30B, d_qk 128): %q", got)
	}
}

// TestProfileRefsMLA: for MLA's d_qk 192 a profile file without d192 curves
// reads (and here did not calibrate) the d-128 and d-256 curves and says
// that 192 is interpolated; with d192 curves it reads only those, and under
// FP8 training gemm_fp8 is read too.
func TestProfileRefsMLA(t *testing.T) {
	base, err := calib.LookupProfile("H800")
	if err != nil {
		t.Fatal(err)
	}
	mla := strings.Replace(searchBase, `preset = "qwen3-30b-a3b"`, `preset = "deepseek-v2-lite"`, 1)
	mla = strings.Replace(mla, "ep = 8", "ep = 8\nlast_stage_layers = 13", 1)
	refs := func(p *calib.Profile, scen string) string {
		t.Helper()
		dir := t.TempDir()
		data, err := p.MarshalTOML()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "mine.toml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := Parse([]byte(scen+"[costs]\nprofile = \"mine.toml\"\n"), filepath.Join(dir, "s.toml"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := sc.ProfileRefs()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(r[0].Uncalibrated, "\n")
	}
	got := refs(base, mla)
	for _, want := range []string{"attention_fwd (read at d_qk 192): not calibrated", "attention_bwd_d256 (read at d_qk 192): not calibrated", "attention at d_qk 192: no attention_fwd_d192"} {
		if !strings.Contains(got, want) {
			t.Errorf("MLA without d192 curves: %q lacks %q", got, want)
		}
	}
	with := *base
	with.AttentionFwdD192 = calib.Curve{Max: calib.Const{Value: 0.5, Source: "fit:m.csv"}, Half: calib.Const{Value: 900, Source: "fit:m.csv"}}
	with.AttentionBwdD192 = calib.Curve{Max: calib.Const{Value: 0.4, Source: "fit:m.csv"}, Half: calib.Const{Value: 900, Source: "fit:m.csv"}}
	fp8 := strings.Replace(mla, "[parallel]\n", "[parallel]\nprecision = \"fp8\"\n", 1)
	got = refs(&with, fp8)
	if strings.Contains(got, "attention") || !strings.Contains(got, "gemm_fp8 (read at d_qk 192): not calibrated") || !strings.Contains(got, "gemm (read") {
		t.Errorf("MLA with d192 curves, FP8: %q, want gemm and gemm_fp8 only", got)
	}
}
