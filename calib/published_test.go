package calib

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite calib/testdata/*.csv from the published tables in published_test.go")

// publishedTable is one table of costmodel.md turned into measurement rows: the
// rows' seconds are derived from the published TFLOPS or bus bandwidth, so that
// fitting them recovers the published efficiencies.
type publishedTable struct {
	file     string   // under testdata/
	comment  []string // provenance, written as '#' lines
	rows     []Measurement
	profile  string // the profile whose peak or link bandwidth the fit is taken against
	curveKey string
}

// attentionRows turns FlashAttention benchmark TFLOPS at B·S = 16K tokens, 16
// heads of 128 (the FA3 paper's setting) into causal attention rows.
func attentionRows(op string, seqs []int64, tflops []float64) []Measurement {
	var ms []Measurement
	for i, s := range seqs {
		shape := map[string]int64{"batch": 16384 / s, "seq": s, "heads": 16, "head_dim": 128, "causal": 1}
		p, err := toPoint(Measurement{Operation: op, Shape: shape, Seconds: 1})
		if err != nil {
			panic(err)
		}
		ms = append(ms, Measurement{Operation: op, Shape: shape, Seconds: p.work / (tflops[i] * 1e12), Repeats: 1})
	}
	return ms
}

func allReduceRows(op string, ranks, gpusPerNode int64, sizes []int64, busGBps []float64) []Measurement {
	var ms []Measurement
	for i, s := range sizes {
		shape := map[string]int64{"bytes": s, "ranks": ranks}
		if gpusPerNode > 0 {
			shape["gpus_per_node"] = gpusPerNode
		}
		// nccl-tests: busbw = algbw·2(n−1)/n, algbw = S/t  [R28].
		n := float64(ranks)
		seconds := float64(s) * 2 * (n - 1) / n / (busGBps[i] * 1e9)
		ms = append(ms, Measurement{Operation: op, Shape: shape, Seconds: seconds, Repeats: 1})
	}
	return ms
}

const kib, mib, gib = 1 << 10, 1 << 20, 1 << 30

var fa3Seqs = []int64{512, 1024, 2048, 4096, 8192, 16384}

// FA3 paper [R13] (costmodel §1.3), H100 SXM5, BF16, hdim 128, TFLOPS.
var (
	fa3FwdCausal    = []float64{292, 423, 521, 579, 602, 616}
	fa3FwdNonCausal = []float64{480, 565, 625, 638, 646, 648}
	fa3BwdNonCausal = []float64{316, 424, 501, 542, 559, 561}
)

func fa3BwdCausal() []float64 {
	out := make([]float64, len(fa3Seqs))
	for i := range out {
		out[i] = fa3BwdNonCausal[i] * fa3FwdCausal[i] / fa3FwdNonCausal[i]
	}
	return out
}

func publishedTables() []publishedTable {
	bwd := fa3BwdCausal()
	var bwdText []string
	for _, t := range bwd {
		bwdText = append(bwdText, fmt.Sprintf("%.1f", t))
	}
	return []publishedTable{
		{
			file: "fa3_h100_fwd_causal.csv", profile: "H100-SXM", curveKey: CurveAttentionFwd,
			comment: []string{
				"FlashAttention-3 forward, causal, H100 SXM5, BF16, head dim 128, B*S = 16K tokens, 16 heads.",
				"[R13] Shah et al., FlashAttention-3, arxiv.org/abs/2407.08608 (figure data; costmodel.md §1.3):",
				"TFLOPS 292/423/521/579/602/616 at seqlen 512/1k/2k/4k/8k/16k.",
				"seconds = FLOPs / (TFLOPS*1e12), FLOPs = 2*batch*heads*seq^2*(d_qk+d_v)/2 (FlashAttention's convention).",
			},
			rows: attentionRows(OpAttentionFwd, fa3Seqs, fa3FwdCausal),
		},
		{
			file: "fa3_h100_bwd_causal.csv", profile: "H100-SXM", curveKey: CurveAttentionBwd,
			comment: []string{
				"FlashAttention-3 backward, CAUSAL (derived), H100 SXM5, BF16, head dim 128, B*S = 16K tokens, 16 heads.",
				"No causal backward curve is published (costmodel.md §8 item 2). Derived per seqlen as",
				"non-causal bwd TFLOPS 316/424/501/542/559/561 [R13] times the causal/non-causal fwd ratio",
				"(292/480, 423/565, 521/625, 579/638, 602/646, 616/648 [R13]) = " + strings.Join(bwdText, "/") + " TFLOPS",
				"(assumption, as costmodel.md §8 item 2 recommends). FLOPs = 2.5 x forward FLOPs (FlashAttention's",
				"convention, equal to job.Model.AttentionBwdFactor for d_qk = d_v).",
			},
			rows: attentionRows(OpAttentionBwd, fa3Seqs, bwd),
		},
		{
			file: "h20_gemm_square.csv", profile: "H20", curveKey: CurveGEMM,
			comment: []string{
				"BF16 square matmul N x N x N on an H20, TFLOPS 95/120/133/139/142.25 at N = 1K/2K/4K/8K/10K.",
				"[R6] github.com/zzc0721/torch-performance-test-data/issues/77 (costmodel.md §1.1, §0).",
				"seconds = 2*N^3 / (TFLOPS*1e12).",
			},
			rows: func() []Measurement {
				ns := []int64{1024, 2048, 4096, 8192, 10240}
				tf := []float64{95, 120, 133, 139, 142.25}
				var ms []Measurement
				for i, n := range ns {
					f := 2 * float64(n) * float64(n) * float64(n)
					ms = append(ms, Measurement{Operation: OpGEMM, Shape: map[string]int64{"m": n, "n": n, "k": n},
						Seconds: f / (tf[i] * 1e12), Repeats: 1})
				}
				return ms
			}(),
		},
		{
			file: "b200_allreduce_1node.csv", profile: "B200", curveKey: CurveCollectiveIntra,
			comment: []string{
				"NCCL all-reduce on one 8 x B200 node (NVLink 5), bus bandwidth vs payload.",
				"[R2] stas00/ml-engineering network/README.md @744d01e18b79, 4 x P6-B200 table (costmodel.md §1.2):",
				"busbw GB/s 1.20/36.06/126.5/400.6/646.1/723.3/740.6/845.7 at 32KiB/1MiB/8MiB/64MiB/256MiB/1GiB/4GiB/16GiB.",
				"seconds = bytes * 2(n-1)/n / busbw (nccl-tests [R28]), n = 8.",
			},
			rows: allReduceRows(KindAllReduce+"_intra", 8, 0,
				[]int64{32 * kib, mib, 8 * mib, 64 * mib, 256 * mib, gib, 4 * gib, 16 * gib},
				[]float64{1.20, 36.06, 126.5, 400.6, 646.1, 723.3, 740.6, 845.7}),
		},
		{
			file: "b200_allreduce_4node.csv", profile: "B200", curveKey: CurveCollectiveInter,
			comment: []string{
				"NCCL all-reduce across 4 nodes of 8 x B200 (8 x 400G EFA per node), bus bandwidth vs payload.",
				"[R2] stas00/ml-engineering network/README.md @744d01e18b79, 4 x P6-B200 table (costmodel.md §1.2):",
				"busbw GB/s 5.37/35.12/156.7/229.1/362.0/377.3/381.8 at 1MiB/8MiB/64MiB/256MiB/1GiB/4GiB/16GiB.",
				"The 32 KiB row (0.01 GB/s, i.e. 6.3 ms, slower than the 1 MiB row) is left out as an outlier.",
				"seconds = bytes * 2(n-1)/n / busbw (nccl-tests [R28]), n = 32; the fit counts the NIC bytes",
				"2(k-1)/k * bytes/g per GPU of the hierarchical algorithm (k = 4 nodes, g = 8; costmodel.md §5.3).",
			},
			rows: allReduceRows(KindAllReduce+"_inter", 32, 8,
				[]int64{mib, 8 * mib, 64 * mib, 256 * mib, gib, 4 * gib, 16 * gib},
				[]float64{5.37, 35.12, 156.7, 229.1, 362.0, 377.3, 381.8}),
		},
	}
}

// renderTable writes a published table as its CSV file.
func renderTable(t publishedTable) ([]byte, error) {
	var b bytes.Buffer
	for _, c := range t.comment {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	if err := WriteMeasurements(&b, t.rows); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// TestPublishedTablesCSV keeps calib/testdata/*.csv equal to the published tables
// above (go test ./calib -run PublishedTablesCSV -update rewrites them).
func TestPublishedTablesCSV(t *testing.T) {
	for _, tab := range publishedTables() {
		want, err := renderTable(tab)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join("testdata", tab.file)
		if *update {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the published table in published_test.go (run with -update)", file)
		}
	}
}
