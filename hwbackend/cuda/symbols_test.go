package cuda

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shimTable parses shim.h's DCP_SYMBOLS table.
func shimTable(t *testing.T) []Symbol {
	t.Helper()
	text, err := os.ReadFile("shim.h")
	if err != nil {
		t.Fatal(err)
	}
	libs := map[string]string{
		"DCP_LIB_CUDART": libCUDART, "DCP_LIB_CUDA": libCUDA, "DCP_LIB_CUBLAS": libCUBLAS,
		"DCP_LIB_NVRTC": libNVRTC, "DCP_LIB_NCCL": libNCCL,
	}
	re := regexp.MustCompile(`(?m)^\tX\((DCP_LIB_\w+), [^,]+, (\w+), "(\w*)", ([01]), \(`)
	var out []Symbol
	for _, m := range re.FindAllStringSubmatch(string(text), -1) {
		lib, ok := libs[m[1]]
		if !ok {
			t.Fatalf("unknown library %s", m[1])
		}
		out = append(out, Symbol{Library: lib, Name: m[2], Alt: m[3], Optional: m[4] == "1"})
	}
	if n := strings.Count(string(text), "\tX(DCP_LIB_"); n != len(out) {
		t.Fatalf("parsed %d of %d table rows", len(out), n)
	}
	return out
}

// TestSymbolTable checks that Symbols() lists exactly what the C shim
// resolves with dlsym, in order.
func TestSymbolTable(t *testing.T) {
	got, want := shimTable(t), Symbols()
	if !slices.Equal(got, want) {
		t.Fatalf("shim.h table:\n%v\nSymbols():\n%v", got, want)
	}
}

// TestSymbolsUsed checks that every resolved symbol is called through its
// dcp_ wrapper somewhere in the package: the table holds nothing dead.
func TestSymbolsUsed(t *testing.T) {
	var code strings.Builder
	for _, pattern := range []string{"*.go", "*.c"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			code.Write(b)
		}
	}
	for _, s := range Symbols() {
		if !strings.Contains(code.String(), "dcp_"+s.Name+"(") {
			t.Errorf("symbol %s is resolved but dcp_%s is never called", s.Name, s.Name)
		}
	}
}

// TestLibraryNames checks that the first candidate file of each library in
// shim.c is the name the Go side reports.
func TestLibraryNames(t *testing.T) {
	text, err := os.ReadFile("shim.c")
	if err != nil {
		t.Fatal(err)
	}
	for lib, name := range map[string]string{
		"CUDART": libCUDART, "CUDA": libCUDA, "CUBLAS": libCUBLAS, "NVRTC": libNVRTC, "NCCL": libNCCL,
	} {
		if !strings.Contains(string(text), `[DCP_LIB_`+lib+`] = {"`+name+`"`) {
			t.Errorf("shim.c: first file of DCP_LIB_%s is not %s", lib, name)
		}
	}
}
