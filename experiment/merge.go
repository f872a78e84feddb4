package experiment

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/report"
)

// MergeResult says what Merge did.
type MergeResult struct {
	// Sweep is the merged sweep's name; Points its size.
	Sweep  string
	Points int
	// Files are the files written beside points/.
	Files []string
}

// Merge joins the folders of a sharded sweep into out: it checks that every
// point of the sweep is present once (from the same scenario text), copies the
// points into out/points/ and writes sweep.json, sweep.csv and (with figures)
// the sweep figures exactly as an unsharded sweep would. It checks ctx before
// writing sweep.json.
func Merge(ctx context.Context, out string, srcs []string, figures bool) (*MergeResult, error) {
	if out == "" || len(srcs) == 0 {
		return nil, badInput("merge needs an output folder and at least one shard folder")
	}
	var recs []*PointRecord
	var name, hash string
	total := -1
	dirs := map[int]string{}
	for _, src := range srcs {
		entries, err := os.ReadDir(filepath.Join(src, "points"))
		if err != nil {
			return nil, badInput("%s: not a sweep folder: %w", src, err)
		}
		for _, e := range entries {
			pdir := filepath.Join(src, "points", e.Name())
			rec, err := readPoint(pdir)
			if err != nil {
				return nil, badInput("%s: incomplete point (no manifest.json or point.json): rerun its shard", pdir)
			}
			switch {
			case total < 0:
				name, hash, total = rec.Sweep, rec.SweepHash, rec.TotalPoints
				recs = make([]*PointRecord, total)
			case rec.SweepHash != hash || rec.TotalPoints != total:
				return nil, badInput("%s: from sweep %s (sha256 %.12s, %d points), not %s (%.12s, %d points)",
					pdir, rec.Sweep, rec.SweepHash, rec.TotalPoints, name, hash, total)
			}
			i := rec.Point.Index
			if i < 0 || i >= total {
				return nil, badInput("%s: point index %d outside [0, %d)", pdir, i, total)
			}
			if recs[i] != nil && dirs[i] != pdir {
				if recs[i].Point.Summary.Hash != rec.Point.Summary.Hash {
					return nil, badInput("point %d appears in %s and %s with different scenarios", i, dirs[i], pdir)
				}
				continue
			}
			recs[i], dirs[i] = rec, pdir
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
	for i, r := range recs {
		dst := filepath.Join(out, "points", r.Point.Name)
		if filepath.Clean(dst) == filepath.Clean(dirs[i]) {
			continue
		}
		if err := copyDir(dirs[i], dst); err != nil {
			return nil, err
		}
	}
	files, err := writeSweep(ctx, out, name, hash, recs, figures)
	return &MergeResult{Sweep: name, Points: total, Files: files}, err
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
