package experiment

import (
	"github.com/dcpsim/dcpsim/results"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
)

const (
	atScaleTable   = "../validation/atscale.csv"
	committedTable = "../validation/megatron-lm.csv"
)

// atScaleRow is a valid dense row (DGXC-13's) as a field map, for the
// table-driven rejections to break one field at a time.
func atScaleRow() map[string]string {
	return map[string]string{
		"id": "R-1", "source": "github NVIDIA/dgxc-benchmarking @8f5cbb3 gpt3", "model": "GPT-3-175B", "attention": "mha", "mlp": "gelu",
		"layers": "96", "hidden": "12288", "ffn_hidden": "49152", "heads": "96", "kv_heads": "96", "head_dim": "128",
		"vocab": "50257", "gpu": "H100-SXM", "gpus": "512", "seq_len": "2048", "gbs": "2048", "mbs": "1", "tp": "4", "pp": "8",
		"vp": "6", "cp": "1", "dp": "16", "precision": "bf16", "recompute": "none", "measured_value": "8.42", "measured_unit": "s/step",
	}
}

// csvOf writes the header and rows (field maps; missing fields empty).
func csvOf(rows ...map[string]string) string {
	var b strings.Builder
	b.WriteString(strings.Join(AtScaleColumns, ",") + "\n")
	for _, r := range rows {
		f := make([]string, len(AtScaleColumns))
		for i, c := range AtScaleColumns {
			f[i] = r[c]
			if strings.ContainsAny(f[i], ",\"\n") {
				f[i] = `"` + strings.ReplaceAll(f[i], `"`, `""`) + `"`
			}
		}
		b.WriteString(strings.Join(f, ",") + "\n")
	}
	return b.String()
}

// TestAtScaleCommittedTable: the committed table decodes whole and every
// row resolves to a valid job.
func TestAtScaleCommittedTable(t *testing.T) {
	runs, err := ReadAtScaleTable(atScaleTable)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 43 {
		t.Fatalf("%d runs, want the 43 published ones", len(runs))
	}
	for _, r := range runs {
		if _, err := AtScaleJob(r); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
	}
}

// TestAtScaleRejects: one broken field per case; the error names the row,
// its column and the rule, and is bad input.
func TestAtScaleRejects(t *testing.T) {
	moe := func(r map[string]string) {
		r["moe_experts"], r["moe_topk"], r["moe_ffn_hidden"], r["mlp"] = "8", "2", "32768", "geglu"
	}
	for _, c := range []struct {
		name string
		edit func(map[string]string)
		want string
	}{
		{"id", func(r map[string]string) { r["id"] = "bad id" }, `row "bad id": id = "bad id": must match`},
		{"gpu vocabulary", func(r map[string]string) { r["gpu"] = "H20" }, `gpu = "H20": must be one of A100-80G`},
		{"attention", func(r map[string]string) { r["attention"] = "mqa" }, `attention = "mqa": must be one of mha, gqa, mla`},
		{"mlp", func(r map[string]string) { r["mlp"] = "relu" }, `mlp = "relu": must be one of gelu`},
		{"precision", func(r map[string]string) { r["precision"] = "fp16" }, `precision = "fp16": must be one of bf16, fp8, mxfp8`},
		{"recompute", func(r map[string]string) { r["recompute"] = "partial" }, `recompute = "partial": must be empty (not stated) or one of none`},
		{"unit", func(r map[string]string) { r["measured_unit"] = "s" }, `measured_unit = "s": must be one of s/step`},
		{"value", func(r map[string]string) { r["measured_value"] = "-1" }, `measured_value = "-1": must be a number in (0, 1e+09]`},
		{"layout product", func(r map[string]string) { r["dp"] = "8" }, `gpus = "512": must be tp·pp·cp·dp = 4·8·1·8 = 256`},
		{"tp node", func(r map[string]string) { r["tp"], r["dp"] = "16", "4" }, `tp = "16": must divide the GPUs of a H100-SXM node (8)`},
		{"tp divides kv", func(r map[string]string) { r["attention"], r["kv_heads"] = "gqa", "2" }, `tp = "4": must divide heads (96) and kv_heads (2)`},
		{"kv divides heads", func(r map[string]string) { r["kv_heads"] = "7" }, `kv_heads = "7": must divide heads (96)`},
		{"gbs", func(r map[string]string) { r["gbs"] = "2050" }, `gbs = "2050": must be a multiple of mbs·dp = 1·16`},
		{"formula missing", func(r map[string]string) { r["measured_unit"] = "tflops/gpu" }, `flops_formula = "": must name the FLOP count of a tflops/gpu row`},
		{"formula on s/step", func(r map[string]string) { r["flops_formula"] = "nemo" }, `flops_formula = "nemo": must be empty for a s/step row`},
		{"mfu over 100", func(r map[string]string) {
			r["measured_unit"], r["flops_formula"], r["measured_value"] = "mfu%", "megascale", "120"
		}, `measured_value = "120": must be at most 100 for an mfu% row`},
		{"moe field on dense", func(r map[string]string) { r["moe_topk"] = "2" }, `moe_topk = "2": must be empty for a dense model`},
		{"moe fields missing", func(r map[string]string) { moe(r); r["moe_ffn_hidden"] = "" }, `moe_ffn_hidden = "": must be given for an MoE model`},
		{"ep divides experts", func(r map[string]string) { moe(r); r["ep"] = "3" }, `ep = "3": must divide moe_experts (8)`},
		{"ep·etp", func(r map[string]string) { moe(r); r["ep"], r["etp"] = "2", "1" }, `ep = "2": ep·etp = 2·1 must be a multiple of tp (4)`},
		{"fp8 on A100", func(r map[string]string) { r["gpu"], r["precision"] = "A100-80G", "fp8" }, `precision = "fp8": needs FP8 tensor cores`},
		{"vp without pp", func(r map[string]string) { r["pp"], r["dp"] = "1", "128" }, `vp = "6": must be empty or 1 when pp = 1`},
		{"cp divides seq", func(r map[string]string) { r["cp"], r["dp"], r["seq_len"] = "16", "1", "2050" }, `cp = "16": must divide seq_len (2050)`},
		{"notes control", func(r map[string]string) { r["notes"] = "a\x01b" }, `notes = "a\x01b": holds a control character`},
		{"empty source", func(r map[string]string) { r["source"] = "" }, `source = "": must not be empty`},
	} {
		r := atScaleRow()
		c.edit(r)
		_, err := DecodeAtScaleTable(strings.NewReader(csvOf(r)), "t.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) || !badinput.Is(err) {
			t.Errorf("%s: error %v, want %q (bad input)", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ name, text, want string }{
		{"empty", "", "empty; the first line must be the header"},
		{"header", "id,source\n", `t.csv:1: header "id,source": must be exactly id,source,model`},
		{"no row", strings.Join(AtScaleColumns, ",") + "\n", "no run after the header"},
		{"fields", strings.Join(AtScaleColumns, ",") + "\na,b\n", "t.csv:2: 2 fields, want 36"},
	} {
		if _, err := DecodeAtScaleTable(strings.NewReader(c.text), "t.csv"); err == nil || !strings.Contains(err.Error(), c.want) || !badinput.Is(err) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	a, b := atScaleRow(), atScaleRow()
	if _, err := DecodeAtScaleTable(strings.NewReader(csvOf(a, b)), "t.csv"); err == nil || !strings.Contains(err.Error(), `row "R-1": id = "R-1": used twice (first on line 2)`) {
		t.Errorf("duplicate id: %v", err)
	}
	if _, err := DecodeAtScaleTable(strings.NewReader(csvOf(atScaleRow())), "t.csv"); err != nil {
		t.Errorf("the valid row: %v", err)
	}
}

// TestSplitLayers: the embedding and the loss count as a layer each, the
// first and last virtual stages hold one layer less; an even split needs no
// layout. The DeepSeek-V3 case is NeMo's own split of DGXC-29 and the
// Llama 3 case the paper's.
func TestSplitLayers(t *testing.T) {
	ones := func(n int) string { return strings.Repeat("1,", n) }
	for _, c := range []struct {
		layers, pp, vp int
		want           string
	}{
		{80, 4, 5, ""},
		{126, 9, 7, ""},
		{126, 16, 1, "7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7"},
		{61, 8, 1, "7,8,8,8,8,8,8,6"},
		{126, 8, 1, "15,16,16,16,16,16,16,15"},
		{94, 8, 4, "2," + strings.Repeat("3,", 30) + "2"},
		{126, 16, 8, "0," + ones(126) + "0"},
	} {
		got := SplitLayers(c.layers, c.pp, c.vp)
		if got != c.want {
			t.Errorf("SplitLayers(%d, %d, %d) = %q, want %q", c.layers, c.pp, c.vp, got, c.want)
		}
		if got == "" {
			continue
		}
		p := job.Parallel{PP: c.pp, VPP: c.vp, PipelineLayout: got}
		l, err := p.Layout()
		sum := 0
		for _, n := range l {
			sum += n
		}
		if err != nil || len(l) != c.pp*c.vp || sum != c.layers {
			t.Errorf("%q: %v, %d entries summing to %d", got, err, len(l), sum)
		}
	}
}

// TestFLOPFormulas: each formula by hand on a row, and MegaScale's count
// reproducing its own Table 2 (175B on 256 GPUs: 39.3k tokens/s is 53.0%
// MFU at 312 TFLOPS).
func TestFLOPFormulas(t *testing.T) {
	r := AtScaleRun{ID: "x", GBS: 768, SeqLen: 2048, Layers: 96, Hidden: 12288, Heads: 128, KVHeads: 128, HeadDim: 96,
		FFN: 49152, Vocab: 64000, TP: 8, MLP: job.GELU, FLOPsFormula: FormulaMegaScale}
	f, err := r.FLOPsPerStep(job.Model{})
	if err != nil {
		t.Fatal(err)
	}
	if mfu := f / 40.0 / (256 * 312e12); math.Abs(mfu-0.530) > 0.0015 {
		t.Errorf("megascale: MFU %.4f at 40 s a step, want the paper's 0.530", mfu)
	}
	B, s, L, h := 768.0, 2048.0, 96.0, 12288.0
	r.FLOPsFormula = FormulaMegatronLM
	f, _ = r.FLOPsPerStep(job.Model{})
	vp := 64512.0 // 64000 padded to a multiple of 128·8
	if want := 12 * B * s * L * h * h * ((1+1+s/h)*(128*96/h) + 4 + vp/(2*L*h)); math.Abs(f/want-1) > 1e-12 {
		t.Errorf("megatron-lm: %g, want %g", f, want)
	}
	r.FLOPsFormula, r.MLP = FormulaNeMo, job.SwiGLU
	f, _ = r.FLOPsPerStep(job.Model{})
	if want := B * s * L * h * h * (12 + 12 + 18*4 + 12*s/h + 6*64000/(L*h)); math.Abs(f/want-1) > 1e-12 {
		t.Errorf("nemo: %g, want %g", f, want)
	}
	m, err := job.LookupModel(job.ModelLlama3With8B)
	if err != nil {
		t.Fatal(err)
	}
	r.FLOPsFormula = FormulaLlama3
	f, _ = r.FLOPsPerStep(m)
	if want := (6*m.TotalParams() + 12*L*128*96*s) * B * s; math.Abs(f/want-1) > 1e-12 {
		t.Errorf("llama3: %g, want %g", f, want)
	}
	// Units: tokens/s/gpu and mfu% against the GPU's BF16 peak.
	prof, _ := calib.LookupProfile("A100-80G")
	r.MeasuredUnit, r.MeasuredValue, r.GPUs = UnitTokensPerSecondPerGPU, 100, 256
	if sec, _ := r.MeasuredSeconds(m, prof); math.Abs(sec-B*s/(100*256)) > 1e-9 {
		t.Errorf("tokens/s/gpu: %g s", sec)
	}
	r.MeasuredUnit, r.MeasuredValue, r.FLOPsFormula = UnitMFUPercent, 50, FormulaMegaScale
	f, _ = r.FLOPsPerStep(m)
	if sec, _ := r.MeasuredSeconds(m, prof); math.Abs(sec-f/(256*0.5*312e12)) > 1e-9 {
		t.Errorf("mfu%%: %g s", sec)
	}
}

// TestFamilies: sources select their family; an unknown one is Generic.
func TestFamilies(t *testing.T) {
	for src, want := range map[string]string{
		"github NVIDIA/dgxc-benchmarking @8f5cbb3 llama3.1":     "nemo",
		"github NVIDIA/NeMo @19fadb67 docs/performance":         "nemo",
		"github NVIDIA-NeMo/Megatron-Bridge @067f987 docs":      "megatron-bridge",
		"github NVIDIA/Megatron-LM @d98e8a64 README.md":         "megatron-lm",
		"arXiv 2407.21783 (The Llama 3 Herd of Models) Table 4": "llama3",
		"arXiv 2402.15627 / NSDI'24 MegaScale":                  "megascale",
		"github pytorch/torchtitan @31a17bf benchmarks":         "torchtitan",
		"a blog post about a run":                               "other",
	} {
		if got := FamilyOf(src).Name; got != want {
			t.Errorf("FamilyOf(%q) = %s, want %s", src, got, want)
		}
	}
	// Llama 3 interleaves one layer per chunk; torchtitan runs as many
	// microbatches as stages; Megatron-Bridge folds experts (etp 1).
	runs, err := ReadAtScaleTable(atScaleTable)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]AtScaleSetup{}
	for _, r := range runs {
		su, err := AtScaleJob(r)
		if err != nil {
			t.Fatal(err)
		}
		by[r.ID] = su
	}
	if su := by["LLAMA3-01"]; su.Job.Parallel.VPP != 8 || su.Job.Parallel.GradSyncMode() != job.GradFSDP || su.Exec != sched.AllGatherKV {
		t.Errorf("LLAMA3-01: vpp %d, grad sync %s, CP %v", su.Job.Parallel.VPP, su.Job.Parallel.GradSyncMode(), su.Exec)
	}
	if su := by["TT-01"]; su.MBS != 4 || su.Microbatches != 8 {
		t.Errorf("TT-01: mbs %d, %d microbatches; want 4 and pp = 8", su.MBS, su.Microbatches)
	}
	if su := by["TT-07"]; su.Job.Parallel.GradSyncMode() != job.GradFSDPReshard || su.Microbatches != 1 {
		t.Errorf("TT-07: %s, %d microbatches", su.Job.Parallel.GradSyncMode(), su.Microbatches)
	}
	if su := by["MB-05"]; su.Job.Parallel.ExpertTP() != 1 || su.Job.Parallel.MoEDispatcher != job.DispatchDeepEP {
		t.Errorf("MB-05: etp %d, dispatcher %q", su.Job.Parallel.ExpertTP(), su.Job.Parallel.MoEDispatcher)
	}
	if su := by["MB-04"]; su.Job.Parallel.MoEDispatcher == job.DispatchDeepEP || su.Job.Parallel.TPCommOverlap {
		t.Errorf("MB-04: Hopper keeps the all-to-all dispatcher and no TP overlap on MoE: %+v", su.Job.Parallel)
	}
	if su := by["DGXC-13"]; !su.Job.Parallel.TPCommOverlap || !su.Job.Parallel.OverlapGradReduce || su.Job.Parallel.VPP != 6 {
		t.Errorf("DGXC-13: %+v", su.Job.Parallel)
	}
}

// TestAtScaleHalves: per GPU kind, by id, alternately A and B; the split
// depends on the ids alone.
func TestAtScaleHalves(t *testing.T) {
	runs, err := ReadAtScaleTable(atScaleTable)
	if err != nil {
		t.Fatal(err)
	}
	a, b := AtScaleHalves(runs)
	rev := slices.Clone(runs)
	slices.Reverse(rev)
	a2, b2 := AtScaleHalves(rev)
	ids := func(rs []AtScaleRun) (out []string) {
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	if !slices.Equal(ids(a), ids(a2)) || !slices.Equal(ids(b), ids(b2)) || len(a)+len(b) != len(runs) {
		t.Errorf("halves depend on the order: %v / %v", ids(a), ids(a2))
	}
	count := func(rs []AtScaleRun, gpu string) (n int) {
		for _, r := range rs {
			if r.GPU == gpu {
				n++
			}
		}
		return n
	}
	for _, g := range AtScaleGPUs {
		if na, nb := count(a, g), count(b, g); na-nb != 0 && na-nb != 1 {
			t.Errorf("%s: %d in A, %d in B", g, na, nb)
		}
	}
}

// TestSustainedEfficiencyFits: each profile's fitted sustained efficiency
// is the least-squares value on half A of the committed table: moving it
// by ±0.01 does not lower the loss.
func TestSustainedEfficiencyFits(t *testing.T) {
	if testing.Short() {
		t.Skip("predicts the table's half A three times per GPU")
	}
	runs, err := ReadAtScaleTable(atScaleTable)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := AtScaleHalves(runs)
	for _, gpu := range []string{"H100-SXM", "B200"} {
		p, err := calib.LookupProfile(gpu)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.SustainedEfficiency.Source, "fit:validation/atscale.csv") {
			t.Fatalf("%s: sustained_efficiency source %q", gpu, p.SustainedEfficiency.Source)
		}
		on := slices.DeleteFunc(slices.Clone(a), func(r AtScaleRun) bool { return r.GPU != gpu })
		s := p.SustainedEfficiency.Value
		at, err := sustainedLoss(on, p, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []float64{-0.01, 0.01} {
			if l, _ := sustainedLoss(on, p, s+d); l < at {
				t.Errorf("%s: loss %.5f at %.4f below %.5f at the profile's %.4f: refit (dcpsim validate --table validation/atscale.csv --fit %s)", gpu, l, s+d, at, s, gpu)
			}
		}
	}
}

// TestAtScaleAccuracy guards the validation's errors against regressions
// of the model: the committed tables' mean and max |error| stay within the
// figures validation/README.md reports, with a margin.
func TestAtScaleAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("predicts all 61 runs")
	}
	runs, err := ReadAtScaleTable(atScaleTable)
	if err != nil {
		t.Fatal(err)
	}
	var res []results.ValidationResult
	for _, r := range runs {
		v, err := PredictAtScale(r)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, v)
	}
	s := results.SummarizeValidation(res)
	if s.MeanAbsError > 0.12 || s.MaxAbsError > 0.30 {
		t.Errorf("at-scale: mean |error| %.1f%%, max %.1f%% (%s): above 12%% / 30%%", 100*s.MeanAbsError, 100*s.MaxAbsError, s.MaxName)
	}
	old, err := ReadValidationTable(committedTable)
	if err != nil {
		t.Fatal(err)
	}
	ov, err := Validate(old)
	if err != nil {
		t.Fatal(err)
	}
	if s := results.SummarizeValidation(ov); s.MeanAbsError > 0.05 {
		t.Errorf("megatron-lm.csv: mean |error| %.1f%%, above 5%%", 100*s.MeanAbsError)
	}
}

// BenchmarkValidateAll predicts both committed tables (61 runs), as
// dcpsim validate --table validation/atscale.csv --table
// validation/megatron-lm.csv does. Metric: runs per second.
func BenchmarkValidateAll(b *testing.B) {
	runs, err := ReadAtScaleTable(atScaleTable)
	if err != nil {
		b.Fatal(err)
	}
	old, err := ReadValidationTable(committedTable)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for _, r := range runs {
			if _, err := PredictAtScale(r); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := Validate(old); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(runs)+len(old))*float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}
