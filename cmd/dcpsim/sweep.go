package main

import (
	"encoding/json"

	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/dcpsim/dcpsim/report"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched/policies"
)

const sweepUsage = `  dcpsim sweep S [--out DIR] [--shard I/N] [--jobs J] [--no-figures]

  Run every point of scenario S's [sweep] (an embedded name such as weak-scaling,
  or a .toml file): the cartesian product of its axes (variants, gpus,
  context_tokens, budget_tokens, hydra_cap, policies) in that fixed order. Each
  point runs the point's policies on identical batches as dcpsim run does (without
  figures or traces) and writes DIR/points/<point>/ (summary.json, iterations.csv,
  point.json, manifest.json last). Points run in parallel (--jobs, default the
  number of CPUs); the results do not depend on it.

  Resumable: a point whose folder holds a manifest for the same scenario text,
  point and dcpsim revision is skipped, so an interrupted sweep continues where it
  stopped.

  --shard I/N runs only the points whose index modulo N is I (0 <= I < N), e.g.
  one Slurm array task (I = $SLURM_ARRAY_TASK_ID) or one Kubernetes Indexed Job
  pod (I = $JOB_COMPLETION_INDEX) per shard; then dcpsim merge joins the shards'
  folders. An unsharded (or merged) sweep writes DIR/sweep.json (every point, in
  order), DIR/sweep.csv (one row per point and policy) and the figures
  sweep-throughput, sweep-planner and sweep-cap (PNG and SVG) where the swept axes
  allow them. A progress line goes to stderr on a terminal, nothing on a pipe.`

const mergeUsage = `  dcpsim merge --out DIR SHARD_DIR...

  Join the folders of a sharded dcpsim sweep: check that every point of the sweep
  is present once (from the same scenario text), copy the points into DIR/points/
  and write DIR/sweep.json, DIR/sweep.csv and the sweep figures exactly as an
  unsharded sweep would.`

func sweepCommand() command {
	return command{name: "sweep", summary: "run a scenario's [sweep] points in parallel (resumable, shardable)", usage: sweepUsage, run: runSweep}
}

func mergeCommand() command {
	return command{name: "merge", summary: "join the folders of a sharded sweep", usage: mergeUsage, run: runMerge}
}

// pointRecord is point.json: a sweep point's identity and result.
type pointRecord struct {
	// Sweep is the scenario's name and SweepHash the SHA-256 of its text.
	Sweep     string `json:"sweep"`
	SweepHash string `json:"sweep_sha256"`
	// TotalPoints is the number of points of the whole sweep.
	TotalPoints int `json:"total_points"`
	// Revision is the VCS revision of the dcpsim that simulated the point
	// (empty for builds without one): a resumed sweep reruns points of another.
	Revision string            `json:"vcs_revision,omitempty"`
	Point    report.SweepPoint `json:"point"`
}

// sweepFile is sweep.json.
type sweepFile struct {
	Sweep     string              `json:"sweep"`
	SweepHash string              `json:"sweep_sha256"`
	Points    []report.SweepPoint `json:"points"`
}

// parseShard parses "I/N".
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err1 := strconv.Atoi(a)
		n, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && n >= 1 && i >= 0 && i < n {
			return i, n, nil
		}
	}
	return 0, 0, badInput("--shard %q: want I/N with 0 <= I < N, e.g. 0/4", s)
}

func runSweep(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep", sweepUsage, stderr)
	out := fs.String("out", "", "results folder (default results/<scenario>)")
	shard := fs.String("shard", "0/1", "run the points with index mod N = I")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "points simulated at once")
	noFigures := fs.Bool("no-figures", false, "write no sweep figures")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return badInput("dcpsim sweep takes one scenario (name or .toml file), got %d arguments", len(rest))
	}
	if *jobs < 1 {
		return badInput("--jobs %d: must be >= 1", *jobs)
	}
	si, sn, err := parseShard(*shard)
	if err != nil {
		return err
	}
	sc, err := resolveScenario(rest[0])
	if err != nil {
		return err
	}
	if sc.Sweep == nil {
		return badInput("scenario %s has no [sweep]: run it with dcpsim run", sc.Name)
	}
	points, err := sc.Points()
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = defaultResultsDir(sc)
	}
	var unbuilt []string
	for _, pt := range points {
		for _, name := range pt.Scenario.Run.Policies {
			if !slices.Contains(policies.Registry().Names(), name) && !slices.Contains(unbuilt, name) {
				unbuilt = append(unbuilt, name)
			}
		}
	}
	if len(unbuilt) > 0 {
		fmt.Fprintf(stderr, "dcpsim sweep: skipping %s: not implemented yet\n", strings.Join(unbuilt, ", "))
	}
	hash := sourceHash(sc)
	var mine []int
	for i := range points {
		if i%sn == si {
			mine = append(mine, i)
		}
	}
	recs := make([]*pointRecord, len(points))
	prog := newProgress(stderr, len(mine))
	var g errgroup.Group
	g.SetLimit(*jobs)
	for _, i := range mine {
		g.Go(func() error {
			rec, skipped, err := runPoint(dir, sc, hash, points, i)
			if err != nil {
				return fmt.Errorf("point %d (%s): %w", i, points[i].Name, err)
			}
			recs[i] = rec
			prog.done(skipped)
			return nil
		})
	}
	err = g.Wait()
	prog.finish()
	if err != nil {
		return err
	}
	skipped := prog.skippedCount()
	fmt.Fprintf(stdout, "%s: %d of %d points in %s/points/ (%d simulated, %d already there)\n",
		sc.Name, len(mine), len(points), dir, len(mine)-skipped, skipped)
	if sn > 1 {
		fmt.Fprintf(stdout, "shard %d/%d done; join the shards' folders with dcpsim merge --out DIR FOLDER...\n", si, sn)
		return nil
	}
	return writeSweep(dir, sc.Name, hash, recs, !*noFigures, stdout)
}

// sourceHash is the SHA-256 of a scenario's text (the sweep's identity).
func sourceHash(sc *scenarios.Scenario) string {
	base := *sc
	base.Name, base.HydraCap, base.Run.Policies = "", 0, nil
	return scenarioHash(&base)
}

// pointDir is the folder of point i: points/p<index>-<safe point name>.
func pointDir(dir string, i int, name string) string {
	_, suffix, _ := strings.Cut(name, "/")
	return filepath.Join(dir, "points", fmt.Sprintf("p%04d-%s", i, safeName(suffix)))
}

// runPoint simulates point i unless its folder already holds a complete
// result of the same sweep and point.
func runPoint(dir string, sc *scenarios.Scenario, hash string, points []scenarios.Point, i int) (*pointRecord, bool, error) {
	pt := points[i].Scenario
	pdir := pointDir(dir, i, points[i].Name)
	rev := readBuild().revisionTag()
	if rec, err := readPoint(pdir); err == nil && rec.SweepHash == hash && rec.Point.Index == i &&
		rec.Point.Summary.Hash == scenarioHash(pt) && rec.TotalPoints == len(points) && rec.Revision == rev {
		return rec, true, nil
	}
	run, err := simulateScenario(pt, runOptions{})
	if err != nil {
		return nil, false, err
	}
	rec := &pointRecord{Sweep: sc.Name, SweepHash: hash, TotalPoints: len(points), Revision: rev, Point: report.SweepPoint{
		Index: i, Name: filepath.Base(pdir), Axes: pointAxes(sc, pt), GPUs: pt.Job.Cluster.GPUs, Model: pt.Job.Model.Name,
		ContextTokens: pt.Job.ContextTokens, HydraCap: pt.HydraCap, HydraClosedFormCap: run.closedFormCap, Summary: run.summary}}
	if _, err := writeRunResults(pdir, pt, run, false); err != nil {
		return nil, false, err
	}
	// point.json after the run's manifest: readPoint needs both.
	if err := report.WriteFileAtomic(filepath.Join(pdir, "point.json"), func(w io.Writer) error { return encodeJSON(w, rec) }); err != nil {
		return nil, false, err
	}
	return rec, false, nil
}

// readPoint loads a complete point folder (manifest.json and point.json).
func readPoint(pdir string) (*pointRecord, error) {
	if _, err := os.Stat(filepath.Join(pdir, "manifest.json")); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(pdir, "point.json"))
	if err != nil {
		return nil, err
	}
	var rec pointRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(pdir, "point.json"), err)
	}
	return &rec, nil
}

// pointAxes lists the swept axes' values of a point, in the sweep's order.
func pointAxes(sc *scenarios.Scenario, pt *scenarios.Scenario) []report.Axis {
	sw := sc.Sweep
	var axes []report.Axis
	if len(sw.Variants) > 0 {
		_, suffix, _ := strings.Cut(pt.Name, "/")
		v, _, _ := strings.Cut(suffix, "/")
		axes = append(axes, report.Axis{Key: "variant", Value: v})
	}
	add := func(swept bool, key string, v any) {
		if swept {
			axes = append(axes, report.Axis{Key: key, Value: fmt.Sprint(v)})
		}
	}
	add(len(sw.GPUs) > 0, "gpus", pt.Job.Cluster.GPUs)
	add(len(sw.ContextTokens) > 0, "context_tokens", pt.Job.ContextTokens)
	add(len(sw.BudgetTokens) > 0, "budget_tokens", pt.Job.Parallel.BudgetTokens)
	add(len(sw.HydraCaps) > 0, "hydra_cap", pt.HydraCap)
	if len(sw.Policies) > 0 {
		add(true, "policy", pt.Run.Policies[0])
	}
	return axes
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeSweep writes sweep.json, sweep.csv and the sweep figures from complete
// point records.
func writeSweep(dir, name, hash string, recs []*pointRecord, figures bool, stdout io.Writer) error {
	sf := sweepFile{Sweep: name, SweepHash: hash}
	for i, r := range recs {
		if r == nil {
			return fmt.Errorf("point %d missing", i)
		}
		sf.Points = append(sf.Points, r.Point)
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, "sweep.json"), func(w io.Writer) error { return encodeJSON(w, sf) }); err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, "sweep.csv"), func(w io.Writer) error { return writeSweepCSV(w, sf.Points) }); err != nil {
		return err
	}
	files := []string{"sweep.json", "sweep.csv"}
	if figures {
		names, err := report.WriteSweepFigures(dir, sf.Points)
		if err != nil {
			return err
		}
		files = append(files, names...)
	}
	fmt.Fprintf(stdout, "wrote %s/: %s\n", dir, strings.Join(files, ", "))
	return nil
}

// writeSweepCSV writes one row per (point, policy).
func writeSweepCSV(w io.Writer, pts []report.SweepPoint) error {
	fmt.Fprintln(w, "point,name,axes,gpus,model,context_tokens,hydra_cap,hydra_closed_form_cap,policy,error,step_seconds_mean,step_seconds_p95,"+
		"tokens_per_day,step_over_first,pp_bubble_share,dp_bubble_share,compute_share,exposed_comm_share,planner_stall_share,"+
		"mb_time_cv,planner_modeled_seconds,planner_go_seconds,dollars_per_1t_tokens")
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, p := range pts {
		var axes []string
		for _, a := range p.Axes {
			axes = append(axes, a.Key+"="+a.Value)
		}
		for _, s := range p.Summary.Policies {
			fields := []string{strconv.Itoa(p.Index), p.Name, strings.Join(axes, " "), strconv.Itoa(p.GPUs), p.Model,
				strconv.Itoa(p.ContextTokens), strconv.Itoa(p.HydraCap), strconv.Itoa(p.HydraClosedFormCap), s.Policy,
				strconv.Quote(s.Error), g(s.StepSecondsMean), g(s.StepSecondsP95), g(s.TokensPerDay), g(s.SpeedupOfFirst),
				g(s.PPBubbleShare), g(s.DPBubbleShare), g(s.ComputeShare), g(s.ExposedCommShare), g(s.PlannerStallShare),
				g(s.MBTimeCV), g(s.PlannerModeledSeconds), g(s.PlannerGoSeconds), g(s.DollarsPer1TTokens)}
			if _, err := fmt.Fprintln(w, strings.Join(fields, ",")); err != nil {
				return err
			}
		}
	}
	return nil
}

func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", mergeUsage, stderr)
	out := fs.String("out", "", "merged results folder (required)")
	noFigures := fs.Bool("no-figures", false, "write no sweep figures")
	srcs, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *out == "" || len(srcs) == 0 {
		return badInput("dcpsim merge needs --out DIR and at least one shard folder")
	}
	var recs []*pointRecord
	var name, hash string
	total := -1
	dirs := map[int]string{}
	for _, src := range srcs {
		entries, err := os.ReadDir(filepath.Join(src, "points"))
		if err != nil {
			return badInput("%s: not a sweep folder: %v", src, err)
		}
		for _, e := range entries {
			pdir := filepath.Join(src, "points", e.Name())
			rec, err := readPoint(pdir)
			if err != nil {
				return badInput("%s: incomplete point (no manifest.json or point.json): rerun its shard", pdir)
			}
			switch {
			case total < 0:
				name, hash, total = rec.Sweep, rec.SweepHash, rec.TotalPoints
				recs = make([]*pointRecord, total)
			case rec.SweepHash != hash || rec.TotalPoints != total:
				return badInput("%s: from sweep %s (sha256 %.12s, %d points), not %s (%.12s, %d points)",
					pdir, rec.Sweep, rec.SweepHash, rec.TotalPoints, name, hash, total)
			}
			i := rec.Point.Index
			if i < 0 || i >= total {
				return badInput("%s: point index %d outside [0, %d)", pdir, i, total)
			}
			if recs[i] != nil && dirs[i] != pdir {
				if recs[i].Point.Summary.Hash != rec.Point.Summary.Hash {
					return badInput("point %d appears in %s and %s with different scenarios", i, dirs[i], pdir)
				}
				continue
			}
			recs[i], dirs[i] = rec, pdir
		}
	}
	var missing []string
	for i, r := range recs {
		if r == nil {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	if total < 0 {
		return badInput("no sweep points found in %v", srcs)
	}
	if len(missing) > 0 {
		return badInput("sweep %s: %d of %d points missing (indices %s): run their shards", name, len(missing), total, strings.Join(missing, ", "))
	}
	for i, r := range recs {
		dst := filepath.Join(*out, "points", r.Point.Name)
		if filepath.Clean(dst) == filepath.Clean(dirs[i]) {
			continue
		}
		if err := copyDir(dirs[i], dst); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s: merged %d points from %d folders\n", name, total, len(srcs))
	return writeSweep(*out, name, hash, recs, !*noFigures, stdout)
}

// copyDir copies the regular files of src into dst (created), manifest.json
// and point.json last so an interrupted copy is not taken as complete.
func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	last := map[string]int{"manifest.json": 1, "point.json": 2}
	slices.SortFunc(entries, func(a, b os.DirEntry) int {
		if d := last[a.Name()] - last[b.Name()]; d != 0 {
			return d
		}
		return strings.Compare(a.Name(), b.Name())
	})
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := report.WriteFileAtomic(filepath.Join(dst, e.Name()), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			return err
		}
	}
	return nil
}

// progress prints "points done" on a terminal (nothing on a pipe or file).
type progress struct {
	mu             sync.Mutex
	w              io.Writer
	tty            bool
	total, n, skip int
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) done(skipped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if skipped {
		p.skip++
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r%d/%d points (%d already done)", p.n, p.total, p.skip)
	}
}

func (p *progress) finish() {
	if p.tty && p.n > 0 {
		fmt.Fprintln(p.w)
	}
}

func (p *progress) skippedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.skip
}
