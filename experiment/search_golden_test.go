// The golden search takes minutes and depends on no build tag: make test's
// second pass, with the cuda tag, leaves it out.

//go:build !cuda

package experiment

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dcpsim/dcpsim/scenarios"
)

var updateSearchGolden = flag.Bool("update", false, "rewrite experiment/testdata/search-h800-4k/*.gz from the current search")

// searchGoldenDir holds search-h800-4k's search.json and search.csv,
// gzipped, as the search wrote them before it was made faster (the
// continued rungs, the shared setups and the pooled tables must not change
// one byte of them); rewritten since only by changes meant to move the
// simulated numbers, each checked against the code before it.
const searchGoldenDir = "testdata/search-h800-4k"

// TestSearchPresetGolden runs the preset search-h800-4k end to end and
// compares search.json and search.csv byte for byte with the golden files
// (-update rewrites them; do that only for a change meant to move the
// simulated numbers, and say so in the commit). About three minutes on 2
// cores, most of them FlexSP's MILPs: it skips with -short, under the race
// detector, and without cbc (FlexSP's candidates would be "skipped").
func TestSearchPresetGolden(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("runs the whole search-h800-4k preset (about three minutes on 2 cores)")
	}
	needCBC(t)
	sc, err := scenarios.Preset("search-h800-4k")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Search(context.Background(), sc, SearchOptions{Dir: dir, Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{searchJSONFile, searchCSVFile} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join(searchGoldenDir, name+".gz")
		if *updateSearchGolden {
			if err := writeGzip(golden, got); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := readGzip(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (%d bytes, want %d): %s", name, golden, len(got), len(want), firstDifference(got, want))
		}
	}
}

// firstDifference describes the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range min(len(g), len(w)) {
		if !bytes.Equal(g[i], w[i]) {
			return fmt.Sprintf("line %d is %q, want %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(zr)
}

func writeGzip(path string, data []byte) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
