package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/dcpsim/dcpsim/internal/safeio"
)

// A results folder (a run's, or a sweep point's) is built aside and swapped
// into place: every file goes into a fresh temporary sibling (same parent, a
// dot-name), manifest.json last; then the old folder, if any, is moved aside,
// the new one renamed onto the target and the old one removed. A reader never
// sees a half-written folder, concurrent writers each publish a complete one
// (the last wins), no file of an earlier run survives a rerun, and an error
// or interruption leaves nothing behind but the untouched old folder.
//
// A folder is only replaced when it is empty or holds a dcpsim manifest.json
// (or, for a sweep point, only the files a point holds), so `--out /` or
// `--out ~` is refused instead of emptied.

// stagedDir is a results folder being built in tmp, to replace target.
type stagedDir struct {
	// target is the folder as the caller named it (for messages), abs its
	// absolute path.
	target, abs string
	// tmp is the temporary sibling the files are written into.
	tmp string
	// legacy, when set, are the names whose presence alone (without a
	// manifest) still lets the target be replaced: the files an interrupted
	// older dcpsim left in a sweep point folder.
	legacy []string
}

// publishAttempts bounds how often publish retries when concurrent writers
// keep replacing the target between its two renames.
const publishAttempts = 100

// CheckResultsFolder says whether WriteRun may write the results folder dir
// (absent, empty, or an earlier dcpsim results folder), so a command can
// refuse a bad --out before it simulates anything. WriteRun checks again.
func CheckResultsFolder(dir string) error {
	_, err := checkTarget(dir, nil)
	return err
}

// checkTarget checks that target may be replaced.
func checkTarget(target string, legacy []string) (*stagedDir, error) {
	abs, err := filepath.Abs(target)
	if err != nil {
		return nil, err
	}
	s := &stagedDir{target: target, abs: abs, legacy: legacy}
	if filepath.Dir(abs) == abs {
		return nil, badInput("%s: a filesystem root cannot be a results folder", target)
	}
	if wd, err := os.Getwd(); err == nil && within(wd, abs) {
		return nil, badInput("%s: holds the working folder, which replacing it would remove; name it from outside", target)
	}
	if err := s.replaceable(); err != nil {
		return nil, err
	}
	return s, nil
}

// newStagedDir checks that target may be replaced and creates the
// temporary sibling to build it in.
func newStagedDir(target string, legacy []string) (*stagedDir, error) {
	s, err := checkTarget(target, legacy)
	if err != nil {
		return nil, err
	}
	parent := filepath.Dir(s.abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Base(s.abs)
	if len(base) > 64 {
		base = base[:64]
	}
	if s.tmp, err = os.MkdirTemp(parent, "."+base+".tmp-*"); err != nil {
		return nil, err
	}
	if err := os.Chmod(s.tmp, 0o755); err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// discard removes the temporary folder (on every error path).
func (s *stagedDir) discard() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// replaceable checks the target: absent, or a folder (not a link) that is
// empty, holds a dcpsim manifest.json, or holds only legacy names and
// dot-names. Anything else is refused as bad input naming the folder. The
// manifest and the listing are read through one open handle of the folder,
// so a concurrent writer swapping it meanwhile cannot mix two folders up; a
// refusal is only made of the folder still in place (one moved aside by a
// concurrent writer, being removed, is checked again).
func (s *stagedDir) replaceable() error {
	for range publishAttempts {
		err := s.replaceableOnce()
		var moved movedError
		if !errors.As(err, &moved) {
			return err
		}
	}
	return fmt.Errorf("%s: replaced by concurrent writers %d times in a row: giving up", s.target, publishAttempts)
}

// movedError says the folder checked was moved away during the check.
type movedError struct{}

func (movedError) Error() string { return "moved during the check" }

func (s *stagedDir) replaceableOnce() error {
	fi, err := os.Lstat(s.abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return badInput("%s is a symbolic link: name the results folder itself", s.target)
	case !fi.IsDir():
		return badInput("%s exists and is not a folder: refusing to replace it", s.target)
	}
	root, err := os.OpenRoot(s.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // moved away since
	}
	if err != nil {
		return err
	}
	defer root.Close()
	if isManifest(root, filepath.Join(s.abs, "manifest.json")) {
		return nil
	}
	f, err := root.Open(".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since
	}
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(256)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since (the listing reads nothing)
		}
		for _, n := range names {
			if !slices.Contains(s.legacy, n) && (s.legacy == nil || !strings.HasPrefix(n, ".")) {
				if here, err := f.Stat(); err == nil {
					if now, err := os.Lstat(s.abs); err != nil || !os.SameFile(here, now) {
						return movedError{}
					}
				}
				return badInput("%s is not empty and holds no dcpsim manifest.json (found %s): refusing to replace it; "+
					"name a new or empty folder, or an earlier results folder", s.target, n)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// isManifest reports whether manifest.json in root (path, for messages) is
// a regular file holding a JSON object with the keys every dcpsim
// manifest.json has.
func isManifest(root *os.Root, path string) bool {
	fi, err := root.Lstat("manifest.json")
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := root.Open("manifest.json")
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(safeio.Limit(f, safeio.MaxResultBytes, path))
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for _, k := range []string{"dcpsim_version", "scenario_sha256", "files"} {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// publish replaces the target with the complete temporary folder: the old
// folder (checked again) is moved aside, the new one renamed into place and
// the old one removed. When another writer publishes between the two
// renames, the old folder is dropped and publish tries again, so concurrent
// writers each publish a complete folder and the last one wins. On an error
// the temporary folder is removed and the old folder restored.
func (s *stagedDir) publish() (err error) {
	defer func() {
		if err != nil {
			s.discard()
		}
	}()
	for attempt := range publishAttempts {
		if err := s.replaceable(); err != nil {
			return err
		}
		old := fmt.Sprintf("%s-old%d", s.tmp, attempt)
		moved := true
		if err := os.Rename(s.abs, old); errors.Is(err, fs.ErrNotExist) {
			moved = false
		} else if err != nil {
			return err
		}
		err := os.Rename(s.tmp, s.abs)
		if err == nil {
			if moved {
				return os.RemoveAll(old)
			}
			return nil
		}
		if moved {
			if !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTEMPTY) {
				// Not a concurrent writer: put the old folder back.
				if rerr := os.Rename(old, s.abs); rerr != nil {
					return fmt.Errorf("%w (and restoring %s from %s: %v)", err, s.target, old, rerr)
				}
				return err
			}
			// Another writer published in between: its folder is newer.
			if err := os.RemoveAll(old); err != nil {
				return err
			}
		} else if !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTEMPTY) {
			return err
		}
	}
	return fmt.Errorf("%s: replaced by concurrent writers %d times in a row: giving up", s.target, publishAttempts)
}
