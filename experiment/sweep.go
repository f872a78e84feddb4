package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/dcpsim/dcpsim/internal/safeio"
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
	Revision string             `json:"vcs_revision,omitempty"`
	Point    results.SweepPoint `json:"point"`
	// Timings are the point's measured wall times, from its timings.json
	// (the one file of a point that differs from run to run); not in
	// point.json.
	Timings results.Timings `json:"-"`
}

// SweepFile is sweep.json: every point of a sweep, in order.
type SweepFile struct {
	Sweep     string               `json:"sweep"`
	SweepHash string               `json:"sweep_sha256"`
	Points    []results.SweepPoint `json:"points"`
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
	// Figures draws the sweep figures (unsharded sweeps only; nil: none).
	Figures Drawer
	// Progress, when set, is called once before the first point (done 0)
	// and after every point of the shard (from the goroutine that ran it,
	// one call at a time) with the points done, how many of them were
	// already there, and the shard's points.
	Progress func(done, skipped, total int)
	// AllowExec allows starting the programs the scenario names
	// (Options.AllowExec).
	AllowExec bool
}

// SweepResult says what a Sweep did.
type SweepResult struct {
	// Points is the sweep's size, Mine the points of this shard.
	Points, Mine int
	// Skipped are the shard's points found complete from an earlier run.
	Skipped int
	// Files are the files written beside points/ (none for a shard).
	Files []string
	// Removed are the point folders of an earlier version of the sweep,
	// which the sweep no longer has, removed from points/.
	Removed []string
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
// skipped, so an interrupted sweep continues where it stopped (temporary
// folders a killed sweep left are removed). An unsharded sweep then writes
// sweep.json, sweep.csv and the sweep figures. Dir must be absent, empty or
// a dcpsim sweep folder (checkSweepDir) of the same scenario: else the error
// matches badinput.Err and nothing is written. Point folders of an earlier
// version of the sweep that the sweep no longer has are removed (Removed). Sweep checks ctx before every
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
	if err := CheckExec(sc, opts.AllowExec); err != nil {
		return nil, err
	}
	points, err := sc.Points()
	if err != nil {
		return nil, err
	}
	folder, err := checkSweepDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := checkCreatable(opts.Dir, opts.Dir); err != nil {
		return nil, err
	}
	want := make([]string, len(points))
	for i, pt := range points {
		want[i] = filepath.Base(pointDir(opts.Dir, i, pt.Name))
	}
	removed, err := folder.claim(opts.Dir, sc.Name, want)
	if err != nil {
		return nil, err
	}
	hash := SweepHash(sc)
	var mine []int
	for i := range points {
		if i%shards == opts.Shard {
			mine = append(mine, i)
		}
	}
	res := &SweepResult{Points: len(points), Mine: len(mine), Removed: removed}
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
			rec, skipped, err := runPoint(ctx, opts.Dir, sc, hash, points, i, opts.AllowExec)
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

// sweepFolder is what checkSweepDir found in a sweep folder.
type sweepFolder struct {
	// sweeps are the names of the sweeps whose files it holds, each with
	// the file that says so (its sweep.json, a point's point.json).
	sweeps map[string]string
	// points are the names of the point folders in points/ (dot-names,
	// temporary, aside).
	points []string
}

// checkSweepDir refuses to write a sweep into a folder that is neither
// absent, empty, nor a dcpsim sweep folder (such as `--out /` or `--out ~`),
// and returns what the folder holds. A sweep folder is recognised by dcpsim's
// own files only: a sweep.json with the keys dcpsim writes, or a points/
// folder of dcpsim point folders (each with a dcpsim manifest.json and
// nothing it does not list, or only the files of an interrupted point). A
// link is never followed out of it: points/ or a point folder that is a
// link is refused, as is a point folder holding a file of the user's
// (replacing the point would delete it).
func checkSweepDir(dir string) (*sweepFolder, error) {
	sf := &sweepFolder{sweeps: map[string]string{}}
	if dir == "" {
		return nil, badInput("no results folder given")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sf, nil
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, badInput("%s exists and is not a folder", dir)
	}
	names, err := readNames(dir)
	if err != nil {
		return nil, err
	}
	if slices.Contains(names, "points") {
		if err := sf.checkPoints(filepath.Join(dir, "points")); err != nil {
			return nil, err
		}
	}
	if slices.Contains(names, "sweep.json") {
		name, err := sweepJSONName(filepath.Join(dir, "sweep.json"))
		if err != nil {
			return nil, badInput("%s: not a dcpsim sweep.json (%v): refusing to write into %s; name a new or empty folder, or an earlier sweep's",
				filepath.Join(dir, "sweep.json"), err, dir)
		}
		sf.sweeps[name] = filepath.Join(dir, "sweep.json")
	}
	if len(sf.sweeps) > 0 || len(sf.points) > 0 {
		return sf, nil
	}
	for _, n := range names {
		if n != "points" && !strings.HasPrefix(n, ".") {
			return nil, badInput("%s is not empty and is not a sweep folder (no dcpsim sweep.json or points/; found %s): refusing to write into it; "+
				"name a new or empty folder, or an earlier sweep's", dir, n)
		}
	}
	return sf, nil
}

// readNames lists the names in dir, sorted.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// sweepJSONName returns the sweep a dcpsim sweep.json names: a regular
// file (not a link), bounded, a JSON object with the keys sweep.json has.
func sweepJSONName(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
	}
	b, err := safeio.ReadFile(path, safeio.MaxResultBytes)
	if err != nil {
		return "", err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	var name string
	for _, k := range []string{"sweep", "sweep_sha256", "points"} {
		if _, ok := m[k]; !ok {
			return "", fmt.Errorf("no %q", k)
		}
	}
	if json.Unmarshal(m["sweep"], &name) != nil || name == "" {
		return "", errors.New(`"sweep" is not a sweep's name`)
	}
	return name, nil
}

// checkPoints checks a sweep folder's points/ (see checkSweepDir) and
// records its point folders and the sweeps their point.json name.
func (sf *sweepFolder) checkPoints(points string) error {
	fi, err := os.Lstat(points)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return badInput("%s is a symbolic link: a sweep folder's points/ must be a folder of its own; refusing to write through it", points)
	}
	if !fi.IsDir() {
		return badInput("%s is not a folder: refusing to write a sweep beside it", points)
	}
	names, err := readNames(points)
	if err != nil {
		return badInput("%s: %v", points, err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue // temporary
		}
		p := filepath.Join(points, n)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return badInput("%s is a symbolic link, not a sweep point folder: refusing to write through it", p)
		}
		if !fi.IsDir() {
			return badInput("%s: not a sweep point folder (%v): refusing to write beside it", p, fi.Mode().Type())
		}
		if len(sf.points) == scenarios.MaxSweepPoints {
			return badInput("%s: more than %d point folders", points, scenarios.MaxSweepPoints)
		}
		// The rules of replacing a point folder (a dcpsim manifest and only
		// what it lists, or only the files of an interrupted point).
		st := &stagedDir{target: p, abs: p, legacy: pointFiles}
		if err := st.replaceable(); err != nil {
			return err
		}
		sf.points = append(sf.points, n)
		if b, err := readResultFile(filepath.Join(p, "point.json")); err == nil {
			var rec struct {
				Sweep string `json:"sweep"`
			}
			if json.Unmarshal(b, &rec) == nil && rec.Sweep != "" {
				if _, ok := sf.sweeps[rec.Sweep]; !ok {
					sf.sweeps[rec.Sweep] = filepath.Join(p, "point.json")
				}
			}
		}
	}
	return nil
}

// claim refuses a sweep folder holding another scenario's sweep (a sweep
// never silently replaces another's points), and removes, from a folder of
// an earlier version of this sweep, the point folders the sweep no longer
// has (want: its point folders' names) and the temporary folders a killed
// dcpsim left. It returns the point folders removed.
func (sf *sweepFolder) claim(dir, name string, want []string) ([]string, error) {
	for _, other := range slices.Sorted(maps.Keys(sf.sweeps)) {
		if other != name {
			return nil, badInput("%s holds sweep %s (%s), not %s: refusing to replace another scenario's sweep; "+
				"name a new folder for %s, or remove %s", dir, other, sf.sweeps[other], name, name, dir)
		}
	}
	points := filepath.Join(dir, "points")
	removeStaleTemporaries(points)
	var removed []string
	for _, n := range sf.points {
		if slices.Contains(want, n) {
			continue
		}
		p := filepath.Join(points, n)
		st := &stagedDir{target: p, abs: p, legacy: pointFiles}
		if err := st.replaceable(); err != nil { // again, just before
			return removed, err
		}
		// Renamed to a temporary name first, so a kill midway leaves only a
		// temporary folder (removed by the next sweep).
		gone := filepath.Join(points, fmt.Sprintf(".%s.tmp-stale", n))
		if err := os.Rename(p, gone); err != nil {
			return removed, err
		}
		if err := os.RemoveAll(gone); err != nil {
			return removed, err
		}
		removed = append(removed, n)
	}
	return removed, nil
}

// pointFiles are the only files a sweep point folder holds.
var pointFiles = []string{"iterations.csv", "manifest.json", "point.json", "summary.json", "timings.json"}

// pointDir is the folder of point i: points/p<index>-<safe point name>.
func pointDir(dir string, i int, name string) string {
	_, suffix, _ := strings.Cut(name, "/")
	return filepath.Join(dir, "points", fmt.Sprintf("p%04d-%s", i, safeio.SafeName(suffix)))
}

// runPoint simulates point i unless its folder already holds a complete
// result of the same sweep and point.
func runPoint(ctx context.Context, dir string, sc *scenarios.Scenario, hash string, points []scenarios.Point, i int, allowExec bool) (*PointRecord, bool, error) {
	pt := points[i].Scenario
	pdir := pointDir(dir, i, points[i].Name)
	rev := ReadBuild().RevisionTag()
	if pf, err := loadPoint(pdir, false); err == nil && pf.rec.SweepHash == hash && pf.rec.Point.Index == i &&
		pf.rec.Point.Summary.Hash == Hash(pt) && pf.rec.TotalPoints == len(points) && pf.rec.Revision == rev {
		return pf.rec, true, nil
	}
	out, err := RunContext(ctx, pt, Options{AllowExec: allowExec})
	if err != nil {
		return nil, false, err
	}
	rec := &PointRecord{Sweep: sc.Name, SweepHash: hash, TotalPoints: len(points), Revision: rev, Point: results.SweepPoint{
		Index: i, Name: filepath.Base(pdir), Axes: pointAxes(points[i]), GPUs: pt.Job.Cluster.GPUs, Model: pt.Job.Model.Name,
		ContextTokens: pt.Job.ContextTokens, Summary: out.Summary}, Timings: out.Timings}
	// point.json before the manifest, which lists it.
	if _, err := writeRun(ctx, pdir, pointFiles, pt, out, nil, func(w *resultWriter) error { return w.json("point.json", rec) }); err != nil {
		return nil, false, err
	}
	return rec, false, nil
}

// pointAxes converts a point's axis values for the results.
func pointAxes(pt scenarios.Point) []results.Axis {
	axes := make([]results.Axis, len(pt.Axes))
	for i, a := range pt.Axes {
		axes[i] = results.Axis{Key: a.Key, Value: a.Value}
	}
	return axes
}

// writeSweep writes sweep.json, sweep.csv, timings.json (the points'
// measured wall times) and the sweep figures from complete point records, and
// returns the files' names.
func writeSweep(ctx context.Context, dir, name, hash string, recs []*PointRecord, figures Drawer) ([]string, error) {
	sf := SweepFile{Sweep: name, SweepHash: hash}
	timings := results.SweepTimings{Sweep: name}
	for i, r := range recs {
		if r == nil {
			return nil, fmt.Errorf("point %d missing", i)
		}
		sf.Points = append(sf.Points, r.Point)
		timings.Points = append(timings.Points, results.PointTiming{Index: r.Point.Index, Name: r.Point.Name, Timings: r.Timings})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := safeio.WriteFileAtomic(filepath.Join(dir, "sweep.json"), func(w io.Writer) error { return encodeJSON(w, sf) }); err != nil {
		return nil, err
	}
	if err := safeio.WriteFileAtomic(filepath.Join(dir, "sweep.csv"), func(w io.Writer) error {
		return results.WriteCSV(w, results.SweepRows(sf.Points))
	}); err != nil {
		return nil, err
	}
	if err := safeio.WriteFileAtomic(filepath.Join(dir, "timings.json"), func(w io.Writer) error { return encodeJSON(w, timings) }); err != nil {
		return nil, err
	}
	files := []string{"sweep.json", "sweep.csv", "timings.json"}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if figures != nil {
		names, err := figures.SweepFigures(dir, sf.Points, &timings)
		if err != nil {
			return nil, err
		}
		files = append(files, names...)
	}
	names, err := writePage(figures, dir, results.Page{Title: name, Sweep: &results.SweepPage{Points: sf.Points}}, files)
	return append(files, names...), err
}
