package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNestingBound (issue 24 item 9): arrays and inline tables nested more
// than MaxNesting deep are refused, naming the line, before the TOML decoder
// runs (6,000 nested inline tables, 36 KB, took it 1.5 GiB and seconds).
func TestNestingBound(t *testing.T) {
	good := readGood(t)
	nested := strings.Repeat("{a=", 6000) + "1" + strings.Repeat("}", 6000)
	start := time.Now()
	_, err := Parse([]byte(good+"\n[costs]\nx = "+nested+"\n"), "s.toml")
	line := strings.Count(good, "\n") + 3
	want := fmt.Sprintf("s.toml:%d: arrays and inline tables nested more than 32 deep (MaxNesting, the limit of a scenario file)", line)
	if err == nil || err.Error() != want {
		t.Errorf("nested inline tables: %v, want %q", err, want)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
	arrays := strings.Repeat("[", 33) + strings.Repeat("]", 33)
	if _, err := Parse([]byte(good+"\n[costs]\nx = "+arrays+"\n"), "s.toml"); err == nil || !strings.Contains(err.Error(), "nested more than 32 deep") {
		t.Errorf("33 nested arrays: %v", err)
	}
	for _, tc := range []struct {
		src  string
		line int
	}{
		{"a = " + strings.Repeat("[", 32) + strings.Repeat("]", 32), 0},
		{"a = " + strings.Repeat("[", 33), 1},
		{"a = \"" + strings.Repeat("[", 40) + "\"", 0},
		{"a = '" + strings.Repeat("{", 40) + "'", 0},
		{"a = \"\\\"" + strings.Repeat("[", 40) + "\"", 0}, // an escaped quote does not end the string
		{"# " + strings.Repeat("[", 40) + "\nb = 1", 0},
		{"a = \"\"\"\n" + strings.Repeat("[", 40) + "\n\"\"\"\nb = [" + strings.Repeat("[", 40), 4},
		{"a = '''x''''\nb = " + strings.Repeat("{", 40), 2}, // a multi-line string may end in quotes
		{"a = \"unterminated\nb = " + strings.Repeat("[", 40), 2},
		{"[[t]]\n[t.u]\na = [[1], [2]]", 0},
	} {
		if got := tooDeep(tc.src, MaxNesting); got != tc.line {
			t.Errorf("tooDeep(%q) = %d, want %d", tc.src, got, tc.line)
		}
	}
	if _, err := Parse([]byte(good), "s.toml"); err != nil {
		t.Errorf("good scenario: %v", err)
	}
}

// TestUnknownKeysLinear (issue 24 item 10): 60,000 unknown keys are found in
// linear time (a list of the reported ones was scanned per key: 26-64 s), and
// at most 100 are listed, then counted.
func TestUnknownKeysLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString(readGood(t) + "\n[costs]\n")
	for i := range 60000 {
		fmt.Fprintf(&b, "k%d = 1\n", i)
	}
	b.WriteString("[zz]\nq = 1\n[zz.deeper]\nr = 2\n")
	start := time.Now()
	_, err := Parse([]byte(b.String()), "s.toml")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	se, ok := err.(*Error)
	if !ok {
		t.Fatalf("%v", err)
	}
	if len(se.Problems) != 101 {
		t.Errorf("%d problems, want 100 listed and one count", len(se.Problems))
	}
	if last := se.Problems[len(se.Problems)-1]; last.Message != "... and 59901 more unknown keys (at most 100 are listed)" {
		t.Errorf("last problem: %+v", last)
	}
	// A reported table covers its keys and subtables: one problem for [zz].
	_, err = Parse([]byte(readGood(t)+"\n[zz]\nq = 1\n[zz.deeper]\nr = 2\n"), "s.toml")
	if err == nil || strings.Count(err.Error(), "\n") != 0 || !strings.Contains(err.Error(), "zz: unknown key") {
		t.Errorf("unknown table: %v", err)
	}
}

// TestLengthFileBoundsInScenario (issue 24 items 6, 21): a scenario's
// workload.file is read with the length-file bounds, and a JSONL key given
// twice is refused, naming the length file.
func TestLengthFileBoundsInScenario(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"length": 5, "length": 7}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadLengths(filepath.Join(dir, "d.jsonl"), "", "length")
	if err == nil || !strings.Contains(err.Error(), `d.jsonl:1: key "length" given twice`) {
		t.Errorf("duplicate key: %v", err)
	}
}
