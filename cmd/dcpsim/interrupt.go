package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
)

// interruptContext is the context of a command that writes results: done on
// SIGINT (Ctrl-C), so the writers stop and clean up instead of the process
// dying mid-file. Tests replace it.
var interruptContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// errInterrupted is the error of a command stopped by SIGINT (exit 1).
var errInterrupted = errors.New("interrupted")

// interrupted turns the error of a command stopped by ctx into
// errInterrupted; other errors pass unchanged.
func interrupted(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return errInterrupted
	}
	return err
}
