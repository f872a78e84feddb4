package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
)

// fabricSweep is the what-if sweep of production-256k over fabrics.
const fabricSweep = "production-256k-fabric"

// fabricProse is the fabric what-if closest to the paper's production job,
// for the closing prose (nil when the sweep is missing).
type fabricProse struct {
	// Closest is the variant whose three steps lie closest to the paper's,
	// Err their mean |here/paper − 1|.
	Closest string
	Err     float64
	// Hydra, Mcore and Static are its mean steps (s); OverMcore and
	// OverStatic HyDra's throughput over each.
	Hydra, Mcore, Static  float64
	OverMcore, OverStatic float64
	// The paper's numbers they compare with.
	PaperHydra, PaperMcore, PaperStatic paperValue
	PaperOverMcore, PaperOverStatic     paperValue
}

// writeFabric writes the fabric what-if: every variant of the
// production-256k-fabric sweep (the shipped fabric, fewer NICs per node, an
// oversubscribed spine), its step times and HyDra's margins beside the
// paper's production job. It returns the closest variant (nil when the
// sweep is missing).
func writeFabric(w *strings.Builder, dir string) *fabricProse {
	fmt.Fprintln(w, "## The fabric: production-256k on other scale-out networks (what-if)")
	fmt.Fprintln(w)
	var sw sweepJSON
	path := filepath.Join(dir, fabricSweep, "sweep.json")
	if err := readJSON(path, &sw); err != nil {
		fmt.Fprintf(w, "Missing: %s (run `make figures`).\n\n", path)
		return nil
	}
	paper := paperRuns["production-256k"]
	step := func(pol string) paperValue { return paper.Values[pol]["step"] }
	fmt.Fprintln(w, "The paper gives only \"8 GPUs per NVLink node\" and \"RoCE\" for its clusters (§6.1); production-256k runs on the shipped default fabric,")
	fmt.Fprintln(w, "NVIDIA's reference design (one 400G NIC per GPU, 32-node rail leaf groups, a non-blocking spine). Here the same job runs on other")
	fmt.Fprintln(w, "fabrics, its concurrent collectives sharing NICs and spine uplinks max-min fairly (sim/network Window). Nothing is fitted:")
	fmt.Fprintln(w, "the rows show how far the fabric alone moves the job. Cells read `here / paper (×here÷paper)`.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| fabric | HyDra step (s) | Mcore DCP step (s) | static CP step (s) | HyDra over Mcore (×) | HyDra over static (×) | HyDra exposed comm (%) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	var fp *fabricProse
	for _, p := range sw.Points {
		h, m, s := policyOf(&p.Summary, "hydra"), policyOf(&p.Summary, "mcore"), policyOf(&p.Summary, "static")
		if h == nil || m == nil || s == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %.1f |\n", axisValue(&p, "variant"),
			compareCell(h.StepSecondsMean, step("hydra")), compareCell(m.StepSecondsMean, step("mcore")), compareCell(s.StepSecondsMean, step("static")),
			compareCell(m.StepSecondsMean/h.StepSecondsMean, paper.Values["hydra"]["over_mcore"]),
			compareCell(s.StepSecondsMean/h.StepSecondsMean, paper.Values["hydra"]["over_static"]), 100*h.ExposedCommShare)
		e := (math.Abs(h.StepSecondsMean/step("hydra").V-1) + math.Abs(m.StepSecondsMean/step("mcore").V-1) + math.Abs(s.StepSecondsMean/step("static").V-1)) / 3
		if fp == nil || e < fp.Err {
			fp = &fabricProse{Closest: axisValue(&p, "variant"), Err: e, Hydra: h.StepSecondsMean, Mcore: m.StepSecondsMean, Static: s.StepSecondsMean,
				OverMcore: m.StepSecondsMean / h.StepSecondsMean, OverStatic: s.StepSecondsMean / h.StepSecondsMean,
				PaperHydra: step("hydra"), PaperMcore: step("mcore"), PaperStatic: step("static"),
				PaperOverMcore: paper.Values["hydra"]["over_mcore"], PaperOverStatic: paper.Values["hydra"]["over_static"]}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "nics8 is the shipped fabric; nicsK puts K NICs on a node's 8 GPUs; spineR oversubscribes every leaf's uplinks R:1.")
	if fp != nil {
		fmt.Fprintf(w, "The fabric whose three step times lie closest to the paper's is %s (mean |here ÷ paper − 1| = %.0f%%); the paper does not say what its fabric is.\n",
			fp.Closest, 100*fp.Err)
	}
	fmt.Fprintln(w)
	return fp
}

// compareCell is "here / paper (×ratio)" for a paper value, or here alone.
func compareCell(here float64, p paperValue) string {
	if p.V == 0 {
		return fmt.Sprintf("%.3g", here)
	}
	return fmt.Sprintf("%.3g / %.3g (×%.2f)", here, p.V, here/p.V)
}
