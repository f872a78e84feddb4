package calib

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// syntheticNCCLTests is an nccl-tests output of program over ranks on hosts
// (ranks/hosts each) whose times follow the cost model's collective curve
// η(B) = max·B/(B + half) against link bytes/s: the fit must recover them.
func syntheticNCCLTests(t testing.TB, kind, program string, ranks, hosts int, link, max, half float64, asJSON bool) string {
	t.Helper()
	g := ranks / hosts
	type row struct{ size, us, algbw float64 }
	var rows []row
	for size := float64(1 << 16); size <= 1<<32; size *= 2 {
		bus, err := BusBytes(kind, hosts > 1, size, float64(ranks), float64(g))
		if err != nil {
			t.Fatal(err)
		}
		sec := bus / (link * max * size / (size + half))
		rows = append(rows, row{size, sec * 1e6, size / sec / 1e9})
	}
	if asJSON {
		type place struct {
			Time  float64 `json:"time"`
			AlgBW float64 `json:"alg_bw"`
			BusBW float64 `json:"bus_bw"`
			Wrong any     `json:"nwrong"`
		}
		type res struct {
			Size       float64 `json:"size"`
			Count      float64 `json:"count"`
			Type       string  `json:"type"`
			OutOfPlace place   `json:"out_of_place"`
			InPlace    place   `json:"in_place"`
		}
		type dev struct {
			Rank     int    `json:"rank"`
			Hostname string `json:"hostname"`
			Info     string `json:"device_info"`
		}
		var doc struct {
			Version int      `json:"version"`
			Args    []string `json:"args"`
			Config  struct {
				Devices []dev `json:"devices"`
			} `json:"config"`
			Results []res `json:"results"`
		}
		doc.Version, doc.Args = 3, []string{"./build/" + program, "-b", "64K"}
		for r := range ranks {
			doc.Config.Devices = append(doc.Config.Devices, dev{r, fmt.Sprintf("node%d", r/g), "NVIDIA H100 80GB HBM3"})
		}
		for _, r := range rows {
			p := place{r.us, r.algbw, 0, 0}
			doc.Results = append(doc.Results, res{r.size, r.size / 4, "float", p, p})
		}
		b, _ := json.Marshal(doc)
		return string(b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703\n# Collective test starting: %s\n# Using devices\n", program)
	for r := range ranks {
		fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:%02x:00] NVIDIA H100 80GB HBM3\n", r, 1000+r, fmt.Sprintf("node%d", r/g), r%g, r)
	}
	b.WriteString("#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
	b.WriteString("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%12.0f  %12.0f  %8s  %6s  %6s  %7.6g  %6.6g  %6.6g  %6s  %7.6g  %6.6g  %6.6g  %6s\n",
			r.size, r.size/4, "float", "sum", "-1", r.us, r.algbw, 0.0, "0", r.us, r.algbw, 0.0, "0")
	}
	b.WriteString("# Out of bounds values : 0 OK\n")
	return b.String()
}

// TestNCCLTestsFitRecovers: outputs generated from known curves, in text and
// JSON, intra- and inter-node, fit back to those curves.
func TestNCCLTestsFitRecovers(t *testing.T) {
	base, err := LookupProfile("H100-SXM")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, program string
		ranks, hosts  int
		curve         func(*Profile) Curve
		link          float64
		max, half     float64
	}{
		{KindAllReduce, "all_reduce_perf", 8, 1, func(p *Profile) Curve { return p.CollectiveIntra }, base.NVLinkBytesPerSecond.Value, 0.81, 3e6},
		{KindAllGather, "all_gather_perf", 16, 2, func(p *Profile) Curve { return p.CollectiveInter }, base.NICBytesPerSecond.Value, 0.77, 8e6},
		{KindAllToAll, "alltoall_perf", 32, 4, func(p *Profile) Curve { return p.AllToAllInter }, base.NICBytesPerSecond.Value, 0.66, 5e5},
		{KindSendRecv, "sendrecv_perf", 16, 2, func(p *Profile) Curve { return p.SendRecvInter }, base.NICBytesPerSecond.Value, 0.9, 1e6},
	} {
		for _, asJSON := range []bool{false, true} {
			src := syntheticNCCLTests(t, c.kind, c.program, c.ranks, c.hosts, c.link, c.max, c.half, asJSON)
			nt, err := ReadNCCLTests(strings.NewReader(src), "synthetic", "", 0, 0)
			if err != nil {
				t.Fatalf("%s json=%v: %v", c.program, asJSON, err)
			}
			if nt.Collective != c.kind || nt.Ranks != c.ranks || nt.Nodes != c.hosts || len(nt.Measurements) != 2*nt.Rows || nt.Rows != 17 {
				t.Errorf("%s json=%v: %+v", c.program, asJSON, nt)
			}
			fit, err := FitDetermined(nt.Measurements, base, "fit:synthetic")
			if err != nil {
				t.Fatalf("%s: %v", c.program, err)
			}
			got := c.curve(fit.Profile)
			// The text's times carry 6 significant digits.
			if math.Abs(got.Max.Value/c.max-1) > 1e-4 || math.Abs(got.Half.Value/c.half-1) > 1e-3 {
				t.Errorf("%s json=%v: fitted max %g half %g, want %g, %g", c.program, asJSON, got.Max.Value, got.Half.Value, c.max, c.half)
			}
			if got.Max.Source != "fit:synthetic" {
				t.Errorf("%s: source %q", c.program, got.Max.Source)
			}
		}
	}
}

// TestNCCLTestsPublished reads a published nccl-tests output (its source is
// in the file) and checks what it holds.
func TestNCCLTestsPublished(t *testing.T) {
	f, err := os.Open("testdata/nccltests/a3mega-h100-2x8-all_reduce.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := ReadNCCLTests(f, "a3mega", "", 0, 0); err == nil || !strings.Contains(err.Error(), "no \"Collective test starting\" line") {
		t.Errorf("without the program: %v", err)
	}
	f.Seek(0, 0)
	nt, err := ReadNCCLTests(f, "a3mega", "all_reduce_perf", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if nt.Ranks != 16 || nt.Nodes != 2 || nt.GPUsPerNode != 8 || nt.Rows != 31 || nt.Devices[0] != "NVIDIA H100 80GB HBM3" {
		t.Errorf("%+v", nt)
	}
	last := nt.Measurements[len(nt.Measurements)-2] // 8 GiB, out-of-place
	if last.Operation != "all_reduce_inter" || last.Shape["bytes"] != 8589934592 || last.Seconds != 47535e-6 || last.Shape["gpus_per_node"] != 8 {
		t.Errorf("the 8 GiB row: %+v", last)
	}
}

// TestNCCLTestsBadFiles: every broken file is an error naming the problem.
func TestNCCLTestsBadFiles(t *testing.T) {
	base, _ := LookupProfile("H100-SXM")
	good := syntheticNCCLTests(t, KindAllReduce, "all_reduce_perf", 8, 1, base.NVLinkBytesPerSecond.Value, 0.8, 1e6, false)
	goodJSON := syntheticNCCLTests(t, KindAllReduce, "all_reduce_perf", 8, 1, base.NVLinkBytesPerSecond.Value, 0.8, 1e6, true)
	lines := strings.Split(good, "\n")
	rowAt := 0 // the first result row
	for strings.HasPrefix(lines[rowAt], "#") {
		rowAt++
	}
	ms := strings.Fields(lines[rowAt])
	ms[5] = fmt.Sprint(mustFloat(t, ms[5]) / 1000) // milliseconds in the microseconds column
	ms[9] = ms[5]
	inMS := strings.Join(append(append([]string{}, lines[:rowAt]...), append([]string{strings.Join(ms, "  ")}, lines[rowAt+1:]...)...), "\n")
	for _, c := range []struct{ name, data, program, want string }{
		{"empty", "", "all_reduce_perf", "no device lines"},
		{"truncated JSON", goodJSON[:len(goodJSON)/2], "", "unexpected end of JSON"},
		{"a trace JSON", `{"traceEvents": [], "deviceProperties": []}`, "", "not nccl-tests' -J output"},
		{"wrong units", inMS, "", "not bytes, microseconds and GB/s"},
		{"other program", good, "alltoall_perf", "the output is of all_reduce_perf, not alltoall_perf"},
		{"unknown program", strings.Replace(good, "all_reduce_perf", "broadcast_perf", 1), "", `program "broadcast_perf"`},
		{"no rows", strings.Join(lines[:rowAt], "\n"), "", "no result rows"},
		{"short row", strings.Replace(good, lines[rowAt], "1024 256 float", 1), "", "3 columns"},
		{"not a number", strings.Replace(good, lines[rowAt], strings.Replace(lines[rowAt], ms[6], "fast", 1), 1), "", `not a number`},
		{"sizes out of order", strings.Replace(good, lines[rowAt+1], lines[rowAt], 1), "", "sizes must increase"},
		{"no units header", strings.ReplaceAll(good, "(us)", "(ms)"), "", "want (B), (us) and (GB/s)"},
	} {
		_, err := ReadNCCLTests(strings.NewReader(c.data), "f", c.program, 0, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFitRefusesPoorR2: a curve whose fit explains less than half its
// measurements' variance is refused and the base kept; the others still fit.
func TestFitRefusesPoorR2(t *testing.T) {
	base, _ := LookupProfile("H100-SXM")
	src := syntheticNCCLTests(t, KindAllReduce, "all_reduce_perf", 8, 1, base.NVLinkBytesPerSecond.Value, 0.8, 1e6, false)
	good, err := ReadNCCLTests(strings.NewReader(src), "s", "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Send/recv times that a saturating curve fits badly: the ideal times
	// of η = 0.8·B/(B + 1 MB), every other one 4 times slower.
	var ms []Measurement
	for i, size := 0, int64(1<<16); i < 16; i, size = i+1, size*2 {
		b := float64(size)
		sec := b / (base.NICBytesPerSecond.Value * 0.8 * b / (b + 1e6))
		if i%2 == 1 {
			sec *= 4
		}
		ms = append(ms, Measurement{Operation: "send_recv_inter", Shape: map[string]int64{"bytes": size, "ranks": 16, "gpus_per_node": 8}, Seconds: sec, Repeats: 1})
	}
	fit, err := FitDetermined(append(good.Measurements, ms...), base, "fit:s")
	if err != nil {
		t.Fatal(err)
	}
	if e := fit.Refused[CurveSendRecvInter]; e == nil || !strings.Contains(e.Error(), "below 0.50") {
		t.Errorf("send_recv_inter: refused %v", e)
	}
	if fit.Profile.SendRecvInter != base.SendRecvInter {
		t.Errorf("send_recv_inter changed: %+v", fit.Profile.SendRecvInter)
	}
	if math.Abs(fit.Profile.CollectiveIntra.Max.Value/0.8-1) > 1e-4 {
		t.Errorf("collective_intra not fitted alone: %+v", fit.Profile.CollectiveIntra)
	}
	if _, err := FitDetermined(ms, base, "fit:s"); !errors.Is(err, ErrNoCurveFitted) {
		t.Errorf("only a poor curve: %v", err)
	}
}

// TestNCCLTestsHostile (issue 41): device lines are bounded
// (MaxNCCLTestsRanks; distinct names kept once, in a set: 80,000 of them
// took 21 s when each was looked up in the list), and host, device and program names are kept cut and with
// their control characters escaped, so printing them cannot drive a
// terminal.
func TestNCCLTestsHostile(t *testing.T) {
	base, _ := LookupProfile("H100-SXM")
	good := syntheticNCCLTests(t, KindAllReduce, "all_reduce_perf", 8, 1, base.NVLinkBytesPerSecond.Value, 0.8, 1e6, false)
	head, rest, _ := strings.Cut(good, "# Using devices\n")
	devices := func(n int, distinct bool) string {
		var b strings.Builder
		b.WriteString(head + "# Using devices\n")
		for r := range n {
			name := "NVIDIA H100 80GB HBM3"
			if distinct {
				name = fmt.Sprintf("GPU model %d", r)
			}
			fmt.Fprintf(&b, "#  Rank %d Group  0 Pid %6d on node0 device %2d [0000:00:00] %s\n", r, 1000+r, r%8, name)
		}
		_, rows, _ := strings.Cut(rest, "#\n#       size")
		return b.String() + "#\n#       size" + rows
	}
	if _, err := ReadNCCLTests(strings.NewReader(devices(MaxNCCLTestsRanks+1, true)), "f", "", 0, 0); err == nil ||
		!strings.Contains(err.Error(), "more than 131072 device lines (MaxNCCLTestsRanks)") {
		t.Errorf("too many device lines: %v", err)
	}
	nt, err := ReadNCCLTests(strings.NewReader(devices(16, true)), "f", "", 0, 0)
	if err != nil || nt.Ranks != 16 || len(nt.Devices) != 16 {
		t.Errorf("16 distinct device lines: %v", err)
	}
	evil := strings.Replace(good, "NVIDIA H100 80GB HBM3", "NVIDIA\x1b[2J\x1b]0;x\x07"+strings.Repeat("H", 1000), 1)
	nt, err = ReadNCCLTests(strings.NewReader(evil), "f", "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := nt.Devices[0]; !strings.HasPrefix(d, `NVIDIA\x1b[2J\x1b]0;x\x07HHH`) || len(d) > MaxNCCLTestsName+len(`\x1b\x1b\x07`)*3+3 {
		t.Errorf("device name kept as %q", d)
	}
	_, err = ReadNCCLTests(strings.NewReader(strings.Replace(good, "all_reduce_perf", "x\x1b[2Jy", 1)), "f", "", 0, 0)
	if err == nil || !strings.Contains(err.Error(), `x\x1b[2Jy`) || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("a program name with an escape: %v", err)
	}
}

// FuzzReadNCCLTests: no nccl-tests output, text or -J JSON, makes
// ReadNCCLTests panic, and what it returns holds no control character.
func FuzzReadNCCLTests(f *testing.F) {
	base, _ := LookupProfile("H100-SXM")
	for _, asJSON := range []bool{false, true} {
		f.Add(syntheticNCCLTests(f, KindAllReduce, "all_reduce_perf", 8, 2, base.NVLinkBytesPerSecond.Value, 0.8, 1e6, asJSON))
	}
	if b, err := os.ReadFile("testdata/nccltests/a3mega-h100-2x8-all_reduce.txt"); err == nil {
		f.Add(string(b))
	}
	f.Add("# Collective test starting: all_reduce_perf\n#  Rank  0 Group  0 Pid 1 on h\x1b device  0 [0] GPU\x9b\n")
	f.Fuzz(func(t *testing.T, data string) {
		nt, err := ReadNCCLTests(strings.NewReader(data), "fuzz", "", 0, 0)
		if err != nil {
			return
		}
		for _, d := range nt.Devices {
			if strings.ContainsFunc(d, func(r rune) bool { return r < ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 }) {
				t.Fatalf("device name %q kept raw", d)
			}
		}
	})
}
