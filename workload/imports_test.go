package workload

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestDeterministicCoreImports keeps the package free of file I/O, the wall clock and the
// global random generator: it is part of the deterministic core.
func TestDeterministicCoreImports(t *testing.T) {
	forbidden := map[string]bool{"os": true, "io/ioutil": true, "time": true, "math/rand": true, "net": true, "syscall": true}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if forbidden[path] {
				t.Errorf("%s imports %q", name, path)
			}
		}
	}
}
