package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/dcpsim/dcpsim/report"
	"github.com/dcpsim/dcpsim/scenarios"
)

// PointRecord is point.json: a sweep point's identity and result.
type PointRecord struct {
	// Sweep is the scenario's name and SweepHash the SHA-256 of its text.
	Sweep     string `json:"sweep"`
	SweepHash string `json:"sweep_sha256"`
	// TotalPoints is the number of points of the whole sweep.
	TotalPoints int `json:"total_points"`
	// Revision is the VCS revision of the dcpsim that simulated the point
	// (empty for builds without one): a resumed sweep reruns points of another.
	Revision string            `json:"vcs_revision,omitempty"`
	Point    report.SweepPoint `json:"point"`
	// Timings are the point's measured wall times, from its timings.json
	// (the one file of a point that differs from run to run); not in
	// point.json.
	Timings report.Timings `json:"-"`
}

// SweepFile is sweep.json: every point of a sweep, in order.
type SweepFile struct {
	Sweep     string              `json:"sweep"`
	SweepHash string              `json:"sweep_sha256"`
	Points    []report.SweepPoint `json:"points"`
}

// SweepOptions choose where and how much of a sweep runs.
type SweepOptions struct {
	// Dir is the results folder; points go to Dir/points/.
	Dir string
	// Shard and Shards select the points whose index mod Shards is Shard
	// (Shards 0 or 1: every point).
	Shard, Shards int
	// Jobs is how many points run at once (>= 1).
	Jobs int
	// Figures draws the sweep figures (unsharded sweeps only).
	Figures bool
	// Progress, when set, is called once before the first point (done 0)
	// and after every point of the shard (from the goroutine that ran it,
	// one call at a time) with the points done, how many of them were
	// already there, and the shard's points.
	Progress func(done, skipped, total int)
}

// SweepResult says what a Sweep did.
type SweepResult struct {
	// Points is the sweep's size, Mine the points of this shard.
	Points, Mine int
	// Skipped are the shard's points found complete from an earlier run.
	Skipped int
	// Files are the files written beside points/ (none for a shard).
	Files []string
}

// SweepHash is the SHA-256 of a scenario's text: a sweep's identity.
func SweepHash(sc *scenarios.Scenario) string {
	h := sha256.Sum256(sc.Source)
	return hex.EncodeToString(h[:])
}

// Sweep runs every point of sc's [sweep] in this shard, in parallel, as Run
// does (without figures or traces), writing Dir/points/<point>/ (summary.json,
// iterations.csv, point.json, then manifest.json), each point folder built
// aside and published whole as WriteRun does. A point whose folder holds a
// complete result of the same sweep text, point and build revision is
// skipped, so an interrupted sweep continues where it stopped. An unsharded
// sweep then writes sweep.json, sweep.csv and the sweep figures. Dir must be
// absent, empty or a sweep folder (holding points/ or sweep.json): else the
// error matches badinput.Err and nothing is written. Sweep checks ctx before every
// point and between files; once it is done no further point starts, and the
// points in flight leave no temporary file or folder.
func Sweep(ctx context.Context, sc *scenarios.Scenario, opts SweepOptions) (*SweepResult, error) {
	if sc.Sweep == nil {
		return nil, badInput("scenario %s has no [sweep]: run it with dcpsim run", sc.Name)
	}
	shards := max(opts.Shards, 1)
	if opts.Shard < 0 || opts.Shard >= shards || opts.Jobs < 1 {
		return nil, badInput("shard %d/%d with %d jobs: need 0 <= shard < shards and jobs >= 1", opts.Shard, shards, opts.Jobs)
	}
	points, err := sc.Points()
	if err != nil {
		return nil, err
	}
	if err := checkSweepDir(opts.Dir); err != nil {
		return nil, err
	}
	hash := SweepHash(sc)
	var mine []int
	for i := range points {
		if i%shards == opts.Shard {
			mine = append(mine, i)
		}
	}
	res := &SweepResult{Points: len(points), Mine: len(mine)}
	if opts.Progress != nil {
		opts.Progress(0, 0, len(mine))
	}
	recs := make([]*PointRecord, len(points))
	var mu sync.Mutex
	done := 0
	var g errgroup.Group
	g.SetLimit(opts.Jobs)
	for _, i := range mine {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			rec, skipped, err := runPoint(ctx, opts.Dir, sc, hash, points, i)
			if err != nil {
				return fmt.Errorf("point %d (%s): %w", i, points[i].Name, err)
			}
			recs[i] = rec
			mu.Lock()
			defer mu.Unlock()
			done++
			if skipped {
				res.Skipped++
			}
			if opts.Progress != nil {
				opts.Progress(done, res.Skipped, len(mine))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	if shards > 1 {
		return res, nil
	}
	res.Files, err = writeSweep(ctx, opts.Dir, sc.Name, hash, recs, opts.Figures)
	return res, err
}

// checkSweepDir refuses to write a sweep into a folder that is neither
// absent, empty, nor a sweep folder (holding points/ or sweep.json), such as
// `--out /` or `--out ~`.
func checkSweepDir(dir string) error {
	if dir == "" {
		return badInput("no results folder given")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return badInput("%s exists and is not a folder", dir)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "points")); err == nil && fi.IsDir() {
		return nil
	}
	if fi, err := os.Lstat(filepath.Join(dir, "sweep.json")); err == nil && fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	return badInput("%s is not empty and is not a sweep folder (no points/ or sweep.json; found %s): refusing to write into it; "+
		"name a new or empty folder, or an earlier sweep's", dir, names[0])
}

// pointFiles are the only files a sweep point folder holds.
var pointFiles = []string{"iterations.csv", "manifest.json", "point.json", "summary.json", "timings.json"}

// pointDir is the folder of point i: points/p<index>-<safe point name>.
func pointDir(dir string, i int, name string) string {
	_, suffix, _ := strings.Cut(name, "/")
	return filepath.Join(dir, "points", fmt.Sprintf("p%04d-%s", i, report.SafeName(suffix)))
}

// runPoint simulates point i unless its folder already holds a complete
// result of the same sweep and point.
func runPoint(ctx context.Context, dir string, sc *scenarios.Scenario, hash string, points []scenarios.Point, i int) (*PointRecord, bool, error) {
	pt := points[i].Scenario
	pdir := pointDir(dir, i, points[i].Name)
	rev := ReadBuild().RevisionTag()
	if pf, err := loadPoint(pdir, false); err == nil && pf.rec.SweepHash == hash && pf.rec.Point.Index == i &&
		pf.rec.Point.Summary.Hash == Hash(pt) && pf.rec.TotalPoints == len(points) && pf.rec.Revision == rev {
		return pf.rec, true, nil
	}
	out, err := RunContext(ctx, pt, Options{})
	if err != nil {
		return nil, false, err
	}
	rec := &PointRecord{Sweep: sc.Name, SweepHash: hash, TotalPoints: len(points), Revision: rev, Point: report.SweepPoint{
		Index: i, Name: filepath.Base(pdir), Axes: pointAxes(points[i]), GPUs: pt.Job.Cluster.GPUs, Model: pt.Job.Model.Name,
		ContextTokens: pt.Job.ContextTokens, Summary: out.Summary}, Timings: out.Timings}
	// point.json before the manifest, which lists it.
	if _, err := writeRun(ctx, pdir, pointFiles, pt, out, false, func(w *resultWriter) error { return w.json("point.json", rec) }); err != nil {
		return nil, false, err
	}
	return rec, false, nil
}

// pointAxes converts a point's axis values for the results.
func pointAxes(pt scenarios.Point) []report.Axis {
	axes := make([]report.Axis, len(pt.Axes))
	for i, a := range pt.Axes {
		axes[i] = report.Axis{Key: a.Key, Value: a.Value}
	}
	return axes
}

// writeSweep writes sweep.json, sweep.csv, timings.json (the points'
// measured wall times) and the sweep figures from complete point records, and
// returns the files' names.
func writeSweep(ctx context.Context, dir, name, hash string, recs []*PointRecord, figures bool) ([]string, error) {
	sf := SweepFile{Sweep: name, SweepHash: hash}
	timings := report.SweepTimings{Sweep: name}
	for i, r := range recs {
		if r == nil {
			return nil, fmt.Errorf("point %d missing", i)
		}
		sf.Points = append(sf.Points, r.Point)
		timings.Points = append(timings.Points, report.PointTiming{Index: r.Point.Index, Name: r.Point.Name, Timings: r.Timings})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, "sweep.json"), func(w io.Writer) error { return encodeJSON(w, sf) }); err != nil {
		return nil, err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, "sweep.csv"), func(w io.Writer) error {
		return report.WriteCSV(w, report.SweepRows(sf.Points))
	}); err != nil {
		return nil, err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, "timings.json"), func(w io.Writer) error { return encodeJSON(w, timings) }); err != nil {
		return nil, err
	}
	files := []string{"sweep.json", "sweep.csv", "timings.json"}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if figures {
		names, err := report.WriteSweepFigures(dir, sf.Points)
		if err != nil {
			return nil, err
		}
		files = append(files, names...)
		names, err = report.WriteSweepTimingFigures(dir, sf.Points, &timings)
		if err != nil {
			return nil, err
		}
		files = append(files, names...)
	}
	return files, nil
}
