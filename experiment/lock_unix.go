//go:build unix

package experiment

import (
	"errors"
	"os"
	"syscall"
)

// lockDir opens the folder path and takes an exclusive advisory lock on it
// without waiting. ok is false when another process (or handle) holds one,
// err when the folder cannot be opened or the filesystem has no locks.
// Closing the file releases the lock.
func lockDir(path string) (f *os.File, ok bool, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, false, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return f, true, nil
}
