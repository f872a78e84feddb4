// Package report turns results into things people read: tables, JSON, figures,
// Perfetto traces and the reproduction report (REPORT.md).
// It lives at the edge of dcpsim: it writes files (always to a temporary name in
// the destination folder, renamed into place once complete, so a crash never
// leaves a half-written output) and it is the only package that imports
// gonum/plot.
package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// WriteFileAtomic writes what write produces to path through a temporary file in
// the same folder, renamed onto path only after write and Close succeed.
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^a-z0-9._-]+`)

// SafeName reduces name to a file or folder name of [a-z0-9._-]: lower-cased,
// every run of other characters a separator, parts made only of dots dropped,
// the rest joined with "-" ("unnamed" if nothing is left). So a name derived
// from a scenario or policy ("../x", "a/b") can never leave its parent folder.
func SafeName(name string) string {
	var parts []string
	for _, p := range unsafeName.Split(strings.ToLower(name), -1) {
		if p = strings.Trim(p, "."); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "unnamed"
	}
	return strings.Join(parts, "-")
}
