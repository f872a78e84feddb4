package experiment

// dcpsim validate: predicted iteration times beside published Megatron-LM
// runs of dense GPT models.

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/static"
	"github.com/dcpsim/dcpsim/sim/step"
)

// ValidationColumns is the exact header of a validation table, in order.
var ValidationColumns = []string{"name", "gpu", "gpus", "hidden", "ffn", "heads", "layers", "vocab", "seq_len",
	"tp", "pp", "vpp", "global_batch", "micro_batch", "recompute", "sequence_parallel", "measured_seconds"}

// Bounds of a validation table.
const (
	// MaxValidationRows bounds the runs of one table.
	MaxValidationRows = 1000
	// MaxValidationSeqTokens bounds seq_len.
	MaxValidationSeqTokens = 1 << 20
	// MaxValidationGlobalBatch bounds global_batch (sequences per iteration;
	// the shipped table's largest is 3,072).
	MaxValidationGlobalBatch = 1 << 20
	// MaxValidationRowOps bounds one run's engine ops,
	// pp·(global_batch/micro_batch)·vpp·2, what its simulation's time and
	// memory grow with (about 1 µs and 70 bytes an op): the shipped table's
	// largest run has 529,200, a run at this bound takes about 2 s.
	MaxValidationRowOps = 1 << 21
	// MaxValidationTableOps and MaxValidationTableSequences bound the sum
	// over a table's runs of their ops and of their global_batch, so a table
	// of MaxValidationRows large runs is refused instead of running for
	// hours: about 4 s of simulation at most (the shipped table's 18 runs
	// have 1,375,828 ops and 20,276 sequences, 1 s).
	MaxValidationTableOps       = 1 << 22
	MaxValidationTableSequences = 1 << 22
	// MaxValidationSeconds bounds measured_seconds.
	MaxValidationSeconds = 1e7
	// MaxValidationTables bounds the tables of one dcpsim validate: each is
	// bounded by itself (MaxValidationTableOps).
	MaxValidationTables = 8
)

// ValidationRun is one published run of a validation table: a dense GPT
// model trained with Megatron-LM on a fixed-length workload.
type ValidationRun struct {
	// Line is the run's line in its table (the header is line 1).
	Line int
	// Name names the run.
	Name string
	// GPU names the calibration profile; GPUs is the job's GPU count.
	GPU  string
	GPUs int
	// Hidden, FFN, Heads, Layers and Vocab are the model's widths (head dim
	// = Hidden/Heads); SeqLen is every sequence's length.
	Hidden, FFN, Heads, Layers, Vocab, SeqLen int
	// TP, PP and VPP are the tensor, pipeline and virtual-pipeline sizes;
	// data parallelism is GPUs/(TP·PP).
	TP, PP, VPP int
	// GlobalBatch and MicroBatch are sequences per iteration and per
	// microbatch.
	GlobalBatch, MicroBatch int
	// Recompute is the activation recomputation.
	Recompute job.RecomputeGranularity
	// SequenceParallel says whether TP ran with sequence parallelism.
	SequenceParallel bool
	// MeasuredSeconds is the published iteration time.
	MeasuredSeconds float64
}

// DP is the data-parallel size, GPUs/(TP·PP).
func (r ValidationRun) DP() int { return r.GPUs / (r.TP * r.PP) }

// Microbatches is the microbatches each DP replica runs per iteration,
// GlobalBatch/(MicroBatch·DP).
func (r ValidationRun) Microbatches() int { return r.GlobalBatch / (r.MicroBatch * r.DP()) }

var validationNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ReadValidationTable reads the validation table at path, at most
// safeio.MaxValidationTableBytes long, and checks it (DecodeValidationTable).
// Every error blames the input (badinput.Is(err)).
func ReadValidationTable(path string) ([]ValidationRun, error) {
	b, err := safeio.ReadFile(path, safeio.MaxValidationTableBytes)
	if err != nil {
		return nil, badInput("%w", err)
	}
	return DecodeValidationTable(strings.NewReader(string(b)), path)
}

// DecodeValidationTable decodes a validation table: CSV with exactly the
// header ValidationColumns, then one run per line, every field checked with
// its allowed range and the fields against each other (tp divides the heads
// and the GPUs of a node, pp the layers, vpp the layers of a stage, tp·pp
// the GPUs, micro_batch·dp the global batch, ...). It returns every problem
// at once, each naming name:line:column and the column, with an error that
// matches badinput.Err.
func DecodeValidationTable(r io.Reader, name string) ([]ValidationRun, error) {
	names := map[string]int{}
	var tableOps, tableSeqs int64 // over the runs decoded so far
	return decodeCSVTable(r, name, ValidationColumns, func(h []string) bool { return slices.Equal(h, ValidationColumns) }, MaxValidationRows,
		func(rec []string, cr *csv.Reader, line int) csvRow[ValidationRun] {
			d := rowDecoder{name: name, rec: rec, cr: cr}
			run, ok := d.decode()
			out := csvRow[ValidationRun]{value: run, problems: d.problems}
			if !ok {
				return out
			}
			if first, dup := names[run.Name]; dup {
				out.problems = append(out.problems, d.fieldErr(0, "used twice (first on line %d)", first))
				return out
			}
			names[run.Name] = run.Line
			tableOps += run.engineOps()
			tableSeqs += int64(run.GlobalBatch)
			if tableOps > MaxValidationTableOps || tableSeqs > MaxValidationTableSequences {
				out.stop = fmt.Errorf("%s:%d: the runs up to this one hold %d engine ops (pp·(global_batch/micro_batch)·vpp·2) and %d sequences: a table may hold at most %d and %d in all (about 4 s of simulation); split it into several tables",
					name, line, tableOps, tableSeqs, int64(MaxValidationTableOps), int64(MaxValidationTableSequences))
				return out
			}
			out.keep = true
			return out
		})
}

// rowDecoder decodes one record, collecting a problem per bad field.
type rowDecoder struct {
	name     string
	rec      []string
	cr       *csv.Reader
	problems []error
}

// fieldErr is a problem with field i, naming the file, line, column, the
// column's name and its value.
func (d *rowDecoder) fieldErr(i int, format string, args ...any) error {
	line, col := d.cr.FieldPos(i)
	return fmt.Errorf("%s:%d:%d: %s = %q: %s", d.name, line, col, ValidationColumns[i], d.rec[i], fmt.Sprintf(format, args...))
}

func (d *rowDecoder) add(i int, format string, args ...any) {
	d.problems = append(d.problems, d.fieldErr(i, format, args...))
}

// integer parses field i as a decimal integer in [lo, hi] (digits only).
func (d *rowDecoder) integer(i, lo, hi int) (int, bool) {
	s := d.rec[i]
	v, err := strconv.Atoi(s)
	if err != nil || s == "" || strings.TrimLeft(s, "0123456789") != "" || v < lo || v > hi {
		d.add(i, "must be an integer in [%d, %d]", lo, hi)
		return 0, false
	}
	return v, true
}

// decode checks every field, then the fields against each other once each
// is valid on its own.
func (d *rowDecoder) decode() (ValidationRun, bool) {
	line, _ := d.cr.FieldPos(0)
	r := ValidationRun{Line: line, Name: d.rec[0], GPU: d.rec[1]}
	n0 := len(d.problems)
	if !validationNameRE.MatchString(r.Name) {
		d.add(0, "must match [A-Za-z0-9._-]{1,64}")
	}
	prof, err := calib.LookupProfile(r.GPU)
	if err != nil {
		d.add(1, "no calibration profile; known: %s", strings.Join(calib.ProfileNames(), ", "))
	}
	ints := []struct {
		dst    *int
		lo, hi int
	}{
		{&r.GPUs, 1, job.MaxGPUs}, {&r.Hidden, 1, 65536}, {&r.FFN, 1, 1 << 20}, {&r.Heads, 1, 1024},
		{&r.Layers, 1, 1024}, {&r.Vocab, 1, 10_000_000}, {&r.SeqLen, 1, MaxValidationSeqTokens},
		{&r.TP, 1, job.MaxTP}, {&r.PP, 1, job.MaxPP}, {&r.VPP, 1, job.MaxVPP},
		{&r.GlobalBatch, 1, MaxValidationGlobalBatch}, {&r.MicroBatch, 1, MaxValidationGlobalBatch},
	}
	for k, f := range ints {
		if v, ok := d.integer(k+2, f.lo, f.hi); ok {
			*f.dst = v
		}
	}
	switch rc := job.RecomputeGranularity(d.rec[14]); rc {
	case job.RecomputeNone, job.RecomputeSelective, job.RecomputeFull:
		r.Recompute = rc
	default:
		d.add(14, "must be %q, %q or %q", job.RecomputeNone, job.RecomputeSelective, job.RecomputeFull)
	}
	switch d.rec[15] {
	case "true":
		r.SequenceParallel = true
	case "false":
	default:
		d.add(15, "must be true or false")
	}
	if v, err := strconv.ParseFloat(d.rec[16], 64); err != nil || !(v > 0) || v > MaxValidationSeconds || math.IsInf(v, 0) {
		d.add(16, "must be a number of seconds in (0, %g]", float64(MaxValidationSeconds))
	} else {
		r.MeasuredSeconds = v
	}
	if len(d.problems) > n0 {
		return r, false
	}

	// The fields against each other, each problem on the field blamed.
	gpn := int(prof.GPUsPerNode.Value)
	if r.Hidden%r.Heads != 0 {
		d.add(5, "must divide hidden (%d): head dim = hidden/heads", r.Hidden)
	}
	if gpn%r.TP != 0 || r.Heads%r.TP != 0 {
		d.add(9, "must divide the GPUs of a %s node (%d) and heads (%d)", r.GPU, gpn, r.Heads)
	}
	if r.Layers%r.PP != 0 {
		d.add(10, "must divide layers (%d)", r.Layers)
	} else if (r.Layers/r.PP)%r.VPP != 0 {
		d.add(11, "must divide the layers of a stage, layers/pp = %d", r.Layers/r.PP)
	}
	if r.VPP > 1 && r.PP < 2 {
		d.add(11, "must be 1 when pp = 1")
	}
	if r.GPUs%(r.TP*r.PP) != 0 {
		d.add(2, "must be a multiple of tp·pp = %d", r.TP*r.PP)
	} else if r.GPUs > gpn && r.GPUs%gpn != 0 {
		d.add(2, "must be a multiple of the GPUs of a %s node (%d)", r.GPU, gpn)
	}
	if r.MicroBatch > r.GlobalBatch {
		d.add(13, "must be at most global_batch (%d)", r.GlobalBatch)
	} else if int64(r.MicroBatch)*int64(r.SeqLen) > job.MaxBudgetTokens {
		d.add(13, "micro_batch·seq_len = %d tokens per microbatch: must be at most %d", int64(r.MicroBatch)*int64(r.SeqLen), job.MaxBudgetTokens)
	}
	if len(d.problems) > n0 {
		return r, false
	}
	dp := r.DP()
	switch {
	case r.GlobalBatch%(r.MicroBatch*dp) != 0:
		d.add(12, "must be a multiple of micro_batch·dp = %d·%d (dp = gpus/(tp·pp))", r.MicroBatch, dp)
	case r.VPP > 1 && r.Microbatches()%r.PP != 0:
		d.add(12, "gives %d microbatches per replica: with vpp > 1 they must be a multiple of pp (%d), as Megatron-LM's interleaved schedule requires", r.Microbatches(), r.PP)
	case r.engineOps() > step.MaxOps:
		d.add(12, "pp·(global_batch/micro_batch)·vpp·2 = %d ops: more than the engine's %d (step.MaxOps)",
			r.engineOps(), step.MaxOps)
	case r.engineOps() > MaxValidationRowOps:
		d.add(12, "pp·(global_batch/micro_batch)·vpp·2 = %d ops: a validation run may have at most %d (about 2 s of simulation; the published runs have at most 529,200)",
			r.engineOps(), MaxValidationRowOps)
	}
	return r, len(d.problems) == n0
}

// engineOps is the run's engine ops, pp·(global_batch/micro_batch)·vpp·2
// (each factor bounded, so no overflow).
func (r ValidationRun) engineOps() int64 {
	if r.MicroBatch < 1 {
		return 0
	}
	return int64(r.PP) * int64(r.GlobalBatch/r.MicroBatch) * int64(r.VPP) * 2
}

// ValidationJob is the job of a run: job.GPT of its widths on its GPUs (the
// profile's node size) under its layout, every microbatch MicroBatch
// sequences of SeqLen tokens (the budget B = MicroBatch·SeqLen), gradients
// all-reduced (Megatron-LM's DistributedDataParallel of 2021-22, before its
// distributed optimizer).
func ValidationJob(r ValidationRun) (job.Job, *calib.Profile, error) {
	prof, err := calib.LookupProfile(r.GPU)
	if err != nil {
		return job.Job{}, nil, badInput("%s: %w", r.Name, err)
	}
	m, err := job.GPT(r.Name, r.Hidden, r.FFN, r.Heads, r.Layers, r.Vocab, r.SeqLen)
	if err != nil {
		return job.Job{}, nil, badInput("%s (line %d): %w", r.Name, r.Line, err)
	}
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: r.GPU, GPUs: r.GPUs, GPUsPerNode: int(prof.GPUsPerNode.Value)},
		Parallel: job.Parallel{TP: r.TP, PP: r.PP, VPP: r.VPP, EP: 1, BudgetTokens: r.MicroBatch * r.SeqLen,
			SequenceParallel: r.SequenceParallel, Recompute: r.Recompute, GradSync: job.GradAllReduce},
		ContextTokens: r.SeqLen}
	if err := j.Validate(); err != nil {
		return job.Job{}, nil, badInput("%s (line %d): %w", r.Name, r.Line, err)
	}
	return j, prof, nil
}

// ValidateRun predicts one run's iteration time as Megatron-LM of 2021-22
// ran it: its job (ValidationJob), a batch of GlobalBatch sequences of
// SeqLen tokens planned by static CP at degree 1 (plain data parallelism
// with Megatron's dp_balanced packing: each microbatch MicroBatch whole
// sequences), priced by the cost model with Megatron-LM's pre-FlashAttention
// core attention (compute.MegatronSoftmax), no planner stall, and timed by the
// engine (1F1B, interleaved when VPP > 1).
func ValidateRun(r ValidationRun) (results.ValidationResult, error) {
	return validateRunOn(r, nil)
}

// validateRunOn is ValidateRun on prof instead of the run's embedded profile
// when prof is not nil (the fit of the A100's GEMM asymptote).
func validateRunOn(r ValidationRun, prof *calib.Profile) (results.ValidationResult, error) {
	j, embedded, err := ValidationJob(r)
	if err != nil {
		return results.ValidationResult{}, err
	}
	if prof == nil {
		prof = embedded
	}
	mod, err := costmodel.New(j, prof, costmodel.Options{AttentionKernel: compute.MegatronSoftmax})
	if err != nil {
		return results.ValidationResult{}, fmt.Errorf("%s: %w", r.Name, err)
	}
	policy, err := static.New(static.Options{Degree: 1})
	if err != nil {
		return results.ValidationResult{}, err
	}
	in := sched.Inputs{PoolRanks: j.PoolRanks(), BudgetTokens: j.Parallel.BudgetTokens, PP: r.PP, VPP: r.VPP, EP: 1,
		ContextTokens: r.SeqLen}
	lengths := slices.Repeat([]int{r.SeqLen}, r.GlobalBatch)
	plan, err := policy.Plan(lengths, in)
	if err != nil {
		return results.ValidationResult{}, fmt.Errorf("%s: plan: %w", r.Name, err)
	}
	if got := len(plan.Microbatches); got != r.Microbatches() {
		return results.ValidationResult{}, fmt.Errorf("%s: the plan has %d microbatches, want %d", r.Name, got, r.Microbatches())
	}
	exec, overlap := policy.CPExec()
	out, err := mod.Simulate(plan, lengths, costmodel.Exec{CP: exec, OverlapAllToAll: overlap}, 0)
	if err != nil {
		return results.ValidationResult{}, fmt.Errorf("%s: %w", r.Name, err)
	}
	mem, err := memory.New(j, compute.MegatronSoftmax)
	if err != nil {
		return results.ValidationResult{}, fmt.Errorf("%s: %w", r.Name, err)
	}
	var act float64
	if len(out.Memory.Stages) > 0 {
		act = out.Memory.Stages[0].ActivationBytes
	}
	res := out.Result
	t := res.IterationSeconds()
	sp := "SP"
	if !r.SequenceParallel {
		sp = "no SP"
	}
	return results.ValidationResult{
		Name: r.Name, PredictedSeconds: t, MeasuredSeconds: r.MeasuredSeconds, Error: t/r.MeasuredSeconds - 1,
		MeasuredValue: r.MeasuredSeconds, MeasuredUnit: UnitSecondsPerStep, Kind: "dense", Source: MegatronLM2022, GPU: r.GPU,
		Layout: fmt.Sprintf("%d×%s tp%d pp%d vpp%d dp%d, %d MBs of %d, %s, %s", r.GPUs, r.GPU, r.TP, r.PP, r.VPP, r.DP(),
			r.Microbatches(), r.MicroBatch, r.Recompute, sp),
		ComputeShare: res.ComputeShare, ExposedCommShare: res.ExposedCommShare, PPBubbleShare: res.PPBubbleShare + res.DPBubbleShare,
		SyncShare:                      res.SyncShare,
		PredictedWeightsOptimizerBytes: mem.States(0).Bytes(), PredictedActivationBytes: act,
	}, nil
}

// ValidateUsage is the usage text of dcpsim validate, beside the contract it
// describes.
const ValidateUsage = `  dcpsim validate --table FILE.csv [--table FILE.csv ...] [--json] [--out DIR] [--fit GPU]

  Predict the iteration time of every published run of the tables and print
  it beside the measured one with the relative error (error = predicted /
  measured - 1). A table is one of two CSV forms, told apart by its header:

  - validation/megatron-lm.csv's, dense GPT models trained with Megatron-LM
    in 2021-22 (header name,gpu,gpus,hidden,ffn,heads,layers,vocab,seq_len,
    tp,pp,vpp,global_batch,micro_batch,recompute,sequence_parallel,
    measured_seconds): alone, it prints the first stage's predicted memory per
    GPU (model states; simulated peak activations) and the mean and max
    |error|;
  - the at-scale form of validation/atscale.csv (header id,source,model,...,
    measured_value,measured_unit,flops_formula,notes; validation/README.md
    defines every column): dense and MoE models, GQA and MLA, context
    parallelism, BF16, FP8 and MXFP8, measured in s/step, tokens/s/gpu,
    tflops/gpu (converted with the row's FLOP formula) or mfu%. Fields a row
    leaves empty take its source family's default, printed as "assumed".
    The runs are printed grouped by source family, then the mean and max
    |error| per source family, per kind (dense, moe, cp, fp8) and per GPU.

  --json prints one object per run instead: {"name", "predicted_seconds",
  "measured_seconds", "error", "predicted_weights_optimizer_bytes",
  "predicted_activation_bytes", "measured_value", "measured_unit", "kind"}
  (measured_seconds is the measurement converted to seconds per step; the
  bytes are per GPU of the first pipeline stage). --out DIR also writes a
  results folder: validation.json (every run with its source family, GPU,
  layout and assumptions), validation.csv, predicted-vs-measured.png/.svg
  (log-log, coloured by kind) and index.html (the page: the table, sortable,
  and the figure). --fit GPU fits that GPU's
  sustained_efficiency on half A of the at-scale rows (by id, alternately per
  GPU) and prints both halves' errors. Exit 0 whatever the errors; 2 for a
  bad table (line, row and column named).`

// ValidateTables reads each table at paths (ReadValidationTable or, for
// the at-scale header, ReadAtScaleTable) and predicts every run (Validate,
// PredictAtScale), in order; atScale says whether any table was of the
// at-scale form.
func ValidateTables(paths []string) (res []results.ValidationResult, atScale bool, err error) {
	for _, path := range paths {
		b, err := safeio.ReadFile(path, safeio.MaxValidationTableBytes)
		if err != nil {
			return nil, false, badInput("%w", err)
		}
		header, _ := csv.NewReader(strings.NewReader(string(b))).Read()
		if IsAtScaleHeader(header) {
			atScale = true
			runs, err := DecodeAtScaleTable(strings.NewReader(string(b)), path)
			if err != nil {
				return nil, false, err
			}
			for _, r := range runs {
				v, err := PredictAtScale(r)
				if err != nil {
					return nil, false, err
				}
				res = append(res, v)
			}
			continue
		}
		runs, err := DecodeValidationTable(strings.NewReader(string(b)), path)
		if err != nil {
			return nil, false, err
		}
		out, err := Validate(runs)
		if err != nil {
			return nil, false, err
		}
		res = append(res, out...)
	}
	return res, atScale, nil
}

// FamilySoftware maps every source family's name to its software, for the
// tables' headers.
func FamilySoftware() map[string]string {
	software := map[string]string{MegatronLM2022: megatronLM2022Software, Generic.Name: Generic.Software}
	for _, f := range Families {
		software[f.Name] = f.Software
	}
	return software
}

// WriteValidationFolder writes a validation's results folder dir as a run's
// is written (built aside, swapped in whole, manifest.json last):
// validation.json and validation.csv (results.WriteValidationRows) and,
// with figures, the predicted-vs-measured figure. The manifest names the
// tables and their SHA-256 in place of a scenario.
func WriteValidationFolder(dir string, tables []string, rs []results.ValidationResult, figures Drawer) (err error) {
	st, err := newStagedDir(dir, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			st.discard()
		}
	}()
	files, err := results.WriteValidationRows(st.tmp, rs, FamilySoftware())
	if err != nil {
		return err
	}
	if figures != nil {
		names, err := figures.ValidationFigures(st.tmp, rs)
		if err != nil {
			return err
		}
		files = append(files, names...)
	}
	names, err := writePage(figures, st.tmp, results.Page{Title: "validation", Validation: rs}, files, "manifest.json")
	if err != nil {
		return err
	}
	files = append(files, names...)
	slices.Sort(files)
	var sums []string
	for _, t := range tables {
		b, err := safeio.ReadFile(t, safeio.MaxValidationTableBytes)
		if err != nil {
			return badInput("%w", err)
		}
		sums = append(sums, fmt.Sprintf("%x", sha256.Sum256(b)))
	}
	b := ReadBuild()
	m := Manifest{Version: b.Version, VCSRevision: b.Revision, VCSModified: b.Modified, GoVersion: b.GoVersion,
		Scenario: "validate " + strings.Join(tables, " "), Hash: strings.Join(sums, ","), Files: files}
	w := &resultWriter{ctx: context.Background(), dir: st.tmp}
	if err := w.json("manifest.json", m); err != nil {
		return err
	}
	return st.publish()
}

// MegatronLM2022 is the source family of validation/megatron-lm.csv's runs.
const MegatronLM2022 = results.MegatronLM2022

const megatronLM2022Software = "Megatron-LM of 2021-22 (Narayanan et al. SC'21, Korthikanti et al. 2022), the megatron-lm.csv form"

// Validate predicts every run of a table (ValidateRun), in order.
func Validate(runs []ValidationRun) ([]results.ValidationResult, error) {
	out := make([]results.ValidationResult, 0, len(runs))
	for _, r := range runs {
		v, err := ValidateRun(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
