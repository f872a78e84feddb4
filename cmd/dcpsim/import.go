package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/internal/launchcfg"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/workload"
)

const importUsage = `  dcpsim import megatron --gpu KIND [flags] (--file launch.sh | [--] ARGS...)
  dcpsim import nemo --gpu KIND --gpus N [flags] RECIPE.yaml

  Print a scenario (or write it with --out) for a job as its launch line or
  recipe describes it: Megatron-LM's arguments (the words after
  pretrain_gpt.py; or --file, a launch script whose torchrun/srun line runs
  a pretrain_*.py, read without running anything: its variables and arrays
  expanded, the GPU count taken from --nnodes × --nproc-per-node), or a NeMo
  Megatron-Bridge recipe (its ConfigContainer as YAML: model:, train:,
  ddp:, mixed_precision:, ...).

  Every argument is mapped to a scenario key (or to how the cost model
  already prices it), listed as having no effect on the step time (logging,
  checkpointing, data, learning rate, ...), or refused by name (exit 2). An
  argument dcpsim does not know is an error (exit 2) unless --ignore-unknown,
  which lists it. The scenario's comments account for every argument and
  every default taken. The workload is every sequence at --seq-length unless
  --workload names a length preset or a length file; the policy is static CP
  at --context-parallel-size (Megatron's), or mcore for
  --hybrid-context-parallel; --policies adds others to compare.

  The importer's flags come before the Megatron-LM arguments (or "--").`

const exportUsage = `  dcpsim export megatron [--policy P] S

  Print Megatron-LM arguments for scenario S (an embedded name or a .toml
  file): its layout and batch (PARALLEL_ARGS, BATCH_ARGS) and its model
  (MODEL_ARGS) as bash arrays, and the torchrun line that passes them to
  pretrain_gpt.py (dcpsim import megatron --file reads it back). The CP
  degree is the static policy's; a policy that picks degrees per microbatch
  (hydra, mcore, ...) is exported at the least degree that holds the
  context, said in a comment. --policy picks the scenario's policy (default
  its first). dcpsim search ... --best-as megatron prints the same for a
  search's best candidate.`

func importCommand() command {
	return command{name: "import", summary: "a scenario from Megatron-LM arguments or a NeMo Megatron-Bridge recipe", usage: importUsage,
		run: runImport, helpArgs: []string{"megatron", "-h"}}
}

func exportCommand() command {
	return command{name: "export", summary: "Megatron-LM arguments for a scenario's layout, batch and model", usage: exportUsage,
		run: runExport, helpArgs: []string{"megatron", "-h"}}
}

// importFlags are the importer's own flags.
type importFlags struct {
	gpu, name, workload, policies, out, file string
	gpus, gpusPerNode, vocab                 int
	ignoreUnknown                            bool
}

// importFlagNames are the flags that take a value; --ignore-unknown takes
// none.
var importFlagNames = []string{"gpu", "gpus", "gpus-per-node", "vocab", "name", "workload", "policies", "out", "file"}

func runImport(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "megatron" && args[0] != "nemo" && !isHelpFlag(args[0])) {
		return badInput("dcpsim import takes a format, megatron or nemo (dcpsim help import)")
	}
	format := "megatron"
	if !isHelpFlag(args[0]) {
		format, args = args[0], args[1:]
	}
	fs := newFlagSet("import "+format, importUsage, stderr)
	var f importFlags
	fs.StringVar(&f.gpu, "gpu", "", "the GPU kind: a calibration profile ("+strings.Join(calib.ProfileNames(), ", ")+")")
	fs.IntVar(&f.gpus, "gpus", 0, "the job's GPUs (default: the launcher's --nnodes × --nproc-per-node)")
	fs.IntVar(&f.gpusPerNode, "gpus-per-node", 0, "GPUs per NVLink node (default: the launcher's --nproc-per-node, else the profile's)")
	fs.IntVar(&f.vocab, "vocab", 0, "the vocabulary when the arguments give none (Megatron-LM reads it from the tokenizer)")
	fs.StringVar(&f.name, "name", "", "the scenario's name (default: the file's, or \"imported\")")
	fs.StringVar(&f.workload, "workload", "", "a length preset ("+strings.Join(workload.PresetNames(), ", ")+") or a length file, instead of fixed-length sequences")
	fs.StringVar(&f.policies, "policies", "", "more DCP policies to run beside the framework's, comma-separated (e.g. hydra,mcore)")
	fs.StringVar(&f.out, "out", "", "write the scenario to this file instead of printing it")
	fs.StringVar(&f.file, "file", "", "megatron: a launch script whose torchrun line runs a pretrain_*.py")
	fs.BoolVar(&f.ignoreUnknown, "ignore-unknown", false, "list the arguments dcpsim does not know instead of failing on them")
	own, rest := splitImportArgs(args)
	pos, err := parseInterspersed(fs, own)
	if err != nil {
		return err
	}
	if format == "megatron" && len(pos) > 0 {
		return badInput("dcpsim import megatron: %q before the Megatron-LM arguments: they start with --", pos[0])
	}
	if format == "nemo" {
		rest = append(pos, rest...)
	}
	if f.out != "" {
		if err := checkOutFile("--out", f.out); err != nil {
			return err
		}
	}
	o, err := importOptions(f)
	if err != nil {
		return err
	}
	var im *launchcfg.Import
	source := ""
	switch {
	case format == "nemo":
		if len(rest) != 1 || f.file != "" {
			return badInput("dcpsim import nemo takes one recipe file (RECIPE.yaml), got %d arguments", len(rest))
		}
		source = rest[0]
		data, err := safeio.ReadFile(source, launchcfg.MaxYAMLBytes)
		if err != nil {
			return badInput("%w", err)
		}
		im, err = launchcfg.NeMo(data, source, o)
		if err != nil {
			return err
		}
	case f.file != "":
		if len(rest) > 0 {
			return badInput("dcpsim import megatron: --file %s and arguments %q: give one", f.file, rest)
		}
		source = f.file
		data, err := safeio.ReadFile(source, launchcfg.MaxScriptBytes)
		if err != nil {
			return badInput("%w", err)
		}
		im, err = launchcfg.MegatronScript(string(data), source, o)
		if err != nil {
			return err
		}
	default:
		if len(rest) == 0 {
			return badInput("dcpsim import megatron: give the arguments (after --) or --file launch.sh")
		}
		im, err = launchcfg.Megatron(rest, o)
		if err != nil {
			return err
		}
	}
	so := launchcfg.ScenarioOptions{Name: f.name}
	if so.Name == "" {
		so.Name = "imported"
		if source != "" {
			so.Name = launchcfg.ScenarioName(filepath.Base(source))
		}
	}
	if f.workload != "" {
		if slices.Contains(workload.PresetNames(), f.workload) {
			so.WorkloadPreset = f.workload
		} else {
			so.WorkloadFile = f.workload
		}
	}
	if f.policies != "" {
		so.Policies = strings.Split(f.policies, ",")
	}
	text := im.Scenario(so)
	// The scenario must be one dcpsim reads: checked as dcpsim scenarios
	// check would (a policy or workload flag may be wrong).
	check := f.out
	if check == "" {
		check = so.Name + ".toml"
	}
	if _, err := scenarios.Parse([]byte(text), check); err != nil {
		return err
	}
	for _, u := range im.Uses {
		if u.Class == launchcfg.Unknown {
			fmt.Fprintf(stderr, "dcpsim import: ignored unknown argument %s %s\n", escapeControls(u.Arg), escapeControls(u.Value))
		}
	}
	if f.out == "" {
		_, err := io.WriteString(stdout, text)
		return err
	}
	if err := safeio.WriteFileAtomic(f.out, func(w io.Writer) error { _, err := io.WriteString(w, text); return err }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s)\n", f.out, escapeControls(im.Job.String()))
	return nil
}

// splitImportArgs separates the importer's flags, which come first, from
// the Megatron-LM arguments after them (or after "--").
func splitImportArgs(args []string) (own, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return own, args[i+1:]
		}
		name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			// A positional argument (a recipe file): the flags may go on.
			own = append(own, a)
			continue
		}
		switch {
		case isHelpFlag(a) || a == helpFull || name == "ignore-unknown":
			own = append(own, a)
		case slices.Contains(importFlagNames, name):
			own = append(own, a)
			if !hasVal && i+1 < len(args) {
				i++
				own = append(own, args[i])
			}
		default:
			return own, args[i:]
		}
	}
	return own, nil
}

// importOptions checks the flags and fills the import's options.
func importOptions(f importFlags) (launchcfg.Options, error) {
	o := launchcfg.Options{GPU: f.gpu, GPUs: f.gpus, GPUsPerNode: f.gpusPerNode, Vocab: f.vocab, ModelName: "imported", IgnoreUnknown: f.ignoreUnknown}
	if f.gpu == "" {
		return o, badInput("--gpu is required: a calibration profile (%s)", strings.Join(calib.ProfileNames(), ", "))
	}
	prof, err := calib.LookupProfile(f.gpu)
	if err != nil {
		return o, badInput("--gpu %q: no calibration profile; known: %s", f.gpu, strings.Join(calib.ProfileNames(), ", "))
	}
	o.NodeGPUs = int(prof.GPUsPerNode.Value)
	for _, c := range []struct {
		name   string
		v, max int
	}{{"--gpus", f.gpus, 1 << 20}, {"--gpus-per-node", f.gpusPerNode, 1024}, {"--vocab", f.vocab, 10_000_000}} {
		if c.v < 0 || c.v > c.max {
			return o, badInput("%s %d: must be in [1, %d] (0: not given)", c.name, c.v, c.max)
		}
	}
	return o, nil
}
