package arch

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dcpsim/dcpsim/"

// rule constrains the non-test files of the packages under a folder.
type rule struct {
	dir       string   // folder relative to the repository root, with its sub-folders
	forbidden []string // import paths (exact) or prefixes ending in "/"
	stdOnly   bool     // only the standard library
	only      bool     // the folder itself, not its sub-folders
	why       string
}

var coreForbidden = []string{"os", "io/ioutil", "time", "math/rand", "net", "net/", "syscall",
	"gonum.org/v1/plot", "gonum.org/v1/plot/", module + "cmd/", module + "internal/report", module + "scenarios", module + "hwbackend"}

// above are the packages that wire the core together: no core package imports
// them.
var above = []string{module + "costmodel", module + "experiment", module + "cmd/"}

var rules = []rule{
	{dir: "job", stdOnly: true, why: "job is the leaf every package may import"},
	{dir: "badinput", stdOnly: true, why: "the one mark of bad input is a leaf every package may import"},
	{dir: "job", forbidden: coreForbidden, why: "deterministic core"},
	{dir: "workload", forbidden: append(slices.Clone(above), coreForbidden...), why: "deterministic core"},
	{dir: "sched", forbidden: append([]string{"math/rand/v2", module + "sim", module + "sim/", module + "calib", module + "milp/cbc"}, append(slices.Clone(above), coreForbidden...)...),
		why: "policies are pure functions of the batch and never import the engine or the cost model"},
	{dir: "sim", forbidden: append([]string{module + "sched/"}, append(slices.Clone(above), coreForbidden...)...), why: "the engine never imports a policy"},
	{dir: "sim/step", forbidden: []string{module + "calib", module + "sim/network"},
		why: "sim/step is the engine alone: the cost model (costmodel) prices its questions"},
	{dir: "sim/pipeline", forbidden: []string{module + "calib", module + "sim/network"}, why: "schedules know no costs"},
	{dir: "calib", only: true, forbidden: []string{module + "sched", module + "sched/", module + "sim", module + "sim/", module + "costmodel", module + "costmodel/", module + "experiment"},
		why: "calib is calibration: it knows nothing of policies, the engine or the pricing"},
	{dir: "costmodel", forbidden: append([]string{module + "sched/", module + "experiment"}, coreForbidden...),
		why: "the cost model is deterministic and knows no policy: it prices plans"},
	{dir: "memory", forbidden: append([]string{module + "sched/", module + "sim/step", module + "sim/network"}, append(slices.Clone(above), coreForbidden...)...),
		why: "the memory model is deterministic, knows no policy and no engine: it sizes what a GPU holds"},
	{dir: "scenarios", forbidden: above, why: "scenarios describe runs; they do not run them"},
	{dir: "internal/report", forbidden: above, why: "report draws and writes results; experiments fill them"},
	{dir: "internal/report/pages", forbidden: append([]string{"text/template", "net", "net/", "os/exec", "gonum.org/v1/plot", "gonum.org/v1/plot/", module + "internal/report"}, above...),
		why: "a results page is html/template alone (never text/template or concatenated markup), self-contained (it fetches nothing), below the report that builds it"},
	{dir: "experiment", forbidden: []string{module + "cmd/", module + "internal/report", "gonum.org/v1/plot", "gonum.org/v1/plot/"},
		why: "the CLI sits on top of the experiments, which fill results (the figures are drawn through experiment.Drawer)"},
	{dir: "results", forbidden: append([]string{module + "internal/report", "gonum.org/v1/plot", "gonum.org/v1/plot/"}, above...),
		why: "results is the schema of what runs produce: experiment fills it, report draws it"},
	{dir: "calibrate", forbidden: append([]string{module + "cmd/", module + "experiment", module + "sched", module + "sched/", module + "sim/step", module + "scenarios"}, above...),
		why: "calibration's flow (measure, fit, compare, write a profile) knows profiles, prices and hardware, not policies, the engine or scenarios"},
	{dir: "milp", only: true, forbidden: append([]string{"os/exec", module + "milp/cbc", module + "sched", module + "sched/"}, coreForbidden...),
		why: "the MILP model is pure: solvers that run programs live at the edge (milp/cbc)"},
	{dir: "internal/extpolicy", forbidden: append([]string{module + "sim", module + "sim/", module + "calib", module + "scenarios", module + "internal/report"}, above...),
		why: "an external policy's process speaks the plan model (sched) alone: it knows no engine, costs or results"},
	{dir: "calib/kineto", forbidden: []string{module + "sim", module + "sim/", module + "internal/report", module + "scenarios", module + "costmodel"},
		why: "the trace reader knows the compute prices (costmodel/compute), not the engine, the plan's pricing or the results"},
	{dir: "costmodel/compute", forbidden: append([]string{module + "costmodel", module + "memory", module + "sim", module + "sim/", module + "sched", module + "sched/"}, coreForbidden...),
		why: "compute pricing is the cost model's room for computation: a profile and a job in, seconds out; it knows no plan, engine or network"},
	{dir: "internal/launchcfg", forbidden: append([]string{"os/exec", module + "experiment", module + "costmodel", module + "calib", module + "sim", module + "sim/", module + "sched/"}, coreForbidden...),
		why: "launch-line and recipe translation is pure: it parses the strings it is given (the CLI reads the files) and knows jobs, not how they run"},
	{dir: "milp/cbc", forbidden: []string{module + "sched", module + "sched/", module + "sim", module + "sim/"}, why: "a solver knows models, not policies"},
}

// TestLayering checks every rule on every non-test Go file.
func TestLayering(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	for _, r := range rules {
		dir := filepath.Join(root, r.dir)
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || r.only && path != dir) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if r.stdOnly {
					if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
						t.Errorf("%s imports %s: %s", path, p, r.why)
					}
				}
				for _, bad := range r.forbidden {
					if p == bad || strings.HasSuffix(bad, "/") && strings.HasPrefix(p, bad) {
						t.Errorf("%s imports %s: %s", path, p, r.why)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d files: is the repository layout as expected?", checked)
	}
}
