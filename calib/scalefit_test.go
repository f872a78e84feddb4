package calib

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadCollectiveScale reads calib/testdata/collective_scale.csv.
func loadCollectiveScale(t *testing.T) []ScalePoint {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "collective_scale.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pts, err := ReadScalePoints(f)
	if err != nil {
		t.Fatal(err)
	}
	return pts
}

// scaleFamily picks the points of one family out of the data set by the
// start of its source and its gpu, fabric, op and algorithm, and fails the
// test if there are none.
func scaleFamily(t *testing.T, pts []ScalePoint, source, gpu, fabric, op, algorithm string) []ScalePoint {
	t.Helper()
	var out []ScalePoint
	for _, p := range pts {
		if strings.HasPrefix(p.Source, source) && p.GPU == gpu && p.Fabric == fabric && p.Op == op && p.Algorithm == algorithm {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no rows for %s %s %s %s %s", source, gpu, fabric, op, algorithm)
	}
	return out
}

const (
	srcDeepEPV1 = "github.com/deepseek-ai/DeepEP docs/legacy.md"
	srcUCCLEP   = "github.com/uccl-project/uccl ep/README.md"
)

func TestCollectiveScaleData(t *testing.T) {
	pts := loadCollectiveScale(t)
	if len(pts) != 89 {
		t.Errorf("%d rows, want the 89 in the file", len(pts))
	}
	sources := map[string]int{}
	for _, p := range pts {
		sources[p.Source]++
		if !strings.Contains(p.Source, "github.com/") && !strings.Contains(p.Source, "ml-engineering") {
			t.Errorf("line %d: source %q names no repository or thread", p.Line, p.Source)
		}
		if p.NICGbps != 0 && p.NICGbps != 100 && p.NICGbps != 400 {
			t.Errorf("line %d: NIC %v Gb/s, the data set has only 100G and 400G NICs", p.Line, p.NICGbps)
		}
		// No source publishes a per-GPU NIC rate above its line rate (1 GB/s
		// = 8 Gb/s); a row that does has been converted wrongly.
		if w := p.WireGBps(); p.NICGbps > 0 && p.Op != "all-reduce" && w > p.NICGbps/8 {
			t.Errorf("line %d: NIC rate %.1f GB/s exceeds the %v Gb/s line rate", p.Line, w, p.NICGbps)
		}
	}
	if n := sources["github.com/deepseek-ai/DeepEP docs/legacy.md @0297fc80 (DeepSeek; costmodel.md §1.2 [R11])"]; n != 18 {
		t.Errorf("DeepEP V1 rows %d, want 18 (6 normal + 12 low-latency)", n)
	}
}

func TestScaleWireGBps(t *testing.T) {
	for _, c := range []struct {
		p    ScalePoint
		want float64
	}{
		// sjeaugey, nccl-tests#130: 2 nodes, 1 GPU each: busbw is the NIC rate.
		{ScalePoint{Op: "all-to-all", Nodes: 2, GPUsPerNode: 1, BusBW: 45}, 45},
		// 2 nodes of 8: busbw = algbw·15/16, NIC carries 8/16 of it.
		{ScalePoint{Op: "all-to-all", Nodes: 2, GPUsPerNode: 8, BusBW: 75}, 40},
		{ScalePoint{Op: "all-to-all", Nodes: 8, GPUsPerNode: 8, BusBW: 63}, 56},
		// DeepEP#51: N_NODES/(N_NODES-1) too high.
		{ScalePoint{Op: "dispatch", Nodes: 2, GPUsPerNode: 8, BusBW: 63}, 31.5},
		{ScalePoint{Op: "combine", Nodes: 4, GPUsPerNode: 8, BusBW: 60}, 45},
		{ScalePoint{Op: "all-reduce", Nodes: 4, GPUsPerNode: 8, BusBW: 377.3}, 377.3},
		{ScalePoint{Op: "dispatch", Nodes: 1, GPUsPerNode: 8, BusBW: 98}, 0},
	} {
		if got := c.p.WireGBps(); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s on %d x %d, %v GB/s: WireGBps %v, want %v", c.p.Op, c.p.Nodes, c.p.GPUsPerNode, c.p.BusBW, got, c.want)
		}
	}
}

// TestFitScaleAllToAll fits the all-to-all families (dispatch and combine
// kernels) with at least three scaled points, and the two-point families that
// pin the algebra, against A and 2-node rates computed independently from the
// CSV (ordinary least squares of 1/wire on log2 nodes), and checks that each
// used point is reproduced within the family's stated tolerance.
func TestFitScaleAllToAll(t *testing.T) {
	pts := loadCollectiveScale(t)
	for _, c := range []struct {
		source, gpu, fabric, op, alg string
		a, wire2, tol                float64 // tol: largest |pred/wire − 1|
		degrades                     bool    // At(MaxNodes) < 1
	}{
		// DeepEP V1 low-latency on H800 + CX7 IB, EP16..EP256: flat once the
		// own-node tokens are taken out.
		{srcDeepEPV1, "H800", "ib", "dispatch", "DeepEP-V1-LL", -0.0364, 33.134, 0.06, false},
		{srcDeepEPV1, "H800", "ib", "combine", "DeepEP-V1-LL", -0.0010, 38.334, 0.06, false},
		// UCCL-EP normal kernels, MI300X + CX7 IB, EP16..EP64.
		{srcUCCLEP, "MI300X", "ib", "dispatch", "UCCL-EP-normal-FP8", -0.0961, 38.071, 0.07, false},
		{srcUCCLEP, "MI300X", "ib", "dispatch", "UCCL-EP-normal-BF16", -0.0589, 41.637, 0.04, false},
		{srcUCCLEP, "MI300X", "ib", "combine", "UCCL-EP-normal", -0.0645, 39.936, 0.06, false},
		// UCCL-EP on EFA, EP16..EP32: normal kernels rise, low-latency fall.
		{srcUCCLEP, "H200", "efa", "dispatch", "UCCL-EP-normal", -0.3979, 25.479, 0.065, false},
		{srcUCCLEP, "B200", "efa", "dispatch", "UCCL-EP-normal", -0.3447, 26.906, 0.05, false},
		{srcUCCLEP, "B200", "efa", "combine", "UCCL-EP-normal", -0.3106, 30.526, 0.055, false},
		{srcUCCLEP, "H200", "efa", "dispatch", "UCCL-EP-LL", 0.4986, 17.721, 0.03, true},
		{srcUCCLEP, "H200", "efa", "combine", "UCCL-EP-LL", 0.2874, 22.630, 0.12, true},
		{srcUCCLEP, "B200", "efa", "combine", "UCCL-EP-LL", 0.2835, 22.008, 0.09, true},
		// Two scaled points: the line passes through both.
		{srcUCCLEP, "MI300X", "roce", "dispatch", "UCCL-EP-normal-FP8", -0.0340, 35.5, 1e-9, false},
		{srcUCCLEP, "MI300X", "ib", "dispatch", "UCCL-EP-LL", 0.2222, 27.5, 1e-9, true},
	} {
		name := fmt.Sprintf("%s/%s/%s/%s", c.gpu, c.fabric, c.op, c.alg)
		t.Run(name, func(t *testing.T) {
			fam := scaleFamily(t, pts, c.source, c.gpu, c.fabric, c.op, c.alg)
			curve, err := FitScale(fam)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(curve.A-c.a) > 5e-4 {
				t.Errorf("A = %.4f, want %.4f", curve.A, c.a)
			}
			if math.Abs(curve.Wire2GBps/c.wire2-1) > 1e-3 {
				t.Errorf("2-node NIC rate %.3f GB/s, want %.3f", curve.Wire2GBps, c.wire2)
			}
			worst := 0.0
			for _, p := range fam {
				if p.Nodes < 2 {
					continue
				}
				rel := math.Abs(curve.Predict(p.Nodes)/p.WireGBps() - 1)
				if rel > c.tol {
					t.Errorf("line %d (%d nodes): predicted %.2f GB/s, measured %.2f GB/s: %.1f %% off, tolerance %.1f %%",
						p.Line, p.Nodes, curve.Predict(p.Nodes), p.WireGBps(), 100*rel, 100*c.tol)
				}
				worst = max(worst, rel)
			}
			if math.Abs(worst-curve.MaxRelErr) > 1e-12 {
				t.Errorf("MaxRelErr %v, recomputed %v", curve.MaxRelErr, worst)
			}
			if got := curve.At(curve.MaxNodes) < 1; got != c.degrades {
				t.Errorf("At(%d) = %v: degrades %v, want %v", curve.MaxNodes, curve.At(curve.MaxNodes), got, c.degrades)
			}
		})
	}
}

// TestFitScaleUndoesAccounting: the published DeepEP low-latency dispatch
// series falls from 63 to 39 GB/s between 2 and 32 nodes, but the NIC rate
// behind it does not fall by more than the fit's scatter.
func TestFitScaleUndoesAccounting(t *testing.T) {
	fam := scaleFamily(t, loadCollectiveScale(t), srcDeepEPV1, "H800", "ib", "dispatch", "DeepEP-V1-LL")
	var at2, at32 ScalePoint
	for _, p := range fam {
		switch p.Nodes {
		case 2:
			at2 = p
		case 32:
			at32 = p
		}
	}
	if raw := at32.BusBW / at2.BusBW; raw > 0.65 {
		t.Errorf("published 32-node/2-node ratio %.2f, the data say 39/63", raw)
	}
	if wire := at32.WireGBps() / at2.WireGBps(); wire < 1 {
		t.Errorf("NIC-rate 32-node/2-node ratio %.2f, want >= 1", wire)
	}
}

func TestScaleCurveAt(t *testing.T) {
	c := ScaleCurve{A: 0.25, Wire2GBps: 40}
	for _, n := range []int{0, 1, 2} {
		if got := c.At(n); got != 1 {
			t.Errorf("At(%d) = %v, want 1", n, got)
		}
	}
	if got, want := c.At(4), 1/1.25; math.Abs(got-want) > 1e-12 {
		t.Errorf("At(4) = %v, want %v", got, want)
	}
	if got, want := c.At(16), 1/1.75; math.Abs(got-want) > 1e-12 {
		t.Errorf("At(16) = %v, want %v", got, want)
	}
	prev := 1.0
	for n := 3; n <= 4096; n *= 2 {
		got := c.At(n)
		if !(got > 0 && got < prev) {
			t.Errorf("At(%d) = %v, not in (0, At(previous) = %v)", n, got, prev)
		}
		prev = got
	}
	if got := c.Predict(8); math.Abs(got-40/1.5) > 1e-12 {
		t.Errorf("Predict(8) = %v, want %v", got, 40/1.5)
	}
	rising := ScaleCurve{A: -0.3, Wire2GBps: 25}
	if got := rising.At(64); got != 1 {
		t.Errorf("rising curve At(64) = %v, want 1", got)
	}
	if got := rising.Predict(4); !(got > 25) {
		t.Errorf("rising curve Predict(4) = %v, want above 25", got)
	}
	if got := rising.Predict(1 << 20); !math.IsNaN(got) {
		t.Errorf("rising curve Predict(2^20) = %v, want NaN (1/rate below 0)", got)
	}
}

func TestFitScaleErrors(t *testing.T) {
	pt := func(nodes int, bw float64) ScalePoint {
		return ScalePoint{Source: "s", GPU: "H800", Fabric: "ib", Op: "dispatch", Nodes: nodes, GPUsPerNode: 8, BusBW: bw}
	}
	other := pt(4, 50)
	other.Source = "t"
	for _, c := range []struct {
		name   string
		points []ScalePoint
		want   string
		under  bool
	}{
		{"empty", nil, "no points", true},
		{"one scale", []ScalePoint{pt(1, 90), pt(2, 60), pt(2, 62)}, "1 distinct node count", true},
		{"single-node only", []ScalePoint{pt(1, 90)}, "0 distinct node count", true},
		{"mixed families", []ScalePoint{pt(2, 60), other}, "mixed families", false},
		{"zero rate", []ScalePoint{pt(2, 60), pt(4, 0)}, "not positive", false},
		{"line below zero", []ScalePoint{pt(2, 1), pt(4, 1000), pt(8, 1e6)}, "not positive", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FitScale(c.points)
			if err == nil {
				t.Fatalf("no error, want one containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
			if got := errors.Is(err, ErrScaleUnderdetermined); got != c.under {
				t.Errorf("errors.Is(ErrScaleUnderdetermined) = %v, want %v (%v)", got, c.under, err)
			}
		})
	}
}

func TestReadScalePointsErrors(t *testing.T) {
	const head = "source,gpu,nic_gbps,fabric,op,nodes,gpus_per_node,bytes,busbw_gbps,algorithm,note\n"
	const good = "s,H800,400,ib,all-to-all,2,8,1024,40,,n\n"
	many := head + strings.Repeat(good, MaxScaleRows+1)
	for _, c := range []struct {
		name, in string
		want     []string // all must appear in the error
	}{
		{"empty", "", []string{"no header"}},
		{"header only", head, []string{"no data rows"}},
		{"wrong header", strings.Replace(head, "busbw_gbps", "busbw", 1) + good, []string{"line 1", "header"}},
		{"short row", head + "s,H800,400,ib,all-to-all,2,8\n", []string{"line 2", "wrong number of fields"}},
		{"bad nodes", head + good + "s,H800,400,ib,all-to-all,x,8,,40,,\n", []string{"line 3", "column nodes"}},
		{"zero nodes", head + "s,H800,400,ib,all-to-all,0,8,,40,,\n", []string{"line 2", "column nodes"}},
		{"bad gpus", head + "s,H800,400,ib,all-to-all,2,0,,40,,\n", []string{"line 2", "column gpus_per_node"}},
		{"bad nic", head + "s,H800,-400,ib,all-to-all,2,8,,40,,\n", []string{"line 2", "column nic_gbps"}},
		{"bad fabric", head + "s,H800,400,nvlink,all-to-all,2,8,,40,,\n", []string{"line 2", "column fabric", "nvlink"}},
		{"bad op", head + "s,H800,400,ib,alltoall,2,8,,40,,\n", []string{"line 2", "column op", "alltoall"}},
		{"bad bytes", head + "s,H800,400,ib,all-to-all,2,8,1e6,40,,\n", []string{"line 2", "column bytes"}},
		{"missing busbw", head + "s,H800,400,ib,all-to-all,2,8,,,,\n", []string{"line 2", "column busbw_gbps", "empty"}},
		{"negative busbw", head + "s,H800,400,ib,all-to-all,2,8,,-3,,\n", []string{"line 2", "column busbw_gbps"}},
		{"infinite busbw", head + "s,H800,400,ib,all-to-all,2,8,,Inf,,\n", []string{"line 2", "column busbw_gbps"}},
		{"no source", head + ",H800,400,ib,all-to-all,2,8,,40,,\n", []string{"line 2", "column source"}},
		{"quoted note spans lines", head + "s,H800,400,ib,all-to-all,2,8,,40,,\"a\nb\"\ns,H800,400,ib,all-to-all,x,8,,40,,\n", []string{"line 4", "column nodes"}},
		{"too many rows", many, []string{fmt.Sprintf("line %d", MaxScaleRows+2), "more than 10000"}},
		{"too many bytes", head + good + strings.Repeat("#", MaxScaleBytes), []string{"more than", "bytes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pts, err := ReadScalePoints(strings.NewReader(c.in))
			if err == nil {
				t.Fatalf("read %d points, want an error", len(pts))
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestReadScalePointsGood(t *testing.T) {
	in := "source,gpu,nic_gbps,fabric,op,nodes,gpus_per_node,bytes,busbw_gbps,algorithm,note\n" +
		"s,H800,,unknown,dispatch,4,8,,58,DeepEP-V1-normal,\"EP32, FP8\"\n"
	pts, err := ReadScalePoints(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := ScalePoint{Source: "s", GPU: "H800", Fabric: "unknown", Op: "dispatch", Nodes: 4, GPUsPerNode: 8,
		BusBW: 58, Algorithm: "DeepEP-V1-normal", Note: "EP32, FP8", Line: 2}
	if len(pts) != 1 || pts[0] != want {
		t.Errorf("read %+v, want [%+v]", pts, want)
	}
}
