package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"github.com/dcpsim/dcpsim/internal/report"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// readCSV reads a CSV file dcpsim wrote with Go's encoding/csv reader, which
// also checks that every record has the header's field count.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: not valid CSV: %v", path, err)
	}
	if len(recs) < 2 {
		t.Fatalf("%s: %d records, want a header and rows", path, len(recs))
	}
	return recs
}

// wallTimeFiles are the only files of a results folder that hold measured
// wall time.
func wallTimeFile(name string) bool {
	return name == "timings.json" || strings.HasPrefix(name, "sweep-planner-go.")
}

// resultsOf writes a run (figures and traces) and a sweep (figures) of the
// tiny scenario under dir with GOMAXPROCS procs, and returns every file
// below dir by relative path.
func resultsOf(t *testing.T, dir string, procs int, sequential bool) map[string][]byte {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	// A skipped policy's message (quotes, a colon, commas) goes into
	// sweep.csv too.
	t.Setenv("PATH", t.TempDir())
	src := strings.Replace(tiny, `policies = ["hydra", "mcore", "static"]`, `policies = ["hydra", "mcore", "static", "flexsp"]`, 1)
	sc := parse(t, src)
	out, err := Run(sc, Options{Timelines: true, Sequential: sequential})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteRun(context.Background(), filepath.Join(dir, "run"), sc, out, report.Figures{}); err != nil {
		t.Fatal(err)
	}
	sw := parse(t, src+"\n[sweep]\ngpus = [48, 96]\n")
	if _, err := Sweep(context.Background(), sw, SweepOptions{Dir: filepath.Join(dir, "sweep"), Jobs: procs, Figures: report.Figures{}}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestOutputsDeterministic: a run's and a sweep's folders are byte-identical
// across reruns, GOMAXPROCS 1 and 4, and policies run one after another or
// concurrently, except the files of measured wall time (timings.json and
// its figure); every CSV reads back with encoding/csv, a skipped policy's
// message with its quotes included.
func TestOutputsDeterministic(t *testing.T) {
	a := resultsOf(t, t.TempDir(), 1, true)
	b := resultsOf(t, t.TempDir(), 4, false)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range a {
			if !yield(n) {
				return
			}
		}
	})
	var csvs, timings int
	for _, n := range names {
		if _, ok := b[n]; !ok {
			t.Errorf("%s: only in the first run", n)
			continue
		}
		if wallTimeFile(filepath.Base(n)) {
			timings++
			continue
		}
		if !bytes.Equal(a[n], b[n]) {
			t.Errorf("%s differs between GOMAXPROCS 1 (sequential) and 4 (concurrent)", n)
		}
	}
	if len(a) != len(b) {
		t.Errorf("%d files, then %d", len(a), len(b))
	}
	dir := t.TempDir()
	for _, n := range names {
		if filepath.Ext(n) != ".csv" {
			continue
		}
		csvs++
		p := filepath.Join(dir, strings.ReplaceAll(n, string(filepath.Separator), "_"))
		if err := os.WriteFile(p, a[n], 0o644); err != nil {
			t.Fatal(err)
		}
		recs := readCSV(t, p)
		if filepath.Base(n) == "sweep.csv" {
			msg := recs[len(recs)-1][slices.Index(recs[0], "error")]
			if !strings.Contains(msg, `"cbc"`) || !strings.Contains(msg, "coinor-cbc") {
				t.Errorf("sweep.csv: flexsp's error %q, want its message with the quoted program name", msg)
			}
		}
	}
	// run/iterations.csv, sweep/sweep.csv and two points' iterations.csv;
	// run/timings.json, sweep/timings.json and two points'.
	if csvs != 4 || timings < 4 {
		t.Errorf("%d CSV files and %d timing files checked, want 4 and at least 4", csvs, timings)
	}
}
