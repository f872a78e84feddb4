package report

// The HyDra paper's published measurements ("HyDra: Demystifying and Taming
// Dynamic Context Parallelism at Production Scale"),
// for the reproduction report only: nothing in the simulator reads them.
// Every value names its section. NaN-free: a missing value is absent.

import "fmt"

// paperRun is what the paper reports for one of our run scenarios.
type paperRun struct {
	// Section is where the numbers come from.
	Section string
	// Setting says what the paper measured, in its words.
	Setting string
	// GPUs is the paper's GPU count for the setting.
	GPUs int
	// Values by policy, then by quantity key (see paperQuantities).
	Values map[string]map[string]paperValue
}

// paperValue is one published number, or a range when only a range is given.
type paperValue struct {
	V      float64
	Lo, Hi float64 // a range, when V is 0
	Note   string
}

// String is the value ("1.25"), the range ("1.7-2.2") or nothing, then the
// note in parentheses when there is one.
func (v paperValue) String() string {
	s := v.Num()
	if v.Note != "" {
		s += " (" + v.Note + ")"
	}
	return s
}

// Num is the value ("1.25"), the range ("1.7-2.2") or nothing, without the
// note.
func (v paperValue) Num() string {
	switch {
	case v.V != 0:
		return fmt.Sprintf("%.3g", v.V)
	case v.Hi != 0:
		return fmt.Sprintf("%.3g-%.3g", v.Lo, v.Hi)
	}
	return ""
}

// gap is how far our value lies from the published one, relative: our/V − 1
// for a value; for a range 0 inside it, else relative to the nearer bound.
func (v paperValue) gap(our float64) float64 {
	switch {
	case v.V != 0:
		return our/v.V - 1
	case our < v.Lo:
		return our/v.Lo - 1
	case our > v.Hi:
		return our/v.Hi - 1
	}
	return 0
}

// mid is the value, or the middle of the range.
func (v paperValue) mid() float64 {
	if v.V != 0 {
		return v.V
	}
	return (v.Lo + v.Hi) / 2
}

// paperQuantities are the compared quantities, in report order: key, label,
// unit.
// HyDra's throughput over each other policy comes first (overKeys); these
// follow.
var paperQuantities = [][3]string{
	{"step", "mean step time", "s"},
	{"tokens_day", "tokens per day", "B"},
	{"mfu", "MFU", "%"},
	{"pp", "PP bubble on rank 0 (the paper's measure)", "%"},
	{"dp", "DP bubble on rank 0 (the paper's measure)", "%"},
	{"pp_mean", "PP bubble, mean over all ranks", "%"},
	{"dp_mean", "DP bubble, mean over all ranks", "%"},
	{"busy", "compute-busy", "%"},
	{"cv", "MB-time CV", "%"},
	{"planner", "planner time per iteration", "s"},
	{"dollars", "$ per 1T tokens", "k$"},
}

// pv is a value, pr a range and pn a value with a note.
func pv(v float64) paperValue           { return paperValue{V: v} }
func pr(lo, hi float64) paperValue      { return paperValue{Lo: lo, Hi: hi} }
func pn(v float64, n string) paperValue { return paperValue{V: v, Note: n} }

// paperRuns maps our scenario names to the paper's numbers for them.
var paperRuns = map[string]paperRun{
	"testbed-32k": {Section: "§6.2, Figs. 12-16", GPUs: 512, Setting: "512 H20, tp1 pp4 ep8, 4K budget, 32K context, internal MLA model",
		Values: map[string]map[string]paperValue{
			"hydra":  {"over_mcore": pn(1.18, "avg of 1.09-1.25"), "over_static": pn(1.34, "avg of 1.19-1.52"), "step": pv(7.7), "tokens_day": pv(46.8), "pp": pv(17.5), "dp": pv(1.0), "busy": pv(81.5)},
			"mcore":  {"step": pv(9.1), "tokens_day": pv(39.8), "pp": pv(26.9), "dp": pv(0.9), "busy": pv(72.2)},
			"static": {"step": pv(10.3), "tokens_day": pv(35.0), "pp": pv(24.7), "dp": pv(15.3), "busy": pv(60.0)},
		}},
	"testbed-256k": {Section: "§6.2, Figs. 12-16", GPUs: 512, Setting: "512 H20, tp1 pp4 ep8, 8K budget, 256K context, internal MLA model",
		Values: map[string]map[string]paperValue{
			"hydra":  {"over_mcore": pn(2.48, "avg of 1.42-3.08"), "over_static": pn(2.30, "avg of 1.19-3.00"), "step": pv(14.1), "tokens_day": pv(25.8), "pp": pv(23.3), "dp": pv(0.8), "busy": pv(76.0)},
			"mcore":  {"step": pv(34.8), "tokens_day": pv(10.4), "pp": pv(55.7), "dp": pv(2.1), "busy": pv(42.2)},
			"static": {"step": pv(32.5), "tokens_day": pv(11.2), "pp": pv(36.5), "dp": pv(24.5), "busy": pv(39.0)},
		}},
	"production-256k": {Section: "§6.3, Figs. 20-22", GPUs: 2048, Setting: "2,048 H800, tp1 pp4 ep8, 8K budget, 256K context, internal MLA model",
		Values: map[string]map[string]paperValue{
			"hydra": {"over_mcore": pn(1.25, "avg of 1.10-1.43"), "over_static": pn(1.59, "avg of 1.33-1.90"), "step": pv(15.9), "tokens_day": pv(182.7),
				"pp": pv(13.6), "dp": pn(1, "under 1%"), "cv": pv(49), "planner": pv(0.34), "dollars": pn(540, "$1.08M per 2T tokens")},
			"mcore":  {"step": pv(19.9), "pp": pv(36.4), "dp": pr(0.4, 10.1), "cv": pv(108), "planner": pv(0.78), "dollars": pn(675, "$1.35M per 2T tokens")},
			"static": {"step": pv(25.2), "pp": pv(47.1), "dp": pr(3.2, 59.2), "cv": pv(73), "dollars": pn(855, "$1.71M per 2T tokens")},
		}},
	"hy3-8k": {Section: "§6.4, Fig. 23 (the paper's own simulator)", GPUs: 8192, Setting: "Hy3 on 8K GPUs, 256K context, six systems",
		Values: map[string]map[string]paperValue{
			"hydra": {"over_mcore": pv(1.53), "over_static": pr(1.7, 2.2), "over_bytescale": pv(1.28), "over_wlb-llm": pv(1.56),
				"over_flexsp": pr(1.7, 2.2), "pp": pv(19.8), "dp": pv(3.6)},
			"mcore":     {"pp": pv(36.5), "dp": pv(32.4)},
			"bytescale": {"pp": pv(37.3)},
			"flexsp":    {"dp": pv(49.6)},
		}},
}

// policyLabels are the names the paper gives the policies, by registry name;
// a policy not listed is shown by its registry name.
var policyLabels = map[string]string{
	"hydra": "HyDra", "mcore": "Mcore DCP", "static": "static CP",
	"bytescale": "ByteScale", "wlb-llm": "WLB-LLM", "flexsp": "FlexSP",
}

// label is the policy's name in the paper's words.
func label(policy string) string {
	if l, ok := policyLabels[policy]; ok {
		return l
	}
	return policy
}

// paperScalingSection is where paperScaling comes from.
const paperScalingSection = "§6.4, Fig. 24"

// paperScaling is the paper's weak-scaling ratios (paperScalingSection):
// HyDra's throughput over each other system per model, averaged over 8K-40K
// GPUs ("averaged over it, HyDra improves throughput by 1.28× over
// ByteScale, 1.53-1.56× over Mcore DCP and WLB-LLM, and 1.7-2.2× over FlexSP
// and static CP"; DeepSeek-V3: "1.53× over ByteScale, 1.61× over Mcore DCP,
// 1.7-2.5× over the remaining schedulers, and up to 13.8× over ring static
// CP"). A value with scalingMax compares with our largest ratio over the
// sweep, not our mean.
var paperScaling = map[string]map[string]paperValue{
	"hy3": {"bytescale": pv(1.28), "mcore": pr(1.53, 1.56), "wlb-llm": pr(1.53, 1.56),
		"flexsp": pr(1.7, 2.2), "static": pr(1.7, 2.2)},
	"deepseek-v3": {"bytescale": pv(1.53), "mcore": pv(1.61), "wlb-llm": pr(1.7, 2.5),
		"flexsp": pr(1.7, 2.5), "static": pn(13.8, scalingMax)},
}

// scalingMax is the note of a paperScaling value the paper gives as a
// maximum over the sweep ("up to").
const scalingMax = "up to, ring static CP"

// paperPlannerSection is where paperPlanner comes from.
const paperPlannerSection = "Fig. 19"

// paperPlannerGPUs is the cluster size of paperPlanner.
const paperPlannerGPUs = 16384

// paperPlanner is the planner's seconds per iteration at paperPlannerGPUs
// (paperPlannerSection), by policy.
var paperPlanner = map[string]float64{"mcore": 47.85, "hydra": 4.12}
