package hwbackend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// maxBufferBytes bounds the memory one CPU measurement may allocate, so that a
// mistyped shape fails with an error instead of exhausting the machine.
const maxBufferBytes = 8 << 30

// attnTile is the query and key tile length of the tiled attention kernels
// (rows of Q and rows of K/V per block, as FlashAttention-2's Br = Bc).
const attnTile = 64

// CPU is a Backend that runs real float32 kernels on the host CPU: tiled causal
// attention (FlashAttention-2 style online softmax forward, recomputing
// backward), GEMM through gonum's blas32, and collectives among goroutine ranks
// that copy byte slices through shared memory. BF16 is not available on the
// CPU, so every kernel computes in float32 (the FLOP counts are the same).
type CPU struct {
	workers int
}

var _ Backend = (*CPU)(nil)

// NewCPU returns a CPU backend whose attention kernels run on workers
// goroutines (one head at a time each); workers <= 0 means GOMAXPROCS. The GEMM
// is gonum's blocked Sgemm, which parallelises over GOMAXPROCS goroutines itself.
func NewCPU(workers int) *CPU {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &CPU{workers: workers}
}

// Name identifies the backend and the host, e.g. "cpu (2 workers, linux/amd64, FP32)".
func (c *CPU) Name() string {
	return fmt.Sprintf("cpu (%d workers, %s/%s, FP32)", c.workers, runtime.GOOS, runtime.GOARCH)
}

// Workers returns the number of goroutines the attention kernels use.
func (c *CPU) Workers() int { return c.workers }

// Close releases nothing: the CPU backend holds no resources between calls.
func (c *CPU) Close() error { return nil }

// AttentionForward times the tiled causal attention forward pass of s on fresh
// random inputs.
func (c *CPU) AttentionForward(s AttentionShape, warmups, repeats int) (Timing, error) {
	if err := checkRuns(warmups, repeats); err != nil {
		return Timing{}, err
	}
	a, err := newAttnBuffers(s, false)
	if err != nil {
		return Timing{}, err
	}
	return timeRuns(warmups, repeats, func() { attentionForward(a, c.workers) })
}

// AttentionBackward times the causal attention backward pass of s (recompute
// of the scores, then dQ, dK and dV); the forward pass that produces O and the
// log-sum-exp it needs runs once, untimed.
func (c *CPU) AttentionBackward(s AttentionShape, warmups, repeats int) (Timing, error) {
	if err := checkRuns(warmups, repeats); err != nil {
		return Timing{}, err
	}
	a, err := newAttnBuffers(s, true)
	if err != nil {
		return Timing{}, err
	}
	attentionForward(a, c.workers)
	return timeRuns(warmups, repeats, func() { attentionBackward(a, c.workers) })
}

// GEMM times C = A·B in float32 with blas32.Gemm on fresh random matrices.
func (c *CPU) GEMM(s GEMMShape, warmups, repeats int) (Timing, error) {
	if err := checkRuns(warmups, repeats); err != nil {
		return Timing{}, err
	}
	if s.M <= 0 || s.N <= 0 || s.K <= 0 {
		return Timing{}, fmt.Errorf("hwbackend: GEMM shape %+v: every size must be > 0", s)
	}
	if n := 4 * (float64(s.M)*float64(s.K) + float64(s.K)*float64(s.N) + float64(s.M)*float64(s.N)); n > maxBufferBytes {
		return Timing{}, fmt.Errorf("hwbackend: GEMM shape %+v needs %.1f GiB, more than the %d GiB limit", s, n/(1<<30), maxBufferBytes>>30)
	}
	rng := rand.New(rand.NewPCG(uint64(s.M), uint64(s.N)<<32|uint64(s.K)))
	a := blas32.General{Rows: s.M, Cols: s.K, Stride: s.K, Data: randomFloats(rng, s.M*s.K)}
	b := blas32.General{Rows: s.K, Cols: s.N, Stride: s.N, Data: randomFloats(rng, s.K*s.N)}
	out := blas32.General{Rows: s.M, Cols: s.N, Stride: s.N, Data: make([]float32, s.M*s.N)}
	return timeRuns(warmups, repeats, func() { blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, out) })
}

// AllToAll times one all-to-all among ranks goroutines: each rank's
// bytesPerRank-byte send buffer is cut into ranks equal chunks (a remainder of
// fewer than ranks bytes stays unsent) and chunk d is copied into rank d's
// receive buffer (the local chunk too, as NCCL does). The time covers all
// copies, from the start signal until the last rank is done.
func (c *CPU) AllToAll(ranks int, bytesPerRank int64, warmups, repeats int) (Timing, error) {
	if err := checkRuns(warmups, repeats); err != nil {
		return Timing{}, err
	}
	if err := checkCollective(ranks, bytesPerRank); err != nil {
		return Timing{}, err
	}
	if bytesPerRank < int64(ranks) {
		return Timing{}, fmt.Errorf("hwbackend: all-to-all of %d bytes per rank among %d ranks: need at least one byte per peer", bytesPerRank, ranks)
	}
	g := newRankGroup(ranks, bytesPerRank)
	defer g.close()
	return timeRuns(warmups, repeats, g.allToAll)
}

// SendRecv times one ring step among ranks goroutines: every rank hands its
// bytes-byte send buffer to its successor over a channel, and the successor
// copies it into its receive buffer. The time covers the hand-offs and copies.
func (c *CPU) SendRecv(ranks int, bytes int64, warmups, repeats int) (Timing, error) {
	if err := checkRuns(warmups, repeats); err != nil {
		return Timing{}, err
	}
	if err := checkCollective(ranks, bytes); err != nil {
		return Timing{}, err
	}
	g := newRankGroup(ranks, bytes)
	defer g.close()
	return timeRuns(warmups, repeats, g.sendRecv)
}

// checkRuns rejects run counts no measurement can use.
func checkRuns(warmups, repeats int) error {
	if warmups < 0 || repeats < 1 {
		return fmt.Errorf("hwbackend: warmups = %d, repeats = %d: need warmups >= 0 and repeats >= 1", warmups, repeats)
	}
	return nil
}

func checkCollective(ranks int, bytes int64) error {
	if ranks < 2 {
		return fmt.Errorf("hwbackend: %d ranks: a collective needs at least 2", ranks)
	}
	if bytes <= 0 {
		return fmt.Errorf("hwbackend: %d bytes per rank: must be > 0", bytes)
	}
	if 2*float64(ranks)*float64(bytes) > maxBufferBytes {
		return fmt.Errorf("hwbackend: %d ranks × %d bytes needs more than the %d GiB limit", ranks, bytes, maxBufferBytes>>30)
	}
	return nil
}

// timeRuns runs f warmups times untimed and repeats times timed and returns the
// median of the timed runs.
func timeRuns(warmups, repeats int, f func()) (Timing, error) {
	for range warmups {
		f()
	}
	secs := make([]float64, repeats)
	for i := range secs {
		start := time.Now()
		f()
		secs[i] = time.Since(start).Seconds()
	}
	return Timing{Seconds: median(secs), Repeats: repeats, Warmups: warmups}, nil
}

// median returns the median of xs (the mean of the two middle values for an
// even count) without reordering xs; it panics on an empty slice.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		panic("hwbackend: median of no values")
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func randomFloats(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// parallelFor calls f(task, worker) for every task in [0, n) on up to workers
// goroutines; worker in [0, workers) indexes per-goroutine scratch.
func parallelFor(n, workers int, f func(task, worker int)) {
	workers = min(workers, n)
	if workers <= 1 {
		for t := range n {
			f(t, 0)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t := int(next.Add(1)) - 1
				if t >= n {
					return
				}
				f(t, w)
			}
		}()
	}
	wg.Wait()
}

// attnBuffers holds one attention call's tensors, head-major: Q and O are
// [batch][heads][seq][dim], K and V are [batch][kvHeads][seq][dim], LSE is
// [batch][heads][seq]. The gradient buffers exist only for the backward pass;
// dKh and dVh hold per-query-head partial gradients, summed over each GQA
// group into dK and dV.
type attnBuffers struct {
	s                   AttentionShape
	q, k, v, o, lse     []float32
	dO, dQ, dK, dV      []float32
	dKh, dVh, rowDotOdO []float32
}

func checkAttention(s AttentionShape) error {
	if s.Batch <= 0 || s.SeqTokens <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.HeadDimQK <= 0 || s.HeadDimV <= 0 {
		return fmt.Errorf("hwbackend: attention shape %+v: every size must be > 0", s)
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("hwbackend: attention shape %+v: heads must be a multiple of kv_heads", s)
	}
	return nil
}

func newAttnBuffers(s AttentionShape, backward bool) (*attnBuffers, error) {
	if err := checkAttention(s); err != nil {
		return nil, err
	}
	bs, h, hkv := float64(s.Batch)*float64(s.SeqTokens), float64(s.Heads), float64(s.KVHeads)
	dqk, dv := float64(s.HeadDimQK), float64(s.HeadDimV)
	floats := bs * (h*(dqk+dv+1) + hkv*(dqk+dv))
	if backward {
		floats += bs * (h*(dv+dqk+1) + hkv*(dqk+dv) + h*(dqk+dv))
	}
	if 4*floats > maxBufferBytes {
		return nil, fmt.Errorf("hwbackend: attention shape %+v needs %.1f GiB, more than the %d GiB limit", s, 4*floats/(1<<30), maxBufferBytes>>30)
	}
	rng := rand.New(rand.NewPCG(uint64(s.SeqTokens), uint64(s.Heads)<<16|uint64(s.HeadDimQK)))
	b, n := s.Batch, s.SeqTokens
	a := &attnBuffers{
		s:   s,
		q:   randomFloats(rng, b*s.Heads*n*s.HeadDimQK),
		k:   randomFloats(rng, b*s.KVHeads*n*s.HeadDimQK),
		v:   randomFloats(rng, b*s.KVHeads*n*s.HeadDimV),
		o:   make([]float32, b*s.Heads*n*s.HeadDimV),
		lse: make([]float32, b*s.Heads*n),
	}
	if backward {
		a.dO = randomFloats(rng, b*s.Heads*n*s.HeadDimV)
		a.dQ = make([]float32, b*s.Heads*n*s.HeadDimQK)
		a.dK = make([]float32, b*s.KVHeads*n*s.HeadDimQK)
		a.dV = make([]float32, b*s.KVHeads*n*s.HeadDimV)
		a.rowDotOdO = make([]float32, b*s.Heads*n)
		if s.Heads != s.KVHeads {
			a.dKh = make([]float32, b*s.Heads*n*s.HeadDimQK)
			a.dVh = make([]float32, b*s.Heads*n*s.HeadDimV)
		}
	}
	return a, nil
}

// head returns the slice of a head-major tensor x that belongs to head h of
// sequence b (heads per sequence, seq rows of dim values).
func head(x []float32, b, h, heads, seq, dim int) []float32 {
	off := ((b*heads + h) * seq) * dim
	return x[off : off+seq*dim]
}

// kvHead returns the key/value head that query head h reads (GQA groups of
// consecutive query heads share one K/V head).
func (a *attnBuffers) kvHead(h int) int { return h / (a.s.Heads / a.s.KVHeads) }

func (a *attnBuffers) scale() float32 { return float32(1 / math.Sqrt(float64(a.s.HeadDimQK))) }

// fwdScratch is one worker's tiles for the forward pass.
type fwdScratch struct {
	scores, acc, rowMax, rowSum []float32
}

// attentionForward computes O and the row log-sum-exp of causal softmax(Q·Kᵀ/√d)·V,
// one (sequence, head) task at a time on workers goroutines.
func attentionForward(a *attnBuffers, workers int) {
	s := a.s
	scratch := make([]fwdScratch, min(workers, s.Batch*s.Heads))
	for i := range scratch {
		scratch[i] = fwdScratch{
			scores: make([]float32, attnTile*attnTile),
			acc:    make([]float32, attnTile*s.HeadDimV),
			rowMax: make([]float32, attnTile),
			rowSum: make([]float32, attnTile),
		}
	}
	parallelFor(s.Batch*s.Heads, len(scratch), func(task, w int) {
		b, h := task/s.Heads, task%s.Heads
		g := a.kvHead(h)
		n := s.SeqTokens
		attnFwdHead(
			head(a.q, b, h, s.Heads, n, s.HeadDimQK),
			head(a.k, b, g, s.KVHeads, n, s.HeadDimQK),
			head(a.v, b, g, s.KVHeads, n, s.HeadDimV),
			head(a.o, b, h, s.Heads, n, s.HeadDimV),
			head(a.lse, b, h, s.Heads, n, 1),
			n, s.HeadDimQK, s.HeadDimV, a.scale(), &scratch[w])
	})
}

// attnFwdHead is FlashAttention-2's forward for one head: for each query tile,
// sweep the key tiles up to the diagonal keeping a running row maximum and row
// sum, rescaling the output accumulator as the maximum grows.
func attnFwdHead(q, k, v, o, lse []float32, n, dqk, dv int, scale float32, ws *fwdScratch) {
	negInf := float32(math.Inf(-1))
	for i0 := 0; i0 < n; i0 += attnTile {
		br := min(attnTile, n-i0)
		qi := blas32.General{Rows: br, Cols: dqk, Stride: dqk, Data: q[i0*dqk : (i0+br)*dqk]}
		acc := blas32.General{Rows: br, Cols: dv, Stride: dv, Data: ws.acc[:br*dv]}
		clear(acc.Data)
		for r := range br {
			ws.rowMax[r], ws.rowSum[r] = negInf, 0
		}
		for j0 := 0; j0 < i0+br; j0 += attnTile {
			bc := min(attnTile, n-j0)
			kj := blas32.General{Rows: bc, Cols: dqk, Stride: dqk, Data: k[j0*dqk : (j0+bc)*dqk]}
			sc := blas32.General{Rows: br, Cols: bc, Stride: attnTile, Data: ws.scores[:(br-1)*attnTile+bc]}
			blas32.Gemm(blas.NoTrans, blas.Trans, scale, qi, kj, 0, sc)
			for r := range br {
				row := sc.Data[r*attnTile : r*attnTile+bc]
				valid := min(bc, i0+r-j0+1) // causal: key j0+c is visible to query i0+r when j0+c <= i0+r
				if valid <= 0 {
					clear(row)
					continue
				}
				m := ws.rowMax[r]
				for _, x := range row[:valid] {
					m = max(m, x)
				}
				var sum float32
				for c := range valid {
					p := float32(math.Exp(float64(row[c] - m)))
					row[c] = p
					sum += p
				}
				clear(row[valid:])
				alpha := float32(math.Exp(float64(ws.rowMax[r] - m)))
				ws.rowSum[r] = ws.rowSum[r]*alpha + sum
				ws.rowMax[r] = m
				if alpha != 1 {
					accRow := acc.Data[r*dv : (r+1)*dv]
					for c := range accRow {
						accRow[c] *= alpha
					}
				}
			}
			vj := blas32.General{Rows: bc, Cols: dv, Stride: dv, Data: v[j0*dv : (j0+bc)*dv]}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, sc, vj, 1, acc)
		}
		for r := range br {
			inv := 1 / ws.rowSum[r]
			out := o[(i0+r)*dv : (i0+r+1)*dv]
			for c, x := range acc.Data[r*dv : (r+1)*dv] {
				out[c] = x * inv
			}
			lse[i0+r] = ws.rowMax[r] + float32(math.Log(float64(ws.rowSum[r])))
		}
	}
}

// bwdScratch is one worker's tiles for the backward pass.
type bwdScratch struct {
	p, dP []float32
}

// attentionBackward computes dQ, dK and dV from Q, K, V, O, dO and the forward
// log-sum-exp, recomputing the attention probabilities tile by tile
// (FlashAttention-2's backward). Tasks are (sequence, query head); with GQA each
// task writes its own partial dK and dV, summed over the group afterwards.
func attentionBackward(a *attnBuffers, workers int) {
	s := a.s
	n, dqk, dv := s.SeqTokens, s.HeadDimQK, s.HeadDimV
	scratch := make([]bwdScratch, min(workers, s.Batch*s.Heads))
	for i := range scratch {
		scratch[i] = bwdScratch{p: make([]float32, attnTile*attnTile), dP: make([]float32, attnTile*attnTile)}
	}
	dKh, dVh, kvHeadsOut := a.dKh, a.dVh, s.Heads
	if s.Heads == s.KVHeads {
		dKh, dVh = a.dK, a.dV
	}
	parallelFor(s.Batch*s.Heads, len(scratch), func(task, w int) {
		b, h := task/s.Heads, task%s.Heads
		g := a.kvHead(h)
		o, dO := head(a.o, b, h, s.Heads, n, dv), head(a.dO, b, h, s.Heads, n, dv)
		rowDot := head(a.rowDotOdO, b, h, s.Heads, n, 1)
		for r := range n {
			var d float32
			for c := range dv {
				d += o[r*dv+c] * dO[r*dv+c]
			}
			rowDot[r] = d
		}
		dq, dk, dvv := head(a.dQ, b, h, s.Heads, n, dqk), head(dKh, b, h, kvHeadsOut, n, dqk), head(dVh, b, h, kvHeadsOut, n, dv)
		clear(dq)
		clear(dk)
		clear(dvv)
		attnBwdHead(
			head(a.q, b, h, s.Heads, n, dqk),
			head(a.k, b, g, s.KVHeads, n, dqk),
			head(a.v, b, g, s.KVHeads, n, dv),
			dO, head(a.lse, b, h, s.Heads, n, 1), rowDot,
			dq, dk, dvv, n, dqk, dv, a.scale(), &scratch[w])
	})
	if s.Heads == s.KVHeads {
		return
	}
	group := s.Heads / s.KVHeads
	parallelFor(s.Batch*s.KVHeads, workers, func(task, _ int) {
		b, g := task/s.KVHeads, task%s.KVHeads
		sumGroup(head(a.dK, b, g, s.KVHeads, n, dqk), a.dKh, b, g*group, group, s.Heads, n, dqk)
		sumGroup(head(a.dV, b, g, s.KVHeads, n, dv), a.dVh, b, g*group, group, s.Heads, n, dv)
	})
}

// sumGroup writes into dst the sum of the per-query-head gradients of heads
// [first, first+count) of sequence b.
func sumGroup(dst, perHead []float32, b, first, count, heads, n, dim int) {
	copy(dst, head(perHead, b, first, heads, n, dim))
	for h := first + 1; h < first+count; h++ {
		for i, x := range head(perHead, b, h, heads, n, dim) {
			dst[i] += x
		}
	}
}

// attnBwdHead is FlashAttention-2's backward for one head: for each key tile,
// sweep the query tiles from the diagonal down, recompute P = exp(S − LSE) and
// accumulate dV += Pᵀ·dO, dS = P∘(dO·Vᵀ − rowDot), dQ += dS·K/√d, dK += dSᵀ·Q/√d.
func attnBwdHead(q, k, v, dO, lse, rowDot, dq, dk, dvOut []float32, n, dqk, dv int, scale float32, ws *bwdScratch) {
	for j0 := 0; j0 < n; j0 += attnTile {
		bc := min(attnTile, n-j0)
		kj := blas32.General{Rows: bc, Cols: dqk, Stride: dqk, Data: k[j0*dqk : (j0+bc)*dqk]}
		vj := blas32.General{Rows: bc, Cols: dv, Stride: dv, Data: v[j0*dv : (j0+bc)*dv]}
		dkj := blas32.General{Rows: bc, Cols: dqk, Stride: dqk, Data: dk[j0*dqk : (j0+bc)*dqk]}
		dvj := blas32.General{Rows: bc, Cols: dv, Stride: dv, Data: dvOut[j0*dv : (j0+bc)*dv]}
		for i0 := j0; i0 < n; i0 += attnTile {
			br := min(attnTile, n-i0)
			qi := blas32.General{Rows: br, Cols: dqk, Stride: dqk, Data: q[i0*dqk : (i0+br)*dqk]}
			dOi := blas32.General{Rows: br, Cols: dv, Stride: dv, Data: dO[i0*dv : (i0+br)*dv]}
			dqi := blas32.General{Rows: br, Cols: dqk, Stride: dqk, Data: dq[i0*dqk : (i0+br)*dqk]}
			p := blas32.General{Rows: br, Cols: bc, Stride: attnTile, Data: ws.p[:(br-1)*attnTile+bc]}
			dP := blas32.General{Rows: br, Cols: bc, Stride: attnTile, Data: ws.dP[:(br-1)*attnTile+bc]}
			blas32.Gemm(blas.NoTrans, blas.Trans, scale, qi, kj, 0, p)
			for r := range br {
				row := p.Data[r*attnTile : r*attnTile+bc]
				valid := min(bc, i0+r-j0+1)
				l := lse[i0+r]
				for c := range valid {
					row[c] = float32(math.Exp(float64(row[c] - l)))
				}
				clear(row[max(valid, 0):])
			}
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, p, dOi, 1, dvj)
			blas32.Gemm(blas.NoTrans, blas.Trans, 1, dOi, vj, 0, dP)
			for r := range br {
				d := rowDot[i0+r]
				pr, dpr := p.Data[r*attnTile:r*attnTile+bc], dP.Data[r*attnTile:r*attnTile+bc]
				for c := range pr {
					dpr[c] = pr[c] * (dpr[c] - d)
				}
			}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, scale, dP, kj, 1, dqi)
			blas32.Gemm(blas.Trans, blas.NoTrans, scale, dP, qi, 1, dkj)
		}
	}
}

// rankGroup is ranks goroutines, each with a send and a receive buffer, that
// run one collective per start signal.
type rankGroup struct {
	send, recv [][]byte
	links      []chan []byte // links[r] carries the predecessor's buffer to rank r
	start      []chan func(rank int)
	done       sync.WaitGroup
	stop       sync.Once
}

func newRankGroup(ranks int, bytes int64) *rankGroup {
	g := &rankGroup{
		send:  make([][]byte, ranks),
		recv:  make([][]byte, ranks),
		links: make([]chan []byte, ranks),
		start: make([]chan func(int), ranks),
	}
	for r := range ranks {
		g.send[r] = make([]byte, bytes)
		g.recv[r] = make([]byte, bytes)
		for i := range g.send[r] {
			g.send[r][i] = byte(r*131 + i*7)
		}
		g.links[r] = make(chan []byte, 1)
		g.start[r] = make(chan func(int))
		go func() {
			for f := range g.start[r] {
				f(r)
				g.done.Done()
			}
		}()
	}
	return g
}

// run starts f on every rank and waits until all ranks return.
func (g *rankGroup) run(f func(rank int)) {
	g.done.Add(len(g.start))
	for _, c := range g.start {
		c <- f
	}
	g.done.Wait()
}

// allToAll copies chunk d of every rank's send buffer into slot r of rank d's
// receive buffer. Chunks are len/ranks bytes; a remainder of fewer than ranks
// bytes stays unsent.
func (g *rankGroup) allToAll() {
	n := len(g.send)
	g.run(func(r int) {
		c := len(g.send[r]) / n
		for i := range n {
			d := (r + i) % n // stagger the destinations so ranks do not all write to one peer at once
			copy(g.recv[d][r*c:(r+1)*c], g.send[r][d*c:(d+1)*c])
		}
	})
}

// sendRecv hands every rank's send buffer to its successor, which copies it
// into its receive buffer.
func (g *rankGroup) sendRecv() {
	n := len(g.send)
	g.run(func(r int) {
		g.links[(r+1)%n] <- g.send[r]
		copy(g.recv[r], <-g.links[r])
	})
}

func (g *rankGroup) close() {
	g.stop.Do(func() {
		for _, c := range g.start {
			close(c)
		}
	})
}
