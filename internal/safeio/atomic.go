package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dcpsim/dcpsim/badinput"
)

// WriteFileAtomic writes what write produces to path through a temporary file in
// the same folder, renamed onto path only after write and Close succeed.
// path must be absent or a regular file (or a link, which the rename
// replaces, not follows): a FIFO, a device node (--out /dev/null), a socket
// or a folder is refused before anything is written, with an error matching
// badinput.Err naming path (CheckOutputFile says so up front).
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	if err := checkReplaceable(path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
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
	if err = checkReplaceable(path); err != nil { // again: it may have appeared meanwhile
		return fmt.Errorf("report: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// checkReplaceable refuses a path that exists and is neither a regular file
// nor a link (the rename would replace a FIFO, a device node or a socket
// with a regular file, and fails on a folder only after the work is done).
func checkReplaceable(path string) error {
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)) {
		return badinput.Errorf("%s: ends in a separator; give the file to write", path)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return badinput.Errorf("%s: %v", path, err)
	case fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0:
		return nil
	case fi.IsDir():
		return badinput.Errorf("%s: is a folder; give the file to write", path)
	}
	return badinput.Errorf("%s: is a %s, not a regular file: refusing to replace it; give a regular file or a new name", path, KindOf(fi.Mode()))
}

// KindOf names a file mode's type for messages (a named pipe, a device, ...).
func KindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file (" + m.Type().String() + ")"
}

// CheckOutputFile says, before any work, whether WriteFileAtomic can write
// path: path is absent or a regular file (or a link), not a folder or a
// special file, and its folder exists and takes a new file (a temporary one
// is created there and removed). The error matches badinput.Err and names
// path; a command puts its flag before it.
func CheckOutputFile(path string) error {
	if err := checkReplaceable(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return badinput.Errorf("%s: folder %s does not exist (create it first: mkdir -p %s)", path, dir, dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return badinput.Errorf("%s: cannot write in folder %s: %v", path, dir, err)
	}
	tmp.Close()
	os.Remove(tmp.Name())
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
