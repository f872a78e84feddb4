package results

import (
	"encoding/json"
	"fmt"
	"io"
)

// CompareMethod states how a Comparison's change and interval are computed,
// for the help of dcpsim compare and the table's footer.
const CompareMethod = "change = (mean B - mean A) / mean A of the per-iteration step times of the measured " +
	"(non-warm-up) iterations of iterations.csv; its 95% confidence interval, divided by mean A, is the paired " +
	"t interval on the per-iteration differences B - A when both sides simulated the same batches (the summaries' " +
	"batches_sha256 agree: same seed and workload), else Welch's t interval on mean B - mean A (the two samples' " +
	"variances not assumed equal, at the Welch-Satterthwaite degrees of freedom); the t quantile from gonum's " +
	"distuv.StudentsT. Significant when the interval excludes 0. Pairing removes the batch-to-batch spread both " +
	"sides share, so a small systematic shift on identical batches is found. When the differences (or both samples) " +
	"have zero variance the interval is the change itself; with fewer than 2 iterations on a side there is no " +
	"interval (n/a, never significant). Each row's test is named in its test column."

// The tests a ComparisonRow's interval comes from (ComparisonRow.Test).
const (
	// CompareTestPaired: the paired t interval on the per-iteration
	// differences (identical batches on both sides).
	CompareTestPaired = "paired"
	// CompareTestWelch: Welch's t interval on the difference of the means.
	CompareTestWelch = "welch"
)

// CompareConfidence is the confidence level of a Comparison's intervals.
const CompareConfidence = 0.95

// Comparison is compare.json: two results folders of one scenario (two runs,
// or two sweeps point by point), one row per policy (per point and policy
// for sweeps), and what differs between the two as their summaries record it.
type Comparison struct {
	// Kind is "run" (two dcpsim run folders) or "sweep" (two sweep folders).
	Kind string `json:"kind"`
	// A and B are the two folders, as given.
	A ComparedFolder `json:"a"`
	B ComparedFolder `json:"b"`
	// Method is CompareMethod; ConfidenceLevel CompareConfidence.
	Method          string  `json:"method"`
	ConfidenceLevel float64 `json:"confidence_level"`
	// Differences are what the folders' summaries and manifests record
	// differently (seed, policies, options, scenario hash, ...), in a fixed
	// order; empty when they record the same.
	Differences []Difference `json:"differences"`
	// Rows are A's points and policies in A's order, then those only in B
	// in B's order.
	Rows []ComparisonRow `json:"rows"`
}

// ComparedFolder is one side of a Comparison.
type ComparedFolder struct {
	// Path is the folder as given.
	Path string `json:"path"`
	// Scenario is the scenario's (for a sweep, the sweep's) name; Hash its
	// SHA-256 as summary.json (a sweep's point.json) records it.
	Scenario string `json:"scenario"`
	Hash     string `json:"scenario_sha256"`
	// Seed is the run's seed (a sweep's first point's).
	Seed uint64 `json:"seed"`
	// Revision is the VCS revision of the dcpsim that wrote it ("" when
	// unknown), with "+modified" for a modified tree.
	Revision string `json:"vcs_revision"`
	// Points is a sweep folder's number of point folders (0 for a run).
	Points int `json:"points"`
}

// Difference is one thing the two folders record differently: the key (a
// summary.json or manifest.json name, "<policy>.<key>" for a policy's) and
// its value on each side.
type Difference struct {
	Key string `json:"key"`
	A   string `json:"a"`
	B   string `json:"b"`
}

// ComparisonRow is one policy (of one sweep point) on both sides: a line of
// the table and of compare.csv. The A and B figures are summary.json's
// (step times from iterations.csv); they are zero on a side where the policy
// is missing or failed.
type ComparisonRow struct {
	// Point is the sweep point's name and Axes its swept values ("" for
	// runs); points are paired by their axes.
	Point string `json:"point"`
	Axes  string `json:"axes"`
	// Policy is the policy's name; Status one of the Compare* statuses;
	// Note why a row was not compared (a policy's error), or why it has no
	// interval.
	Policy string `json:"policy"`
	Status string `json:"status"`
	Note   string `json:"note"`
	// IterationsA and IterationsB are the measured (non-warm-up)
	// iterations of iterations.csv used.
	IterationsA int `json:"iterations_a"`
	IterationsB int `json:"iterations_b"`
	// StepSecondsMeanA/B and StepSecondsSDA/B are the step times' means and
	// sample standard deviations.
	StepSecondsMeanA float64 `json:"step_seconds_mean_a"`
	StepSecondsMeanB float64 `json:"step_seconds_mean_b"`
	StepSecondsSDA   float64 `json:"step_seconds_sd_a"`
	StepSecondsSDB   float64 `json:"step_seconds_sd_b"`
	// DiffSeconds is mean B - mean A; ChangePct the same in % of mean A
	// (positive: B is slower).
	DiffSeconds float64 `json:"diff_seconds"`
	ChangePct   float64 `json:"change_pct"`
	// Test is the test the interval comes from (CompareTestPaired or
	// CompareTestWelch; empty for a row not compared). CIDefined says
	// whether the interval exists (at least 2 iterations on each side);
	// CILowPct and CIHighPct bound it, in % of mean A (0 when undefined);
	// DF are its degrees of freedom (n - 1 paired, Welch-Satterthwaite
	// otherwise; 0 when the variances are zero).
	Test      string  `json:"test"`
	CIDefined bool    `json:"ci_defined"`
	CILowPct  float64 `json:"ci_low_pct"`
	CIHighPct float64 `json:"ci_high_pct"`
	DF        float64 `json:"df"`
	// Significant says the interval excludes 0.
	Significant bool `json:"significant"`
	// TokensPerDayA/B, the PP and DP bubble shares and the peak memory per
	// GPU (PolicySummary.PeakMemoryMaxBytes) on each side.
	TokensPerDayA       float64 `json:"tokens_per_day_a"`
	TokensPerDayB       float64 `json:"tokens_per_day_b"`
	PPBubbleShareA      float64 `json:"pp_bubble_share_a"`
	PPBubbleShareB      float64 `json:"pp_bubble_share_b"`
	DPBubbleShareA      float64 `json:"dp_bubble_share_a"`
	DPBubbleShareB      float64 `json:"dp_bubble_share_b"`
	PeakMemoryMaxBytesA float64 `json:"peak_memory_max_bytes_a"`
	PeakMemoryMaxBytesB float64 `json:"peak_memory_max_bytes_b"`
}

// Regressions are the compared rows whose step mean got slower by more than
// pct percent with a significant change, in row order.
func (c *Comparison) Regressions(pct float64) []ComparisonRow {
	var out []ComparisonRow
	for _, r := range c.Rows {
		if r.Status == CompareCompared && r.Significant && r.ChangePct > pct {
			out = append(out, r)
		}
	}
	return out
}

// Label names the row: its policy, after its point's axes for a sweep.
func (r *ComparisonRow) Label() string {
	if r.Axes == "" && r.Point == "" {
		return r.Policy
	}
	return r.PointLabel() + " " + r.Policy
}

// PointLabel is the row's point: its axes, or its name when it has none.
func (r *ComparisonRow) PointLabel() string {
	if r.Axes != "" {
		return r.Axes
	}
	return r.Point
}

// FormatChange is the row's change and interval as the table prints them:
// "+51.34% [+27.29, +75.40]", "n/a" without a compared change.
func (r *ComparisonRow) FormatChange() string {
	if r.Status != CompareCompared {
		return "n/a"
	}
	return fmt.Sprintf("%+.2f%% %s", r.ChangePct, r.FormatCI())
}

// FormatCI is the row's 95% interval as the table prints it, "[n/a]" without one.
func (r *ComparisonRow) FormatCI() string {
	if !r.CIDefined {
		return "[n/a]"
	}
	return fmt.Sprintf("[%+.2f, %+.2f]", r.CILowPct, r.CIHighPct)
}

// WriteComparisonJSON writes c as one indented JSON object and a newline
// (compare.json, and dcpsim compare --json).
func WriteComparisonJSON(w io.Writer, c *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// CompareFiles are the files WriteComparison writes, sorted.
var CompareFiles = []string{"compare.csv", "compare.json", "compare.png", "compare.svg", "index.html"}

// The statuses of a ComparisonRow.
const (
	// CompareCompared: the policy ran on both sides and was compared.
	CompareCompared = "compared"
	// CompareOnlyInA and CompareOnlyInB: the policy (or the sweep point) is
	// in one folder only.
	CompareOnlyInA = "only in A"
	CompareOnlyInB = "only in B"
	// CompareFailedInA, CompareFailedInB and CompareFailedInBoth: the policy
	// failed (or was skipped) on that side; its error is in Note.
	CompareFailedInA    = "failed in A"
	CompareFailedInB    = "failed in B"
	CompareFailedInBoth = "failed in both"
)
