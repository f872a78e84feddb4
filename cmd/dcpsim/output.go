package main

import (
	"context"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"io"
	"os"

	"github.com/dcpsim/dcpsim/badinput"
)

// Single-file outputs (plan/run --batches --out, calibrate --out and
// --measurements, report --out and --readme) are checked before any work:
// absent or a regular file (never a FIFO, a device node or a folder), in a
// folder that takes a new file, and not one of the command's inputs.

// checkOutFile checks the output file path of flag (safeio.CheckOutputFile),
// so a bad one is refused (exit 2, naming the flag and the path) before any
// simulation.
func checkOutFile(flag, path string) error {
	if err := safeio.CheckOutputFile(path); err != nil {
		return badinput.Errorf("%s %w", flag, err)
	}
	return nil
}

// checkNotInput refuses an output that is the same file as an input (by
// inode, whatever the names: os.SameFile), which writing it would destroy.
// An input that is stdin ("-") or absent is no file to compare.
func checkNotInput(outFlag, out, inFlag, in string) error {
	if in == "" || in == "-" || out == "" {
		return nil
	}
	a, err1 := os.Stat(out)
	b, err2 := os.Stat(in)
	if err1 == nil && err2 == nil && os.SameFile(a, b) {
		return badInput("%s %s is the same file as %s %s: writing it would destroy the input; name another file", outFlag, out, inFlag, in)
	}
	return nil
}

// untilDone runs f and returns its error, or ctx's as soon as ctx is done
// (f keeps running on its own goroutine, which the process's exit ends), so
// an interrupted command cleans up even while f is deep in one batch.
func untilDone(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if ctx.Err() != nil { // f may have failed on the reader or writer ctx stopped
			return ctx.Err()
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ctxReader and ctxWriter fail once ctx is done, so a command writing its
// output stops at the next read or write.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
