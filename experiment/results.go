package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"path/filepath"
	"runtime/debug"
	"slices"

	"github.com/dcpsim/dcpsim/scenarios"
)

// Build is what the running binary's build info says about it.
type Build struct {
	// OK is false when the binary carries no build info.
	OK bool
	// Version is the module version, GoVersion the toolchain's.
	Version, GoVersion string
	// Revision is the VCS revision, Modified whether the tree was modified.
	Revision string
	Modified bool
}

// ReadBuild reads the module version, Go version and VCS stamp of this binary.
func ReadBuild() Build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Build{Version: "(devel)"}
	}
	b := Build{OK: true, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// RevisionTag is the VCS revision with "+modified" for a build from a
// modified tree; empty without a VCS stamp. Sweeps resume only points of the
// same tag.
func (b Build) RevisionTag() string {
	if b.Modified && b.Revision != "" {
		return b.Revision + "+modified"
	}
	return b.Revision
}

// Manifest is manifest.json: what produced a results folder. It holds no
// wall-clock time, so the same build, scenario and seed write the same bytes.
type Manifest struct {
	Version      string `json:"dcpsim_version"`
	VCSRevision  string `json:"vcs_revision,omitempty"`
	VCSModified  bool   `json:"vcs_modified,omitempty"`
	GoVersion    string `json:"go_version"`
	Scenario     string `json:"scenario"`
	ScenarioFile string `json:"scenario_file"`
	Hash         string `json:"scenario_sha256"`
	Seed         uint64 `json:"seed"`
	PlannerStall string `json:"planner_stall"`
	// Profiles are the calibration profiles the costs came from (name,
	// file, SHA-256), as in summary.json.
	Profiles []scenarios.ProfileRef `json:"profiles"`
	Files    []string               `json:"files"`
}

func newManifest(sc *scenarios.Scenario, hash string, profiles []scenarios.ProfileRef, files []string) Manifest {
	b := ReadBuild()
	return Manifest{Version: b.Version, VCSRevision: b.Revision, VCSModified: b.Modified, GoVersion: b.GoVersion,
		Scenario: sc.Name, ScenarioFile: sc.File, Hash: hash, Seed: sc.Run.Seed, PlannerStall: sc.PlannerStall,
		Profiles: profiles, Files: files}
}

// writeFailHook, when set by tests, fails the output after that many files.
var writeFailHook = -1

// resultWriter writes the files of one results folder (a temporary folder,
// published whole once complete) and remembers their names for the manifest.
// It checks ctx before every file.
type resultWriter struct {
	ctx   context.Context
	dir   string
	files []string
}

// check fails when the context is done or the test hook says so.
func (w *resultWriter) check(name string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if writeFailHook >= 0 && len(w.files) >= writeFailHook {
		return fmt.Errorf("injected failure before %s", name)
	}
	return nil
}

func (w *resultWriter) write(name string, f func(io.Writer) error) error {
	if err := w.check(name); err != nil {
		return err
	}
	if err := safeio.WriteFileAtomic(filepath.Join(w.dir, name), f); err != nil {
		return err
	}
	w.files = append(w.files, name)
	return nil
}

func (w *resultWriter) json(name string, v any) error {
	return w.write(name, func(f io.Writer) error { return encodeJSON(f, v) })
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteRun writes one scenario's outcome as the folder dir: summary.json,
// iterations.csv, the figures (unless figures is false), a Perfetto trace per
// timeline, and manifest.json last, listing the others. It builds the folder
// in a temporary sibling and then replaces dir with it, so dir is always
// either the earlier folder or the complete new one (no file of an earlier
// run stays behind; of concurrent writers the last wins). dir must be absent,
// empty or an earlier results folder (holding a dcpsim manifest.json): else
// the error matches badinput.Err and nothing is written. WriteRun checks ctx between
// files; on any error, cancellation included, it leaves no temporary file or
// folder. It returns the names of the files written, manifest.json last.
func WriteRun(ctx context.Context, dir string, sc *scenarios.Scenario, out *Outcome, figures Drawer) ([]string, error) {
	return writeRun(ctx, dir, nil, sc, out, figures, nil)
}

// writeRun is WriteRun; legacy is as for newStagedDir, and extra, when set,
// writes more files just before the manifest (a sweep point's point.json).
func writeRun(ctx context.Context, dir string, legacy []string, sc *scenarios.Scenario, out *Outcome, figures Drawer,
	extra func(*resultWriter) error) (_ []string, err error) {
	st, err := newStagedDir(dir, legacy)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			st.discard()
		}
	}()
	w := &resultWriter{ctx: ctx, dir: st.tmp}
	if err := w.json("summary.json", out.Summary); err != nil {
		return nil, err
	}
	if err := w.write("iterations.csv", func(f io.Writer) error { return results.WriteCSV(f, out.Rows) }); err != nil {
		return nil, err
	}
	if err := w.json("timings.json", out.Timings); err != nil {
		return nil, err
	}
	if figures != nil {
		if err := w.check("the figures"); err != nil {
			return nil, err
		}
		names, err := figures.RunFigures(st.tmp, &out.Summary, out.Rows, out.Timelines)
		if err != nil {
			return nil, err
		}
		w.files = append(w.files, names...)
	}
	for i := range out.Timelines {
		tl := &out.Timelines[i]
		if err := w.write("trace-"+safeio.SafeName(tl.Policy)+".json", func(f io.Writer) error { return results.WriteTrace(f, tl) }); err != nil {
			return nil, err
		}
	}
	for _, l := range out.Logs {
		if err := w.write(l.File, func(f io.Writer) error { _, err := f.Write(l.Data); return err }); err != nil {
			return nil, err
		}
	}
	if extra != nil {
		if err := extra(w); err != nil {
			return nil, err
		}
	}
	if figures != nil {
		if err := w.check("index.html"); err != nil {
			return nil, err
		}
		names, err := writePage(figures, st.tmp, results.Page{Title: out.Summary.Scenario,
			Run: &results.RunPage{Summary: &out.Summary, Rows: out.Rows, Timelines: out.Timelines}}, w.files, "manifest.json")
		if err != nil {
			return nil, err
		}
		w.files = append(w.files, names...)
	}
	slices.Sort(w.files)
	files := slices.Clone(w.files)
	if err := w.json("manifest.json", newManifest(sc, out.Summary.Hash, out.Summary.Profiles, files)); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := st.publish(); err != nil {
		return nil, err
	}
	return w.files, nil
}

// iterationsHeader is the header of iterations.csv: results.IterationRow's
// columns.
var iterationsHeader = must(results.CSVHeader[results.IterationRow]())

// must is v, or a panic at start-up when a results type has no CSV form (a
// programming error the tests catch).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
