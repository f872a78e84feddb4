package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/scenarios"
)

// readProfile parses and validates a written profile.
func readProfile(t *testing.T, path string) *calib.Profile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := calib.ParseProfile(data, path)
	if err != nil {
		t.Fatalf("the written profile does not parse: %v", err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("the written profile does not validate: %v", err)
	}
	return p
}

// cpuMeasurements are measurements `dcpsim calibrate --backend cpu` took
// and wrote (its first line says when and where): the fits below read them,
// never a CPU timed during the test, whose quality depends on the load.
const cpuMeasurements = "testdata/calibrate/cpu-measurements.csv"

// TestCalibrateCPUEndToEnd is the CI loop on recorded CPU measurements: fit
// them onto the CPU backend's base, write a profile the simulator accepts,
// its fitted curves sourced to the file and every other constant the base's.
func TestCalibrateCPUEndToEnd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cpu.toml")
	code, stdout, stderr := dcpsim(t, "calibrate", "--from", cpuMeasurements, "--base", defaultCPUBase, "--name", defaultCPUName, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{"curve", "R²", "Max × peak", "attention_fwd", "wrote profile"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	p := readProfile(t, out)
	// The simulator-facing cost model accepts it and prices operators with it.
	sc, err := scenarios.Preset("testbed-32k")
	if err != nil {
		t.Fatal(err)
	}
	comp, err := compute.NewCompute(p, sc.Job)
	if err != nil {
		t.Fatalf("compute.NewCompute rejects the calibrated profile: %v", err)
	}
	for name, v := range map[string]float64{
		"attention fwd": comp.AttentionFwdSeconds(4096, 1, 4096),
		"GEMM fwd":      comp.GEMMFwdSeconds(1, 4096),
		"θ/c":           comp.OverheadRatio(8, 4096),
	} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s with the calibrated profile = %v, want a positive finite number", name, v)
		}
	}
	if p.Name != defaultCPUName {
		t.Errorf("profile name %q, want %q", p.Name, defaultCPUName)
	}
	base, err := calib.LookupProfile(defaultCPUBase)
	if err != nil {
		t.Fatal(err)
	}
	if p.PeakBF16FLOPs != base.PeakBF16FLOPs || p.NICBytesPerSecond != base.NICBytesPerSecond || p.CollectiveInter != base.CollectiveInter {
		t.Error("unmeasured constants differ from the base profile")
	}
	fitted := 0
	for _, c := range []calib.Curve{p.GEMM, p.AttentionFwd, p.AttentionBwd, p.CollectiveIntra} {
		if c.Max.Source == "fit:"+cpuMeasurements && c.Half.Source == "fit:"+cpuMeasurements {
			fitted++
		}
	}
	if fitted < 2 {
		t.Errorf("only %d curves have source fit:%s\n%s", fitted, cpuMeasurements, stdout)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the output folder holds %d files, want the profile (no temporaries)", len(entries))
	}
}

// TestCalibrateCPUMeasures runs the CPU backend for a second: it writes its
// measurements (every operation kind, parseable) before the fit, and the
// fit either writes a profile that validates or, when the timings on a
// loaded machine fit no curve, fails (exit 1) and writes none. It
// checks the loop, never the timings' quality.
func TestCalibrateCPUMeasures(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cpu.toml")
	code, stdout, stderr := dcpsim(t, "calibrate", "--backend", "cpu", "--budget", "1s", "--out", out)
	if !strings.Contains(stderr, "GFLOP/s") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
	csvPath := filepath.Join(dir, "cpu.csv")
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatalf("no measurements written (exit %d): %v\n%s", code, err, stderr)
	}
	defer f.Close()
	ms, err := calib.ReadMeasurements(f, csvPath)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, m := range ms {
		ops[m.Operation] = true
	}
	for _, op := range []string{"gemm", "attention_fwd", "attention_bwd"} {
		if !ops[op] {
			t.Errorf("no %s measurement in %v", op, ops)
		}
	}
	switch code {
	case exitOK:
		readProfile(t, out)
	case exitFailure:
		if !strings.Contains(stderr, "no curve could be fitted") {
			t.Errorf("exit 1: %s", stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("a profile was written although nothing fitted")
		}
	default:
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// writeSyntheticCSV writes gemm and attention rows that lie exactly on known
// curves of the H20 profile's peak, and collective rows with too few sizes.
func writeSyntheticCSV(t *testing.T, path string, collectiveSizes int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# synthetic: gemm max 0.8 half 500, attention_fwd max 0.6 half 2000\n")
	b.WriteString(syntheticMeasurements())
	for i := range collectiveSizes {
		fmt.Fprintf(&b, "all_to_all_intra,ranks=8;bytes=%d,%g,5\n", 1<<(20+i), 1e-4*float64(i+1))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCalibrateFrom(t *testing.T) {
	dir := t.TempDir()
	csvPath, out := filepath.Join(dir, "h20.csv"), filepath.Join(dir, "h20-fit.toml")
	writeSyntheticCSV(t, csvPath, 2) // two collective sizes: collective_intra is refused
	code, stdout, stderr := dcpsim(t, "calibrate", "--from", csvPath, "--base", "H20", "--name", "H20-lab", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "collective_intra: not fitted, the base's values kept") {
		t.Errorf("the refused curve is not reported:\n%s", stdout)
	}
	p := readProfile(t, out)
	base, _ := calib.LookupProfile("H20")
	if p.Name != "H20-lab" {
		t.Errorf("name %q", p.Name)
	}
	if math.Abs(p.GEMM.Max.Value-0.8) > 1e-6 || math.Abs(p.GEMM.Half.Value-500) > 1e-3 || p.GEMM.Max.Source != "fit:"+csvPath {
		t.Errorf("gemm %+v, want max 0.8 half 500 from fit:%s", p.GEMM, csvPath)
	}
	if math.Abs(p.AttentionFwd.Max.Value-0.6) > 1e-6 || math.Abs(p.AttentionFwd.Half.Value-2000) > 1e-2 {
		t.Errorf("attention_fwd %+v, want max 0.6 half 2000", p.AttentionFwd)
	}
	if p.AttentionBwd != base.AttentionBwd || p.CollectiveIntra != base.CollectiveIntra || p.HBMBytes != base.HBMBytes {
		t.Error("constants without measurements differ from the base")
	}

	// Nothing fits: the file is bad input, and no profile is written.
	only := filepath.Join(dir, "collectives.csv")
	if err := os.WriteFile(only, []byte("operation,shape,seconds,repeats\nsend_recv_intra,ranks=2;bytes=1024,1e-5,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(dir, "none.toml")
	if code, stdout, stderr := dcpsim(t, "calibrate", "--from", only, "--base", "H20", "--out", none); code != exitInput || !strings.Contains(stderr, "no curve could be fitted") {
		t.Errorf("nothing fittable: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("a profile was written although nothing fitted: %v", err)
	}
}

func TestCalibrateBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "p.toml")
	good := filepath.Join(dir, "good.csv")
	writeSyntheticCSV(t, good, 3)
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("operation,shape,seconds,repeats\ngemm,m=1;n=2,-1,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bigBase := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(bigBase, []byte(strings.Repeat("#\n", 1<<19+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	unknownOp := filepath.Join(dir, "unknown.csv")
	if err := os.WriteFile(unknownOp, []byte("operation,shape,seconds,repeats\nfft,n=1024,1e-3,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--budget", "1s"}, "--out is required"},
		{[]string{"--backend", "tpu", "--out", out}, `--backend "tpu"`},
		{[]string{"--budget", "0s", "--out", out}, "--budget = 0s"},
		{[]string{"--budget", "soon", "--out", out}, "invalid value"},
		{[]string{"--bogus", "--out", out}, "flag provided but not defined"},
		{[]string{"--out", out, "extra"}, "unexpected arguments"},
		{[]string{"--out", filepath.Join(dir, "no", "such", "p.toml")}, "does not exist"},
		{[]string{"--out", out, "--measurements", out}, "same file"},
		{[]string{"--out", out, "--base", "Z80"}, `unknown GPU profile "Z80"`},
		{[]string{"--out", out, "--base", filepath.Join(dir, "missing.toml")}, "missing.toml"},
		{[]string{"--out", out, "--name", "no spaces"}, "--name"},
		{[]string{"--out", out, "--device", "1"}, "--device goes with --backend cuda"},
		{[]string{"--backend", "cuda", "--out", out}, "needs --base"},
		{[]string{"--backend", "cuda", "--base", "H200", "--workers", "2", "--out", out}, "--workers goes with --backend cpu"},
		{[]string{"--from", good, "--out", out}, "--from needs --base"},
		{[]string{"--from", good, "--base", "H20", "--budget", "1s", "--out", out}, "--budget goes with measuring"},
		{[]string{"--from", filepath.Join(dir, "nope.csv"), "--base", "H20", "--out", out}, "nope.csv"},
		{[]string{"--from", bad, "--base", "H20", "--out", out}, "bad.csv:2"},
		{[]string{"--from", unknownOp, "--base", "H20", "--out", out}, `unknown operation "fft"`},
		// Nonsense values used to be accepted or fail late with a confusing message.
		{[]string{"--workers", "100000", "--out", out}, "--workers = 100000: must be in [0, 1024]"},
		{[]string{"--workers", "-1", "--out", out}, "--workers = -1: must be in [0, 1024]"},
		{[]string{"--backend", "cuda", "--base", "H200", "--device", "5000", "--out", out}, "--device = 5000: must be in [0, 1023]"},
		{[]string{"--backend", "cuda", "--base", "H200", "--ranks", "2000", "--out", out}, "--ranks = 2000: must be in [0, 1024]"},
		{[]string{"--out", "/"}, "--out /: ends in a separator; give the file to write"},
		{[]string{"--out", dir}, "--out " + dir + ": is a folder; give the file to write"},
		{[]string{"--from", good, "--base", "H20", "--out", dir + "/"}, "--out " + dir + "/: ends in a separator"},
		{[]string{"--out", out, "--measurements", dir}, "--measurements " + dir + ": is a folder"},
		// Unbounded inputs are refused at their size limit (--from /dev/zero read 5 GB).
		{[]string{"--from", "/dev/zero", "--base", "H800", "--out", out}, "/dev/zero: line 1: file too large: a line longer than 65536 bytes"},
		{[]string{"--from", good, "--base", bigBase, "--out", out}, "--base: " + bigBase + ": file too large: more than 1048576 bytes"},
	} {
		args := append([]string{"calibrate"}, c.args...)
		code, stdout, stderr := dcpsim(t, args...)
		if code != exitInput || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("dcpsim %q: exit %d, want 2 with %q\nstdout: %s\nstderr: %s", args, code, c.want, stdout, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("bad input wrote %s", out)
	}
}

// TestCalibrateCUDAWithoutDevice: in a build without the cuda tag (or on a
// machine without a GPU) --backend cuda is a failure that says why.
func TestCalibrateCUDAWithoutDevice(t *testing.T) {
	out := filepath.Join(t.TempDir(), "h200.toml")
	code, _, stderr := dcpsim(t, "calibrate", "--backend", "cuda", "--base", "H200", "--budget", "1s", "--out", out)
	if code == exitOK {
		t.Skip("a CUDA device answered; this test is for builds without one")
	}
	if code != exitFailure || !strings.Contains(stderr, "no device") {
		t.Errorf("exit %d, want 1 naming the missing device; stderr: %s", code, stderr)
	}
	if code, stdout, _ := dcpsim(t, "help", "calibrate"); code != exitOK || !strings.Contains(stdout, "--from FILE.csv") {
		t.Errorf("help calibrate: exit %d\n%s", code, stdout)
	}
}
