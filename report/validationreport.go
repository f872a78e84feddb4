package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dcpsim/dcpsim/internal/safeio"
)

// ValidationFittedRun is the one run of validation/megatron-lm.csv a
// constant was fitted on (the A100 profile's gemm.max); every other run is
// out of sample.
const ValidationFittedRun = "k22-22b-full"

// ValidationFile is the file, under a results folder, that make figures
// writes with dcpsim validate --json on validation/megatron-lm.csv and the
// reproduction report reads.
const ValidationFile = "validation.jsonl"

// Issue 13's targets for the runs out of sample: mean and max |error|.
const (
	validationMeanTarget = 0.05
	validationMaxTarget  = 0.10
)

// writeValidation writes the report's section on the published Megatron-LM
// runs: predicted beside measured per run, and the out-of-sample errors
// against the targets.
func writeValidation(w *strings.Builder, dir string) {
	fmt.Fprintln(w, "## Beside published Megatron-LM runs (`dcpsim validate`)")
	fmt.Fprintln(w)
	path := filepath.Join(dir, ValidationFile)
	b, err := safeio.ReadFile(path, safeio.MaxResultBytes)
	var rs []ValidationResult
	if err == nil {
		rs, err = ReadValidationJSON(bytes.NewReader(b))
	}
	if err != nil || len(rs) == 0 {
		fmt.Fprintf(w, "Missing: %s (run `make figures`).\n\n", path)
		return
	}
	fmt.Fprintln(w, "Dense GPT models trained with Megatron-LM on A100s: Narayanan et al. SC'21 Table 1 (`sc21-*`, its achieved")
	fmt.Fprintln(w, "TFLOP/s turned into iteration times with the paper's Eq. 3) and Korthikanti et al. 2022 Table 5 (`k22-*`, iteration")
	fmt.Fprintln(w, "times), with the tensor parallelism, sequence parallelism and recomputation each run used. Sources and every")
	fmt.Fprintln(w, "inferred field: `validation/README.md`; the rows: `validation/megatron-lm.csv` (`make validate`). Error =")
	fmt.Fprintf(w, "predicted / measured − 1. One constant is fitted on one run, the A100 profile's `gemm.max` on %s; every\n", ValidationFittedRun)
	fmt.Fprintln(w, "other run is out of sample.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | predicted (s) | measured (s) | error |")
	fmt.Fprintln(w, "|---|---|---|---|")
	var out []ValidationResult
	for _, r := range rs {
		name := r.Name
		if name == ValidationFittedRun {
			name += " (**fitted**)"
		} else {
			out = append(out, r)
		}
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %+.1f%% |\n", name, r.PredictedSeconds, r.MeasuredSeconds, 100*r.Error)
	}
	s := SummarizeValidation(out)
	verdict := func(v, target float64) string {
		if v <= target {
			return "met"
		}
		return "**missed**"
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d runs out of sample: mean |error| %.1f%% (target <= %.0f%%: %s), max |error| %.1f%% on %s (target <= %.0f%%: %s).\n\n",
		s.Rows, 100*s.MeanAbsError, 100*validationMeanTarget, verdict(s.MeanAbsError, validationMeanTarget),
		100*s.MaxAbsError, s.MaxName, 100*validationMaxTarget, verdict(s.MaxAbsError, validationMaxTarget))
	w.WriteString(validationProse)
}

// validationProse says what sets the validation's errors. It names
// mechanisms, not numbers, so it does not go stale with the table above.
const validationProse = `What the comparison rests on, and where it is weakest:

- **Before the one fit** every run came out 8-18% fast (mean 12%): the A100's GEMM curve asymptote was the
  best case a shape search finds (MAMF, 271 of 312 TFLOP/s), above what Megatron-LM's GEMMs reached with the
  cuBLAS of 2021-22. Fitting that one number on one run (233 TFLOP/s) moves every run alike; the errors left
  are the model's structure.
- **Core attention** is Megatron-LM's pre-FlashAttention kernel chain, its bytes moved at an efficiency fitted
  to published timings of that kernel chain on an A100 (FlashAttention paper, Appendix E), not to these runs;
  at the H800-derived efficiency of today's kernels it ran 25-35% faster than those timings, and the small
  models (h = 2304-4096, where attention's s² bytes weigh most) came out 5-12 points faster than they do now.
- **The interleaved SC'21 runs** (vpp 2-3 with data parallelism) are the least well predicted (5-9% fast); the
  interleaved runs of Korthikanti et al. (data parallelism 1) are within 3%. What the SC'21 Megatron-LM of early
  2021 lost there (blocking pipeline transfers on the compute stream, the data-parallel all-reduce across 9-32
  nodes) is not separated by any published number we have.
- **Korthikanti et al.'s trillion-parameter runs** come out 4-5% slow (SC'21's same model, at data parallelism 6,
  3% fast): 64 stages of 2 layers, a predicted iteration that is 15% pipeline bubble, where the stage-to-stage
  transfers and the fill and drain weigh most.
- **Not modelled**: PyTorch DDP's overlap of the gradient all-reduce with the backward pass (the four SC'21
  runs with pp = 1 used it; dcpsim exposes the all-reduce, 2-7% of those predictions), the embedding's
  gradient all-reduce between first and last stages, the mixed-precision optimizer's extra copies, and the
  data loader.

`
