package report

// The closing prose of the reproduction report ("Where and why we differ",
// "What the model leaves out"): the text/template reproduction.tmpl executed
// on proseData, which newProseData computes from the results the tables read
// (the same ours, targets and sweep ratios), so no number of ours in the prose
// is typed by hand, and the words a number decides (shorter or longer, met or
// missed, above or below) are chosen from it. The paper's numbers come from
// paper.go. Nothing here is history (the effect a change had when it was
// made): that is the git log's.

import (
	"cmp"
	_ "embed"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"slices"
	"strings"
	"text/template"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
)

//go:embed reproduction.tmpl
var reproductionTemplate string

// proseTemplate is reproduction.tmpl, parsed once.
var proseTemplate = template.Must(template.New("reproduction.tmpl").Option("missingkey=error").Funcs(template.FuncMap{
	"list":    listText,
	"missing": missingText,
	"factor":  factorText,
	"pct":     func(share float64) string { return fmt.Sprintf("%.0f", 100*share) },
	"kilo":    kiloText,
	"grouped": groupedText,
}).Parse(reproductionTemplate))

// writeProse executes the prose template on d into w. The template is fixed
// and d's fields are all set, so execution cannot fail on its data; an error
// (a defect of the template) is written into the report, where the test sees
// it, rather than dropped.
func writeProse(w *strings.Builder, d *proseData) {
	var b strings.Builder
	if err := proseTemplate.Execute(&b, d); err != nil {
		fmt.Fprintf(w, "\n(report template failed: %v)\n", err)
		return
	}
	w.WriteString(b.String())
}

// gaps are signed differences of ours from a reference: relative (ours/ref −
// 1, shown in per cent) or, when points, in percentage points.
type gaps struct {
	xs     []float64
	points bool
}

// relGaps are relative gaps; pointGaps gaps in points.
func relGaps(xs ...float64) gaps   { return gaps{xs: xs} }
func pointGaps(xs ...float64) gaps { return gaps{xs: xs, points: true} }

// Text is the gaps' size and direction with the word for below zero or the
// one for above: "19% shorter", "5-12 points above", or "between 10% shorter
// and 5% longer" when they straddle zero.
func (g gaps) Text(below, above string) string {
	var neg, pos []float64
	for _, x := range g.xs {
		if x < 0 {
			neg = append(neg, -x)
		} else {
			pos = append(pos, x)
		}
	}
	switch {
	case len(g.xs) == 0:
		return "unknown"
	case len(pos) == 0:
		return g.size(neg) + " " + below
	case len(neg) == 0:
		return g.size(pos) + " " + above
	}
	return "between " + g.size([]float64{slices.Max(neg)}) + " " + below + " and " + g.size([]float64{slices.Max(pos)}) + " " + above
}

// Within is "within N%" (or points) for the largest of the gaps' sizes.
func (g gaps) Within() string {
	m := 0.0
	for _, x := range g.xs {
		m = math.Max(m, math.Abs(x))
	}
	return "within " + g.size([]float64{m})
}

// size formats the range of the sizes xs (≥ 0): "34-57%", "12 points".
func (g gaps) size(xs []float64) string {
	scale, unit := 100.0, "%"
	if g.points {
		scale, unit = 1, " points"
	}
	lo, hi := fmt.Sprintf("%.0f", scale*slices.Min(xs)), fmt.Sprintf("%.0f", scale*slices.Max(xs))
	if g.points && hi == "1" {
		unit = " point"
	}
	if lo == hi {
		return hi + unit
	}
	return lo + "-" + hi + unit
}

// proseTarget is a target as the prose quotes it.
type proseTarget struct{ t target }

// VS is "1.61× vs 1.53×" (ours against the paper's, range or value; "vs up
// to 13.8×" for the paper's maximum over a sweep).
func (p proseTarget) VS() string {
	upTo := ""
	if p.t.paper.Note == scalingMax {
		upTo = "up to "
	}
	return fmt.Sprintf("%.3g× vs %s%s×", p.t.here, upTo, p.t.paper.Num())
}

// Gap is the relative gap as a signed per cent ("+7%"; "+7% outside" a
// published range), "in range" inside it.
func (p proseTarget) Gap() string {
	switch {
	case p.t.paper.V == 0 && p.t.gap() == 0:
		return "in range"
	case p.t.paper.V == 0:
		return fmt.Sprintf("%+.0f%% outside", 100*p.t.gap())
	}
	return fmt.Sprintf("%+.0f%%", 100*p.t.gap())
}

// Verdict is "met" or "missed".
func (p proseTarget) Verdict() string {
	if p.t.met() {
		return "met"
	}
	return "missed"
}

// Word is below, within or above by the sign of the gap (a range's inside
// counts as within).
func (p proseTarget) Word(below, within, above string) string {
	switch g := p.t.gap(); {
	case g < 0:
		return below
	case g > 0:
		return above
	}
	return within
}

// Paper is the paper's value or range, without its note.
func (p proseTarget) Paper() string { return p.t.paper.Num() }

// Here is our value.
func (p proseTarget) Here() float64 { return p.t.here }

// Quote is "Label (1.61× vs 1.53×, +5%)", the target of HyDra's lead over
// the policy as a list item names it.
func (p proseTarget) Quote(policy string) string {
	return fmt.Sprintf("%s (%s, %s)", label(policy), p.VS(), p.Gap())
}

// proseData is what the closing prose says. A section is nil when a result it
// needs is missing; Missing names what, by section.
type proseData struct {
	Testbed    *testbedProse
	Production *productionProse
	Planner    *plannerProse
	Sim        *simProse
	Bubbles    *bubbleProse
	Scenarios  scenariosProse
	// Fabric is the fabric what-if closest to the paper (nil: missing).
	Fabric  *fabricProse
	Missing map[string][]string
}

// testbedProse: the H20 testbed scenarios beside §6.2.
type testbedProse struct {
	// Steps32 and Steps256 are HyDra's and Mcore DCP's steps against the
	// paper's; RatiosMet of Ratios are testbed-32k's ratio targets met.
	Steps32, Steps256 gaps
	RatiosMet, Ratios int
	// Lead is HyDra's throughput over Mcore DCP at 256K (stall off) against
	// the paper's; HydraStep and McoreStep their 256K steps against the
	// paper's; PP HyDra's PP bubble on rank 0 there.
	Lead                 proseTarget
	LeadGap              gaps
	PaperLead            string
	HydraStep, McoreStep gaps
	PP                   gaps
	PaperPP              float64
	// MBs is HyDra's microbatches per iteration at 256K (rounded); Stages
	// pp; Fill 1F1B's least idle share with MBs microbatches; PaperMBs the
	// count the paper's bubble needs; Cap HyDra's closed-form C*; Pool G.
	MBs, Stages, Fill1 int
	Fill               float64
	PaperMBs           int
	Cap, Pool          int
}

// productionProse: production-256k beside §6.3.
type productionProse struct {
	GPU, TestbedGPU string
	GPUs            int
	// Steps are every policy's steps against the paper's; AllShorter says
	// every one is shorter.
	Steps      gaps
	AllShorter bool
	// LeadMcore and LeadStatic are HyDra's throughput over each (stall on)
	// against the paper's.
	LeadMcore, LeadStatic gaps
	// PaperPerGPU and OursPerGPU are tokens per second per GPU of production
	// over testbed-256k by policy; PeakRatio the GPUs' BF16 peaks' ratio (0:
	// unknown).
	PaperPerGPU, OursPerGPU map[string]float64
	PeakRatio               float64
}

// plannerProse: the planners' modelled stalls on production-256k.
type plannerProse struct {
	GPUs                   int
	Mcore, Hydra           float64
	McorePaper, HydraPaper float64
	McoreGap               gaps
	PaperSection           string
	PaperAt, PaperAtGPUs   int
	PaperMcoreAt           float64
}

// simProse: hy3-8k and the weak-scaling sweep beside §6.4.
type simProse struct {
	PaperHy3Mcore, PaperDSMcore string
	PaperPlanner                float64
	PaperPlannerGPUs            int
	// WLBStep and WLBStepP95 are WLB-LLM's mean and 95th-percentile steps on
	// hy3-8k.
	WLBStep, WLBStepP95 float64
	// Met and Missed list the §6.4 ratio targets by model, quoted.
	MetHy3, MissedHy3, MetDS, MissedDS []string
	// The targets of each system the prose explains.
	BSHy3, BSHy3Sweep, BSDS, FlexSPHy3, WLBDS, StaticDS proseTarget
	// ByteScale's PP bubble on rank 0 on hy3-8k beside the paper's, whether
	// it is the largest of the six here (else Largest's is) and of those the
	// paper gives; its mean PP bubble and exposed communication over the
	// DeepSeek-V3 sweep, with DSStages stages.
	BSPP, BSPPPaper float64
	// BSAtPaperPP is HyDra's lead over ByteScale on hy3-8k (stall off) were
	// ByteScale's rank-0 PP bubble the paper's and the rest of rank 0's
	// iteration unchanged: the ratio × (1 − BSPP)/(1 − BSPPPaper).
	BSAtPaperPP               float64
	BSLargest, BSPaperLargest bool
	Largest                   string
	BSPPDS, BSExposedDS       float64
	DSStages                  int
	// FlexSP's DP bubble (mean over ranks, on rank 0) and mean PP bubble on
	// hy3-8k, the paper's DP bubble.
	FlexDP, FlexDPRank0, FlexPP, FlexDPPaper float64
	// DeepSeek-V3's per-head K/V bytes per token per layer, for one
	// context-length sequence, over its MLA latent; WLB-LLM's exposed
	// communication over the sweep.
	KVKB, KVSeqGB, LatentShrink float64
	Context                     int
	WLBExposedDS                float64
	// The order of hy3-8k: the policies ahead of and behind Mcore DCP here,
	// the paper's and our second, the pairs reversed; Mcore's lead with the
	// stall on, mean over the Hy3 sweep.
	Ahead, Behind           []string
	PaperSecond, HereSecond string
	Reversed                int
	McoreStallOnHy3         float64
}

// bubbleProse: the PP bubbles on rank 0 against the paper's.
type bubbleProse struct {
	// HydraMisses quotes HyDra's missed PP targets; McoreGaps are Mcore
	// DCP's gaps (points) and McoreMissed how many miss.
	HydraMisses []string
	McoreGaps   gaps
	McoreMissed int
}

// scenariosProse: what every compared scenario runs with.
type scenariosProse struct {
	AllTP1, NoRecompute bool
	TPs, Recomputes     []string
}

// proseInputs are what the prose is computed from; missing collects what the
// section being built lacks.
type proseInputs struct {
	sums    map[string]*results.Summary
	scaling []results.SweepPoint
	ts      targets
	missing []string
}

// miss records a missing input once.
func (in *proseInputs) miss(what string) {
	if !slices.Contains(in.missing, what) {
		in.missing = append(in.missing, what)
	}
}

// sum is the scenario's summary; a missing one is recorded and an empty one
// returned.
func (in *proseInputs) sum(sc string) *results.Summary {
	if s := in.sums[sc]; s != nil {
		return s
	}
	in.miss(sc)
	return &results.Summary{}
}

// policy is the scenario's policy; a missing one is recorded and a zero one
// returned.
func (in *proseInputs) policy(sc, policy string) *results.PolicySummary {
	s := in.sum(sc)
	if p := policyOf(s, policy); p != nil {
		return p
	}
	if in.sums[sc] != nil {
		in.miss(sc + " " + policy)
	}
	return &results.PolicySummary{}
}

// ours is ours(s, policy, key) of the scenario, recording a missing one.
func (in *proseInputs) ours(sc, policy, key string) float64 {
	v, ok := ours(in.sum(sc), policy, key)
	if !ok && in.sums[sc] != nil {
		in.miss(sc + " " + policy + " " + key)
	}
	return v
}

// target is the target of where and quantity, recording a missing one: the
// scenario or sweep when it is missing, else the quantity.
func (in *proseInputs) target(where, quantity string) proseTarget {
	t, ok := in.ts.find(where, quantity)
	switch {
	case ok && (t.ok || t.hereOrder != ""):
	case strings.HasPrefix(where, "weak-scaling/") && in.scaling == nil:
		in.miss("weak-scaling")
	case !strings.HasPrefix(where, "weak-scaling/") && in.sums[where] == nil:
		in.miss(where)
	default:
		in.miss(where + " " + strings.ReplaceAll(quantity, ".", " "))
	}
	return proseTarget{t}
}

// points are the weak-scaling sweep's points of model, recording a missing
// sweep or model.
func (in *proseInputs) points(model string) []results.SweepPoint {
	if in.scaling == nil {
		in.miss("weak-scaling")
		return nil
	}
	var pts []results.SweepPoint
	for _, p := range in.scaling {
		if p.Model == model {
			pts = append(pts, p)
		}
	}
	if len(pts) == 0 {
		in.miss("weak-scaling " + model)
	}
	return pts
}

// sweepMean is the mean of f over the points' policy (those where it ran),
// recording none.
func (in *proseInputs) sweepMean(pts []results.SweepPoint, policy string, f func(*results.PolicySummary) float64) float64 {
	var xs []float64
	for i := range pts {
		if p := policyOf(&pts[i].Summary, policy); p != nil {
			xs = append(xs, f(p))
		}
	}
	if len(xs) == 0 && len(pts) > 0 {
		in.miss("weak-scaling " + pts[0].Model + " " + policy)
	}
	return mean(xs)
}

// paperGap is ours against the paper's quantity for policy in scenario sc, a
// relative gap.
func (in *proseInputs) paperGap(sc, policy, key string) float64 {
	return paperRuns[sc].Values[policy][key].gap(in.ours(sc, policy, key))
}

// newProseData computes the prose's numbers from the scenarios' summaries
// (by name), the weak-scaling sweep's points (nil when missing) and the
// targets checked on them.
func newProseData(sums map[string]*results.Summary, scaling []results.SweepPoint, ts targets) *proseData {
	in := &proseInputs{sums: sums, scaling: scaling, ts: ts}
	d := &proseData{Missing: map[string][]string{}}
	build := func(section string, f func()) bool {
		in.missing = nil
		f()
		if len(in.missing) > 0 {
			d.Missing[section] = in.missing
			return false
		}
		return true
	}
	var tb testbedProse
	if build("testbed", func() { tb = testbedFrom(in) }) {
		d.Testbed = &tb
	}
	var pr productionProse
	if build("production", func() { pr = productionFrom(in) }) {
		d.Production = &pr
	}
	var pl plannerProse
	if build("planner", func() { pl = plannerFrom(in) }) {
		d.Planner = &pl
	}
	var sim simProse
	if build("sim", func() { sim = simFrom(in) }) {
		d.Sim = &sim
	}
	var bu bubbleProse
	if build("bubbles", func() { bu = bubblesFrom(in) }) {
		d.Bubbles = &bu
	}
	d.Scenarios = scenariosFrom(sums)
	return d
}

// testbedFrom computes the testbed bullet.
func testbedFrom(in *proseInputs) testbedProse {
	var p testbedProse
	p.Steps32 = relGaps(in.paperGap("testbed-32k", "hydra", "step"), in.paperGap("testbed-32k", "mcore", "step"))
	p.Steps256 = relGaps(in.paperGap("testbed-256k", "hydra", "step"), in.paperGap("testbed-256k", "mcore", "step"))
	for _, q := range []string{"over_mcore", "over_mcore_nostall", "over_static", "over_static_nostall"} {
		p.Ratios++
		if in.target("testbed-32k", q).t.met() {
			p.RatiosMet++
		}
	}
	p.Lead = in.target("testbed-256k", "over_mcore_nostall")
	p.LeadGap = relGaps(p.Lead.t.gap())
	p.PaperLead = p.Lead.t.paper.Num()
	p.HydraStep = relGaps(in.target("testbed-256k", "hydra.step").t.gap())
	p.McoreStep = relGaps(in.target("testbed-256k", "mcore.step").t.gap())
	pp := in.target("testbed-256k", "hydra.pp").t
	p.PP, p.PaperPP = pointGaps(pp.gap()), pp.paper.V
	s, h := in.sum("testbed-256k"), in.policy("testbed-256k", "hydra")
	p.MBs, p.Stages = int(math.Round(h.Microbatches)), s.PP
	p.Fill1 = p.Stages - 1
	if p.MBs+p.Fill1 > 0 {
		p.Fill = float64(p.Fill1) / float64(p.MBs+p.Fill1)
	}
	if p.PaperPP > 0 {
		// 1F1B idles (pp−1)/(m+pp−1): the m at which it idles the paper's share.
		p.PaperMBs = int(math.Round(float64(p.Fill1) * (100/p.PaperPP - 1)))
	}
	p.Cap, p.Pool = int(h.ChosenOptions["cap"]), s.PoolRanks
	return p
}

// productionFrom computes the production bullet.
func productionFrom(in *proseInputs) productionProse {
	s, tb := in.sum("production-256k"), in.sum("testbed-256k")
	p := productionProse{GPU: s.GPU, TestbedGPU: tb.GPU, GPUs: s.GPUs, AllShorter: true,
		PaperPerGPU: map[string]float64{}, OursPerGPU: map[string]float64{}}
	paper, paperTB := paperRuns["production-256k"], paperRuns["testbed-256k"]
	// The paper gives production tokens per day for HyDra only; every
	// policy trains the same batch, so the others' follow from their steps.
	hv := paper.Values["hydra"]
	batch := hv["tokens_day"].V * hv["step"].V
	var steps []float64
	for _, pol := range []string{"hydra", "mcore", "static"} {
		g := in.paperGap("production-256k", pol, "step")
		steps = append(steps, g)
		p.AllShorter = p.AllShorter && g < 0
		prodDay := batch / paper.Values[pol]["step"].V
		p.PaperPerGPU[pol] = prodDay / float64(paper.GPUs) / (paperTB.Values[pol]["tokens_day"].V / float64(paperTB.GPUs))
		pp, pt := in.policy("production-256k", pol), in.policy("testbed-256k", pol)
		if s.GPUs > 0 && tb.GPUs > 0 && pt.TokensPerDay > 0 {
			p.OursPerGPU[pol] = pp.TokensPerDay / float64(s.GPUs) / (pt.TokensPerDay / float64(tb.GPUs))
		}
	}
	p.Steps = relGaps(steps...)
	p.LeadMcore = relGaps(in.target("production-256k", "over_mcore").t.gap())
	p.LeadStatic = relGaps(in.target("production-256k", "over_static").t.gap())
	a, errA := calib.LookupProfile(s.GPU)
	b, errB := calib.LookupProfile(tb.GPU)
	if errA == nil && errB == nil && b.PeakBF16FLOPs.Value > 0 {
		p.PeakRatio = a.PeakBF16FLOPs.Value / b.PeakBF16FLOPs.Value
	}
	return p
}

// plannerFrom computes the planner-stall bullet.
func plannerFrom(in *proseInputs) plannerProse {
	paper := paperRuns["production-256k"].Values
	p := plannerProse{GPUs: in.sum("production-256k").GPUs,
		Mcore: in.ours("production-256k", "mcore", "planner"), Hydra: in.ours("production-256k", "hydra", "planner"),
		McorePaper: paper["mcore"]["planner"].V, HydraPaper: paper["hydra"]["planner"].V,
		PaperSection: paperPlannerSection, PaperAtGPUs: paperPlannerGPUs, PaperMcoreAt: paperPlanner["mcore"]}
	p.McoreGap = relGaps(in.paperGap("production-256k", "mcore", "planner"))
	return p
}

// simFrom computes the §6.4 bullet.
func simFrom(in *proseInputs) simProse {
	p := simProse{PaperHy3Mcore: paperScaling["hy3"]["mcore"].Num(), PaperDSMcore: paperScaling["deepseek-v3"]["mcore"].Num(),
		PaperPlanner: paperPlanner["mcore"], PaperPlannerGPUs: paperPlannerGPUs}
	wlb := in.policy("hy3-8k", "wlb-llm")
	p.WLBStep, p.WLBStepP95 = wlb.StepSecondsMean, wlb.StepSecondsP95
	for _, pol := range []string{"mcore", "static", "bytescale", "wlb-llm", "flexsp"} {
		if t := in.target("hy3-8k", "over_"+pol+"_nostall"); t.t.met() {
			p.MetHy3 = append(p.MetHy3, t.Quote(pol))
		} else {
			p.MissedHy3 = append(p.MissedHy3, t.Quote(pol))
		}
		if t := in.target("weak-scaling/deepseek-v3", "over_"+pol+"_nostall"); t.t.met() {
			p.MetDS = append(p.MetDS, t.Quote(pol))
		} else {
			p.MissedDS = append(p.MissedDS, t.Quote(pol))
		}
	}
	p.BSHy3 = in.target("hy3-8k", "over_bytescale_nostall")
	p.BSHy3Sweep = in.target("weak-scaling/hy3", "over_bytescale_nostall")
	p.BSDS = in.target("weak-scaling/deepseek-v3", "over_bytescale_nostall")
	p.FlexSPHy3 = in.target("hy3-8k", "over_flexsp_nostall")
	p.WLBDS = in.target("weak-scaling/deepseek-v3", "over_wlb-llm_nostall")
	p.StaticDS = in.target("weak-scaling/deepseek-v3", "over_static_nostall")

	// ByteScale's bubbles.
	hy := paperRuns["hy3-8k"].Values
	p.BSPP, p.BSPPPaper = in.ours("hy3-8k", "bytescale", "pp"), hy["bytescale"]["pp"].V
	if p.BSPPPaper < 100 {
		p.BSAtPaperPP = p.BSHy3.t.here * (100 - p.BSPP) / (100 - p.BSPPPaper)
	}
	p.BSLargest, p.BSPaperLargest = true, true
	for _, pol := range policyNames(in.sum("hy3-8k")) {
		if v, _ := ours(in.sum("hy3-8k"), pol, "pp"); v > p.BSPP {
			p.BSLargest, p.Largest = false, label(pol)
		}
		if v := hy[pol]["pp"]; v.V > p.BSPPPaper {
			p.BSPaperLargest = false
		}
	}
	ds := in.points("deepseek-v3")
	p.BSPPDS = in.sweepMean(ds, "bytescale", func(s *results.PolicySummary) float64 { return s.PPBubbleShare })
	p.BSExposedDS = in.sweepMean(ds, "bytescale", func(s *results.PolicySummary) float64 { return s.ExposedCommShare })
	p.WLBExposedDS = in.sweepMean(ds, "wlb-llm", func(s *results.PolicySummary) float64 { return s.ExposedCommShare })
	if len(ds) > 0 {
		p.DSStages, p.Context = ds[0].Summary.PP, ds[0].ContextTokens
	}

	// FlexSP's bubbles.
	p.FlexDP, p.FlexDPRank0 = in.ours("hy3-8k", "flexsp", "dp_mean"), in.ours("hy3-8k", "flexsp", "dp")
	p.FlexPP, p.FlexDPPaper = in.ours("hy3-8k", "flexsp", "pp_mean"), hy["flexsp"]["dp"].V

	// WLB-LLM's all-gather of DeepSeek-V3's per-head K/V: the model's bytes.
	if m, err := job.LookupModel("deepseek-v3"); err != nil {
		in.miss("model deepseek-v3")
	} else if lat := m.MLALatentBytesPerTokenLayer(); lat > 0 {
		kv := m.RingKVBytesPerTokenLayer()
		p.KVKB, p.KVSeqGB, p.LatentShrink = kv/1e3, kv*float64(p.Context)/1e9, kv/lat
	}

	// The order of the six on hy3-8k.
	if o, ok := scenarioOrder(in.sum("hy3-8k"), hy["hydra"]); ok {
		ps := slices.Clone(o.policies)
		slices.SortStableFunc(ps, func(a, b string) int { return cmp.Compare(o.here(a), o.here(b)) })
		for _, pol := range ps {
			switch {
			case pol == "hydra" || pol == "mcore":
			case o.here(pol) < o.here("mcore"):
				p.Ahead = append(p.Ahead, label(pol))
			default:
				p.Behind = append(p.Behind, label(pol))
			}
		}
		p.HereSecond, p.PaperSecond = second(o, o.here), second(o, o.paper)
	}
	p.Reversed = in.target("hy3-8k", "order").t.reversed
	if len(in.points("hy3")) > 0 {
		v, ok := scalingRatio(in.scaling, "hy3", "mcore", false)
		if !ok {
			in.miss("weak-scaling hy3 mcore")
		}
		p.McoreStallOnHy3 = v
	}
	return p
}

// second is the policy rated second by rating (HyDra first), by its label.
func second(o order, rating func(string) float64) string {
	ps := slices.Clone(o.policies)
	slices.SortStableFunc(ps, func(a, b string) int { return cmp.Compare(rating(a), rating(b)) })
	if len(ps) < 2 {
		return ""
	}
	return label(ps[1])
}

// bubblesFrom computes the PP-bubble bullet.
func bubblesFrom(in *proseInputs) bubbleProse {
	var p bubbleProse
	var mc []float64
	for _, sc := range []string{"testbed-32k", "testbed-256k", "production-256k"} {
		if t := in.target(sc, "hydra.pp").t; !t.met() {
			p.HydraMisses = append(p.HydraMisses, fmt.Sprintf("%s %+.1f points", sc, t.gap()))
		}
		t := in.target(sc, "mcore.pp").t
		mc = append(mc, t.gap())
		if !t.met() {
			p.McoreMissed++
		}
	}
	p.McoreGaps = pointGaps(mc...)
	return p
}

// scenariosFrom says what the compared scenarios run with: tp and
// recomputation.
func scenariosFrom(sums map[string]*results.Summary) scenariosProse {
	p := scenariosProse{AllTP1: true, NoRecompute: true}
	for _, rs := range reproductionScenarios {
		s := sums[rs[0]]
		if s == nil {
			continue
		}
		if s.TP != 1 {
			p.AllTP1 = false
			p.TPs = append(p.TPs, fmt.Sprintf("%s tp = %d", rs[0], s.TP))
		}
		if s.Recompute != "" && s.Recompute != "none" {
			p.NoRecompute = false
			p.Recomputes = append(p.Recomputes, fmt.Sprintf("%s %s", rs[0], s.Recompute))
		}
	}
	return p
}

// listText joins items as prose: "A", "A and B", "A, B and C"; "no other
// system" for none.
func listText(items []string) string {
	switch len(items) {
	case 0:
		return "no other system"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// missingText says what a section lacks.
func missingText(what []string) string {
	return "Missing results: " + strings.Join(what, ", ") + " (run `make figures`)."
}

// factorText is how many times ours is below or above ref: "14× below",
// "1.3× above".
func factorText(ours, ref float64, below, above string) string {
	if ours <= 0 || ref <= 0 {
		return "unknown"
	}
	word, f := above, ours/ref
	if ours < ref {
		word, f = below, ref/ours
	}
	if f < 10 {
		return fmt.Sprintf("%.1f× %s", f, word)
	}
	return fmt.Sprintf("%.0f× %s", f, word)
}

// kiloText is a GPU count in K when it is a multiple of 1024 ("16K"), else
// in digits.
func kiloText(n int) string {
	if n > 0 && n%1024 == 0 {
		return fmt.Sprintf("%dK", n/1024)
	}
	return fmt.Sprint(n)
}

// groupedText is n with thousands separated by commas ("2,048").
func groupedText(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + groupedText(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
