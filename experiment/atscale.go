package experiment

// The at-scale validation table: published training runs of today's models
// (dense and MoE, GQA and MLA, context parallelism to 1M tokens, BF16, FP8
// and MXFP8) on 16 to 16,384 GPUs, read strictly (ReadAtScaleTable).

import (
	"encoding/csv"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/job"
)

// AtScaleColumns is the exact header of an at-scale validation table, in
// order (validation/README.md defines each column).
var AtScaleColumns = []string{"id", "source", "model", "attention", "mlp", "layers", "dense_layers", "moe_layer_step",
	"hidden", "ffn_hidden", "heads", "kv_heads", "head_dim", "moe_experts", "moe_topk", "moe_ffn_hidden", "shared_experts",
	"vocab", "gpu", "gpus", "seq_len", "gbs", "mbs", "tp", "pp", "vp", "cp", "ep", "etp", "dp", "precision", "recompute",
	"measured_value", "measured_unit", "flops_formula", "notes"}

// The vocabularies of an at-scale table's columns.
var (
	// AtScaleGPUs are the GPU kinds a row may name, each a calibration
	// profile.
	AtScaleGPUs = []string{"A100-80G", "H100-SXM", "H100-96GB-500W", "H800", "B200", "GB200-NVL72", "GB300-NVL72"}
	// AtScalePrecisions are the GEMM number formats.
	AtScalePrecisions = []string{"bf16", "fp8", "mxfp8"}
	// AtScaleRecomputes are the recompute granularities; empty means not
	// stated (the source family's default, FamilyOf).
	AtScaleRecomputes = []string{"none", "selective", "full"}
	// AtScaleAttentions and AtScaleMLPs are the attention and FFN kinds.
	AtScaleAttentions = []string{"mha", "gqa", "mla"}
	AtScaleMLPs       = []string{"gelu", "swiglu", "geglu", "squared-relu"}
	// AtScaleUnits are the units of measured_value.
	AtScaleUnits = []string{UnitSecondsPerStep, UnitTokensPerSecondPerGPU, UnitTFLOPsPerGPU, UnitMFUPercent}
	// AtScaleFormulas are the FLOP counts a tflops/gpu or mfu% row names
	// (FLOPsPerStep defines each from its source).
	AtScaleFormulas = []string{FormulaNeMo, FormulaMegatronLM, FormulaLlama3, FormulaMegaScale}
)

// The units of an at-scale row's measured_value.
const (
	UnitSecondsPerStep        = "s/step"
	UnitTokensPerSecondPerGPU = "tokens/s/gpu"
	UnitTFLOPsPerGPU          = "tflops/gpu"
	UnitMFUPercent            = "mfu%"
)

// The FLOP formulas a tflops/gpu or mfu% row names.
const (
	FormulaNeMo       = "nemo"
	FormulaMegatronLM = "megatron-lm"
	FormulaLlama3     = "llama3"
	FormulaMegaScale  = "megascale"
)

// Bounds of an at-scale table.
const (
	// MaxAtScaleRows bounds the runs of one table.
	MaxAtScaleRows = 1000
	// MaxAtScaleTextBytes bounds the source, model and notes fields.
	MaxAtScaleTextBytes = 4096
	// MaxAtScaleMeasured bounds measured_value in any unit.
	MaxAtScaleMeasured = 1e9
)

// AtScaleRun is one published run of an at-scale validation table. Integer
// fields a row leaves empty are 0 (not stated); Defaults fills them from
// the row's source family.
type AtScaleRun struct {
	// Line is the run's line in its table (the header is line 1).
	Line int
	// ID names the run; Source cites where it was published; ModelName is
	// the model as the source names it; Notes are the table's words.
	ID, Source, ModelName, Notes string
	// Attention and MLP are the attention and FFN kinds.
	Attention job.AttentionKind
	MLP       job.Activation
	// Layers, DenseLayers (empty: all dense for a dense model, 0 for MoE)
	// and MoELayerStep (empty: 1) lay out the FFNs (job.Model).
	Layers, DenseLayers, MoELayerStep int
	// Hidden, FFN (the dense FFN width), Heads, KVHeads and HeadDim are the
	// widths; Vocab the vocabulary.
	Hidden, FFN, Heads, KVHeads, HeadDim, Vocab int
	// Experts, TopK, ExpertFFN and SharedExperts are the MoE layers' (0 for
	// a dense model); a shared expert is ExpertFFN wide.
	Experts, TopK, ExpertFFN, SharedExperts int
	// GPU names the calibration profile; GPUs is the job's GPU count.
	GPU  string
	GPUs int
	// SeqLen is every sequence's length; GBS the sequences per iteration;
	// MBS per microbatch (0: not stated).
	SeqLen, GBS, MBS int
	// TP, PP, VP, CP, EP, ETP and DP are the layout (VP, CP, EP, ETP 0: not
	// stated); TP·PP·CP·DP = GPUs.
	TP, PP, VP, CP, EP, ETP, DP int
	// Precision is bf16, fp8 or mxfp8; Recompute none, selective, full or
	// "" (not stated).
	Precision string
	Recompute job.RecomputeGranularity
	// MeasuredValue in MeasuredUnit; FLOPsFormula names the FLOP count of a
	// tflops/gpu or mfu% row.
	MeasuredValue float64
	MeasuredUnit  string
	FLOPsFormula  string
}

// MoE reports whether the run's model has MoE layers.
func (r AtScaleRun) MoE() bool { return r.Experts > 0 }

var atScaleIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// IsAtScaleHeader reports whether a CSV header is AtScaleColumns.
func IsAtScaleHeader(header []string) bool { return slices.Equal(header, AtScaleColumns) }

// ReadAtScaleTable reads the at-scale table at path, at most
// safeio.MaxValidationTableBytes long, and checks it (DecodeAtScaleTable).
// Every error blames the input (badinput.Is(err)).
func ReadAtScaleTable(path string) ([]AtScaleRun, error) {
	b, err := safeio.ReadFile(path, safeio.MaxValidationTableBytes)
	if err != nil {
		return nil, badInput("%w", err)
	}
	return DecodeAtScaleTable(strings.NewReader(string(b)), path)
}

// DecodeAtScaleTable decodes an at-scale table: CSV with exactly the header
// AtScaleColumns, then one run per line, every field checked against its
// vocabulary or range and the fields against each other (tp·pp·cp·dp is the
// GPU count, ep·etp fit the layout, the MoE fields agree, a tflops or mfu
// row names its FLOP formula, ...). It returns every problem at once, each
// naming name:line:column, the row's id and the column, with an error that
// matches badinput.Err.
func DecodeAtScaleTable(r io.Reader, name string) ([]AtScaleRun, error) {
	ids := map[string]int{}
	var tableOps int64
	return decodeCSVTable(r, name, AtScaleColumns, IsAtScaleHeader, MaxAtScaleRows, func(rec []string, cr *csv.Reader, line int) csvRow[AtScaleRun] {
		d := atScaleDecoder{name: name, rec: rec, cr: cr}
		run, ok := d.decode()
		out := csvRow[AtScaleRun]{value: run, problems: d.problems}
		if !ok {
			return out
		}
		if first, dup := ids[run.ID]; dup {
			out.problems = append(out.problems, d.fieldErr(0, "used twice (first on line %d)", first))
			return out
		}
		ids[run.ID] = run.Line
		ops, _ := run.engineOps()
		if tableOps += ops; tableOps > MaxValidationTableOps {
			out.stop = fmt.Errorf("%s:%d: the runs up to this one hold %d engine ops (pp·vp·2 per microbatch): a table may hold at most %d (about 4 s of simulation); split it into several tables",
				name, line, tableOps, int64(MaxValidationTableOps))
			return out
		}
		out.keep = true
		return out
	})
}

// atScaleDecoder decodes one record, collecting a problem per bad field.
type atScaleDecoder struct {
	name     string
	rec      []string
	cr       *csv.Reader
	problems []error
}

// col is the index of a column of AtScaleColumns.
func col(name string) int {
	i := slices.Index(AtScaleColumns, name)
	if i < 0 {
		panic("experiment: no at-scale column " + name)
	}
	return i
}

// fieldErr is a problem with field i: file, line, column, the row's id,
// the column's name and its value.
func (d *atScaleDecoder) fieldErr(i int, format string, args ...any) error {
	line, c := d.cr.FieldPos(i)
	v := d.rec[i]
	if len(v) > 80 {
		v = v[:80] + "..."
	}
	return fmt.Errorf("%s:%d:%d: row %q: %s = %q: %s", d.name, line, c, d.rec[0], AtScaleColumns[i], v, fmt.Sprintf(format, args...))
}

func (d *atScaleDecoder) add(column string, format string, args ...any) {
	d.problems = append(d.problems, d.fieldErr(col(column), format, args...))
}

// integer parses the column as a decimal integer in [lo, hi]; empty gives
// 0 when optional, else a problem.
func (d *atScaleDecoder) integer(column string, lo, hi int, optional bool) int {
	s := d.rec[col(column)]
	if s == "" && optional {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil || s == "" || strings.TrimLeft(s, "0123456789") != "" || v < lo || v > hi {
		if optional {
			d.add(column, "must be empty (not stated) or an integer in [%d, %d]", lo, hi)
		} else {
			d.add(column, "must be an integer in [%d, %d]", lo, hi)
		}
		return 0
	}
	return v
}

// oneOf checks the column against a vocabulary (empty allowed when
// optional) and returns it.
func (d *atScaleDecoder) oneOf(column string, vocab []string, optional bool) string {
	s := d.rec[col(column)]
	if (s == "" && optional) || slices.Contains(vocab, s) {
		return s
	}
	if optional {
		d.add(column, "must be empty (not stated) or one of %s", strings.Join(vocab, ", "))
	} else {
		d.add(column, "must be one of %s", strings.Join(vocab, ", "))
	}
	return ""
}

// text checks a free-text column: at most MaxAtScaleTextBytes of printable
// UTF-8 (non-empty unless optional).
func (d *atScaleDecoder) text(column string, optional bool) string {
	s := d.rec[col(column)]
	switch {
	case s == "" && !optional:
		d.add(column, "must not be empty")
	case len(s) > MaxAtScaleTextBytes:
		d.add(column, "is %d bytes long: at most %d", len(s), MaxAtScaleTextBytes)
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd }):
		d.add(column, "holds a control character or invalid UTF-8")
	default:
		return s
	}
	return ""
}

// decode checks every field, then the fields against each other once each
// is valid on its own.
func (d *atScaleDecoder) decode() (AtScaleRun, bool) {
	line, _ := d.cr.FieldPos(0)
	r := AtScaleRun{Line: line, ID: d.rec[0]}
	n0 := len(d.problems)
	if !atScaleIDRE.MatchString(r.ID) {
		d.add("id", "must match [A-Za-z0-9._-]{1,64}")
	}
	r.Source = d.text("source", false)
	r.ModelName = d.text("model", false)
	r.Notes = d.text("notes", true)
	r.Attention = job.AttentionKind(d.oneOf("attention", AtScaleAttentions, false))
	r.MLP = job.Activation(d.oneOf("mlp", AtScaleMLPs, false))
	r.Layers = d.integer("layers", 1, 1024, false)
	r.DenseLayers = d.integer("dense_layers", 0, 1024, true)
	r.MoELayerStep = d.integer("moe_layer_step", 1, 1024, true)
	r.Hidden = d.integer("hidden", 1, 65536, false)
	r.FFN = d.integer("ffn_hidden", 1, 1<<20, true)
	r.Heads = d.integer("heads", 1, 1024, false)
	r.KVHeads = d.integer("kv_heads", 1, 1024, false)
	r.HeadDim = d.integer("head_dim", 1, 1024, false)
	r.Experts = d.integer("moe_experts", 1, 4096, true)
	r.TopK = d.integer("moe_topk", 1, 4096, true)
	r.ExpertFFN = d.integer("moe_ffn_hidden", 1, 1<<20, true)
	r.SharedExperts = d.integer("shared_experts", 0, 64, true)
	r.Vocab = d.integer("vocab", 1, 10_000_000, false)
	r.GPU = d.oneOf("gpu", AtScaleGPUs, false)
	r.GPUs = d.integer("gpus", 1, job.MaxGPUs, false)
	r.SeqLen = d.integer("seq_len", 1, job.MaxContextTokens, false)
	r.GBS = d.integer("gbs", 1, MaxValidationGlobalBatch, false)
	r.MBS = d.integer("mbs", 1, MaxValidationGlobalBatch, true)
	r.TP = d.integer("tp", 1, job.MaxTP, false)
	r.PP = d.integer("pp", 1, job.MaxPP, false)
	r.VP = d.integer("vp", 1, job.MaxVPP, true)
	r.CP = d.integer("cp", 1, job.MaxGPUs, true)
	r.EP = d.integer("ep", 1, job.MaxGPUs, true)
	r.ETP = d.integer("etp", 1, job.MaxTP, true)
	r.DP = d.integer("dp", 1, job.MaxGPUs, false)
	r.Precision = d.oneOf("precision", AtScalePrecisions, false)
	r.Recompute = job.RecomputeGranularity(d.oneOf("recompute", AtScaleRecomputes, true))
	r.MeasuredUnit = d.oneOf("measured_unit", AtScaleUnits, false)
	r.FLOPsFormula = d.oneOf("flops_formula", AtScaleFormulas, true)
	if v, err := strconv.ParseFloat(d.rec[col("measured_value")], 64); err != nil || !(v > 0) || v > MaxAtScaleMeasured {
		d.add("measured_value", "must be a number in (0, %g]", float64(MaxAtScaleMeasured))
	} else {
		r.MeasuredValue = v
	}
	if len(d.problems) > n0 {
		return r, false
	}
	d.crossCheck(&r)
	return r, len(d.problems) == n0
}

// crossCheck checks the fields of a row valid one by one against each
// other.
func (d *atScaleDecoder) crossCheck(r *AtScaleRun) {
	n0 := len(d.problems)
	// The model.
	if r.Heads%r.KVHeads != 0 {
		d.add("kv_heads", "must divide heads (%d)", r.Heads)
	}
	if r.Attention == job.MHA && r.KVHeads != r.Heads {
		d.add("kv_heads", "must equal heads (%d) for mha", r.Heads)
	}
	if r.Attention == job.MLA && r.KVHeads != r.Heads {
		d.add("kv_heads", "must equal heads (%d) for mla (training materialises per-head K/V)", r.Heads)
	}
	moeFields := []string{"moe_experts", "moe_topk", "moe_ffn_hidden"}
	if r.Experts == 0 {
		for _, c := range append(moeFields, "shared_experts", "moe_layer_step", "ep", "etp") {
			if d.rec[col(c)] != "" && !(c == "shared_experts" && r.SharedExperts == 0) && !((c == "ep" || c == "etp" || c == "moe_layer_step") && d.rec[col(c)] == "1") {
				d.add(c, "must be empty for a dense model (moe_experts empty)")
			}
		}
		if r.DenseLayers != 0 && r.DenseLayers != r.Layers {
			d.add("dense_layers", "must be empty or layers (%d) for a dense model", r.Layers)
		}
		if r.FFN == 0 {
			d.add("ffn_hidden", "must be given for a dense model")
		}
	} else {
		for _, c := range moeFields {
			if d.rec[col(c)] == "" {
				d.add(c, "must be given for an MoE model (moe_experts = %d)", r.Experts)
			}
		}
		if r.TopK > r.Experts {
			d.add("moe_topk", "must be at most moe_experts (%d)", r.Experts)
		}
		if r.DenseLayers >= r.Layers {
			d.add("dense_layers", "must be below layers (%d) for an MoE model", r.Layers)
		}
		step := max(r.MoELayerStep, 1)
		if step > r.Layers-r.DenseLayers {
			d.add("moe_layer_step", "must be at most the %d layers after dense_layers", r.Layers-r.DenseLayers)
		}
		if (r.DenseLayers > 0 || step > 1) && r.FFN == 0 {
			d.add("ffn_hidden", "must be given: the model has dense layers (dense_layers %d, moe_layer_step %d)", r.DenseLayers, step)
		}
	}
	if len(d.problems) > n0 {
		return
	}
	// The layout.
	cp, ep := max(r.CP, 1), max(r.EP, 1)
	if int64(r.TP)*int64(r.PP)*int64(cp)*int64(r.DP) != int64(r.GPUs) {
		d.add("gpus", "must be tp·pp·cp·dp = %d·%d·%d·%d = %d", r.TP, r.PP, cp, r.DP, int64(r.TP)*int64(r.PP)*int64(cp)*int64(r.DP))
	}
	prof, err := calib.LookupProfile(r.GPU)
	if err != nil {
		d.add("gpu", "no calibration profile: %v", err)
		return
	}
	gpn := int(prof.GPUsPerNode.Value)
	if gpn%r.TP != 0 {
		d.add("tp", "must divide the GPUs of a %s node (%d): TP stays inside NVLink", r.GPU, gpn)
	}
	if r.Heads%r.TP != 0 || r.KVHeads%r.TP != 0 {
		d.add("tp", "must divide heads (%d) and kv_heads (%d)", r.Heads, r.KVHeads)
	}
	if r.GPUs > gpn && nvlinkDomain(r.GPUs, gpn, r.TP) == 0 {
		d.add("gpus", "must be a multiple of the GPUs of a %s NVLink domain (%d), or of a part of one that tp (%d) divides", r.GPU, gpn, r.TP)
	}
	if r.PP > r.Layers {
		d.add("pp", "must be at most layers (%d)", r.Layers)
	}
	if r.VP > 1 && r.PP < 2 {
		d.add("vp", "must be empty or 1 when pp = 1")
	} else if r.VP > 1 && r.VP*r.PP > r.Layers {
		d.add("vp", "pp·vp = %d chunks: more than the %d layers", r.VP*r.PP, r.Layers)
	}
	if r.Experts > 0 {
		switch etp := r.ETP; {
		case r.Experts%ep != 0:
			d.add("ep", "must divide moe_experts (%d)", r.Experts)
		case etp > 0 && gpn%etp != 0:
			d.add("etp", "must divide the GPUs of a %s node (%d)", r.GPU, gpn)
		case etp > 0 && ((ep*etp)%r.TP != 0 || (r.GPUs/r.PP)%(ep*etp) != 0):
			d.add("ep", "ep·etp = %d·%d must be a multiple of tp (%d) dividing a stage's %d GPUs (tp·cp·dp)", ep, etp, r.TP, r.GPUs/r.PP)
		}
	}
	mbs := max(r.MBS, 1)
	switch {
	case r.GBS%(mbs*r.DP) != 0:
		d.add("gbs", "must be a multiple of mbs·dp = %d·%d", mbs, r.DP)
	case int64(mbs)*int64(r.SeqLen) > int64(job.MaxBudgetTokens)*int64(cp):
		d.add("mbs", "mbs·seq_len/cp = %d tokens per GPU and microbatch: must be at most %d", int64(mbs)*int64(r.SeqLen)/int64(cp), job.MaxBudgetTokens)
	case r.SeqLen%cp != 0:
		d.add("cp", "must divide seq_len (%d)", r.SeqLen)
	}
	if ops, ok := r.engineOps(); !ok || ops > MaxValidationRowOps {
		d.add("gbs", "pp·vp·2·(gbs/(mbs·dp)) = %d engine ops: a validation run may have at most %d (about 2 s of simulation)", ops, MaxValidationRowOps)
	}
	switch {
	case (r.MeasuredUnit == UnitTFLOPsPerGPU || r.MeasuredUnit == UnitMFUPercent) && r.FLOPsFormula == "":
		d.add("flops_formula", "must name the FLOP count of a %s row: one of %s", r.MeasuredUnit, strings.Join(AtScaleFormulas, ", "))
	case r.MeasuredUnit != UnitTFLOPsPerGPU && r.MeasuredUnit != UnitMFUPercent && r.FLOPsFormula != "":
		d.add("flops_formula", "must be empty for a %s row (only tflops/gpu and mfu%% rows are converted with a FLOP count)", r.MeasuredUnit)
	case r.MeasuredUnit == UnitMFUPercent && r.MeasuredValue > 100:
		d.add("measured_value", "must be at most 100 for an mfu%% row")
	}
	if r.Precision != "bf16" && !prof.HasFP8() {
		d.add("precision", "needs FP8 tensor cores: the %s profile has none", r.GPU)
	}
}

// nvlinkDomain is the NVLink domain a job of gpus GPUs uses on nodes of gpn:
// gpn when it divides gpus (or gpus fits in one), else the largest divisor
// of gpus below gpn that tp divides and that is a multiple of 8 (a job of
// 256 GPUs on GB200 NVL72 racks uses 64 of each rack's 72); 0 when none is.
func nvlinkDomain(gpus, gpn, tp int) int {
	if gpus <= gpn || gpus%gpn == 0 {
		return gpn
	}
	for d := gpn - 1; d >= 8; d-- {
		if gpus%d == 0 && d%tp == 0 && d%8 == 0 {
			return d
		}
	}
	return 0
}

// engineOps is the run's engine ops, pp·vp·2 per microbatch of a replica,
// and whether the fields it needs are positive.
func (r AtScaleRun) engineOps() (int64, bool) {
	mbs, vp := max(r.MBS, 1), max(r.VP, 1)
	if r.DP < 1 || r.PP < 1 {
		return 0, false
	}
	return int64(r.PP) * int64(vp) * 2 * int64(r.GBS/(mbs*r.DP)), true
}
