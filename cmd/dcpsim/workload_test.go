package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite cmd/dcpsim/testdata/workload/*.golden from the current output")

// TestWorkloadStatsGolden pins the bytes `workload stats` prints, as tables and
// as JSON, for a length file read whole, resampled into batches and read
// sequentially. The list samplers draw with integers only, so the output does
// not depend on the platform's floating point. Regenerate with
// go test ./cmd/dcpsim -run WorkloadStatsGolden -update after an intended change.
func TestWorkloadStatsGolden(t *testing.T) {
	lengths := filepath.Join("testdata", "workload", "lengths.txt")
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"file.txt", nil},
		{"file.json", []string{"--json"}},
		{"resample.txt", []string{"--batch-tokens", "60000", "--context", "32768", "--iterations", "5", "--seed", "3"}},
		{"resample.json", []string{"--batch-tokens", "60000", "--context", "32768", "--iterations", "5", "--seed", "3", "--json"}},
		{"sequential.txt", []string{"--batch-tokens", "250000", "--context", "65536", "--order", "sequential", "--iterations", "4"}},
		{"sequential.json", []string{"--batch-tokens", "250000", "--context", "65536", "--order", "sequential", "--iterations", "4", "--json"}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			args := append([]string{"workload", "stats", "--file", lengths}, c.args...)
			code, stdout, stderr := dcpsim(t, args...)
			if code != exitOK {
				t.Fatalf("dcpsim %q: exit %d\n%s", args, code, stderr)
			}
			path := filepath.Join("testdata", "workload", c.golden+".golden")
			if *updateGolden {
				if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if stdout != string(want) {
				t.Errorf("dcpsim %q prints other bytes than %s:\n%s", args, path, stdout)
			}
		})
	}
}

// TestJSONKeysSnakeCase: every key of workload stats --json is snake_case,
// as in every other output of dcpsim.
func TestJSONKeysSnakeCase(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"workload", "stats", "--file", "testdata/workload/lengths.txt", "--batch-tokens", "500000", "--context", "131072", "--iterations", "2", "--json"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var v any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !snake.MatchString(k) {
					t.Errorf("key %q is not snake_case", k)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
}
