package report

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dcpsim/dcpsim/internal/safeio"
)

// NCCLTestsReportDir is the results folder of the nccl-tests outputs make
// figures fits (dcpsim calibrate --from-nccl-tests), each file the command's
// printed table.
const NCCLTestsReportDir = "nccl-tests"

// writeNCCLTests writes the REPORT.md section of published nccl-tests
// outputs set beside the cost model: each .txt file of dir/nccl-tests as
// make figures wrote it, verbatim.
func writeNCCLTests(w *strings.Builder, dir string) {
	fmt.Fprintln(w, "## Beside a published nccl-tests output (`dcpsim calibrate --from-nccl-tests`)")
	fmt.Fprintln(w)
	files, _ := filepath.Glob(filepath.Join(dir, NCCLTestsReportDir, "*.txt"))
	if len(files) == 0 {
		fmt.Fprintf(w, "Not generated: %s/ holds no output (make figures writes it).\n\n", NCCLTestsReportDir)
		return
	}
	fmt.Fprintln(w, "Outputs no one here wrote, each with its source in the file under calib/testdata/nccltests/: the fit of")
	fmt.Fprintln(w, "its collective's curve, then its out-of-place times beside the cost model's with the embedded profile")
	fmt.Fprintln(w, "(base) and with the fitted one. Nothing is fitted to them in the shipped profiles.")
	fmt.Fprintln(w)
	for _, f := range files {
		b, err := safeio.ReadFile(f, 1<<20)
		if err != nil {
			fmt.Fprintf(w, "%s: unreadable: %v\n\n", filepath.Base(f), err)
			continue
		}
		fmt.Fprintf(w, "`%s`:\n\n```\n%s```\n\n", filepath.Base(f), strings.ReplaceAll(string(b), "\x60\x60\x60", ""))
	}
	fmt.Fprintln(w, "PyTorch profiler traces (`dcpsim calibrate --from-trace`): no public trace of a BF16 LLM training job")
	fmt.Fprintln(w, "was available to the project, so none is set beside the model here. The public traces of Meta's Holistic")
	fmt.Fprintln(w, "Trace Analysis tests (fp32 vision and recommendation jobs on V100 and A100) were read during development")
	fmt.Fprintln(w, "and hold no BF16 GEMM or attention kernel to compare; the project's own test trace is synthetic")
	fmt.Fprintln(w, "(calib/kineto/testdata, generated from known curves), which checks the reader and the fit, not the model.")
	fmt.Fprintln(w)
}
