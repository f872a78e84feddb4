package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/internal/safeio"
)

// MaxSummaryBytes bounds a summary.json the report reads: the largest the
// shipped results hold is 15 KB (hy3-8k, six policies), so 4 MiB leaves room
// for any number of policies a scenario may list.
const MaxSummaryBytes = 4 << 20

// ReadSummary reads the summary.json at path: (nil, nil) when it does not
// exist (the report names it missing), else a regular file of at most
// MaxSummaryBytes decoded strictly (unknown fields, anything after the
// object). Anything else (a folder, a device, a link to one, a file that
// cannot be read, corrupt JSON) is an error naming path, marked bad input: a
// results folder the report cannot trust is not silently "missing".
func ReadSummary(path string) (*Summary, error) {
	st, err := os.Stat(path) // follows a link: a link to /dev/zero is a device
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(path); errors.Is(lerr, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, badinput.Errorf("%s: unreadable: a link to nothing", path)
	}
	if err != nil {
		return nil, badinput.Errorf("%s: unreadable: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, badinput.Errorf("%s: unreadable: not a regular file (%s)", path, kindOrFolder(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, badinput.Errorf("%s: unreadable: %v", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() { // replaced since the Stat
		return nil, badinput.Errorf("%s: unreadable: not a regular file", path)
	}
	b, err := io.ReadAll(safeio.Limit(f, MaxSummaryBytes, filepath.Base(path)))
	if err != nil {
		return nil, badinput.Errorf("%s: unreadable: %v", path, err)
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil, badinput.Errorf("%s: corrupt: not a JSON object (rerun the scenario or remove its folder)", path)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Summary
	if err := dec.Decode(&s); err != nil {
		return nil, badinput.Errorf("%s: corrupt: %v (rerun the scenario or remove its folder)", path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badinput.Errorf("%s: corrupt: data after the JSON object (rerun the scenario or remove its folder)", path)
	}
	return &s, nil
}

// kindOrFolder names a non-regular file's kind for a message (kindOf, with
// folders).
func kindOrFolder(m fs.FileMode) string {
	if m.IsDir() {
		return "a folder"
	}
	return "a " + safeio.KindOf(m)
}
