package calib

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gpuNames are the embedded profiles: the GPU kinds scenarios accept in
// cluster.gpu (scenarios checks against ProfileNames).
var gpuNames = []string{"A100-80G", "B200", "GB200-NVL72", "GB300-NVL72", "H100-96GB-500W", "H100-SXM", "H20", "H20-3e", "H200", "H800"}

func TestProfileNames(t *testing.T) {
	if got := ProfileNames(); !slices.Equal(got, gpuNames) {
		t.Errorf("ProfileNames() = %v, want %v", got, gpuNames)
	}
	_, err := LookupProfile("H1000")
	if err == nil || !strings.Contains(err.Error(), `unknown GPU profile "H1000"`) || !strings.Contains(err.Error(), "H100-SXM, H20") {
		t.Errorf("LookupProfile(H1000) error %v, want one listing the known names", err)
	}
}

// TestEmbeddedProfiles: every embedded profile parses, validates, is in the
// canonical form WriteTOML writes, and round-trips; LookupProfile returns copies.
func TestEmbeddedProfiles(t *testing.T) {
	for _, name := range ProfileNames() {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		raw, err := profileFS.ReadFile("profiles/" + name + ".toml")
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.MarshalTOML()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, raw) {
			t.Errorf("%s: the embedded file is not in WriteTOML's canonical form", name)
		}
		back, err := ParseProfile(out, name)
		if err != nil {
			t.Fatal(err)
		}
		if *back != *p {
			t.Errorf("%s: the profile does not round-trip through WriteTOML and ParseProfile", name)
		}
		p.GEMM.Max.Value = 0.01
		if q, _ := LookupProfile(name); q.GEMM.Max.Value == 0.01 {
			t.Errorf("%s: LookupProfile shares its result", name)
		}
	}
}

// TestEmbeddedEfficienciesAtMostOne: no embedded curve promises more than its
// peak: every Max is at most 1 and so is η(x) at every size, from one token or
// byte to far past any real size.
func TestEmbeddedEfficienciesAtMostOne(t *testing.T) {
	for _, name := range ProfileNames() {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range curveKeys {
			c, _ := p.curve(key)
			if c.Max.Value > 1 {
				t.Errorf("%s: %s.max = %v > 1", name, key, c.Max.Value)
			}
			for x := 1.0; x <= 1e15; x *= 2 {
				if eta := c.At(x); !(eta >= 0 && eta <= 1) {
					t.Errorf("%s: %s η(%g) = %v, outside [0, 1]", name, key, x, eta)
					break
				}
			}
		}
	}
}

// TestRoundTripFittedValues: arbitrary floats and sources with quotes, backslashes
// and non-ASCII survive WriteTOML and ParseProfile exactly.
func TestRoundTripFittedValues(t *testing.T) {
	p, err := LookupProfile("H800")
	if err != nil {
		t.Fatal(err)
	}
	p.AttentionFwd.Max = Const{Value: 0.1 + 0.2, Source: `fit:"meas".csv \ η×2`}
	p.AttentionFwd.Half = Const{Value: 1.0 / 3 * 1e3, Source: "tab\there"}
	p.GPUsPerNode.Value = 72
	p.Description = ""
	var b bytes.Buffer
	if err := p.WriteTOML(&b); err != nil {
		t.Fatal(err)
	}
	back, err := ParseProfile(b.Bytes(), "x.toml")
	if err != nil {
		t.Fatal(err)
	}
	if *back != *p {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, p)
	}
	p.GEMM.Half.Source = ""
	if err := p.WriteTOML(&b); err == nil {
		t.Error("WriteTOML wrote a constant without a source")
	}
}

// pageRE matches a source that cites a web page by host and path, e.g.
// "docs.nvidia.com/dgx/dgxgb200-user-guide/hardware.html: ...".
var pageRE = regexp.MustCompile(`^[a-z0-9-]+(\.[a-z0-9-]+)+\.[a-z]{2,}/[^ ]*: `)

// TestProvenance: every embedded constant has a source in one of the accepted
// forms, and every "fit:calib/testdata/<file>" constant is what fitting that
// file against the profile's own peaks gives (to the 4 digits written).
func TestProvenance(t *testing.T) {
	fitRE := regexp.MustCompile(`^fit:calib/testdata/([a-z0-9_]+\.csv) \(.+\)`)
	for _, name := range ProfileNames() {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range constSpecs() {
			c := s.get(p)
			if s.optional && c.absent() {
				continue // an optional constant left out
			}
			src := c.Source
			key := name + ": " + s.key
			switch {
			case strings.HasPrefix(src, "fit:validation/atscale.csv"):
				// Fitted on half of the at-scale validation table; the refit is
				// experiment's TestSustainedEfficiencyFits (calib cannot run
				// the engine).
			case strings.HasPrefix(src, "fit:calib/testdata/collective_scale.csv"):
				checkScaleSource(t, key, s.key, c.Value)
			case strings.HasPrefix(src, "fit:"):
				m := fitRE.FindStringSubmatch(src)
				if m == nil {
					t.Errorf("%s: source %q: want fit:calib/testdata/<file>.csv (<citation>)", key, src)
					continue
				}
				curveKey, field, _ := strings.Cut(s.key, ".")
				fitted, rep := fitTestdata(t, m[1], p)
				if rep.Curve != curveKey {
					t.Errorf("%s: cites %s, which fits %s", key, m[1], rep.Curve)
					continue
				}
				want := fitted.Max.Value
				if field == "half" {
					want = fitted.Half.Value
				}
				if math.Abs(c.Value/want-1) > 5e-4 {
					t.Errorf("%s = %v, but fitting %s gives %v", key, c.Value, m[1], want)
				}
			case strings.HasPrefix(src, "measurement: "):
				checkMeasurementSource(t, key, src)
			case strings.HasPrefix(src, "assumption: "), strings.Contains(src, "[R"), strings.Contains(src, "arxiv.org/"),
				strings.HasPrefix(src, "github.com/"), pageRE.MatchString(src):
				// A stated assumption or a cited source (a costmodel.md reference,
				// a paper, a file or thread of a public repository, or a vendor's
				// datasheet or documentation page).
			default:
				t.Errorf("%s: source %q: want a [Rn] reference, a paper, github.com/<owner>/<repo> ..., a page (host/path: ...), fit:calib/testdata/... or assumption: ...", key, src)
			}
			if strings.Contains(src, "fit:calib/testdata/") {
				file := regexp.MustCompile(`fit:calib/testdata/([a-z0-9_]+\.csv)`).FindStringSubmatch(src)[1]
				if _, err := os.Stat(filepath.Join("testdata", file)); err != nil {
					t.Errorf("%s: cites a missing file: %v", key, err)
				}
			}
		}
	}
}

// measurementRE is the form of a "measurement:" source: a file in the
// repository, committed with the script or test that produced it, and how.
var measurementRE = regexp.MustCompile(`^measurement: ((?:calib|sched/mcore/testdata)/[a-z0-9_/.-]+\.(?:csv|jsonl)) \(.+\)`)

// checkMeasurementSource checks that src has measurementRE's form and that the
// file it cites exists (paths are relative to the repository root).
func checkMeasurementSource(t *testing.T, key, src string) {
	t.Helper()
	m := measurementRE.FindStringSubmatch(src)
	if m == nil {
		t.Errorf("%s: source %q: want measurement: calib/<file>.csv (<how>) or sched/mcore/testdata/<file>.jsonl (<how>)", key, src)
		return
	}
	if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
		t.Errorf("%s: cites a missing file: %v", key, err)
	}
}

// TestProfilesAgreeWithCostmodel spot-checks the §0 table of costmodel.md.
func TestProfilesAgreeWithCostmodel(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		peakT, hbmGB, bwTB, nvlGB float64
	}{
		{"A100-80G", 312, 80, 2.0, 274},
		{"H100-SXM", 989, 80, 3.35, 376},
		{"H800", 989, 80, 3.35, 160},
		{"H200", 989, 141, 4.8, 396.4},
		{"H20", 148, 96, 4.0, 360},
		{"H20-3e", 148, 141, 4.8, 360},
		{"B200", 2250, 180, 8.0, 746},
	} {
		p, err := LookupProfile(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		got := []float64{p.PeakBF16FLOPs.Value / 1e12, p.HBMBytes.Value / 1e9, p.HBMBytesPerSecond.Value / 1e12, p.NVLinkBytesPerSecond.Value / 1e9}
		if want := []float64{tc.peakT, tc.hbmGB, tc.bwTB, tc.nvlGB}; !slices.Equal(got, want) {
			t.Errorf("%s: peak TFLOPS, HBM GB, HBM TB/s, NVLink GB/s = %v, want %v", tc.name, got, want)
		}
	}
	// The H20's FA3 point [R4] and the B200's FA4 point [R16b] are reproduced.
	h20, _ := LookupProfile("H20")
	if eta := h20.AttentionFwd.At(2048); math.Abs(eta-108.0/148) > 1e-3 {
		t.Errorf("H20 attention fwd η(2K) = %.4f, want 108/148 = %.4f", eta, 108.0/148)
	}
	b200, _ := LookupProfile("B200")
	if eta := b200.AttentionFwd.At(8192); math.Abs(eta-1418.0/2250) > 1e-3 {
		t.Errorf("B200 attention fwd η(8K) = %.4f, want 1418/2250", eta)
	}
}

func TestParseProfileStrict(t *testing.T) {
	raw, err := profileFS.ReadFile("profiles/H20.toml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	for _, tc := range []struct {
		name, edit string
		want       []string
	}{
		{"unknown key", strings.Replace(src, "[gemm.max]\nvalue", "[gemm.max]\nvalu = 1\nvalue", 1), []string{"x.toml:", "unknown key gemm.max.valu"}},
		{"unknown table", src + "\n[nvlink_latency]\nvalue = 1.0\nsource = \"x\"\n", []string{"unknown key nvlink_latency"}},
		{"no source", strings.Replace(src, `source = "github.com/facebookresearch/HolisticTraceAnalysis`, `source = "" # `, 1), []string{"kernel_launch_seconds.source: empty"}},
		{"out of range", strings.Replace(src, "value = 9.6e+10", "value = 96.0", 1), []string{"hbm_bytes.value = 96"}},
		{"max above 1", strings.Replace(src, "[gemm.max]\nvalue = 0.9562", "[gemm.max]\nvalue = 1.001", 1), []string{"gemm.max.value = 1.001", "(0, 1]"}},
		{"fractional GPUs", strings.Replace(src, "value = 8.0", "value = 7.5", 1), []string{"gpus_per_node.value = 7.5", "integer"}},
		{"bad name", strings.Replace(src, `name = "H20"`, `name = "H 20"`, 1), []string{`name = "H 20"`}},
		{"syntax", src + "\n[oops\n", []string{"x.toml:"}},
		{"moved CPython cost", strings.Replace(src, "[gemm.max]", "[cpython_heap_op_seconds]\nvalue = 6.159e-07\nsource = \"x\"\n\n[gemm.max]", 1),
			[]string{"x.toml:", "unknown key cpython_heap_op_seconds: ", "calib.CPython.HeapOpSeconds"}},
		{"wrong type", strings.Replace(src, "[gemm.max]\nvalue = 0.9562", "[gemm.max]\nvalue = \"high\"", 1), []string{"x.toml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit == src {
				t.Fatal("the edit did not apply")
			}
			_, err := ParseProfile([]byte(tc.edit), "x.toml")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// The line of an unknown key is reported.
	edit := strings.Replace(src, "[gemm.max]\nvalue", "[gemm.max]\nvalu = 1\nvalue", 1)
	line := strings.Count(edit[:strings.Index(edit, "valu = 1")], "\n") + 1
	if _, err := ParseProfile([]byte(edit), "x.toml"); err == nil || !strings.Contains(err.Error(), "x.toml:"+strconv.Itoa(line)+": unknown key") {
		t.Errorf("error %v, want one at line %d", err, line)
	}
	// An unknown table is one error, not one per key in it.
	if _, err := ParseProfile([]byte(src+"\n[nvlink_latency]\nvalue = 1.0\nsource = \"x\"\n"), "x.toml"); err == nil || strings.Count(err.Error(), "unknown key") != 1 {
		t.Errorf("unknown table: error %v, want one unknown key", err)
	}
}

// checkScaleSource checks a constant fitted to
// calib/testdata/collective_scale.csv: all_to_all_inter_scale is the largest
// A that FitScale finds on the bandwidth-bound InfiniBand and RoCE
// all-to-all families (0 when none degrades), and all_to_all_inter.max is
// the lowest NIC-side rate of DeepEP V1's normal kernels on 4 and 8 nodes
// over the H800 profile's 48 GB/s NIC.
func checkScaleSource(t *testing.T, key, spec string, value float64) {
	t.Helper()
	pts := loadCollectiveScale(t)
	switch spec {
	case "all_to_all_inter_scale":
		want := 0.0
		for _, f := range []struct{ source, gpu, fabric, op, alg string }{
			{srcDeepEPV1, "H800", "ib", "dispatch", "DeepEP-V1-LL"},
			{srcDeepEPV1, "H800", "ib", "combine", "DeepEP-V1-LL"},
			{srcUCCLEP, "MI300X", "ib", "dispatch", "UCCL-EP-normal-FP8"},
			{srcUCCLEP, "MI300X", "ib", "dispatch", "UCCL-EP-normal-BF16"},
			{srcUCCLEP, "MI300X", "ib", "combine", "UCCL-EP-normal"},
			{srcUCCLEP, "MI300X", "roce", "dispatch", "UCCL-EP-normal-FP8"},
		} {
			c, err := FitScale(scaleFamily(t, pts, f.source, f.gpu, f.fabric, f.op, f.alg))
			if err != nil {
				t.Fatal(err)
			}
			want = max(want, c.A)
		}
		if value != want {
			t.Errorf("%s = %v, but the bandwidth-bound IB and RoCE fits give %v", key, value, want)
		}
	case "all_to_all_inter.max":
		low := math.Inf(1)
		for _, p := range scaleFamily(t, pts, srcDeepEPV1, "H800", "ib", "dispatch", "DeepEP-V1-normal") {
			if p.Nodes >= 4 {
				low = min(low, p.WireGBps())
			}
		}
		if want := low / 48; math.Abs(value/want-1) > 5e-4 {
			t.Errorf("%s = %v, but DeepEP's lowest NIC-side rate on 4-8 nodes is %.1f of 48 GB/s = %v", key, value, low, want)
		}
	default:
		t.Errorf("%s: cites collective_scale.csv, which fits only all_to_all_inter_scale and all_to_all_inter.max", key)
	}
}
