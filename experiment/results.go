package experiment

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/dcpsim/dcpsim/report"
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
	Version      string   `json:"dcpsim_version"`
	VCSRevision  string   `json:"vcs_revision,omitempty"`
	VCSModified  bool     `json:"vcs_modified,omitempty"`
	GoVersion    string   `json:"go_version"`
	Scenario     string   `json:"scenario"`
	ScenarioFile string   `json:"scenario_file"`
	Hash         string   `json:"scenario_sha256"`
	Seed         uint64   `json:"seed"`
	PlannerStall string   `json:"planner_stall"`
	Files        []string `json:"files"`
}

func newManifest(sc *scenarios.Scenario, hash string, files []string) Manifest {
	b := ReadBuild()
	return Manifest{Version: b.Version, VCSRevision: b.Revision, VCSModified: b.Modified, GoVersion: b.GoVersion,
		Scenario: sc.Name, ScenarioFile: sc.File, Hash: hash, Seed: sc.Run.Seed, PlannerStall: sc.PlannerStall, Files: files}
}

// writeFailHook, when set by tests, fails the output after that many files.
var writeFailHook = -1

// resultWriter writes the files of one results folder, each atomically, and
// remembers their names for the manifest (written last, so a folder with a
// manifest is complete).
type resultWriter struct {
	dir   string
	files []string
}

func (w *resultWriter) write(name string, f func(io.Writer) error) error {
	if writeFailHook >= 0 && len(w.files) >= writeFailHook {
		return fmt.Errorf("injected failure before %s", name)
	}
	if err := report.WriteFileAtomic(filepath.Join(w.dir, name), f); err != nil {
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

// WriteRun writes one scenario's outcome to dir: summary.json,
// iterations.csv, the figures (unless figures is false), a Perfetto trace per
// timeline, and manifest.json last. It returns the names of the files written.
func WriteRun(dir string, sc *scenarios.Scenario, out *Outcome, figures bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// A stale manifest would mark a half-rewritten folder complete.
	if err := os.Remove(filepath.Join(dir, "manifest.json")); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	w := &resultWriter{dir: dir}
	if err := w.json("summary.json", out.Summary); err != nil {
		return w.files, err
	}
	if err := w.write("iterations.csv", func(f io.Writer) error { return writeIterationsCSV(f, out.Rows) }); err != nil {
		return w.files, err
	}
	if figures {
		if writeFailHook >= 0 && len(w.files) >= writeFailHook {
			return w.files, fmt.Errorf("injected failure before the figures")
		}
		names, err := report.WriteRunFigures(dir, &out.Summary, out.Rows, out.Timelines)
		w.files = append(w.files, names...)
		if err != nil {
			return w.files, err
		}
	}
	for i := range out.Timelines {
		tl := &out.Timelines[i]
		if err := w.write("trace-"+report.SafeName(tl.Policy)+".json", func(f io.Writer) error { return report.WriteTrace(f, tl) }); err != nil {
			return w.files, err
		}
	}
	slices.Sort(w.files)
	files := slices.Clone(w.files)
	if err := w.json("manifest.json", newManifest(sc, out.Summary.Hash, files)); err != nil {
		return w.files, err
	}
	return w.files, nil
}

// iterationsHeader is the header of iterations.csv.
var iterationsHeader = []string{"policy", "iteration", "warmup", "step_seconds", "tokens", "sequences", "microbatches",
	"compute_share", "exposed_comm_share", "pp_bubble_share", "dp_bubble_share", "planner_stall_share",
	"mb_time_cv", "mb_time_max_over_min", "planner_modeled_seconds", "planner_go_seconds", "planner_work_units"}

// writeIterationsCSV writes one row per (policy, iteration). The measured Go
// planner time is the only column that varies between runs.
func writeIterationsCSV(w io.Writer, rows []report.IterationRow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(iterationsHeader); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for _, r := range rows {
		rec := []string{r.Policy, strconv.Itoa(r.Iteration), strconv.FormatBool(r.Warmup), g(r.StepSeconds),
			strconv.FormatInt(r.Tokens, 10), strconv.Itoa(r.Sequences), strconv.Itoa(r.Microbatches),
			g(r.ComputeShare), g(r.ExposedCommShare), g(r.PPBubbleShare), g(r.DPBubbleShare), g(r.PlannerStallShare),
			g(r.MBTimeCV), g(r.MBTimeMaxOverMin), g(r.PlannerModeledSeconds), g(r.PlannerGoSeconds),
			strconv.FormatInt(r.PlannerWorkUnits, 10)}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
