//go:build cuda && cgo

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dcpsim/dcpsim/hwbackend"
)

// ncclAlltoAllMinVersion is the first NCCL with a native ncclAlltoAll (2.28).
const ncclAlltoAllMinVersion = 22800

// commGroup is one NCCL clique over devices 0..ranks-1 of this node, made by
// ncclCommInitAll; rank r runs on workers[r], its own goroutine and stream.
type commGroup struct {
	ranks   int
	workers []*worker
	comms   []C.ncclComm_t
	// native is true when ncclAlltoAll is exported and NCCL is 2.28 or newer.
	native bool
	// warmed records the patterns that have run once, so the first call of
	// each pays NCCL's connection set-up outside the warmups it was asked for.
	warmed map[string]bool
}

// group returns the clique of the given size, creating it on first use.
// Call with b.mu held.
func (b *backend) group(ranks int) (*commGroup, error) {
	if err := libError(C.DCP_LIB_NCCL); err != nil {
		return nil, err
	}
	if ranks < 1 {
		return nil, fmt.Errorf("cuda: %d ranks: need at least 1", ranks)
	}
	if ranks > b.ranks {
		return nil, fmt.Errorf("cuda: %d ranks but this node offers %d GPUs (Options.Ranks %d, %d visible): %w",
			ranks, b.ranks, b.opts.Ranks, b.devices, hwbackend.ErrNoDevice)
	}
	if g, ok := b.groups[ranks]; ok {
		return g, nil
	}
	g := &commGroup{ranks: ranks, comms: make([]C.ncclComm_t, ranks), warmed: map[string]bool{}}
	devs := make([]C.int, ranks)
	for d := range ranks {
		w := b.workers[d]
		if w == nil {
			var err error
			if w, err = startWorker(d); err != nil {
				return nil, err
			}
			b.workers[d] = w
		}
		g.workers = append(g.workers, w)
		devs[d] = C.int(d)
	}
	err := b.primary.do(func() error {
		err := ncclErr("ncclCommInitAll", C.dcp_ncclCommInitAll(&g.comms[0], C.int(ranks), &devs[0]))
		// ncclCommInitAll may leave another device current on this thread.
		return errors.Join(err, cudaErr("cudaSetDevice", C.dcp_cudaSetDevice(C.int(b.opts.Device))))
	})
	if err != nil {
		return nil, err
	}
	var version C.int
	_ = C.dcp_ncclGetVersion(&version)
	g.native = C.dcp_sym_loaded(C.DCP_SYM_ncclAlltoAll) != 0 && int(version) >= ncclAlltoAllMinVersion
	b.groups[ranks] = g
	return g, nil
}

// each runs f for every rank at once, each on its rank's thread.
func (g *commGroup) each(f func(rank int, w *worker) error) error {
	errs := make([]error, g.ranks)
	var wg sync.WaitGroup
	for r, w := range g.workers {
		wg.Go(func() { errs[r] = w.do(func() error { return f(r, w) }) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// time runs setup on every rank, then op on every rank concurrently,
// warmups+repeats times. Each rank times its op between events on its own
// stream; a run's time is the slowest rank's, and the result is the median.
func (g *commGroup) time(pattern string, warmups, repeats int, setup, op func(rank int, w *worker) error) (hwbackend.Timing, error) {
	if err := g.each(setup); err != nil {
		return hwbackend.Timing{}, err
	}
	first := 0
	if !g.warmed[pattern] {
		first = 1
	}
	seconds := make([]float64, 0, repeats)
	for i := range first + warmups + repeats {
		ms := make([]float64, g.ranks)
		err := g.each(func(r int, w *worker) error {
			var err error
			ms[r], err = w.timeOne(func() error { return op(r, w) })
			return err
		})
		if err != nil {
			return hwbackend.Timing{}, err
		}
		g.warmed[pattern] = true
		if i >= first+warmups {
			seconds = append(seconds, slices.Max(ms)/1e3)
		}
	}
	return newTiming(seconds, warmups), nil
}

func (g *commGroup) destroy() error {
	return g.each(func(r int, _ *worker) error {
		return ncclErr("ncclCommDestroy", C.dcp_ncclCommDestroy(g.comms[r]))
	})
}

// buffers reserves a send and a receive buffer of n bytes on every rank and
// fills the send buffers.
func (g *commGroup) buffers(n int64, send, recv []C.dcp_dptr) func(rank int, w *worker) error {
	return func(r int, w *worker) error {
		buf, err := w.reserve(n, n)
		if err != nil {
			return err
		}
		send[r], recv[r] = buf[0], buf[1]
		return cudaErr("cudaMemsetAsync", C.dcp_cudaMemsetAsync(send[r], 0x3c, C.size_t(n), w.stream))
	}
}

// AllToAll times an all-to-all in which every rank sends bytesPerRank/ranks
// bytes to each rank (itself included): ncclAlltoAll on NCCL ≥ 2.28, grouped
// ncclSend/ncclRecv before.
func (b *backend) AllToAll(ranks int, bytesPerRank int64, warmups, repeats int) (hwbackend.Timing, error) {
	if err := checkRuns(warmups, repeats); err != nil {
		return hwbackend.Timing{}, err
	}
	if ranks < 1 || bytesPerRank < int64(ranks) {
		return hwbackend.Timing{}, fmt.Errorf("cuda: all-to-all of %d bytes over %d ranks: need ranks >= 1 and at least a byte per peer",
			bytesPerRank, ranks)
	}
	if err := b.lock(); err != nil {
		return hwbackend.Timing{}, err
	}
	defer b.mu.Unlock()
	g, err := b.group(ranks)
	if err != nil {
		return hwbackend.Timing{}, err
	}
	chunk := bytesPerRank / int64(ranks)
	send, recv := make([]C.dcp_dptr, ranks), make([]C.dcp_dptr, ranks)
	op := func(r int, w *worker) error {
		if g.native {
			return ncclErr("ncclAlltoAll", C.dcp_ncclAlltoAll(send[r], recv[r], C.size_t(chunk), C.DCP_ncclInt8, g.comms[r], w.stream))
		}
		if err := ncclErr("ncclGroupStart", C.dcp_ncclGroupStart()); err != nil {
			return err
		}
		var errs []error
		for peer := range ranks {
			off := C.dcp_dptr(int64(peer) * chunk)
			errs = append(errs,
				ncclErr("ncclSend", C.dcp_ncclSend(send[r]+off, C.size_t(chunk), C.DCP_ncclInt8, C.int(peer), g.comms[r], w.stream)),
				ncclErr("ncclRecv", C.dcp_ncclRecv(recv[r]+off, C.size_t(chunk), C.DCP_ncclInt8, C.int(peer), g.comms[r], w.stream)))
		}
		errs = append(errs, ncclErr("ncclGroupEnd", C.dcp_ncclGroupEnd()))
		return errors.Join(errs...)
	}
	t, err := g.time("all_to_all", warmups, repeats, g.buffers(chunk*int64(ranks), send, recv), op)
	if err != nil {
		return hwbackend.Timing{}, fmt.Errorf("cuda: all-to-all of %d bytes over %d ranks: %w", bytesPerRank, ranks, err)
	}
	return t, nil
}

// SendRecv times one ring step: rank r sends bytes to r+1 and receives bytes
// from r-1 (mod ranks) in one NCCL group.
func (b *backend) SendRecv(ranks int, bytes int64, warmups, repeats int) (hwbackend.Timing, error) {
	if err := checkRuns(warmups, repeats); err != nil {
		return hwbackend.Timing{}, err
	}
	if ranks < 1 || bytes < 1 {
		return hwbackend.Timing{}, fmt.Errorf("cuda: send/recv of %d bytes over %d ranks: both must be positive", bytes, ranks)
	}
	if err := b.lock(); err != nil {
		return hwbackend.Timing{}, err
	}
	defer b.mu.Unlock()
	g, err := b.group(ranks)
	if err != nil {
		return hwbackend.Timing{}, err
	}
	send, recv := make([]C.dcp_dptr, ranks), make([]C.dcp_dptr, ranks)
	op := func(r int, w *worker) error {
		next, prev := (r+1)%ranks, (r+ranks-1)%ranks
		if err := ncclErr("ncclGroupStart", C.dcp_ncclGroupStart()); err != nil {
			return err
		}
		return errors.Join(
			ncclErr("ncclSend", C.dcp_ncclSend(send[r], C.size_t(bytes), C.DCP_ncclInt8, C.int(next), g.comms[r], w.stream)),
			ncclErr("ncclRecv", C.dcp_ncclRecv(recv[r], C.size_t(bytes), C.DCP_ncclInt8, C.int(prev), g.comms[r], w.stream)),
			ncclErr("ncclGroupEnd", C.dcp_ncclGroupEnd()))
	}
	t, err := g.time("send_recv", warmups, repeats, g.buffers(bytes, send, recv), op)
	if err != nil {
		return hwbackend.Timing{}, fmt.Errorf("cuda: send/recv of %d bytes over %d ranks: %w", bytes, ranks, err)
	}
	return t, nil
}
