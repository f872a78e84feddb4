package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// interruptSignals stop a command as Ctrl-C does: SIGINT, SIGTERM (kill,
// a batch scheduler's time limit, docker stop) and SIGHUP (the terminal
// closed).
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// interruptContext is the context of a command that writes results: done on
// SIGINT (Ctrl-C), SIGTERM or SIGHUP, so the writers stop and clean up
// instead of the process dying mid-file. Tests replace it.
var interruptContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), interruptSignals...)
}

// errInterrupted is the error of a command stopped by a signal (exit 1).
var errInterrupted = errors.New("interrupted")

// interrupted turns the error of a command stopped by ctx into
// errInterrupted; other errors pass unchanged.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return errInterrupted
	}
	return err
}
