package safeio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLimit(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int64
		fail bool
	}{{"", 0, false}, {"abc", 3, false}, {"abcd", 3, true}, {strings.Repeat("x", 1<<16), 1 << 16, false}, {strings.Repeat("x", 1<<16+1), 1 << 16, true}} {
		b, err := io.ReadAll(Limit(strings.NewReader(c.in), c.max, "f.toml"))
		if c.fail != (err != nil) || c.fail && (!errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "f.toml")) {
			t.Errorf("%d bytes, max %d: %v", len(c.in), c.max, err)
		}
		if !c.fail && string(b) != c.in {
			t.Errorf("%d bytes, max %d: read %d", len(c.in), c.max, len(b))
		}
		if c.fail && int64(len(b)) > c.max {
			t.Errorf("read %d bytes past the max %d", len(b), c.max)
		}
	}
}

func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x")
	os.WriteFile(p, []byte("hello"), 0o644)
	if b, err := ReadFile(p, 5); err != nil || string(b) != "hello" {
		t.Errorf("%q %v", b, err)
	}
	if _, err := ReadFile(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadFile("/dev/zero", 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("/dev/zero: %v", err)
	}
}

// TestLineLimit: lines up to max bytes pass whole; the first longer one
// fails with ErrTooLarge naming its line, at the byte past the bound.
func TestLineLimit(t *testing.T) {
	in := "abc\nabcd\nabcdef\nab\n"
	got, err := io.ReadAll(LineLimit(strings.NewReader(in), 4, "f.csv"))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "f.csv:3: ") {
		t.Fatalf("err = %v, want ErrTooLarge at f.csv:3", err)
	}
	if string(got) != "abc\nabcd\nabcd" {
		t.Errorf("read %q before the error, want the two lines and 4 bytes of the third", got)
	}
	if got, err := io.ReadAll(LineLimit(strings.NewReader(in), 6, "")); err != nil || string(got) != in {
		t.Errorf("max 6: %q, %v; want all of it", got, err)
	}
	if _, err := io.ReadAll(LineLimit(strings.NewReader("1234567"), 6, "")); err == nil || !strings.HasPrefix(err.Error(), "line 1: ") {
		t.Errorf("no name: %v, want an error starting \"line 1: \"", err)
	}
}
