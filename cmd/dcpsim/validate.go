package main

import (
	"io"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/report"
)

const validateUsage = `  dcpsim validate --table FILE.csv [--json]

  Predict the iteration time of every published run of the table (a dense GPT
  trained with Megatron-LM; header name,gpu,gpus,hidden,ffn,heads,layers,vocab,
  seq_len,tp,pp,vpp,global_batch,micro_batch,recompute,sequence_parallel,
  measured_seconds) and print it beside the measured one with the relative error,
  then the mean and max |error|; --json prints one object per run instead:
  {"name", "predicted_seconds", "measured_seconds", "error"}, error = predicted /
  measured - 1. Exit 0 whatever the errors; 2 for a bad table (line and column
  named). validation/megatron-lm.csv holds the published runs (make validate).`

func validateCommand() command {
	return command{name: "validate", summary: "predicted step times beside published Megatron-LM runs", usage: validateUsage, run: runValidate}
}

// runValidate reads the table, predicts every run and prints the table or
// the JSON lines.
func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", validateUsage, stderr)
	table := fs.String("table", "", "validation table (CSV)")
	asJSON := fs.Bool("json", false, "one JSON object per run")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *table == "" {
		return badInput("want --table FILE.csv and no arguments (got %q)", pos)
	}
	runs, err := experiment.ReadValidationTable(*table)
	if err != nil {
		return err
	}
	res, err := experiment.Validate(runs)
	if err != nil {
		return err
	}
	if *asJSON {
		return report.WriteValidationJSON(stdout, res)
	}
	return report.WriteValidationTable(stdout, res)
}
