package hwbackend

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/dcpsim/dcpsim/calib"
)

// Operation names of the ops a sweep may hold, as calib's measurement files
// spell them (calib.OperationNames).
const (
	// OpGEMM is one matrix product; shape keys m, n, k.
	OpGEMM = calib.OpGEMM
	// OpAttentionFwd and OpAttentionBwd are causal attention passes; shape keys
	// batch, seq, heads, kv_heads, head_dim_qk, head_dim_v.
	OpAttentionFwd = calib.OpAttentionFwd
	OpAttentionBwd = calib.OpAttentionBwd
	// OpAllToAll is an all-to-all inside one node; shape keys ranks and bytes
	// (per rank).
	OpAllToAll = calib.KindAllToAll + "_intra"
	// OpSendRecv is one ring step inside one node; shape keys ranks and bytes
	// (per rank).
	OpSendRecv = calib.KindSendRecv + "_intra"
)

// Op is one operation of a sweep at one shape. Attention is used by the
// attention operations, GEMM by OpGEMM, Ranks and Bytes by the collectives.
type Op struct {
	// Operation is one of the Op* names.
	Operation string
	// Attention is the shape of an attention pass.
	Attention AttentionShape
	// GEMM is the shape of a matrix product.
	GEMM GEMMShape
	// Ranks and Bytes (per rank) size a collective.
	Ranks int
	Bytes int64
}

// Shape returns the op's sizes under calib's shape keys.
func (o Op) Shape() map[string]int64 {
	switch o.Operation {
	case OpGEMM:
		return map[string]int64{"m": int64(o.GEMM.M), "n": int64(o.GEMM.N), "k": int64(o.GEMM.K)}
	case OpAttentionFwd, OpAttentionBwd:
		a := o.Attention
		return map[string]int64{"batch": int64(a.Batch), "seq": int64(a.SeqTokens), "heads": int64(a.Heads),
			"kv_heads": int64(a.KVHeads), "head_dim_qk": int64(a.HeadDimQK), "head_dim_v": int64(a.HeadDimV)}
	case OpAllToAll, OpSendRecv:
		return map[string]int64{"ranks": int64(o.Ranks), "bytes": o.Bytes}
	}
	return nil
}

// String writes the op as "operation k=v;k=v" with sorted keys.
func (o Op) String() string {
	sh := o.Shape()
	keys := make([]string, 0, len(sh))
	for k := range sh {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, sh[k])
	}
	return o.Operation + " " + strings.Join(parts, ";")
}

// Work returns the op's work: FLOPs for compute (2·m·n·k for a GEMM; causal
// attention as calib.AttentionFwdFLOPs counts it, times (3·d_qk + 2·d_v)/(d_qk +
// d_v) for the backward pass) and bytes per rank for collectives.
func (o Op) Work() float64 {
	a := o.Attention
	switch o.Operation {
	case OpGEMM:
		return 2 * float64(o.GEMM.M) * float64(o.GEMM.N) * float64(o.GEMM.K)
	case OpAttentionFwd, OpAttentionBwd:
		dqk, dv := float64(a.HeadDimQK), float64(a.HeadDimV)
		f := calib.AttentionFwdFLOPs(float64(a.Batch), float64(a.SeqTokens), float64(a.Heads), dqk, dv, true)
		if o.Operation == OpAttentionBwd {
			f *= (3*dqk + 2*dv) / (dqk + dv)
		}
		return f
	case OpAllToAll, OpSendRecv:
		return float64(o.Bytes)
	}
	return 0
}

// bufferBytes estimates the memory the op allocates and fills before timing.
func (o Op) bufferBytes() float64 {
	a := o.Attention
	switch o.Operation {
	case OpGEMM:
		m, n, k := float64(o.GEMM.M), float64(o.GEMM.N), float64(o.GEMM.K)
		return 4 * (m*k + k*n + m*n)
	case OpAttentionFwd, OpAttentionBwd:
		f := 4 * float64(a.Batch) * float64(a.SeqTokens) * (float64(a.Heads)*float64(a.HeadDimQK+a.HeadDimV) + float64(a.KVHeads)*float64(a.HeadDimQK+a.HeadDimV))
		if o.Operation == OpAttentionBwd {
			f *= 2.5
		}
		return f
	case OpAllToAll, OpSendRecv:
		return 2 * float64(o.Ranks) * float64(o.Bytes)
	}
	return 0
}

// run times the op on b.
func (o Op) run(b Backend, warmups, repeats int) (Timing, error) {
	switch o.Operation {
	case OpGEMM:
		return b.GEMM(o.GEMM, warmups, repeats)
	case OpAttentionFwd:
		return b.AttentionForward(o.Attention, warmups, repeats)
	case OpAttentionBwd:
		return b.AttentionBackward(o.Attention, warmups, repeats)
	case OpAllToAll:
		return b.AllToAll(o.Ranks, o.Bytes, warmups, repeats)
	case OpSendRecv:
		return b.SendRecv(o.Ranks, o.Bytes, warmups, repeats)
	}
	return Timing{}, fmt.Errorf("hwbackend: unknown operation %q", o.Operation)
}

// Sweep is a list of ops to time, each with Warmups untimed and Repeats timed
// runs. Measure runs the ops of one operation from the smallest work up and,
// when Budget > 0, skips the larger ones whose estimated time would overrun the
// operation's share of Budget.
type Sweep struct {
	// Ops are the operations and shapes to time.
	Ops []Op
	// Warmups and Repeats count the untimed and timed runs of each op.
	Warmups, Repeats int
	// Budget is the wall-clock time the whole sweep should fit in; 0 means no limit.
	Budget time.Duration
	// Rates are the nominal throughputs the sweep was sized with (operation name →
	// FLOP/s or bytes per rank per second); Measure splits Budget among the
	// operations by the estimates they give. Nil means NominalCPURates.
	Rates map[string]float64
}

// NominalCPURates are the throughputs (FLOP/s for compute, bytes per rank per
// second for collectives) that DefaultSweep assumes to size a sweep before
// anything is measured: what the CPU backend reached on a 2-core x86-64 build
// machine (Go float32 kernels, about 8-10 GFLOP/s, and a few GB/s of copies).
// A faster machine finishes early; a slower one is trimmed by Measure.
var NominalCPURates = map[string]float64{
	OpGEMM:         7e9,
	OpAttentionFwd: 8e9,
	OpAttentionBwd: 9e9,
	OpAllToAll:     2e9,
	OpSendRecv:     2e9,
}

// NominalGPURates are what GPUSweep assumes: about an H20's reach (costmodel
// §0-§1: 100-140 TFLOPS of BF16 GEMM and attention at long lengths, 100+ GB/s of
// NVLink bus bandwidth), low for an H100-class part, so that it errs short.
var NominalGPURates = map[string]float64{
	OpGEMM:         100e12,
	OpAttentionFwd: 80e12,
	OpAttentionBwd: 60e12,
	OpAllToAll:     100e9,
	OpSendRecv:     100e9,
}

// Fixed costs the sweep estimate adds: per timed or warmup run (goroutine or
// kernel start-up, a collective's hand-offs) and per byte allocated and filled
// with random values before timing. A GPU fills on the device, much faster, but
// its runs and first calls (kernel compilation, communicator set-up) cost more;
// the CPU figures are conservative for both.
const (
	runOverheadSeconds   = 50e-6
	setupSecondsPerByte  = 2e-9
	sweepHeadroom        = 0.75 // DefaultSweep and GPUSweep plan for this share of the budget
	maxSweepLevel        = 8
	cpuCollectiveRanks   = 4
	gpuSetupSecondsPerOp = 0.05
)

// EstimateSeconds returns the sweep's estimated wall time at the given rates
// (operation name → work per second): every op's setup plus its warmup and
// timed runs. An operation missing from rates is estimated at 1 GFLOP/s or GB/s.
func (sw Sweep) EstimateSeconds(rates map[string]float64) float64 {
	var total float64
	for _, o := range sw.Ops {
		total += sw.estimateOp(o, rates)
	}
	return total
}

func (sw Sweep) estimateOp(o Op, rates map[string]float64) float64 {
	rate := rates[o.Operation]
	if rate <= 0 {
		rate = 1e9
	}
	return o.bufferBytes()*setupSecondsPerByte + float64(sw.Warmups+sw.Repeats)*(o.Work()/rate+runOverheadSeconds)
}

// DefaultSweep returns the CPU calibration sweep sized to budget: causal
// attention forward and backward (batch 1, 4 heads of 128 at 9 sequence
// lengths doubling from 16 to 4,096 tokens; 3 heads of 192/128 and 2 of 256 at
// the six lengths from 64 to 2,048), GEMMs with m = 1, 4, ...,
// 4,096 tokens against n = k = 1,024, and all-to-all and ring send/recv among 4
// goroutine ranks at 1 KiB, 4 KiB, ..., 4 MiB per rank. The small sizes are
// there because a CPU saturates early: without the latency-bound end the
// efficiency curve is flat and its Half is noise. When the sweep's estimate at
// NominalCPURates exceeds 75 % of budget, every ladder shifts down (attention
// lengths and GEMM m halve, message sizes quarter) until it fits; the smallest
// sweep is returned even when it does not. The GEMM keeps n = k = 1,024 so that
// its B matrix (4 MiB) streams from memory at small m, as a GPU's weights do
// from HBM: that is the latency-bound end of its curve.
// Budgets under 30 s get 3 timed runs per op, longer ones 5; each op has 1 warmup.
func DefaultSweep(budget time.Duration) Sweep {
	return sizeToBudget(budget, NominalCPURates, cpuSweepAt)
}

// GPUSweep returns a sweep for one GPU and ranks GPUs of its node, sized to
// budget like DefaultSweep but at NominalGPURates: attention (batch 1, 16 heads
// of 128, 12 of MLA's 192/128, 8 of 256) at 7 lengths doubling from 512 to 32,768 tokens, GEMMs with m =
// 256, 512, ..., 16,384 against n = k = 8,192, and, when ranks >= 2, all-to-all
// and send/recv at 64 KiB, 256 KiB, ..., 1 GiB per rank.
func GPUSweep(budget time.Duration, ranks int) Sweep {
	return sizeToBudget(budget, NominalGPURates, func(level, repeats int) Sweep {
		return gpuSweepAt(level, repeats, ranks)
	})
}

// sizeToBudget returns the first of the sweeps at levels 0, 1, ... whose estimate
// fits the budget's headroom.
func sizeToBudget(budget time.Duration, rates map[string]float64, at func(level, repeats int) Sweep) Sweep {
	repeats := 5
	if budget < 30*time.Second {
		repeats = 3
	}
	var sw Sweep
	for level := 0; level <= maxSweepLevel; level++ {
		sw = at(level, repeats)
		sw.Budget, sw.Rates = budget, rates
		if sw.EstimateSeconds(rates) <= sweepHeadroom*budget.Seconds() {
			break
		}
	}
	return sw
}

// cpuSweepAt is DefaultSweep's ladder shifted down level steps.
func cpuSweepAt(level, repeats int) Sweep {
	sw := Sweep{Warmups: 1, Repeats: repeats}
	sw.addAttentionHeadDims(ladder(4096>>level, 9, 1, 16), 4)
	for _, m := range ladder(4096>>level, 7, 2, 1) {
		sw.Ops = append(sw.Ops, Op{Operation: OpGEMM, GEMM: GEMMShape{M: int(m), N: 1024, K: 1024}})
	}
	sw.addCollectives(cpuCollectiveRanks, ladder(4<<20>>(2*level), 7, 2, 256))
	return sw
}

// gpuSweepAt is GPUSweep's ladder shifted down level steps.
func gpuSweepAt(level, repeats, ranks int) Sweep {
	sw := Sweep{Warmups: 2, Repeats: repeats + 5}
	sw.addAttentionHeadDims(ladder(32768>>level, 7, 1, 64), 16)
	hidden := max(8192>>(level/2), 1024)
	for _, m := range ladder(16384>>level, 7, 1, 16) {
		sw.Ops = append(sw.Ops, Op{Operation: OpGEMM, GEMM: GEMMShape{M: int(m), N: hidden, K: hidden}})
	}
	if ranks >= 2 {
		sw.addCollectives(ranks, ladder(1<<30>>(2*level), 8, 2, 4<<10))
	}
	return sw
}

// sweepHeadDims are the attention head dims a sweep measures, d_qk/d_v: the
// three knots of compute.Compute.AttentionEfficiency (128; MLA's 192/128; 256),
// so that a calibration fits every attention curve a preset reads.
var sweepHeadDims = [][2]int{{128, 128}, {192, 128}, {256, 256}}

// addAttentionHeadDims appends attention at each of sweepHeadDims, with the
// heads scaled so that each head dim does about the FLOPs of heads128 heads
// of 128 (heads·(d_qk + d_v) kept): head dim 128 at every length of seqs, the
// others at the lengths below the longest but one (six at most), which cost
// a third as much together and still span the curve.
func (sw *Sweep) addAttentionHeadDims(seqs []int64, heads128 int) {
	for i, d := range sweepHeadDims {
		h := max(heads128*256/(d[0]+d[1]), 1)
		s := seqs
		if i > 0 {
			s = seqs[max(len(seqs)-7, 0):max(len(seqs)-1, 0)]
		}
		sw.addAttention(s, h, d[0], d[1])
	}
}

// addAttention appends forward and backward passes at each length.
func (sw *Sweep) addAttention(seqs []int64, heads, dqk, dv int) {
	for _, op := range []string{OpAttentionFwd, OpAttentionBwd} {
		for _, seq := range seqs {
			a := AttentionShape{Batch: 1, SeqTokens: int(seq), Heads: heads, KVHeads: heads, HeadDimQK: dqk, HeadDimV: dv}
			sw.Ops = append(sw.Ops, Op{Operation: op, Attention: a})
		}
	}
}

// addCollectives appends all-to-all and send/recv steps at each size.
func (sw *Sweep) addCollectives(ranks int, sizes []int64) {
	for _, op := range []string{OpAllToAll, OpSendRecv} {
		for _, b := range sizes {
			sw.Ops = append(sw.Ops, Op{Operation: op, Ranks: ranks, Bytes: b})
		}
	}
}

// ladder returns up to n distinct sizes top, top>>shift, top>>2·shift, ...,
// none below floor, in ascending order.
func ladder(top int64, n int, shift uint, floor int64) []int64 {
	var out []int64
	for i := n - 1; i >= 0; i-- {
		v := max(top>>(uint(i)*shift), floor)
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// Measure times every op of sw on b and returns one calib.Measurement per op
// it ran. Operations run one after another (in order of first appearance), each
// from its smallest work up, and the measurements come in that order; when
// sw.Budget > 0 each operation gets a share of what is left of the budget in
// proportion to its estimate at sw.Rates, and an op is skipped (with its
// larger siblings) when its time, extrapolated linearly in work from the last op
// run, would overrun that share. The smallest op of each operation always runs.
// progress, if not nil, gets one line per op. On a backend error or a cancelled
// ctx Measure returns the measurements so far with the error.
func Measure(ctx context.Context, b Backend, sw Sweep, progress io.Writer) ([]calib.Measurement, error) {
	if sw.Repeats < 1 || sw.Warmups < 0 {
		return nil, fmt.Errorf("hwbackend: sweep has warmups = %d, repeats = %d: need warmups >= 0 and repeats >= 1", sw.Warmups, sw.Repeats)
	}
	if progress == nil {
		progress = io.Discard
	}
	var order []string
	byOp := map[string][]Op{}
	for _, o := range sw.Ops {
		if o.Work() <= 0 {
			return nil, fmt.Errorf("hwbackend: sweep op %s: unknown operation or empty shape", o)
		}
		if _, ok := byOp[o.Operation]; !ok {
			order = append(order, o.Operation)
		}
		byOp[o.Operation] = append(byOp[o.Operation], o)
	}
	rates := sw.Rates
	if rates == nil {
		rates = NominalCPURates
	}
	estimates := make(map[string]float64, len(order))
	var estimateLeft float64
	for _, name := range order {
		ops := byOp[name]
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].Work() < ops[j].Work() })
		estimates[name] = Sweep{Ops: ops, Warmups: sw.Warmups, Repeats: sw.Repeats}.EstimateSeconds(rates)
		estimateLeft += estimates[name]
	}
	start := time.Now()
	var out []calib.Measurement
	for _, name := range order {
		share := math.Inf(1)
		if sw.Budget > 0 {
			left := sw.Budget.Seconds() - time.Since(start).Seconds()
			share = max(left, 0) * estimates[name] / estimateLeft
		}
		estimateLeft -= estimates[name]
		opStart := time.Now()
		var lastWall, lastWork float64
		for i, o := range byOp[name] {
			if err := ctx.Err(); err != nil {
				return out, fmt.Errorf("hwbackend: sweep interrupted before %s: %w", o, err)
			}
			spent := time.Since(opStart).Seconds()
			if i > 0 && lastWork > 0 {
				if predicted := lastWall * o.Work() / lastWork; spent+predicted > share {
					fmt.Fprintf(progress, "  skip %s and larger: about %.2g s more, %.2g s left of this operation's %.2g s share of the budget\n",
						o, predicted, share-spent, share)
					break
				}
			}
			t0 := time.Now()
			tm, err := o.run(b, sw.Warmups, sw.Repeats)
			if err != nil {
				return out, fmt.Errorf("hwbackend: %s on %s: %w", o, b.Name(), err)
			}
			lastWall, lastWork = time.Since(t0).Seconds(), o.Work()
			out = append(out, calib.Measurement{Operation: o.Operation, Shape: o.Shape(), Seconds: tm.Seconds, Repeats: tm.Repeats})
			fmt.Fprintf(progress, "  %-60s %10.4g s  %s\n", o, tm.Seconds, rate(o, tm.Seconds))
		}
	}
	return out, nil
}

// rate formats an op's achieved throughput.
func rate(o Op, seconds float64) string {
	if seconds <= 0 {
		return ""
	}
	switch o.Operation {
	case OpAllToAll, OpSendRecv:
		return fmt.Sprintf("%.3g GB/s per rank", o.Work()/seconds/1e9)
	}
	return fmt.Sprintf("%.3g GFLOP/s", o.Work()/seconds/1e9)
}

// Ranker is an optional capability of a Backend: the most ranks its collectives
// can use (GPUs of the node for CUDA). The calibrate command sizes the
// collective sweep with it when the backend has it.
type Ranker interface {
	// Ranks returns the most ranks a collective may span.
	Ranks() int
}
