package experiment

// dcpsim compare: two results folders of one scenario (two runs, or two
// sweeps point by point) read back as untrusted input, paired policy by
// policy, and their per-iteration step times compared with Welch's t
// interval. The layout of the result is results.Comparison's.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// CompareOptions choose how Compare treats two folders.
type CompareOptions struct {
	// Force compares folders of different scenarios (by name) instead of
	// refusing them.
	Force bool
}

// Step times a compared iterations.csv may hold, in seconds: far outside
// any simulated iteration, yet so that every mean, variance and change in
// % stays finite.
const (
	minCompareStepSeconds = 1e-9
	maxCompareStepSeconds = 1e9
)

// Compare reads the results folders a and b, both written by dcpsim run
// (summary.json, iterations.csv, manifest.json) or both by dcpsim sweep or
// merge (points/<point>/, each such a folder), and compares them policy by
// policy (for sweeps, each point paired by its swept axes, then policy by
// policy): the measured iterations' step times of iterations.csv with a
// paired t interval when both sides simulated the same batches (their
// summaries' batches_sha256 agree), else Welch's (results.CompareMethod),
// and tokens/day, the PP and DP bubbles and the peak memory from
// summary.json. A policy or point in one folder only, or one that failed on
// a side, is a row saying so, not an error.
//
// Both folders are untrusted: every file is read with a bound, decoded
// strictly (a summary.json that is not dcpsim's is refused) and
// cross-checked (manifest.json against summary.json, iterations.csv's rows
// against summary.json's counts and step means, so a truncated file is
// caught); sweep points pass loadPoint's checks. Folders of two different
// scenarios (by name) are refused, naming both, unless opts.Force; a
// different seed or scenario hash is reported in Differences. Every error
// matches badinput.Err and names the file.
func Compare(a, b string, opts CompareOptions) (*results.Comparison, error) {
	sa, err := readCompareSide("A", a)
	if err != nil {
		return nil, err
	}
	sb, err := readCompareSide("B", b)
	if err != nil {
		return nil, err
	}
	if sa.kind != sb.kind {
		return nil, badInput("A %s is a %s folder and B %s a %s folder: compare two runs or two sweeps", a, sa.kind, b, sb.kind)
	}
	if sa.folder.Scenario != sb.folder.Scenario && !opts.Force {
		return nil, badInput("A %s is of scenario %q and B %s of scenario %q: compare results of one scenario (--force compares them anyway)",
			a, sa.folder.Scenario, b, sb.folder.Scenario)
	}
	c := &results.Comparison{Kind: sa.kind, A: sa.folder, B: sb.folder, Method: results.CompareMethod,
		ConfidenceLevel: results.CompareConfidence, Differences: []results.Difference{}, Rows: []results.ComparisonRow{}}
	diffs := &differences{seen: map[results.Difference]bool{}}
	diffs.add("scenario", sa.folder.Scenario, sb.folder.Scenario)
	diffs.add("scenario_sha256", sa.folder.Hash, sb.folder.Hash)
	diffs.add("dcpsim_version", sa.version, sb.version)
	diffs.add("vcs_revision", sa.folder.Revision, sb.folder.Revision)
	if sa.kind == "sweep" {
		diffs.add("points", strconv.Itoa(sa.folder.Points), strconv.Itoa(sb.folder.Points))
	}
	byAxes := map[string]*compareUnit{}
	for i := range sb.units {
		byAxes[sb.units[i].axes] = &sb.units[i]
	}
	paired := map[string]bool{}
	for i := range sa.units {
		ua := &sa.units[i]
		ub := byAxes[ua.axes]
		if ub != nil {
			paired[ua.axes] = true
			diffs.summaries(ua.sum, ub.sum)
		}
		rows, err := compareUnits(ua, ub)
		if err != nil {
			return nil, err
		}
		c.Rows = append(c.Rows, rows...)
	}
	for i := range sb.units {
		if ub := &sb.units[i]; !paired[ub.axes] {
			rows, err := compareUnits(nil, ub)
			if err != nil {
				return nil, err
			}
			c.Rows = append(c.Rows, rows...)
		}
	}
	c.Differences = append(c.Differences, diffs.list...)
	return c, nil
}

// compareSide is one folder of a comparison, read and checked.
type compareSide struct {
	// kind is "run" or "sweep".
	kind   string
	folder results.ComparedFolder
	// version is the dcpsim version of a run's manifest ("" for sweeps,
	// whose points record only the revision).
	version string
	// units are the run, or the sweep's points in index order.
	units []compareUnit
}

// compareUnit is one run (a run folder, or a sweep point) read back: its
// summary and each policy's measured step times from iterations.csv.
type compareUnit struct {
	// point and axes name a sweep point ("" for a run); points pair by axes.
	point, axes string
	sum         *results.Summary
	steps       map[string][]float64
}

// readCompareSide reads the folder dir, side "A" or "B": a sweep folder when
// it holds points/ or sweep.json, else a run folder.
func readCompareSide(side, dir string) (*compareSide, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, badInput("%s %s: no such folder (give a results folder of dcpsim run, sweep or merge)", side, dir)
	}
	if err != nil {
		return nil, badInput("%s %s: unreadable: %v", side, dir, err)
	}
	if !st.IsDir() {
		return nil, badInput("%s %s: not a folder (give a results folder of dcpsim run, sweep or merge)", side, dir)
	}
	_, errPoints := os.Lstat(filepath.Join(dir, "points"))
	_, errSweep := os.Lstat(filepath.Join(dir, "sweep.json"))
	if errPoints == nil || errSweep == nil {
		return readCompareSweep(dir)
	}
	return readCompareRun(dir)
}

// readCompareFile reads one file of a compared folder (readResultFile's
// bounds and checks), saying what a missing one means.
func readCompareFile(path string) ([]byte, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, badInput("%s: missing: not a complete dcpsim results folder (dcpsim run writes manifest.json, summary.json and iterations.csv)", path)
	}
	return readResultFile(path)
}

// readCompareRun reads a run folder: manifest.json and summary.json decoded
// strictly and consistent, and iterations.csv (parseSteps).
func readCompareRun(dir string) (*compareSide, error) {
	mpath := filepath.Join(dir, "manifest.json")
	var man Manifest
	if _, err := readDecoded(readCompareFile, mpath, &man); err != nil {
		return nil, err
	}
	spath := filepath.Join(dir, "summary.json")
	var sum results.Summary
	if _, err := readDecoded(readCompareFile, spath, &sum); err != nil {
		return nil, err
	}
	switch {
	case man.Scenario != sum.Scenario:
		return nil, badInput("%s: scenario = %q: not summary.json's %q", mpath, man.Scenario, sum.Scenario)
	case man.Hash != sum.Hash:
		return nil, badInput("%s: scenario_sha256 = %q: not summary.json's %q", mpath, man.Hash, sum.Hash)
	case man.Seed != sum.Seed:
		return nil, badInput("%s: seed = %d: not summary.json's %d", mpath, man.Seed, sum.Seed)
	}
	ipath := filepath.Join(dir, "iterations.csv")
	ib, err := readCompareFile(ipath)
	if err != nil {
		return nil, err
	}
	steps, err := parseSteps(spath, ipath, ib, &sum)
	if err != nil {
		return nil, err
	}
	rev := man.VCSRevision
	if man.VCSModified && rev != "" {
		rev += "+modified"
	}
	return &compareSide{kind: "run", version: man.Version,
		folder: results.ComparedFolder{Path: dir, Scenario: sum.Scenario, Hash: sum.Hash, Seed: sum.Seed, Revision: rev},
		units:  []compareUnit{{sum: &sum, steps: steps}}}, nil
}

// readCompareSweep reads a sweep (or sweep shard) folder: every point
// folder of points/ as loadPoint checks it, all of one sweep, no two with
// the same axes, each point's iterations.csv parsed against its summary.
func readCompareSweep(dir string) (*compareSide, error) {
	side := &compareSide{kind: "sweep"}
	seen := map[string]string{}
	err := eachPointDir(dir, func(pdir string) error {
		pf, err := loadPoint(pdir, true)
		if err != nil {
			return err
		}
		rec := pf.rec
		if len(side.units) == 0 {
			side.folder = results.ComparedFolder{Path: dir, Scenario: rec.Sweep, Hash: rec.SweepHash,
				Seed: rec.Point.Summary.Seed, Revision: rec.Revision}
		} else if rec.Sweep != side.folder.Scenario || rec.SweepHash != side.folder.Hash {
			return badInput("%s: from sweep %s (sha256 %.12s), not %s (%.12s) as the folder's other points",
				pdir, rec.Sweep, rec.SweepHash, side.folder.Scenario, side.folder.Hash)
		}
		axes := rec.Point.Axes.CSVText()
		if other, dup := seen[axes]; dup {
			return badInput("%s: point axes %q: the same as %s's", pdir, axes, other)
		}
		seen[axes] = pdir
		ib := pf.data[slices.Index(pf.names, "iterations.csv")] // loadPoint requires it
		steps, err := parseSteps(filepath.Join(pdir, "summary.json"), filepath.Join(pdir, "iterations.csv"), ib, &rec.Point.Summary)
		if err != nil {
			return err
		}
		side.units = append(side.units, compareUnit{point: rec.Point.Name, axes: axes, sum: &rec.Point.Summary, steps: steps})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(side.units) == 0 {
		return nil, badInput("%s: no point folders in %s", dir, filepath.Join(dir, "points"))
	}
	side.folder.Points = len(side.units)
	return side, nil
}

// parseSteps reads the measured step times of every policy of sum from
// iterations.csv (ipath, its bytes b; spath names summary.json) and checks
// them against sum: the header and field counts of iterations.csv, a final
// newline (a file cut short has none), every row of a policy of sum that did
// not fail, a warm-up flag that is true or false, a step time in
// [minCompareStepSeconds, maxCompareStepSeconds], and per policy as many
// measured rows as sum's iterations with the mean sum records. Policy names
// must be non-empty and distinct.
func parseSteps(spath, ipath string, b []byte, sum *results.Summary) (map[string][]float64, error) {
	ok := map[string]*results.PolicySummary{}
	seen := map[string]bool{}
	for i := range sum.Policies {
		ps := &sum.Policies[i]
		if ps.Policy == "" || seen[ps.Policy] {
			return nil, badInput("%s: policies[%d].policy = %q: must be a name no other policy has", spath, i, ps.Policy)
		}
		seen[ps.Policy] = true
		if ps.Error == "" {
			ok[ps.Policy] = ps
		}
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, badInput("%s: truncated: does not end with a newline (rerun the scenario)", ipath)
	}
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = len(iterationsHeader)
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return nil, badInput("%s: invalid: %v", ipath, err)
	}
	if !slices.Equal(head, iterationsHeader) {
		return nil, badInput("%s: invalid: header %q, want %q", ipath, head, iterationsHeader)
	}
	colPolicy := slices.Index(iterationsHeader, "policy")
	colWarmup := slices.Index(iterationsHeader, "warmup")
	colStep := slices.Index(iterationsHeader, "step_seconds")
	steps := map[string][]float64{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badInput("%s: invalid: %v", ipath, err)
		}
		line, _ := r.FieldPos(0)
		pol := rec[colPolicy]
		if ok[pol] == nil {
			return nil, badInput("%s:%d: policy %q: not a policy that ran in summary.json", ipath, line, pol)
		}
		warm, err := strconv.ParseBool(rec[colWarmup])
		if err != nil || (rec[colWarmup] != "true" && rec[colWarmup] != "false") {
			return nil, badInput("%s:%d: warmup = %q: must be true or false", ipath, line, rec[colWarmup])
		}
		if warm {
			continue
		}
		v, err := strconv.ParseFloat(rec[colStep], 64)
		if err != nil || !(v >= minCompareStepSeconds && v <= maxCompareStepSeconds) {
			return nil, badInput("%s:%d: step_seconds = %q: must be a number in [%g, %g]", ipath, line, rec[colStep],
				minCompareStepSeconds, maxCompareStepSeconds)
		}
		steps[pol] = append(steps[pol], v)
	}
	for _, ps := range sum.Policies {
		if ps.Error != "" {
			continue
		}
		got := steps[ps.Policy]
		if len(got) != ps.Iterations || len(got) == 0 {
			return nil, badInput("%s: %d measured iterations of %s, but %s says %d: truncated or not this run's (rerun the scenario)",
				ipath, len(got), ps.Policy, spath, ps.Iterations)
		}
		if m := stat.Mean(got, nil); math.Abs(m-ps.StepSecondsMean) > 1e-9*math.Abs(ps.StepSecondsMean) {
			return nil, badInput("%s: %s's measured step mean is %g s, but %s says %g s: not this run's iterations (rerun the scenario)",
				ipath, ps.Policy, m, spath, ps.StepSecondsMean)
		}
	}
	return steps, nil
}

// compareUnits compares one run (or sweep point) of A with B's (either may
// be nil: the point is in one folder only): one row per policy, A's in A's
// order, then B's others in B's.
func compareUnits(ua, ub *compareUnit) ([]results.ComparisonRow, error) {
	var rows []results.ComparisonRow
	head := func(u *compareUnit, policy string) results.ComparisonRow {
		return results.ComparisonRow{Point: u.point, Axes: u.axes, Policy: policy}
	}
	find := func(u *compareUnit, policy string) *results.PolicySummary {
		if u == nil {
			return nil
		}
		for i := range u.sum.Policies {
			if u.sum.Policies[i].Policy == policy {
				return &u.sum.Policies[i]
			}
		}
		return nil
	}
	missing := "not in B"
	if ub == nil && ua != nil && ua.point != "" {
		missing = "the point is not in B"
	}
	if ua != nil {
		for i := range ua.sum.Policies {
			pa := &ua.sum.Policies[i]
			pb := find(ub, pa.Policy)
			row := head(ua, pa.Policy)
			if pb == nil {
				row.Status, row.Note = results.CompareOnlyInA, missing
				sideA(&row, pa, ua.steps[pa.Policy])
				rows = append(rows, row)
				continue
			}
			paired := ua.sum.BatchesSHA256 != "" && ua.sum.BatchesSHA256 == ub.sum.BatchesSHA256 &&
				ua.sum.WarmupIterations == ub.sum.WarmupIterations
			if err := comparePolicies(&row, pa, pb, ua.steps[pa.Policy], ub.steps[pa.Policy], paired); err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	if ub == nil {
		return rows, nil
	}
	missing = "not in A"
	if ua == nil && ub.point != "" {
		missing = "the point is not in A"
	}
	for i := range ub.sum.Policies {
		pb := &ub.sum.Policies[i]
		if find(ua, pb.Policy) != nil {
			continue
		}
		row := head(ub, pb.Policy)
		row.Status, row.Note = results.CompareOnlyInB, missing
		sideB(&row, pb, ub.steps[pb.Policy])
		rows = append(rows, row)
	}
	return rows, nil
}

// sideA and sideB fill a row's figures of one side from its summary and
// step times (nothing for a policy that failed).
func sideA(row *results.ComparisonRow, p *results.PolicySummary, steps []float64) {
	if p.Error != "" {
		return
	}
	row.IterationsA, row.StepSecondsMeanA, row.StepSecondsSDA = len(steps), stat.Mean(steps, nil), sampleSD(steps)
	row.TokensPerDayA, row.PPBubbleShareA, row.DPBubbleShareA = p.TokensPerDay, p.PPBubbleShare, p.DPBubbleShare
	row.PeakMemoryMaxBytesA = p.PeakMemoryMaxBytes
}

func sideB(row *results.ComparisonRow, p *results.PolicySummary, steps []float64) {
	if p.Error != "" {
		return
	}
	row.IterationsB, row.StepSecondsMeanB, row.StepSecondsSDB = len(steps), stat.Mean(steps, nil), sampleSD(steps)
	row.TokensPerDayB, row.PPBubbleShareB, row.DPBubbleShareB = p.TokensPerDay, p.PPBubbleShare, p.DPBubbleShare
	row.PeakMemoryMaxBytesB = p.PeakMemoryMaxBytes
}

// sampleSD is the sample standard deviation (0 for fewer than two values).
func sampleSD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	return stat.StdDev(xs, nil)
}

// comparePolicies fills row for a policy present on both sides: a failure
// on either side is its status, else the comparison of the step times:
// paired (the same batches on both sides, as many measured iterations) or
// Welch's.
func comparePolicies(row *results.ComparisonRow, pa, pb *results.PolicySummary, a, b []float64, paired bool) error {
	sideA(row, pa, a)
	sideB(row, pb, b)
	switch {
	case pa.Error != "" && pb.Error != "":
		row.Status, row.Note = results.CompareFailedInBoth, "A: "+pa.Error+"; B: "+pb.Error
		return nil
	case pa.Error != "":
		row.Status, row.Note = results.CompareFailedInA, pa.Error
		return nil
	case pb.Error != "":
		row.Status, row.Note = results.CompareFailedInB, pb.Error
		return nil
	}
	row.Status, row.Test = results.CompareCompared, results.CompareTestWelch
	var w interval
	if paired && len(a) == len(b) {
		row.Test = results.CompareTestPaired
		w = pairedT(a, b, results.CompareConfidence)
	} else {
		w = welch(a, b, results.CompareConfidence)
	}
	row.DiffSeconds, row.DF, row.CIDefined, row.Significant = w.diff, w.df, w.defined, w.significant
	ref := row.StepSecondsMeanA
	row.ChangePct = 100 * w.diff / ref
	if w.defined {
		row.CILowPct, row.CIHighPct = 100*w.lo/ref, 100*w.hi/ref
	} else {
		row.Note = fmt.Sprintf("%d and %d measured iterations: an interval needs at least 2 on each side", len(a), len(b))
	}
	for _, v := range []float64{row.ChangePct, row.CILowPct, row.CIHighPct, row.DF, row.StepSecondsSDA, row.StepSecondsSDB} {
		if math.IsNaN(v) || math.IsInf(v, 0) { // unreachable within the bounds on step times; never write NaN
			return badInput("%s: the step times of A and B cannot be compared (a change of %g%%)", row.Label(), row.ChangePct)
		}
	}
	return nil
}

// interval is a t interval on mean(b) - mean(a): Welch's or paired.
type interval struct {
	// diff is mean(b) - mean(a); [lo, hi] the interval (defined: both
	// samples have at least 2 values); df its degrees of freedom (0 when
	// the variances are zero).
	diff, lo, hi, df float64
	defined          bool
	// significant says the interval excludes 0.
	significant bool
}

// pairedT is the level two-sided paired t interval on mean(b - a), a and b
// of equal length paired by index: mean(d) ± t·sd(d)/√n, t the (1+level)/2
// quantile of Student's t with n - 1 degrees of freedom. Differences all
// equal: the interval is [diff, diff]. Fewer than 2 pairs: no interval.
func pairedT(a, b []float64, level float64) interval {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = b[i] - a[i]
	}
	w := interval{diff: stat.Mean(b, nil) - stat.Mean(a, nil)}
	n := float64(len(d))
	if len(d) < 2 {
		return w
	}
	w.defined = true
	se := math.Sqrt(stat.Variance(d, nil) / n)
	if se == 0 {
		w.lo, w.hi = w.diff, w.diff
		w.significant = w.diff != 0
		return w
	}
	w.df = n - 1
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: w.df}.Quantile(1-(1-level)/2) * se
	w.lo, w.hi = w.diff-half, w.diff+half
	w.significant = w.lo > 0 || w.hi < 0
	return w
}

// welch is the level (e.g. 0.95) two-sided Welch's t interval on mean(b) -
// mean(a): diff ± t·se, se² = var(a)/na + var(b)/nb (sample variances),
// t the (1+level)/2 quantile of Student's t with the Welch-Satterthwaite
// degrees of freedom se⁴ / ((var(a)/na)²/(na-1) + (var(b)/nb)²/(nb-1)).
// Both variances zero: the interval is [diff, diff] (exactly [0, 0] for
// equal means). Fewer than 2 values on a side: no interval.
func welch(a, b []float64, level float64) interval {
	w := interval{diff: stat.Mean(b, nil) - stat.Mean(a, nil)}
	na, nb := float64(len(a)), float64(len(b))
	if len(a) < 2 || len(b) < 2 {
		return w
	}
	w.defined = true
	va, vb := stat.Variance(a, nil)/na, stat.Variance(b, nil)/nb
	se2 := va + vb
	if se2 == 0 {
		w.lo, w.hi = w.diff, w.diff
		w.significant = w.diff != 0
		return w
	}
	w.df = se2 * se2 / (va*va/(na-1) + vb*vb/(nb-1))
	p := 1 - (1-level)/2
	var t float64
	if w.df > 0 && !math.IsInf(w.df, 0) {
		t = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: w.df}.Quantile(p)
	} else { // the squares underflowed: the t distribution's limit
		w.df = 0
		t = distuv.UnitNormal.Quantile(p)
	}
	half := t * math.Sqrt(se2)
	w.lo, w.hi = w.diff-half, w.diff+half
	w.significant = w.lo > 0 || w.hi < 0
	return w
}

// differences collects what two folders record differently, each key, A
// and B value once, in the order found.
type differences struct {
	list []results.Difference
	seen map[results.Difference]bool
}

func (d *differences) add(key, a, b string) {
	if a == b {
		return
	}
	x := results.Difference{Key: key, A: a, B: b}
	if !d.seen[x] {
		d.seen[x] = true
		d.list = append(d.list, x)
	}
}

// summaryKeysSkipped are the summary.json keys differences leaves to others:
// the scenario and its hash (the folders'), the policies (below).
var summaryKeysSkipped = map[string]bool{"scenario": true, "scenario_sha256": true, "policies": true}

// policyKeysCompared are the keys of a policy's summary that say how it ran
// rather than what it measured.
var policyKeysCompared = []string{"cp_exec", "overlap_all_to_all", "chosen_options", "external"}

// summaries adds the differences between two summaries of paired runs: the
// scenario-level keys of summary.json (seed, iterations, layout, stall,
// profiles, ...), the policy list, and how each policy in both ran.
func (d *differences) summaries(a, b *results.Summary) {
	fa, fb := jsonFields(reflect.ValueOf(*a)), jsonFields(reflect.ValueOf(*b))
	for i := range fa { // the same type: the same keys in the same order
		if !summaryKeysSkipped[fa[i].key] {
			d.add(fa[i].key, fa[i].value, fb[i].value)
		}
	}
	names := func(s *results.Summary) string {
		n := make([]string, len(s.Policies))
		for i, p := range s.Policies {
			n[i] = p.Policy
		}
		return strings.Join(n, ",")
	}
	d.add("policies", names(a), names(b))
	for i := range a.Policies {
		pa := &a.Policies[i]
		j := slices.IndexFunc(b.Policies, func(p results.PolicySummary) bool { return p.Policy == pa.Policy })
		if j < 0 {
			continue
		}
		ga, gb := jsonFields(reflect.ValueOf(*pa)), jsonFields(reflect.ValueOf(b.Policies[j]))
		for k := range ga {
			if slices.Contains(policyKeysCompared, ga[k].key) {
				d.add(pa.Policy+"."+ga[k].key, ga[k].value, gb[k].value)
			}
		}
	}
}

// jsonField is one field of a struct by its json name, its value as JSON
// (a string unquoted).
type jsonField struct{ key, value string }

// jsonFields lists v's fields with json names in field order, embedded
// structs flattened as encoding/json flattens them.
func jsonFields(v reflect.Value) []jsonField {
	var out []jsonField
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(v.Field(i))...)
			continue
		}
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.String {
			out = append(out, jsonField{name, fv.String()})
			continue
		}
		b, err := json.Marshal(fv.Interface())
		if err != nil { // a value JSON cannot hold cannot come from a decoded summary
			b = []byte(fmt.Sprint(fv.Interface()))
		}
		out = append(out, jsonField{name, string(b)})
	}
	return out
}
