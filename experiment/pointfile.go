package experiment

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/scenarios"
)

// A sweep point folder read back (to resume a sweep, or from a shard to
// merge) is untrusted input: every file is read with a size bound, decoded
// strictly against its schema, and cross-checked, and every name in it
// obeys checkName before it becomes part of a path.

// pointFolder is a sweep point folder that passed loadPoint's checks.
type pointFolder struct {
	rec *PointRecord
	// names are its files in copy order, manifest.json last; data their
	// bytes, when loadPoint kept them.
	names []string
	data  [][]byte
}

// checkName applies the rule for every name read back from a results
// folder that becomes part of a path: it must equal safeio.SafeName(name)
// (so it is not empty, ".", ".." or a dot-name, and holds no separator).
// file and key name where the name came from.
func checkName(file, key, name string) error {
	if name != safeio.SafeName(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return badInput("%s: %s = %q: must be a file-safe name of [a-z0-9._-] (as safeio.SafeName makes), not starting with a dot",
			file, key, name)
	}
	return nil
}

// readResultFile reads one file of a results folder: a regular file (not a
// link), at most safeio.MaxResultBytes long. The error names the file and
// says whether it is missing or invalid.
// readDecoded reads path with read (readResultFile, or a caller's variant
// of it) and decodes it strictly into v (decodeResultJSON), returning the
// bytes read.
func readDecoded(read func(string) ([]byte, error), path string, v any) ([]byte, error) {
	b, err := read(path)
	if err != nil {
		return nil, err
	}
	if err := decodeResultJSON(path, b, v); err != nil {
		return nil, err
	}
	return b, nil
}

func readResultFile(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, badInput("%s: missing: the point is incomplete; rerun its shard", path)
	}
	if err != nil {
		return nil, badInput("%s: invalid: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, badInput("%s: invalid: not a regular file (%v)", path, fi.Mode().Type())
	}
	b, err := safeio.ReadFile(path, safeio.MaxResultBytes)
	if err != nil {
		return nil, badInput("%s: invalid: %v", path, err)
	}
	return b, nil
}

// decodeResultJSON decodes one JSON object into v: unknown fields and anything
// after the object are errors naming path.
func decodeResultJSON(path string, b []byte, v any) error {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return badInput("%s: invalid: not a JSON object", path)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badInput("%s: invalid: %v", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badInput("%s: invalid: data after the JSON object", path)
	}
	return nil
}

// checkPointRecord checks point.json's counts and name against the bounds
// and the folder it was read from (base: the folder's name).
func checkPointRecord(path, base string, rec *PointRecord) error {
	if rec.TotalPoints < 1 || rec.TotalPoints > scenarios.MaxSweepPoints {
		return badInput("%s: total_points = %d: must be in [1, %d]", path, rec.TotalPoints, scenarios.MaxSweepPoints)
	}
	if i := rec.Point.Index; i < 0 || i >= rec.TotalPoints {
		return badInput("%s: point.index = %d: must be in [0, total_points = %d)", path, i, rec.TotalPoints)
	}
	if err := checkName(path, "point.name", rec.Point.Name); err != nil {
		return err
	}
	if prefix := fmt.Sprintf("p%04d-", rec.Point.Index); !strings.HasPrefix(rec.Point.Name, prefix) {
		return badInput("%s: point.name = %q: must start with %q for point.index = %d", path, rec.Point.Name, prefix, rec.Point.Index)
	}
	if rec.Point.Name != base {
		return badInput("%s: point.name = %q: not the name of its folder %q", path, rec.Point.Name, base)
	}
	return nil
}

// loadPoint reads and checks a complete sweep point folder: manifest.json,
// point.json and summary.json decode strictly into Manifest, PointRecord and
// results.Summary; iterations.csv has the iterations header; the folder holds
// exactly the files the manifest lists (dot-names aside) plus manifest.json
// and point.json, each a regular file; the counts and the point's name are
// bounded (checkPointRecord); summary.json is the summary in point.json and
// its hash the manifest's. Every error matches badinput.Err and names the file and
// the key. With keep, the files' bytes (those checked) are kept for copying.
func loadPoint(pdir string, keep bool) (*pointFolder, error) {
	mpath := filepath.Join(pdir, "manifest.json")
	var man Manifest
	mb, err := readDecoded(readResultFile, mpath, &man)
	if err != nil {
		return nil, err
	}
	ppath := filepath.Join(pdir, "point.json")
	var rec PointRecord
	pb, err := readDecoded(readResultFile, ppath, &rec)
	if err != nil {
		return nil, err
	}
	if err := checkPointRecord(ppath, filepath.Base(pdir), &rec); err != nil {
		return nil, err
	}

	// The manifest's list: summary.json and iterations.csv, and point.json
	// (absent from the manifests of dcpsim before folders were published
	// whole).
	for _, n := range man.Files {
		if err := checkName(mpath, "files", n); err != nil {
			return nil, err
		}
		if n == "manifest.json" || !slices.Contains(pointFiles, n) {
			return nil, badInput("%s: files lists %q: a sweep point holds only summary.json, iterations.csv, timings.json and point.json", mpath, n)
		}
	}
	listed := slices.Sorted(slices.Values(man.Files))
	if len(slices.Compact(slices.Clone(listed))) != len(listed) {
		return nil, badInput("%s: files = %q: a name listed twice", mpath, man.Files)
	}
	for _, n := range []string{"iterations.csv", "summary.json"} {
		if !slices.Contains(listed, n) {
			return nil, badInput("%s: files = %q: must list %s", mpath, man.Files, n)
		}
	}
	if err := checkListing(pdir, append(slices.Clone(listed), "manifest.json", "point.json")); err != nil {
		return nil, err
	}

	spath := filepath.Join(pdir, "summary.json")
	var sum results.Summary
	sb, err := readDecoded(readResultFile, spath, &sum)
	if err != nil {
		return nil, err
	}
	a, errA := json.Marshal(sum)
	b, errB := json.Marshal(rec.Point.Summary)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		return nil, badInput("%s: not the summary in point.json (point.summary)", spath)
	}
	if man.Hash != sum.Hash {
		return nil, badInput("%s: scenario_sha256 = %q: not summary.json's %q", mpath, man.Hash, sum.Hash)
	}
	ipath := filepath.Join(pdir, "iterations.csv")
	ib, err := readResultFile(ipath)
	if err != nil {
		return nil, err
	}
	if err := checkIterationsCSV(ipath, ib); err != nil {
		return nil, err
	}

	byName := map[string][]byte{"manifest.json": mb, "point.json": pb, "summary.json": sb, "iterations.csv": ib}
	order := []string{"iterations.csv", "summary.json"}
	if slices.Contains(listed, "timings.json") { // absent from points written before timings.json
		tpath := filepath.Join(pdir, "timings.json")
		tb, err := readResultFile(tpath)
		if err != nil {
			return nil, err
		}
		if err := decodeResultJSON(tpath, tb, &rec.Timings); err != nil {
			return nil, err
		}
		if rec.Timings.Scenario != sum.Scenario {
			return nil, badInput("%s: scenario = %q: not summary.json's %q", tpath, rec.Timings.Scenario, sum.Scenario)
		}
		byName["timings.json"] = tb
		order = append(order, "timings.json")
	}
	pf := &pointFolder{rec: &rec}
	for _, n := range append(order, "point.json", "manifest.json") {
		pf.names = append(pf.names, n)
		if keep {
			pf.data = append(pf.data, byName[n])
		}
	}
	return pf, nil
}

// checkListing checks that the folder holds the files want and nothing else
// but dot-names (temporary files): an extra file is refused, naming it.
func checkListing(dir string, want []string) error {
	f, err := os.Open(dir)
	if err != nil {
		return badInput("%s: %v", dir, err)
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(64)
		for _, n := range names {
			if !strings.HasPrefix(n, ".") && !slices.Contains(want, n) {
				return badInput("%s: not listed in manifest.json (files): a point holds only %s", filepath.Join(dir, n),
					strings.Join(want, ", "))
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return badInput("%s: %v", dir, err)
		}
	}
}

// checkIterationsCSV checks iterations.csv: the header, then rows of as many
// fields.
func checkIterationsCSV(path string, b []byte) error {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = len(iterationsHeader)
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return badInput("%s: invalid: %v", path, err)
	}
	if !slices.Equal(head, iterationsHeader) {
		return badInput("%s: invalid: header %q, want %q", path, head, iterationsHeader)
	}
	for {
		_, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return badInput("%s: invalid: %v", path, err)
		}
	}
}
