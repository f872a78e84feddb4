package report

import (
	"encoding/json"
	"errors"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched/policies"

	"github.com/dcpsim/dcpsim/sched"
)

// TestReproductionUpToDate: results/REPORT.md is what WriteReproduction writes
// from the committed results, so the report never drifts from its generator or
// data.
func TestReproductionUpToDate(t *testing.T) {
	dir := filepath.Join("..", "..", "results")
	want, err := os.ReadFile(filepath.Join(dir, "REPORT.md"))
	if err != nil {
		t.Skipf("no committed report: %v", err)
	}
	var b strings.Builder
	if err := WriteReproduction(&b, dir); err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("results/REPORT.md is stale: run make figures (or dcpsim report) and commit it")
	}
	if strings.Contains(b.String(), "Missing") {
		t.Errorf("the report names missing results: run make figures")
	}
}

func TestPaperValueAndVsPaper(t *testing.T) {
	for _, tc := range []struct {
		name    string
		our     float64
		ok      bool
		p       paperValue
		has     bool
		want    string
		wantStr string
	}{
		{"value", 1.05, true, pv(1.18), true, "1.05 / 1.18 (×0.89)", "1.18"},
		{"value with note", 0.64, true, pn(1.25, "avg of 1.10-1.43"), true, "0.64 / 1.25 (avg of 1.10-1.43) (×0.51)", "1.25 (avg of 1.10-1.43)"},
		{"range: inside it", 1.93, true, pr(1.7, 2.2), true, "1.93 / 1.7-2.2 (in range)", "1.7-2.2"},
		{"no paper value", 35.7, true, paperValue{}, false, "35.7 / -", ""},
		{"no value of ours", 0, false, pv(7.7), true, "- / 7.7", "7.7"},
		{"neither", 0, false, paperValue{}, false, "- / -", ""},
		{"three significant digits", 184.26, true, pv(46.8), true, "184 / 46.8 (×3.94)", "46.8"},
	} {
		if got := vsPaper(tc.our, tc.ok, tc.p, tc.has); got != tc.want {
			t.Errorf("%s: vsPaper = %q, want %q", tc.name, got, tc.want)
		}
		if got := tc.p.String(); got != tc.wantStr {
			t.Errorf("%s: paperValue.String = %q, want %q", tc.name, got, tc.wantStr)
		}
	}
	if got, want := fmtOK(1.234, true), "1.23"; got != want {
		t.Errorf("fmtOK = %q, want %q", got, want)
	}
	if got := fmtOK(1, false); got != "-" {
		t.Errorf("fmtOK(not ok) = %q, want -", got)
	}
	for _, c := range []struct {
		our  float64
		want string
	}{{1.8, "1.8 / 1.7-2.2 (in range)"}, {2.42, "2.42 / 1.7-2.2 (+10% outside)"}, {1.53, "1.53 / 1.7-2.2 (-10% outside)"}} {
		if got := vsPaper(c.our, true, pr(1.7, 2.2), true); got != c.want {
			t.Errorf("vsPaper(%g, range) = %q, want %q", c.our, got, c.want)
		}
	}
	if got := mean(nil); got != 0 {
		t.Errorf("mean(nil) = %g, want 0", got)
	}
	if got := mean([]float64{1, 2, 6}); got != 3 {
		t.Errorf("mean = %g, want 3", got)
	}
}

// reproSummary is a scenario of three policies; static failed when
// staticFails.
func reproSummary(staticFails bool) *results.Summary {
	s := &results.Summary{Scenario: "testbed-32k",
		Iterations: 20, WarmupIterations: 2, PlannerStall: "modeled",
		Policies: []results.PolicySummary{
			{Policy: "hydra", StepSecondsMean: 2, TokensPerDay: 184e9, DollarsPer1TTokens: 133e3, DegreeShares: []sched.DegreeShare{{Degree: 0, Share: 0.1}, {Degree: 1, Share: 0.5}, {Degree: 8, Share: 0.4}}, Measures: results.Measures{StepSecondsNoStall: 1.5, PPBubbleShare: 0.25, DPBubbleShare: 0.02, PPBubbleRank0Share: 0.2, DPBubbleRank0Share: 0.01, ComputeShare: 0.7, MFU: 0.41, MBTimeCV: 0.3, PlannerModeledSeconds: 0.005}},
			{Policy: "mcore", StepSecondsMean: 3, TokensPerDay: 184e9 * 2 / 3, Measures: results.Measures{StepSecondsNoStall: 2.5}},
			{Policy: "static", StepSecondsMean: 4, TokensPerDay: 184e9 / 2, Measures: results.Measures{StepSecondsNoStall: 4}},
			// WLB-LLM trains 3/4 of the batch in 1.5 s: its throughput is
			// HyDra's × 3/4 × 2/1.5 = HyDra's, not 2/1.5 of it.
			{Policy: "wlb-llm", StepSecondsMean: 1.5, TokensPerDay: 184e9, Measures: results.Measures{StepSecondsNoStall: 1.5}},
		}, Layout: results.Layout{GPUs: 512, GPU: "H20", Model: "m", TP: 1, PP: 4, VPP: 1, EP: 8, BudgetTokens: 4096}}
	if staticFails {
		s.Policies[2] = results.PolicySummary{Policy: "static", Error: "boom"}
	}
	return s
}

func TestOurs(t *testing.T) {
	s := reproSummary(false)
	for _, tc := range []struct {
		policy, key string
		want        float64
	}{
		{"hydra", "over_mcore", 1.5}, {"hydra", "over_static", 2}, {"mcore", "over_hydra", 2.0 / 3},
		{"hydra", "over_wlb-llm", 1}, {"hydra", "over_wlb-llm_nostall", 2 / 1.5}, {"hydra", "over_flexsp", 0},
		{"hydra", "step", 2}, {"hydra", "tokens_day", 184}, {"hydra", "pp", 20}, {"hydra", "dp", 1},
		{"hydra", "pp_mean", 25}, {"hydra", "dp_mean", 2}, {"hydra", "mfu", 41},
		{"hydra", "over_mcore_nostall", 2.5 / 1.5}, {"hydra", "over_static_nostall", 4 / 1.5},
		{"hydra", "busy", 70}, {"hydra", "cv", 30}, {"hydra", "planner", 0.005}, {"hydra", "dollars", 133},
	} {
		got, ok := ours(s, tc.policy, tc.key)
		if wantOK := tc.key != "over_flexsp"; ok != wantOK || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ours(%s, %s) = %g, %v; want %g, %v", tc.policy, tc.key, got, ok, tc.want, wantOK)
		}
	}
	for _, key := range []string{"nope", "over_static"} {
		if v, ok := ours(reproSummary(true), "hydra", key); ok {
			t.Errorf("ours(hydra, %s) = %g, want none (unknown key or failed reference)", key, v)
		}
	}
	if _, ok := ours(s, "flexsp", "step"); ok {
		t.Error("ours of a policy not in the summary, want none")
	}
	if policyOf(reproSummary(true), "static") != nil {
		t.Error("policyOf returned a failed policy")
	}
}

// failWriter fails every write.
type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// TestWriteReproduction: on a results folder with one scenario, the report
// has its rows beside the paper's, names every missing folder, and returns a
// failing writer's error.
func TestWriteReproduction(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "testbed-32k"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(reproSummary(false))
	if err := os.WriteFile(filepath.Join(dir, "testbed-32k", "summary.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := WriteReproduction(&sb, dir); err != nil {
		t.Fatal(err)
	}
	got := sb.String()
	for _, want := range []string{
		"# dcpsim beside the HyDra paper\n",
		"| testbed-32k | 1.5 / 1.18 (avg of 1.09-1.25) (×1.27) | 2 / 1.34 (avg of 1.19-1.52) (×1.49) | 1.67 / 1.18 (avg of 1.09-1.25) (×1.41) | 2.67 / 1.34 (avg of 1.19-1.52) (×1.99) | §6.2, Figs. 12-16 |\n",
		"| PP bubble on rank 0 (the paper's measure) (%) | 20 / 17.5 (×1.14) |",
		"Missing results in " + dir + " (run `make figures`): testbed-256k, production-256k, production-256k-node-ulysses, hy3-8k.\n",
		"## testbed-32k\n\nHere: 512×H20, m, tp1 pp4 vpp1 ep8, B = 4096, 18 measured iterations; planner stall modeled; inner Ulysses across nodes: false. Paper (§6.2, Figs. 12-16): ",
		"| quantity | HyDra | Mcore DCP | static CP | WLB-LLM |\n|---|---|---|---|---|\n| HyDra's throughput over Mcore DCP (×) | 1.5 / 1.18 (avg of 1.09-1.25) (×1.27) | | | |\n",
		"| HyDra's throughput over WLB-LLM (×) | 1 / - | | | |\n",
		"| HyDra's throughput over WLB-LLM, planner stall off the critical path (×) | 1.33 / - | | | |\n",
		"| mean step time (s) | 2 / 7.7 (×0.26) | 3 / 9.1 (×0.33) | 4 / 10.3 (×0.39) | 1.5 / - |\n",
		"| MB-time CV (%) | 30 / - | 0 / - | 0 / - | 0 / - |\n",
		"Throughput order, planner stall off the critical path: here HyDra > Mcore DCP > static CP; paper HyDra > Mcore DCP > static CP (0 of the pairs the paper orders reversed here).\n",
		"here: hydra: idle 10, 1 50, 8 40; mcore: ; static: ; wlb-llm: ;\n",
		"## weak-scaling (§6.4, Fig. 24)\n\nMissing: " + filepath.Join(dir, "weak-scaling", "sweep.json") + " (run `make figures`).\n",
		"Missing: " + filepath.Join(dir, "production-256k-cap", "sweep.json") + " (run `make figures`).\n",
		"## Where and why we differ\n",
		"- **Production**: Missing results: production-256k, testbed-256k (run `make figures`).\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	boom := errors.New("boom")
	if err := WriteReproduction(failWriter{boom}, dir); !errors.Is(err, boom) {
		t.Errorf("error %v, want the writer's", err)
	}
}

// TestPaperNumbers: every scenario the report reads has paper numbers with a
// section and a setting, and every published value is of a quantity the
// report shows.
func TestPaperNumbers(t *testing.T) {
	keys := map[string]bool{}
	for _, q := range paperQuantities {
		keys[q[0]] = true
	}
	for p := range policyLabels {
		if _, err := policies.Lookup(p); err != nil {
			t.Errorf("policyLabels: %v", err)
		}
		keys["over_"+p] = true
	}
	for model, byPolicy := range paperScaling {
		for p, v := range byPolicy {
			if _, ok := policyLabels[p]; !ok || v.String() == "" {
				t.Errorf("paperScaling[%s][%s] = %v: not a labelled policy, or empty", model, p, v)
			}
		}
	}
	for _, rs := range reproductionScenarios {
		pr, ok := paperRuns[rs[1]]
		if !ok || pr.Section == "" || pr.Setting == "" {
			t.Errorf("%s: paper run %q missing or without section and setting", rs[0], rs[1])
		}
	}
	for name, pr := range paperRuns {
		for pol, vals := range pr.Values {
			for k, v := range vals {
				if !keys[k] {
					t.Errorf("%s %s: %q is not a report quantity", name, pol, k)
				}
				if v.String() == "" {
					t.Errorf("%s %s %s: empty value", name, pol, k)
				}
			}
		}
	}
}

// TestWriteScaling: the weak-scaling tables show every policy's step and
// HyDra's throughput over it per point, the mean over the points beside the
// paper's (the largest for ring static CP on DeepSeek-V3, "up to"), and the
// throughput order.
func TestWriteScaling(t *testing.T) {
	point := func(model string, gpus int, mcoreStep, staticStep float64) results.SweepPoint {
		return results.SweepPoint{Model: model, GPUs: gpus, Summary: results.Summary{Policies: []results.PolicySummary{
			{Policy: "hydra", StepSecondsMean: 1, TokensPerDay: 100, Measures: results.Measures{StepSecondsNoStall: 1}},
			{Policy: "mcore", StepSecondsMean: mcoreStep, TokensPerDay: 100 / mcoreStep, Measures: results.Measures{StepSecondsNoStall: mcoreStep, PlannerModeledSeconds: 0.5}},
			{Policy: "static", StepSecondsMean: staticStep, TokensPerDay: 100 / staticStep, Measures: results.Measures{StepSecondsNoStall: staticStep}},
		}}}
	}
	var w strings.Builder
	writeScaling(&w, []results.SweepPoint{point("deepseek-v3", 8192, 1.5, 10), point("deepseek-v3", 16384, 1.7, 14)})
	got := w.String()
	for _, want := range []string{
		"| model | GPUs | HyDra | Mcore DCP | static CP |\n|---|---|---|---|---|\n| deepseek-v3 | 8192 | 1.0 | 1.5 (1.50 / 1.50) | 10.0 (10.00 / 10.00) |\n",
		"| deepseek-v3 | 16384 | 0.00 | 0.50 | 0.00 |\n",
		"| deepseek-v3 | Mcore DCP | 1.6 / 1.61 (×0.99) | 1.6 / 1.61 (×0.99) |\n",
		"| deepseek-v3 | static CP | 14 / 13.8 (up to, ring static CP) (×1.01) |",
		"deepseek-v3, throughput order over the sweep, stall off: here HyDra > Mcore DCP > static CP; paper HyDra > Mcore DCP > static CP (0 of the pairs the paper orders reversed here).\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("scaling tables lack %q:\n%s", want, got)
		}
	}
	w.Reset()
	writeScaling(&w, nil)
	if w.String() != "No points.\n" {
		t.Errorf("no points: %q", w.String())
	}
}

// TestOrder: equal ratings print as ties and count no reversal; a pair the
// paper orders and ours reverses counts once.
func TestOrder(t *testing.T) {
	here := map[string]float64{"hydra": 1, "mcore": 1.6, "static": 2.4, "flexsp": 1.4, "bytescale": 1.7}
	paper := map[string]float64{"hydra": 1, "mcore": 1.53, "static": 1.95, "flexsp": 1.95, "bytescale": 1.28}
	o := order{policies: []string{"hydra", "mcore", "static", "flexsp", "bytescale"},
		here: func(p string) float64 { return here[p] }, paper: func(p string) float64 { return paper[p] }}
	if got, want := o.text(o.paper), "HyDra > ByteScale > Mcore DCP > static CP ≈ FlexSP"; got != want {
		t.Errorf("paper order %q, want %q", got, want)
	}
	if got, want := o.text(o.here), "HyDra > FlexSP > Mcore DCP > ByteScale > static CP"; got != want {
		t.Errorf("our order %q, want %q", got, want)
	}
	// Reversed: mcore/flexsp, bytescale/mcore, bytescale/flexsp; static ≈
	// flexsp in the paper, so that pair does not count.
	if got := o.reversed(); got != 3 {
		t.Errorf("reversed = %d, want 3", got)
	}
}
