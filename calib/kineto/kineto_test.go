package kineto

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/calib"
)

// shipped returns the generated trace and the shipped file's bytes,
// rewriting the file first under -update.
func shipped(t *testing.T) (synthResult, []byte) {
	t.Helper()
	gen := synthTrace(t)
	if *update {
		gz := gzipBytes(t, gen.JSON)
		if err := os.WriteFile(synthFile, gz, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d bytes (%d of JSON, %d kernels)", synthFile, len(gz), len(gen.JSON), gen.Kernels)
	}
	data, err := os.ReadFile(synthFile)
	if err != nil {
		t.Fatalf("%v (run go test ./calib/kineto/ -run TestSynthetic -update to write it)", err)
	}
	return gen, data
}

// readShipped reads the shipped synthetic trace.
func readShipped(t *testing.T) (synthResult, *Trace) {
	t.Helper()
	gen, data := shipped(t)
	tr, err := Read(bytes.NewReader(data), "synthetic-h100-llama-step.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	return gen, tr
}

// TestSyntheticTrace: the shipped trace (gzip, under 200 KB) reads back with
// exactly the generated kernels of every class, its metadata, the unknown
// kernels listed by name, and the generator still writing the same trace.
func TestSyntheticTrace(t *testing.T) {
	gen, data := shipped(t)
	if len(data) > 200<<10 {
		t.Errorf("%s is %d bytes: keep it under 200 KB", synthFile, len(data))
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plain, gen.JSON) {
		t.Errorf("%s differs from what the generator writes now: run with -update", synthFile)
	}
	for _, in := range []struct {
		name string
		data []byte
	}{{"gzip", data}, {"plain", plain}} {
		tr, err := Read(bytes.NewReader(in.data), "synthetic.json")
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		got := map[Class]int{}
		for _, k := range tr.Kernels {
			got[k.Class]++
		}
		for _, c := range Classes() {
			if got[c] != gen.Counts[c] {
				t.Errorf("%s: %s: %d kernels, generated %d", in.name, c, got[c], gen.Counts[c])
			}
		}
		if len(tr.Kernels) != gen.Kernels {
			t.Errorf("%s: %d kernels, generated %d", in.name, len(tr.Kernels), gen.Kernels)
		}
		if tr.Rank != 0 || tr.WorldSize != 8 || tr.Backend != "nccl" || tr.Steps != 2 {
			t.Errorf("%s: rank %d of %d (%q), %d steps; want 0 of 8 (nccl), 2 steps", in.name, tr.Rank, tr.WorldSize, tr.Backend, tr.Steps)
		}
		if len(tr.Devices) != 1 || tr.Devices[0] != (Device{Name: "NVIDIA H100 80GB HBM3", TotalGlobalMemBytes: 84934656000, SMs: 132, ComputeMajor: 9}) {
			t.Errorf("%s: devices %+v", in.name, tr.Devices)
		}
		for i := 1; i < len(tr.Kernels); i++ {
			if tr.Kernels[i].StartMicros < tr.Kernels[i-1].StartMicros {
				t.Fatalf("%s: kernels not by start time at %d", in.name, i)
			}
		}
		for _, k := range tr.Kernels {
			if k.Op == "" {
				t.Errorf("%s: kernel %q not linked to its op", in.name, short(k.Name, 60))
				break
			}
		}
		c := Compare(tr, NewComputePredictor(synthProfile(t)))
		var names []string
		for _, u := range c.Unclassified {
			names = append(names, u.Name)
		}
		slices.Sort(names)
		want := slices.Clone(synthUnknown)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s: unclassified %q, want %q", in.name, names, want)
		}
	}
}

// TestSyntheticShapes: what shape inference found in the shipped trace,
// kernel by kernel: every bf16 GEMM has its aten::mm product, every causal
// attention kernel its op's shape (by sequence number for the old
// flash-attn backward of step 2), the two attention kernels that must not
// be fitted say why, collectives have bytes per rank and ranks.
func TestSyntheticShapes(t *testing.T) {
	_, tr := readShipped(t)
	var bySeq, grid, nonCausal, fp8 int
	for _, k := range tr.Kernels {
		switch k.Class {
		case ClassGEMM:
			if k.Why != "" || k.Precision != PrecisionBF16 || k.ShapeOp != "aten::mm" || k.Shape.M < 512 {
				t.Errorf("gemm %q: %+v %q %q %q", k.Name, k.Shape, k.Precision, k.ShapeOp, k.Why)
			}
		case ClassGEMMFP8:
			fp8++
			if k.Precision != PrecisionFP8 || k.Shape.String() != "m=4096;n=4096;k=4096" {
				t.Errorf("fp8 gemm: %+v %q", k.Shape, k.Precision)
			}
		case ClassAttentionFwd, ClassAttentionBwd:
			switch {
			case k.Shape.SeqUpperBound:
				grid++
				if k.Shape.Seq != 2048 || k.Shape.Heads != synthHeads || k.Shape.HeadDimQK != 128 || !strings.Contains(k.Why, "grid") {
					t.Errorf("grid-inferred %s: %+v %q", k.Class, k.Shape, k.Why)
				}
			case k.Shape.Causal == NonCausal:
				nonCausal++
				if k.Why != whyNonCausal || k.Shape.Seq != 1024 || k.ShapeOp != "aten::_flash_attention_forward" {
					t.Errorf("non-causal %s: %+v %q %q", k.Class, k.Shape, k.ShapeOp, k.Why)
				}
			default:
				if k.Why != "" || k.Shape.Heads != synthHeads || k.Shape.KVHeads != synthKV || k.Shape.HeadDimQK != 128 || k.Shape.Batch != 1 {
					t.Errorf("%s %q: %+v %q %q", k.Class, k.Op, k.Shape, k.ShapeOp, k.Why)
				}
				if strings.Contains(k.ShapeOp, "sequence number") {
					bySeq++
				}
			}
		case ClassCollective:
			s := k.Shape
			if s.Ranks != 8 || s.Bytes <= 0 || s.Collective == "" {
				t.Errorf("collective %q: %+v %q", k.Name, s, k.Why)
			}
			if s.Collective == calib.KindAllGather && s.Bytes != 2*synthLayerParams {
				t.Errorf("all_gather bytes %d, want the output %d", s.Bytes, 2*synthLayerParams)
			}
		case ClassMemoryBound:
			if k.Shape.Bytes <= 0 && !strings.Contains(k.Name, "multi_tensor_apply") {
				t.Errorf("memory-bound %q (%s): no bytes: %s", short(k.Name, 60), k.Op, k.Why)
			}
		}
	}
	if want := synthLayers * len(synthSteps[1]); bySeq != want {
		t.Errorf("%d attention backward kernels shaped by sequence number, want %d", bySeq, want)
	}
	if grid != 1 || nonCausal != 1 || fp8 != 1 {
		t.Errorf("grid-inferred %d, non-causal %d, fp8 %d; want 1 each", grid, nonCausal, fp8)
	}
}

// TestSyntheticFit is the analytic recovery test: calib.FitDetermined of
// the shipped trace's measurements, from a base profile with other curves
// (the embedded H100-SXM's), must recover the generating gemm and attention
// curves. The kernel times are the model's own prices plus the launch cost,
// each times a uniform noise of ±2%; the fitter subtracts the same launch
// cost, so without noise it would return the constants exactly. The
// tolerances are what that noise allows: over 40 seeds of it the worst
// errors were 1.2% on Max (set by the large kernels) and 4.4% on Half
// (which only the small sizes inform: the GEMMs' effective sizes run from
// 1.2K to 11K, where the curve is nearly flat above Half = 250, and the
// launch cost's noise weighs most on the short kernels), so the test
// allows 2% and 8%.
func TestSyntheticFit(t *testing.T) {
	_, tr := readShipped(t)
	ms, skipped := tr.Measurements()
	ops := map[string]int{}
	for _, m := range ms {
		ops[m.Operation]++
	}
	gemmShapes := 0
	for _, m := range ms {
		if m.Operation == calib.OpGEMM {
			gemmShapes++
		}
	}
	if gemmShapes < 6 || ops[calib.OpAttentionFwd] < 5 || ops[calib.OpAttentionBwd] < 5 {
		t.Fatalf("measurement rows by operation %v: want >= 6 GEMM shapes and >= 5 attention sequence lengths", ops)
	}
	for i := 1; i < len(ms); i++ {
		a, b := ms[i-1], ms[i]
		if a.Operation > b.Operation || (a.Operation == b.Operation && shapeKey(a.Shape) >= shapeKey(b.Shape)) {
			t.Fatalf("rows not sorted by operation then shape at %d", i)
		}
	}
	skippedKernels := 0
	for _, s := range skipped {
		skippedKernels += s.Kernels
		if s.Reason == "" || s.Kernels <= 0 {
			t.Errorf("skipped group %+v", s)
		}
	}
	fitted := 0
	for _, m := range ms {
		fitted += m.Repeats
	}
	if fitted+skippedKernels != len(tr.Kernels) {
		t.Errorf("%d kernels fitted + %d skipped != %d", fitted, skippedKernels, len(tr.Kernels))
	}
	base := synthBase(t)
	// Every synthetic row is compute-bound and above the launch cost, so
	// MeasurementsFor keeps them all.
	if mf, _ := tr.MeasurementsFor(base); len(mf) != len(ms) {
		t.Errorf("MeasurementsFor kept %d of %d rows", len(mf), len(ms))
	}
	fit, err := calib.FitDetermined(ms, base, "fit:calib/kineto/testdata/synthetic-h100-llama-step.json.gz (synthetic)")
	if err != nil {
		t.Fatal(err)
	}
	// The trace's one fp8 GEMM shape gives a gemm_fp8 row, which one size
	// cannot determine: FitDetermined refuses that curve, and only that one.
	if len(fit.Refused) != 1 || fit.Refused[calib.CurveGEMMFP8] == nil || !strings.Contains(fit.Refused[calib.CurveGEMMFP8].Error(), "1 distinct sizes") {
		t.Errorf("refused: %v, want gemm_fp8 alone (one size)", fit.Refused)
	}
	for _, c := range []struct {
		name            string
		got             calib.Curve
		max, half, tolH float64
	}{
		{"gemm", fit.Profile.GEMM, synthGEMMMax, synthGEMMHalf, 0.08},
		{"attention_fwd", fit.Profile.AttentionFwd, synthFwdMax, synthFwdHalf, 0.08},
		{"attention_bwd", fit.Profile.AttentionBwd, synthBwdMax, synthBwdHalf, 0.08},
	} {
		em := c.got.Max.Value/c.max - 1
		eh := c.got.Half.Value/c.half - 1
		t.Logf("%s: Max %.4f (generated %.2f, %+.2f%%), Half %.1f (generated %.0f, %+.2f%%)", c.name, c.got.Max.Value, c.max, 100*em, c.got.Half.Value, c.half, 100*eh)
		if math.Abs(em) > 0.02 || math.Abs(eh) > c.tolH {
			t.Errorf("%s: fitted Max %.4f, Half %.1f; generated %.2f, %.0f", c.name, c.got.Max.Value, c.got.Half.Value, c.max, c.half)
		}
	}
	for _, r := range fit.Reports {
		t.Log(r)
	}
}

// TestSyntheticCompare: against the generating profile every priced row is
// within 3% (the noise is at most 2%), the priced classes are the ones the
// predictor prices, and the per-layer and per-step totals are the class
// totals divided by the attention forward count and the step count.
func TestSyntheticCompare(t *testing.T) {
	gen, tr := readShipped(t)
	p := synthProfile(t)
	if err := tr.Check(p); err != nil {
		t.Fatalf("Check: %v", err)
	}
	c := Compare(tr, NewComputePredictor(p))
	priced := map[Class]bool{}
	for _, r := range c.Rows {
		if r.Priced == 0 {
			if r.Why == "" {
				t.Errorf("unpriced row without a reason: %+v", r)
			}
			continue
		}
		priced[r.Class] = true
		if r.Priced != r.Kernels || math.Abs(r.RelErr) > 0.03 {
			t.Errorf("%s %s: %d of %d priced, error %+.2f%%", r.Class, r.Shape, r.Priced, r.Kernels, 100*r.RelErr)
		}
	}
	want := []Class{ClassAttentionFwd, ClassAttentionBwd, ClassGEMM, ClassMemoryBound}
	if p.HasFP8() {
		want = append(want, ClassGEMMFP8)
	}
	for _, cl := range want {
		if !priced[cl] {
			t.Errorf("no priced %s row", cl)
		}
	}
	if c.AttentionFwdKernels != gen.FwdAttn || c.Steps != 2 {
		t.Fatalf("%d attention forward kernels, %d steps; want %d, 2", c.AttentionFwdKernels, c.Steps, gen.FwdAttn)
	}
	for i, ct := range c.Classes {
		l, s := c.PerLayer[i], c.PerStep[i]
		if l.Label != ct.Label || math.Abs(l.MeasuredSeconds*float64(gen.FwdAttn)-ct.MeasuredSeconds) > 1e-12 ||
			math.Abs(s.PredictedSeconds*2-ct.PredictedSeconds) > 1e-12 {
			t.Errorf("%s: per layer %+v, per step %+v, total %+v", ct.Label, l, s, ct)
		}
	}
	if last := c.Classes[len(c.Classes)-1]; last.Label != "total" || int(last.Kernels) != gen.Kernels {
		t.Errorf("total row %+v", last)
	}
	var out bytes.Buffer
	if err := WriteComparison(&out, c); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, s := range []string{"attention_fwd", "Per layer (the totals ÷ 16 attention forward kernels", "Per step (the totals ÷ 2", "my_fused_rope_kernel", "Unclassified kernels"} {
		if !strings.Contains(text, s) {
			t.Errorf("WriteComparison output lacks %q", s)
		}
	}
	var again bytes.Buffer
	if err := WriteComparison(&again, Compare(tr, NewComputePredictor(p))); err != nil || again.String() != text {
		t.Errorf("WriteComparison is not deterministic")
	}
	if testing.Verbose() {
		t.Log("\n" + text)
	}
}

// transformKernels rewrites the generated trace with every kernel's dur
// changed by f.
func transformKernels(t *testing.T, data []byte, f func(dur float64) any) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range doc["traceEvents"].([]any) {
		ev := e.(map[string]any)
		if ev["cat"] == "kernel" {
			ev["dur"] = f(ev["dur"].(float64))
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheckUnits: durations in nanoseconds (×1000) or in milliseconds
// (÷1000) read as microseconds are refused by Check, naming a kernel, its
// duration and the implied TFLOP/s.
func TestCheckUnits(t *testing.T) {
	gen := synthTrace(t)
	p := synthProfile(t)
	for _, c := range []struct {
		name   string
		factor float64
		want   []string
	}{
		{"nanoseconds", 1000, []string{"over 20 times", "TFLOP/s", "are the durations in microseconds?", "nanoseconds"}},
		{"milliseconds", 1e-3, []string{"TFLOP/s", "are the durations in microseconds?"}},
	} {
		data := transformKernels(t, gen.JSON, func(d float64) any { return d * c.factor })
		tr, err := Read(bytes.NewReader(data), "units.json")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		err = tr.Check(p)
		if err == nil {
			t.Fatalf("%s: Check passed", c.name)
		}
		for _, w := range append(c.want, "units.json: ", "µs") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v: lacks %q", c.name, err, w)
			}
		}
	}
}

// minimal traces for the error table.
const (
	kernelEvent = `{"ph": "X", "cat": "kernel", "name": "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", "pid": 0, "tid": 7, "ts": 100.5, "dur": %s, "args": {"correlation": 1}}`
)

func kernelTrace(dur string) string {
	return `{"traceEvents": [` + strings.Replace(kernelEvent, "%s", dur, 1) + `]}`
}

// TestReadErrors: every bad input is an error naming the file and the
// problem (and the place), never a panic.
func TestReadErrors(t *testing.T) {
	gen := synthTrace(t)
	gz := gzipBytes(t, gen.JSON)
	big := gzipBytes(t, append([]byte(`{"traceEvents": "`), bytes.Repeat([]byte("a"), 1<<20)...))
	cases := []struct {
		name  string
		data  []byte
		limit int64
		evlim int
		want  []string
	}{
		{"not JSON", []byte("hello, world"), 0, 0, []string{"not JSON"}},
		{"empty", nil, 0, 0, []string{"empty"}},
		{"truncated JSON", gen.JSON[:len(gen.JSON)/2], 0, 0, []string{"truncated JSON", "at byte", "traceEvents["}},
		{"truncated gzip", gz[:len(gz)/2], 0, 0, []string{"gzip stream broken", "truncated or corrupt"}},
		{"corrupt JSON", []byte(`{"traceEvents": [{"ph": "X",, }]}`), 0, 0, []string{"invalid JSON", "traceEvents[0]"}},
		{"object without traceEvents", []byte(`{"schemaVersion": 1, "foo": [1, 2, {"a": null}]}`), 0, 0, []string{"not a PyTorch profiler trace: no traceEvents"}},
		{"JSON array", []byte(`[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]`), 0, 0, []string{"not a PyTorch profiler trace", "an array"}},
		{"JSON number", []byte(`42`), 0, 0, []string{"not a PyTorch profiler trace", "a number"}},
		{"traceEvents not an array", []byte(`{"traceEvents": {"a": 1}}`), 0, 0, []string{"traceEvents is not an array"}},
		{"no kernels", []byte(`{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5}]}`), 0, 0,
			[]string{"no GPU kernels: record with ProfilerActivity.CUDA"}},
		{"negative dur", []byte(kernelTrace("-1")), 0, 0, []string{"traceEvents[0]", "dur -1: negative", "ampere_bf16"}},
		{"NaN dur", []byte(kernelTrace(`"NaN"`)), 0, 0, []string{"dur \"NaN\": not a number"}},
		{"missing dur", []byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]}`), 0, 0, []string{"no dur"}},
		{"bad ts", []byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1}]}`), 0, 0, []string{"ts \"soon\": not a number"}},
		{"hour-long kernel", []byte(kernelTrace("4e9")), 0, 0, []string{"over an hour"}},
		{"over the byte limit", gz, 100 << 10, 0, []string{"more than 102400 bytes of JSON (MaxTraceBytes)"}},
		{"gzip bomb", big, 1 << 16, 0, []string{"more than 65536 bytes of JSON (MaxTraceBytes)"}},
		{"over the event limit", gen.JSON, 0, 100, []string{"more than 100 traceEvents (MaxTraceEvents)"}},
		// Issue 41: shapes of JSON that cost the decoder time or memory
		// out of proportion are refused by the guard before decoding.
		{"whitespace run (gzip)", gzipBytes(t, []byte(`{"traceEvents": [`+strings.Repeat(" ", MaxTraceWhitespace+1)+`]}`)), 0, 0,
			[]string{"byte 65553: more than 65536 bytes of whitespace in a row (MaxTraceWhitespace)"}},
		{"deep nesting (gzip)", gzipBytes(t, []byte(`{"traceEvents": `+strings.Repeat("[", 1<<20))), 0, 0,
			[]string{"byte 79: arrays and objects nested more than 64 deep (MaxTraceNesting)"}},
		{"long string", []byte(`{"traceEvents": [{"name": "` + strings.Repeat("a", MaxTraceStringBytes+1) + `"}]}`), 0, 0,
			[]string{"a string longer than 1048576 bytes (MaxTraceStringBytes), from byte 26"}},
		{"long event", []byte(`{"traceEvents": [{"args": [` + strings.Repeat(`"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",`, (MaxTraceEventBytes/64)+1) + `1]}]}`), 0, 0,
			[]string{"an entry of a top-level array longer than 16777216 bytes (MaxTraceEventBytes), from byte 17"}},
		{"deviceProperties past the bound", []byte(`{"deviceProperties": [` + strings.Repeat(`{"id": 0, "name": "GPU"},`, MaxTraceDevices) + `{}], "traceEvents": []}`), 0, 0,
			[]string{"more than 1024 deviceProperties entries (MaxTraceDevices)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.limit > 0 {
				old := traceByteLimit
				traceByteLimit = c.limit
				defer func() { traceByteLimit = old }()
			}
			if c.evlim > 0 {
				old := traceEventLimit
				traceEventLimit = c.evlim
				defer func() { traceEventLimit = old }()
			}
			_, err := Read(bytes.NewReader(c.data), "bad.json")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "bad.json: ") {
				t.Errorf("%v: does not name the file", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: lacks %q", err, w)
				}
			}
		})
	}
}

// TestReadKeptBounds (issue 41): what Read keeps is bounded by the memory it
// takes, and by the distinct names' bytes (which classification reads), each
// refused naming the bound; a long name is cut, a name's control characters
// are escaped, and a device name's too.
func TestReadKeptBounds(t *testing.T) {
	gen := synthTrace(t)
	traceKeptLimit = 100000
	_, err := Read(bytes.NewReader(gen.JSON), "big.json")
	traceKeptLimit = MaxTraceKeptBytes
	if want := "the events kept would take more than 100000 bytes (MaxTraceKeptBytes: 440 a GPU kernel"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read = %v, want %q", err, want)
	}
	traceNameLimit = 5000
	_, err = Read(bytes.NewReader(gen.JSON), "big.json")
	traceNameLimit = MaxNameTotalBytes
	if want := "more than 5000 bytes of distinct names (MaxNameTotalBytes)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read = %v, want %q", err, want)
	}
	long := strings.Repeat("a", 5000)
	trace := `{"deviceProperties": [{"id": 0, "name": "H100\u001b[2J\u001b]0;pwned\u0007"}],
		"traceEvents": [{"ph": "X", "cat": "kernel", "name": "` + long + `", "ts": 1, "dur": 2},
		{"ph": "X", "cat": "kernel", "name": "gemm\u001b[31m", "ts": 5, "dur": 2}]}`
	tr, err := Read(strings.NewReader(trace), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Kernels[0].Name; got != strings.Repeat("a", MaxNameBytes)+"…" {
		t.Errorf("a 5000-byte name kept as %d bytes", len(got))
	}
	if got := tr.Kernels[1].Name; got != `gemm\x1b[31m` {
		t.Errorf("kernel name %q, want its escape escaped", got)
	}
	if got := tr.Devices[0].Name; got != `H100\x1b[2J\x1b]0;pwned\x07` {
		t.Errorf("device name %q, want its escapes escaped", got)
	}
}
