package report

import (
	"github.com/dcpsim/dcpsim/results"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/badinput"
)

// TestReportSummaryHostile: a summary.json that is there but corrupt, carries
// an unknown key, is a link to a device or is a folder is an error naming it
// (marked bad input, exit 2), read with a small bound; a missing one is
// named in the text (issue 24 item 16).
func TestReportSummaryHostile(t *testing.T) {
	good, err := os.ReadFile("../../results/testbed-32k/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, p string)
		want  string // "" for no error
	}{
		{"missing", func(t *testing.T, p string) {}, ""},
		{"valid", func(t *testing.T, p string) { os.WriteFile(p, good, 0o644) }, ""},
		{"corrupt", func(t *testing.T, p string) { os.WriteFile(p, []byte(`{"scenario": "x",`), 0o644) }, "corrupt"},
		{"not an object", func(t *testing.T, p string) { os.WriteFile(p, []byte("garbage"), 0o644) }, "corrupt"},
		{"trailing data", func(t *testing.T, p string) { os.WriteFile(p, append(append([]byte{}, good...), "{}"...), 0o644) }, "corrupt"},
		{"unknown key", func(t *testing.T, p string) {
			os.WriteFile(p, []byte(strings.Replace(string(good), `"scenario":`, `"bogus": 1, "scenario":`, 1)), 0o644)
		}, `unknown field "bogus"`},
		{"link to /dev/zero", func(t *testing.T, p string) { os.Symlink("/dev/zero", p) }, "not a regular file"},
		{"dangling link", func(t *testing.T, p string) { os.Symlink("nowhere", p) }, "a link to nothing"},
		{"folder", func(t *testing.T, p string) { os.Mkdir(p, 0o755) }, "not a regular file"},
		{"too large", func(t *testing.T, p string) {
			os.WriteFile(p, append([]byte(`{"scenario": "`+strings.Repeat("x", results.MaxSummaryBytes)), `"}`...), 0o644)
		}, "more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "testbed-32k"), 0o755)
			p := filepath.Join(dir, "testbed-32k", "summary.json")
			c.setup(t, p)
			var b strings.Builder
			err := WriteReproduction(&b, dir)
			if c.want == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; report:\n%.300s", b.String())
			}
			if !badinput.Is(err) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q (bad input %v): want %q naming %s", err, badinput.Is(err), c.want, p)
			}
			if b.Len() != 0 {
				t.Errorf("wrote %d bytes", b.Len())
			}
		})
	}
}
