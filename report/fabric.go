package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
)

// fabricSweep is the what-if sweep of production-256k over fabrics.
const fabricSweep = "production-256k-fabric"

// writeFabric writes the fabric what-if: every variant of the
// production-256k-fabric sweep (the shipped fabric, fewer NICs per node, an
// oversubscribed spine), its step times and HyDra's margins beside the
// paper's production job.
func writeFabric(w *strings.Builder, dir string) {
	fmt.Fprintln(w, "## The fabric: production-256k on other scale-out networks (what-if)")
	fmt.Fprintln(w)
	var sw sweepJSON
	path := filepath.Join(dir, fabricSweep, "sweep.json")
	if err := readJSON(path, &sw); err != nil {
		fmt.Fprintf(w, "Missing: %s (run `make figures`).\n\n", path)
		return
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
	closest, closestErr := "", math.Inf(1)
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
		if e < closestErr {
			closest, closestErr = axisValue(&p, "variant"), e
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "nics8 is the shipped fabric; nicsK puts K NICs on a node's 8 GPUs; spineR oversubscribes every leaf's uplinks R:1.")
	if closest != "" {
		fmt.Fprintf(w, "The fabric whose three step times lie closest to the paper's is %s (mean |here ÷ paper − 1| = %.0f%%); the paper does not say what its fabric is.\n",
			closest, 100*closestErr)
	}
	fmt.Fprintln(w)
}

// compareCell is "here / paper (×ratio)" for a paper value, or here alone.
func compareCell(here float64, p paperValue) string {
	if p.V == 0 {
		return fmt.Sprintf("%.3g", here)
	}
	return fmt.Sprintf("%.3g / %.3g (×%.2f)", here, p.V, here/p.V)
}
