package calib

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/internal/safeio"
)

func TestResolveProfileAndEncode(t *testing.T) {
	p, err := ResolveProfile("H800")
	if err != nil || p.Name != "H800" {
		t.Fatalf("ResolveProfile(H800) = %v, %v", p, err)
	}
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "h800.toml")
	os.WriteFile(f, b, 0o644)
	q, err := ResolveProfile(f)
	if err != nil || q.Name != "H800" || q.PeakBF16FLOPs != p.PeakBF16FLOPs {
		t.Errorf("read back: %v, %v", q, err)
	}
	if _, err := ResolveProfile("H2O"); err == nil || !strings.Contains(err.Error(), "or a .toml file") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := ReadProfileFile("/dev/zero"); !errors.Is(err, safeio.ErrTooLarge) {
		t.Errorf("/dev/zero: %v", err)
	}
	bad := *p
	bad.GEMM.Max.Value = 2
	if _, err := bad.Encode(); err == nil {
		t.Error("a profile that does not validate was encoded")
	}
}
