package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteNCCLTests(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	writeNCCLTests(&b, dir)
	if !strings.Contains(b.String(), "Not generated: nccl-tests/ holds no output") {
		t.Errorf("missing folder: %q", b.String())
	}
	os.Mkdir(filepath.Join(dir, NCCLTestsReportDir), 0o755)
	os.WriteFile(filepath.Join(dir, NCCLTestsReportDir, "x.txt"), []byte("measured beside\n```\n"), 0o644)
	b.Reset()
	writeNCCLTests(&b, dir)
	if got := b.String(); !strings.Contains(got, "`x.txt`:\n\n```\nmeasured beside\n\n```") {
		t.Errorf("with an output: %q", got)
	}
}
