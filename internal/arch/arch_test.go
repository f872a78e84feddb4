package arch

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
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
	why       string
}

var coreForbidden = []string{"os", "io/ioutil", "time", "math/rand", "net", "net/", "syscall",
	"gonum.org/v1/plot", "gonum.org/v1/plot/", module + "cmd/", module + "report", module + "scenarios", module + "hwbackend"}

var rules = []rule{
	{dir: "job", stdOnly: true, why: "job is the leaf every package may import"},
	{dir: "job", forbidden: coreForbidden, why: "deterministic core"},
	{dir: "workload", forbidden: coreForbidden, why: "deterministic core"},
	{dir: "sched", forbidden: append([]string{"math/rand/v2", module + "sim", module + "sim/", module + "calib"}, coreForbidden...),
		why: "policies are pure functions of the batch and never import the engine or the cost model"},
	{dir: "sim", forbidden: append([]string{module + "sched/"}, coreForbidden...), why: "the engine never imports a policy"},
}

// TestLayering checks every rule on every non-test Go file.
func TestLayering(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	for _, r := range rules {
		dir := filepath.Join(root, r.dir)
		if _, err := os.Stat(dir); os.IsNotExist(err) && r.dir == "sim" {
			continue // the engine arrives with its issue
		}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
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
