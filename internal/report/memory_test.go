package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/scenarios"
)

// memoryTOML is a scenario of its own, so that the numbers below move only
// with the memory model: testbed-256k's job with every layer recomputed
// (scenarios/testdata/memory-full-recompute.toml).
func memoryTOML(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../../scenarios/testdata/memory-full-recompute.toml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// memoryScenario parses memoryTOML with the replacements old → new made.
func memoryScenario(t *testing.T, replace ...string) *scenarios.Scenario {
	t.Helper()
	text := strings.NewReplacer(replace...).Replace(memoryTOML(t))
	sc, err := scenarios.Parse([]byte(text), "mem.toml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestMemoryReportRows: a row per stage and kind, each the memory model's
// states, B·PeakPerToken at the kind's budget and the reserve, summed and set
// against the kind's HBM; the worst row has the least headroom.
func TestMemoryReportRows(t *testing.T) {
	for _, name := range []string{"mem", "testbed-256k", "hetero-long-256k", "hexiseq-four-kinds", "hy3-8k"} {
		sc := memoryScenario(t)
		if name != "mem" {
			var err error
			if sc, err = scenarios.Preset(name); err != nil {
				t.Fatal(err)
			}
		}
		r, err := NewMemoryReport(sc)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := memory.New(sc.Job, compute.FlashAttention)
		if err != nil {
			t.Fatal(err)
		}
		budgets, _ := sc.KindBudgetTokens()
		profs, _ := sc.Profiles()
		kinds := sc.Job.Cluster.Kinds()
		stages, _ := sc.Job.StageLayers()
		if len(r.Rows) != len(stages)*len(kinds) || len(r.KindWorst()) != len(kinds) {
			t.Fatalf("%s: %d rows, %d kinds' worst, want %d stages × %d kinds", name, len(r.Rows), len(r.KindWorst()), len(stages), len(kinds))
		}
		fits := true
		for i, row := range r.Rows {
			s, k := i/len(kinds), i%len(kinds)
			st := mem.States(s)
			want := MemoryRow{Stage: s, Kind: kinds[k].GPU, Layers: stages[s], BudgetTokens: budgets[k],
				WeightsBytes: st.WeightBytes, GradientsBytes: st.GradientBytes, OptimizerBytes: st.OptimizerBytes,
				ActivationBytes: float64(budgets[k]) * mem.PeakPerToken(s, sc.Job.ContextTokens), ReserveBytes: memory.ReserveBytes,
				HBMBytes: profs[k].HBMBytes.Value}
			want.TotalBytes = st.Bytes() + memory.ReserveBytes + want.ActivationBytes
			want.HeadroomBytes = want.HBMBytes - want.TotalBytes
			want.Fits = want.HeadroomBytes >= 0
			if row != want {
				t.Errorf("%s row %d:\n got %+v\nwant %+v", name, i, row, want)
			}
			fits = fits && row.Fits
			if row.HeadroomBytes < r.Rows[r.Worst].HeadroomBytes {
				t.Errorf("%s: row %d has less headroom than the worst, row %d", name, i, r.Worst)
			}
		}
		if r.Fits != fits || r.BudgetTokens != sc.Job.Parallel.BudgetTokens || r.PoolRanks != sc.Job.PoolRanks() {
			t.Errorf("%s: fits %v (rows %v), budget %d, G %d", name, r.Fits, fits, r.BudgetTokens, r.PoolRanks)
		}
	}
}

// TestMemoryVerdict: memoryTOML fits at B = 8192; at B = 262144 its worst
// case does not, and the verdict names the stage, the kind and the GiB; the
// show line says the same.
func TestMemoryVerdict(t *testing.T) {
	r, err := NewMemoryReport(memoryScenario(t))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Fits || r.Verdict() != "fits: the least headroom is 39.0 GiB, on stage 3 (H20)" {
		t.Errorf("verdict %q, fits %v", r.Verdict(), r.Fits)
	}
	big, err := NewMemoryReport(memoryScenario(t, "budget_tokens = 8192", "budget_tokens = 262144"))
	if err != nil {
		t.Fatal(err)
	}
	if big.Fits || big.Verdict() != "OUT OF MEMORY on stage 3 (H20): needs 257.0 of 89.4 GiB" {
		t.Errorf("verdict %q, fits %v", big.Verdict(), big.Fits)
	}
	lines := MemoryLines(big)
	if len(lines) != 1 || lines[0] != "states 34.4 GiB (stage 3) + reserve 9.3 + activations at B 213.2 = 257.0 GiB of 89.4 GiB per H20: OUT OF MEMORY (dcpsim memory for the stages)" {
		t.Errorf("memory lines %q", lines)
	}
}

// TestMemoryBudgetAuto: with budget_tokens = "auto" the report says so, and
// the budget's worst case fits with less headroom than one more token's
// activations per rank would take.
func TestMemoryBudgetAuto(t *testing.T) {
	r, err := NewMemoryReport(memoryScenario(t, "budget_tokens = 8192", `budget_tokens = "auto"`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.BudgetAuto || !r.Fits || r.BudgetTokens <= 8192 {
		t.Fatalf("auto: %+v", r)
	}
	w := r.Rows[r.Worst]
	if perToken := w.ActivationBytes / float64(w.BudgetTokens); w.HeadroomBytes >= perToken {
		t.Errorf("auto budget %d leaves %.0f bytes, room for another token (%.0f)", w.BudgetTokens, w.HeadroomBytes, perToken)
	}
	var b strings.Builder
	if err := WriteMemoryTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), " tokens/rank (auto), context 262144 tokens\n") {
		t.Errorf("table does not say auto:\n%s", b.String())
	}
}

// TestWriteMemoryTable: the header names the model, layout, recompute and
// budget; a row per stage; the verdict; the footer the worst case and the
// sources.
func TestWriteMemoryTable(t *testing.T) {
	r, err := NewMemoryReport(memoryScenario(t))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteMemoryTable(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"scenario  mem: paper-mla on 512 GPUs (H20)\n",
		"layout    tp1 pp4 vpp1 ep8, G = 128, recompute full, SP, grad sync reduce-scatter\n",
		"budget    B = 8192 tokens/rank, context 262144 tokens\n",
		"stage  kind  layers     B  weights  gradients  optimizer  activations at B  reserve  total   HBM  headroom",
		"      3   H20       8  8192     10.5       21.1        2.8               6.7      9.3   50.4  89.4      39.0",
		"\nfits: the least headroom is 39.0 GiB, on stage 3 (H20)\n",
		"worst case: every rank holding B tokens\nin every microbatch, the pipeline full; dcpsim run reports the simulated peak",
		"Korthikanti et al. 2022 (arXiv 2205.05198", "theoretical_memory_usage.py", "reserve 10 GB per GPU", "distributed optimizer",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestWriteMemoryJSON: one object with snake_case keys, the bytes in
// *_bytes keys, a row per stage and kind.
func TestWriteMemoryJSON(t *testing.T) {
	sc, err := scenarios.Preset("hetero-long-256k")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewMemoryReport(sc)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteMemoryJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(&b)
	if err := dec.Decode(&m); err != nil || dec.More() {
		t.Fatalf("not one object: %v", err)
	}
	for _, k := range []string{"scenario", "model", "tp", "pp", "vpp", "ep", "pool_ranks", "recompute", "recompute_layers", "budget_tokens", "budget_auto", "rows", "worst_row", "fits"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no key %q", k)
		}
	}
	rows, _ := m["rows"].([]any)
	if len(rows) != len(r.Rows) || len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	row, _ := rows[1].(map[string]any)
	var keys []string
	for k := range row {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"activation_bytes", "budget_tokens", "fits", "gradients_bytes", "hbm_bytes", "headroom_bytes", "kind", "layers",
		"optimizer_bytes", "reserve_bytes", "stage", "total_bytes", "weights_bytes"}
	if !slices.Equal(keys, want) {
		t.Errorf("row keys %v, want %v", keys, want)
	}
	if row["kind"] != "A100-80G" || math.Abs(row["total_bytes"].(float64)-r.Rows[1].TotalBytes) > 1 {
		t.Errorf("row %v", row)
	}
}

// TestWriteScenarioMemoryLine: scenarios show has a memory line per GPU
// kind, after the HDP pool: the worst stage's states, the reserve and the
// activations at B against the kind's HBM.
func TestWriteScenarioMemoryLine(t *testing.T) {
	var b strings.Builder
	if err := WriteScenario(&b, memoryScenario(t)); err != nil {
		t.Fatal(err)
	}
	want := "\nmemory       states 34.4 GiB (stage 3) + reserve 9.3 + activations at B 6.7 = 50.4 GiB of 89.4 GiB per H20: fits (dcpsim memory for the stages)\nworkload"
	if !strings.Contains(b.String(), want) {
		t.Errorf("show lacks %q:\n%s", want, b.String())
	}
	sc, err := scenarios.Preset("hetero-long-256k")
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteScenario(&b, sc); err != nil {
		t.Fatal(err)
	}
	r, _ := NewMemoryReport(sc)
	lines := MemoryLines(r)
	if len(lines) != 2 || !strings.Contains(b.String(), "\nmemory       "+lines[0]+"\n             "+lines[1]+"\nworkload") ||
		!strings.HasSuffix(lines[0], " per H100-SXM: fits (dcpsim memory for the stages)") || !strings.Contains(lines[1], " per A100-80G: ") {
		t.Errorf("hetero-long-256k: lines %q\n%s", lines, b.String())
	}
}

// TestModelsMemory: dcpsim models lists each model's unsharded states (18
// bytes per parameter) and the memory package's activations per token;
// one model shows both, with recomputation.
func TestModelsMemory(t *testing.T) {
	var b strings.Builder
	if err := WriteModelList(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"states (GiB)  act. (MiB/tok)", "  4946           22.07\n", "18 bytes per parameter"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, b.String())
		}
	}
	hy3, err := job.LookupModel("hy3")
	if err != nil {
		t.Fatal(err)
	}
	if got := modelStatesBytes(hy3); math.Abs(got-18*hy3.TotalParams()) > 1 {
		t.Errorf("states %g, want 18 × %g", got, hy3.TotalParams())
	}
	b.Reset()
	if err := WriteModel(&b, hy3); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"model states            4945.9 GiB unsharded: 549.5 weights (BF16), 1099.1 gradients (FP32), 3297.3 Adam",
		"activations             22.07 MiB per token", "1.10 with full"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("hy3 lacks %q:\n%s", want, b.String())
		}
	}
}

// TestMemoryRecomputeLayers: full recomputation of part of each chunk is
// named in the header, and keeps more activations than of every layer.
func TestMemoryRecomputeLayers(t *testing.T) {
	all, err := NewMemoryReport(memoryScenario(t))
	if err != nil {
		t.Fatal(err)
	}
	part, err := NewMemoryReport(memoryScenario(t, `recompute = "full"`, "recompute = \"full\"\nrecompute_layers = 4"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteMemoryTable(&b, part); err != nil {
		t.Fatal(err)
	}
	if part.RecomputeLayers != 4 || !strings.Contains(b.String(), "recompute full (the first 4 layers of each model chunk), SP") ||
		!(part.Rows[0].ActivationBytes > all.Rows[0].ActivationBytes) {
		t.Errorf("recompute_layers 4: %+v\n%s", part.Rows[0], b.String())
	}
}
