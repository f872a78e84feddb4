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
	"time"

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
	// older dcpsim left in a sweep point folder. A target with legacy names
	// is a sweep point: it holds nothing its manifest does not list.
	legacy []string
	// lock holds an advisory lock on tmp while it is built, so a later
	// sweep can tell an abandoned temporary folder (kill -9) from a live one
	// (removeStaleTemporaries); nil where the filesystem has no locks.
	lock *os.File
}

// publishAttempts bounds how often publish retries when concurrent writers
// keep replacing the target between its two renames.
const publishAttempts = 100

// CheckResultsFolder says whether WriteRun may write the results folder dir
// (absent, empty, or an earlier dcpsim results folder), so a command can
// refuse a bad --out before it simulates anything. WriteRun checks again.
// It also checks that the folder can be created (its temporary sibling, in
// the nearest existing folder above it), so an unwritable --out is refused
// before the simulation, not after.
func CheckResultsFolder(dir string) error {
	s, err := checkTarget(dir, nil)
	if err != nil {
		return err
	}
	return checkCreatable(dir, filepath.Dir(s.abs))
}

// checkCreatable checks, for the output target, that files and folders can
// be created in the folder where (or, where it does not exist yet, in the
// nearest existing folder above it, where it will be created): that one is
// a folder, and a temporary folder made there (and removed at once) is
// allowed. The error matches badinput.Err and names target.
func checkCreatable(target, where string) error {
	up := where
	for {
		fi, err := os.Stat(up)
		if err == nil {
			if !fi.IsDir() {
				return badInput("%s: %s is not a folder", target, up)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return badInput("%s: %v", target, err)
		}
		next := filepath.Dir(up)
		if next == up {
			break
		}
		up = next
	}
	d, err := os.MkdirTemp(up, ".dcpsim-probe-*")
	if err != nil {
		return badInput("%s: cannot write in %s: %v", target, up, err)
	}
	os.Remove(d)
	return nil
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
	if f, ok, err := lockDir(s.tmp); err == nil && ok {
		s.lock = f
	}
	return s, nil
}

// sameFolder reports whether a and b are one existing folder (by inode,
// whatever the names or links).
func sameFolder(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
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
	s.release()
}

// release drops the lock on the temporary folder.
func (s *stagedDir) release() {
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// isTemporary reports whether name is one of dcpsim's temporary names: a
// folder or file being built (".<name>.tmp-*"), or an old folder being
// removed (".<name>.tmp-*-old<n>").
func isTemporary(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
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
	if files, ok := manifestFiles(root, filepath.Join(s.abs, "manifest.json")); ok {
		if s.legacy == nil {
			return nil // a run folder: what its manifest does not list is kept (publish)
		}
		return s.onlyListed(root, files)
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

// onlyListed checks a sweep point folder with a manifest: every name in it
// is listed there, a point file or a dot-name, else (a file the user put
// there, which replacing the point would delete) it is refused, naming it.
func (s *stagedDir) onlyListed(root *os.Root, files []string) error {
	f, err := root.Open(".")
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since
	}
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".") || slices.Contains(files, n) || slices.Contains(s.legacy, n) {
			continue
		}
		if here, err := f.Stat(); err == nil {
			if now, err := os.Lstat(s.abs); err != nil || !os.SameFile(here, now) {
				return movedError{}
			}
		}
		return badInput("%s: not listed in %s: a sweep point holds only the files its manifest lists, "+
			"and replacing the point would delete it: refusing; move it out of the point folder",
			filepath.Join(s.target, n), filepath.Join(s.target, "manifest.json"))
	}
	return nil
}

// manifestFiles returns the files a dcpsim manifest.json in root lists; ok
// is false unless manifest.json is a regular file holding a JSON object with
// the keys every dcpsim manifest.json has.
func manifestFiles(root *os.Root, path string) (files []string, ok bool) {
	fi, err := root.Lstat("manifest.json")
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	f, err := root.Open("manifest.json")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(safeio.Limit(f, safeio.MaxResultBytes, path))
	if err != nil {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	for _, k := range []string{"dcpsim_version", "scenario_sha256", "files"} {
		if _, ok := m[k]; !ok {
			return nil, false
		}
	}
	if json.Unmarshal(m["files"], &files) != nil {
		return nil, false
	}
	return files, true
}

// carryUnlisted moves what the earlier results folder old holds beside the
// files its manifest lists (a NOTES.md, the scenario file run from it: the
// user's) into the new folder tmp, and returns the names moved. A name the
// new folder also has is refused (nothing is moved then). A folder without
// a dcpsim manifest carries nothing (replaceable let it be replaced only
// when empty, or when it held only a sweep point's files).
func (s *stagedDir) carryUnlisted(old string) ([]string, error) {
	root, err := os.OpenRoot(old)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	files, ok := manifestFiles(root, filepath.Join(old, "manifest.json"))
	if !ok {
		return nil, nil
	}
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var carry []string
	for _, n := range names {
		if n == "manifest.json" || slices.Contains(files, n) || isTemporary(n) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.tmp, n)); err == nil {
			return nil, badInput("%s: not listed in its manifest.json (so kept as yours), but the new results have a file of that name: "+
				"refusing to replace it; move it away and run again", filepath.Join(s.target, n))
		}
		carry = append(carry, n)
	}
	var moved []string
	for _, n := range carry {
		if err := os.Rename(filepath.Join(old, n), filepath.Join(s.tmp, n)); err != nil {
			return moved, err
		}
		moved = append(moved, n)
	}
	return moved, nil
}

// uncarry moves the names carryUnlisted moved back into old.
func (s *stagedDir) uncarry(names []string, old string) {
	for _, n := range names {
		os.Rename(filepath.Join(s.tmp, n), filepath.Join(old, n))
	}
}

// publish replaces the target with the complete temporary folder: the old
// folder (checked again) is moved aside, what it holds beside the files its
// manifest lists is moved into the new one (a run folder's; a sweep point
// holds nothing else), the new one is renamed into place and the old one
// removed. When another writer publishes between the two renames, the old
// folder is dropped and publish tries again, so concurrent writers each
// publish a complete folder and the last one wins. On an error the
// temporary folder is removed and the old folder restored.
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
		// Lock the old folder too (where no one else holds it), so that it
		// is not taken for an abandoned temporary folder once renamed.
		oldLock, locked, _ := lockDir(s.abs)
		if !locked {
			oldLock = nil
		}
		if err := os.Rename(s.abs, old); errors.Is(err, fs.ErrNotExist) {
			moved = false
		} else if err != nil {
			closeLock(oldLock)
			return err
		}
		var carried []string
		if moved && s.legacy == nil {
			var err error
			if carried, err = s.carryUnlisted(old); err != nil {
				s.uncarry(carried, old)
				defer closeLock(oldLock)
				if rerr := os.Rename(old, s.abs); rerr != nil {
					return fmt.Errorf("%w (and restoring %s from %s: %v)", err, s.target, old, rerr)
				}
				return err
			}
		}
		err := os.Rename(s.tmp, s.abs)
		if err == nil {
			s.release()
			if moved {
				defer closeLock(oldLock)
				return os.RemoveAll(old)
			}
			return nil
		}
		if moved {
			if !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTEMPTY) {
				// Not a concurrent writer: put the old folder back.
				s.uncarry(carried, old)
				defer closeLock(oldLock)
				if rerr := os.Rename(old, s.abs); rerr != nil {
					return fmt.Errorf("%w (and restoring %s from %s: %v)", err, s.target, old, rerr)
				}
				return err
			}
			// Another writer published in between: its folder is newer (what
			// was carried stays in ours, which tries again).
			err := os.RemoveAll(old)
			closeLock(oldLock)
			if err != nil {
				return err
			}
		} else {
			closeLock(oldLock)
			if !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTEMPTY) {
				return err
			}
		}
	}
	return fmt.Errorf("%s: replaced by concurrent writers %d times in a row: giving up", s.target, publishAttempts)
}

// closeLock releases a lock lockDir took (nil: none).
func closeLock(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// staleAge is how old (by modification time) a temporary folder must be,
// beside being unlocked, to be taken for abandoned: a live writer locks its
// folder a moment after creating it.
const staleAge = 10 * time.Second

// removeStaleTemporaries removes the temporary folders in dir (a sweep's
// points/) that a killed dcpsim left (kill -9: no cleanup ran): dot-names
// of dcpsim's temporary pattern, real folders, unlocked (no live writer
// holds them) and not modified for staleAge. Where locks are unavailable
// nothing is removed. It returns the names removed.
func removeStaleTemporaries(dir string) []string {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	slices.Sort(names)
	var removed []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := os.Lstat(p)
		if !isTemporary(n) || err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < staleAge {
			continue
		}
		lock, ok, err := lockDir(p)
		if err != nil || !ok {
			continue
		}
		if os.RemoveAll(p) == nil {
			removed = append(removed, n)
		}
		lock.Close()
	}
	return removed
}
