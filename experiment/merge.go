package experiment

import (
	"context"
	"errors"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/scenarios"
)

// MergeResult says what Merge did.
type MergeResult struct {
	// Sweep is the merged sweep's name; Points its size.
	Sweep  string
	Points int
	// Files are the files written beside points/.
	Files []string
	// Removed are the point folders of an earlier version of the sweep in
	// out that the merged sweep does not have, removed from out/points/.
	Removed []string
}

// Merge joins the folders of a sharded sweep into out: it checks that every
// point of the sweep is present once (from the same scenario text), copies the
// points into out/points/ and writes sweep.json, sweep.csv and (with figures)
// the sweep figures exactly as an unsharded sweep would.
//
// Shard folders are untrusted input: every point folder is checked as
// loadPoint does (bounded reads, strict schemas, the files its manifest
// lists and no others, bounded counts, file-safe names) before anything is
// written, and each point is copied from the bytes it checked, built aside
// and published whole, so nothing is ever written outside out. A bad shard
// is an error matching badinput.Err naming the file and the key. out must be
// absent, empty or a dcpsim sweep folder (checkSweepDir; one of the shards
// may be out) of the same sweep; point folders of an earlier version of the
// sweep that the merged sweep does not have are removed from it (Removed).
// Merge checks ctx between points.
func Merge(ctx context.Context, out string, srcs []string, figures Drawer) (*MergeResult, error) {
	if out == "" || len(srcs) == 0 {
		return nil, badInput("merge needs an output folder and at least one shard folder")
	}
	folder, err := checkSweepDir(out)
	if err != nil {
		return nil, err
	}
	if err := checkCreatable(out, out); err != nil {
		return nil, err
	}
	var recs []*PointRecord
	var name, hash string
	total := -1
	dirs := map[int]string{}
	for _, src := range srcs {
		err := eachPointDir(src, func(pdir string) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			pf, err := loadPoint(pdir, false)
			if err != nil {
				return err
			}
			rec := pf.rec
			switch {
			case total < 0:
				// checkPointRecord bounded TotalPoints by MaxSweepPoints.
				name, hash, total = rec.Sweep, rec.SweepHash, rec.TotalPoints
				recs = make([]*PointRecord, total)
			case rec.Sweep != name || rec.SweepHash != hash || rec.TotalPoints != total:
				return badInput("%s: from sweep %s (sha256 %.12s, %d points), not %s (%.12s, %d points)",
					pdir, rec.Sweep, rec.SweepHash, rec.TotalPoints, name, hash, total)
			}
			i := rec.Point.Index
			if recs[i] != nil && dirs[i] != pdir {
				if recs[i].Point.Summary.Hash != rec.Point.Summary.Hash {
					return badInput("point %d appears in %s and %s with different scenarios", i, dirs[i], pdir)
				}
				return nil
			}
			recs[i], dirs[i] = rec, pdir
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if total < 0 {
		return nil, badInput("no sweep points found in %v", srcs)
	}
	var missing []string
	for i, r := range recs {
		if r == nil {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		return nil, badInput("sweep %s: %d of %d points missing (indices %s): run their shards",
			name, len(missing), total, strings.Join(missing, ", "))
	}
	want := make([]string, len(recs))
	for i, r := range recs {
		want[i] = r.Point.Name
	}
	removed, err := folder.claim(out, name, want)
	if err != nil {
		return nil, err
	}
	for i, r := range recs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := copyPoint(dirs[i], filepath.Join(out, "points", r.Point.Name), r); err != nil {
			return nil, err
		}
	}
	files, err := writeSweep(ctx, out, name, hash, recs, figures)
	return &MergeResult{Sweep: name, Points: total, Files: files, Removed: removed}, err
}

// eachPointDir calls f with every point folder of the shard folder src (the
// folders of src/points/ not named with a leading dot, which are temporary),
// in name order: an entry that is not a folder, or more than
// scenarios.MaxSweepPoints of them, is bad input.
func eachPointDir(src string, f func(pdir string) error) error {
	points := filepath.Join(src, "points")
	d, err := os.Open(points)
	if err != nil {
		return badInput("%s: not a sweep folder: %w", src, err)
	}
	defer d.Close()
	var names []string
	for {
		entries, err := d.ReadDir(256)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if !e.IsDir() {
				return badInput("%s: not a point folder (%v)", filepath.Join(points, e.Name()), e.Type())
			}
			if len(names) == scenarios.MaxSweepPoints {
				return badInput("%s: more than %d point folders", points, scenarios.MaxSweepPoints)
			}
			names = append(names, e.Name())
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return badInput("%s: %v", points, err)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if err := f(filepath.Join(points, n)); err != nil {
			return err
		}
	}
	return nil
}

// copyPoint copies the point folder src to dst (unless they are one), from
// the bytes loadPoint checks again (so a folder changed since the scan is
// caught), built aside and published whole.
func copyPoint(src, dst string, want *PointRecord) (err error) {
	as, err1 := filepath.Abs(src)
	ad, err2 := filepath.Abs(dst)
	if err1 == nil && err2 == nil && as == ad {
		return nil
	}
	pf, err := loadPoint(src, true)
	if err != nil {
		return err
	}
	if pf.rec.Point.Index != want.Point.Index || pf.rec.Point.Name != want.Point.Name || pf.rec.SweepHash != want.SweepHash ||
		pf.rec.Point.Summary.Hash != want.Point.Summary.Hash {
		return badInput("%s: changed while merging", src)
	}
	st, err := newStagedDir(dst, pointFiles)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			st.discard()
		}
	}()
	for k, n := range pf.names {
		b := pf.data[k]
		if err := safeio.WriteFileAtomic(filepath.Join(st.tmp, n), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			return err
		}
	}
	return st.publish()
}
