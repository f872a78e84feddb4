//go:build !unix

package experiment

import (
	"errors"
	"os"
)

// lockDir has no advisory locks to take here: it always fails, so stale
// temporary folders are never taken for abandoned ones (nothing is removed).
func lockDir(path string) (*os.File, bool, error) {
	return nil, false, errors.New("no advisory locks on this platform")
}
