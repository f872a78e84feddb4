package kineto

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
)

// Predictor prices one classified kernel on one GPU: the seconds the cost
// model gives it, or a non-empty why when it cannot price it.
type Predictor interface {
	Predict(k *Kernel) (seconds float64, why string)
}

// computePredictor is NewComputePredictor's Predictor.
type computePredictor struct {
	p    *calib.Profile
	err  string
	gemm *compute.Compute
	mu   sync.Mutex
	attn map[[4]int64]*compute.Compute
}

// NewComputePredictor prices kernels with profile p as the cost model prices
// a layer's ops, each plus p.KernelLaunchSeconds (the fixed per-kernel cost
// the fitter subtracts from every measured compute kernel, so a measured
// kernel is model time + launch):
//
//	gemm (bf16/fp16)     Compute.GEMMSeconds(m, n, k, Count = batch)
//	attention fwd/bwd    Compute.AttentionFwdSeconds(seq, 1, seq) (AttentionBwdSeconds) × batch,
//	(causal, exact)      for a model of the kernel's heads and head dims
//	memory-bound         Compute.MemorySeconds(bytes), bytes from the op's recorded inputs
//
//	gemm (fp8)           Compute.FP8GEMMSeconds(m, n, k, Count = batch), on a profile with
//	                     peak_fp8_flops and gemm_fp8 (Profile.HasFP8)
//
// Everything else it declines with a reason: fp8 GEMMs on a profile without
// FP8 ("fp8 GEMM: not priced by this predictor"; a caller may wrap another
// predictor around this one for them), grouped GEMMs,
// collectives and EP dispatch/combine (their time includes waiting for
// peers; sim/network prices communication), attention pre/post-processing
// (the cost model's attention backward covers the whole backward),
// memcpy/memset, unclassified kernels, and any kernel whose Why is set. It
// is safe for concurrent use.
func NewComputePredictor(p *calib.Profile) Predictor {
	c := &computePredictor{p: p, attn: map[[4]int64]*compute.Compute{}}
	switch {
	case p == nil:
		c.err = "no calibration profile"
	default:
		if err := p.Validate(); err != nil {
			c.err = "profile " + p.Name + ": " + err.Error()
		}
	}
	c.gemm = &compute.Compute{Profile: p}
	return c
}

// compute is a Compute of one GPU for a model of the given attention sizes.
func (c *computePredictor) compute(heads, kvHeads, dqk, dv int64) *compute.Compute {
	key := [4]int64{heads, kvHeads, dqk, dv}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.attn[key]; ok {
		return m
	}
	if kvHeads <= 0 {
		kvHeads = heads
	}
	m := &compute.Compute{Profile: c.p, Job: job.Job{
		Model:    job.Model{QueryHeads: int(heads), KVHeads: int(kvHeads), HeadDimQK: int(dqk), HeadDimV: int(dv)},
		Parallel: job.Parallel{TP: 1}}}
	c.attn[key] = m
	return m
}

// priceReason is why the compute predictor does not price class c.
func priceReason(c Class) string {
	switch c {
	case ClassGEMMFP8:
		return "fp8 GEMM: not priced by this predictor"
	case ClassGroupedGEMM:
		return whyGrouped
	case ClassCollective:
		return "collective: not priced by the compute predictor (its time includes waiting for peers; sim/network prices communication)"
	case ClassEPDispatch:
		return "EP dispatch/combine: not priced by the compute predictor"
	case ClassAttentionAux:
		return "attention pre/post-processing: not priced apart (the cost model's attention backward covers the whole backward)"
	case ClassMemcpy, ClassMemset:
		return c.String() + ": not priced"
	case ClassUnknown:
		return "unclassified kernel: not priced"
	}
	return c.String() + ": not priced"
}

// Predict implements Predictor.
func (c *computePredictor) Predict(k *Kernel) (float64, string) {
	if c.err != "" {
		return 0, c.err
	}
	launch := c.p.KernelLaunchSeconds.Value
	s := k.Shape
	switch k.Class {
	case ClassGEMM:
		if !k.exact() {
			return 0, cmp.Or(k.Why, "gemm: not priced")
		}
		g := compute.GEMMShape{M: float64(s.M), N: float64(s.N), K: float64(s.K), Count: float64(max(s.Batch, 1))}
		return c.gemm.GEMMSeconds(g) + launch, ""
	case ClassGEMMFP8:
		if !c.p.HasFP8() {
			return 0, priceReason(k.Class) + " (profile " + c.p.Name + " has no peak_fp8_flops and gemm_fp8)"
		}
		if k.Why != "" || s.M <= 0 || s.N <= 0 || s.K <= 0 {
			return 0, cmp.Or(k.Why, whyShapeNotRecorded)
		}
		g := compute.GEMMShape{M: float64(s.M), N: float64(s.N), K: float64(s.K), Count: float64(max(s.Batch, 1))}
		return c.gemm.FP8GEMMSeconds(g) + launch, ""
	case ClassAttentionFwd, ClassAttentionBwd:
		if !k.exact() {
			return 0, cmp.Or(k.Why, k.Class.String()+": not priced")
		}
		if s.Seq > 1<<30 || s.Heads > 1<<30 || s.HeadDimQK > 1<<30 || s.HeadDimV > 1<<30 {
			return 0, "attention sizes out of range: not priced"
		}
		m := c.compute(s.Heads, s.KVHeads, s.HeadDimQK, s.HeadDimV)
		n := int(s.Seq)
		sec := m.AttentionFwdSeconds(n, 1, n)
		if k.Class == ClassAttentionBwd {
			sec = m.AttentionBwdSeconds(n, 1, n)
		}
		return sec*float64(max(s.Batch, 1)) + launch, ""
	case ClassMemoryBound:
		if s.Bytes <= 0 {
			return 0, cmp.Or(k.Why, whyMemNotRecorded)
		}
		return c.gemm.MemorySeconds(float64(s.Bytes)) + launch, ""
	}
	if k.Why != "" {
		return 0, k.Why
	}
	return 0, priceReason(k.Class)
}

// Row is one (class, precision, shape) group of Compare: measured beside
// predicted.
type Row struct {
	// Class, Precision and Shape (Shape.String()) identify the group.
	Class     Class
	Precision string
	Shape     string
	// Why is the predictor's reason when the group is not priced.
	Why string
	// Kernels is the group's kernel count; MeasuredSeconds their total time
	// and MedianSeconds the median.
	Kernels                        int
	MeasuredSeconds, MedianSeconds float64
	// Priced is how many kernels the predictor priced; PredictedSeconds the
	// mean price of one, PredictedTotalSeconds the sum, MeasuredPricedSeconds
	// the measured total of the priced ones.
	Priced                                                         int
	PredictedSeconds, PredictedTotalSeconds, MeasuredPricedSeconds float64
	// RelErr is PredictedTotalSeconds/MeasuredPricedSeconds − 1; NaN when
	// nothing was priced.
	RelErr float64
}

// Totals is the time of one class (or of all, Label "total"), over the
// whole trace or per layer or step.
type Totals struct {
	// Label is the class name or "total".
	Label string
	// Kernels is the kernel count (a fraction per layer or step).
	Kernels float64
	// MeasuredSeconds is all the class's time; MeasuredPricedSeconds that of
	// its priced kernels and PredictedSeconds their prices.
	MeasuredSeconds, MeasuredPricedSeconds, PredictedSeconds float64
	// RelErr is PredictedSeconds/MeasuredPricedSeconds − 1; NaN when nothing
	// was priced.
	RelErr float64
}

// NameTime is the count and time of the kernels of one name.
type NameTime struct {
	// Name is the kernel name.
	Name string
	// Kernels is how many ran, Seconds their total time.
	Kernels int
	Seconds float64
}

// Comparison is Compare's result.
type Comparison struct {
	// Trace is the trace's name, Device its first device, Rank and
	// WorldSize from distributedInfo.
	Trace, Device   string
	Rank, WorldSize int
	// Rows are the (class, precision, shape) groups, by class, then measured
	// time (longest first), then shape, precision and reason.
	Rows []Row
	// Classes has one Totals per class present, in class order, then
	// "total".
	Classes []Totals
	// AttentionFwdKernels is the number of attention forward kernels, the
	// per-layer divisor: one per layer per micro-batch. PerLayer is Classes
	// divided by it, nil when there are none.
	AttentionFwdKernels int
	PerLayer            []Totals
	// Steps is the trace's ProfilerStep count; PerStep is Classes divided by
	// it, nil when there are none.
	Steps   int
	PerStep []Totals
	// Unclassified lists the unknown kernels' names, top 20 by time (then
	// name); UnclassifiedRest sums the other names (Name is their count).
	Unclassified     []NameTime
	UnclassifiedRest NameTime
}

// maxUnclassified is how many unknown kernel names Compare lists.
const maxUnclassified = 20

// Compare sets every kernel's measured time beside what p predicts for it:
// one Row per (class, precision, shape, reason) — unpriced memcpy and memset
// events in one row each, whatever their sizes — with the kernel count,
// measured total and median, predicted time per kernel and in total and the
// relative error; one Totals per class, then per layer — the totals divided
// by the number of attention forward kernels, the convention being one
// attention forward per layer per micro-batch (none when the trace has
// none) — and per step when the trace has ProfilerStep annotations (the
// totals divided by their count). Unclassified kernels are listed by name.
// The order is deterministic.
func Compare(t *Trace, p Predictor) Comparison {
	c := Comparison{Trace: t.Name, Rank: t.Rank, WorldSize: t.WorldSize, Steps: t.Steps}
	if len(t.Devices) > 0 {
		c.Device = t.Devices[0].Name
	}
	type rowKey struct {
		class                 Class
		precision, shape, why string
	}
	rows := map[rowKey]*Row{}
	durs := map[rowKey][]float64{}
	classes := map[Class]*Totals{}
	unknown := map[string]*NameTime{}
	for i := range t.Kernels {
		k := &t.Kernels[i]
		sec, why := p.Predict(k)
		priced := why == "" && sec > 0 && !math.IsInf(sec, 0)
		if !priced && why == "" {
			why = "predictor returned no time"
		}
		if priced {
			why = ""
		}
		shape := k.Shape.String()
		if !priced && (k.Class == ClassMemcpy || k.Class == ClassMemset) {
			shape = "" // one row each, not one per size
		}
		key := rowKey{k.Class, k.Precision, shape, why}
		r := rows[key]
		if r == nil {
			r = &Row{Class: k.Class, Precision: k.Precision, Shape: key.shape, Why: why}
			rows[key] = r
		}
		r.Kernels++
		r.MeasuredSeconds += k.Seconds
		durs[key] = append(durs[key], k.Seconds)
		ct := classes[k.Class]
		if ct == nil {
			ct = &Totals{Label: k.Class.String()}
			classes[k.Class] = ct
		}
		ct.Kernels++
		ct.MeasuredSeconds += k.Seconds
		if priced {
			r.Priced++
			r.PredictedTotalSeconds += sec
			r.MeasuredPricedSeconds += k.Seconds
			ct.PredictedSeconds += sec
			ct.MeasuredPricedSeconds += k.Seconds
		}
		if k.Class == ClassAttentionFwd {
			c.AttentionFwdKernels++
		}
		if k.Class == ClassUnknown {
			u := unknown[k.Name]
			if u == nil {
				u = &NameTime{Name: k.Name}
				unknown[k.Name] = u
			}
			u.Kernels++
			u.Seconds += k.Seconds
		}
	}
	for key, r := range rows {
		r.MedianSeconds = median(durs[key])
		r.RelErr = math.NaN()
		if r.Priced > 0 {
			r.PredictedSeconds = r.PredictedTotalSeconds / float64(r.Priced)
			r.RelErr = r.PredictedTotalSeconds/r.MeasuredPricedSeconds - 1
		}
		c.Rows = append(c.Rows, *r)
	}
	slices.SortFunc(c.Rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Class.rank(), b.Class.rank()), cmp.Compare(b.MeasuredSeconds, a.MeasuredSeconds),
			cmp.Compare(a.Shape, b.Shape), cmp.Compare(a.Precision, b.Precision), cmp.Compare(a.Why, b.Why))
	})
	total := Totals{Label: "total"}
	for _, cl := range classOrder {
		ct := classes[cl]
		if ct == nil {
			continue
		}
		ct.RelErr = relErr(ct.PredictedSeconds, ct.MeasuredPricedSeconds)
		c.Classes = append(c.Classes, *ct)
		total.Kernels += ct.Kernels
		total.MeasuredSeconds += ct.MeasuredSeconds
		total.MeasuredPricedSeconds += ct.MeasuredPricedSeconds
		total.PredictedSeconds += ct.PredictedSeconds
	}
	total.RelErr = relErr(total.PredictedSeconds, total.MeasuredPricedSeconds)
	c.Classes = append(c.Classes, total)
	scale := func(n int) []Totals {
		if n <= 0 {
			return nil
		}
		out := make([]Totals, len(c.Classes))
		for i, ct := range c.Classes {
			f := float64(n)
			out[i] = Totals{Label: ct.Label, Kernels: ct.Kernels / f, MeasuredSeconds: ct.MeasuredSeconds / f,
				MeasuredPricedSeconds: ct.MeasuredPricedSeconds / f, PredictedSeconds: ct.PredictedSeconds / f, RelErr: ct.RelErr}
		}
		return out
	}
	c.PerLayer = scale(c.AttentionFwdKernels)
	c.PerStep = scale(c.Steps)
	names := slices.Collect(maps.Values(unknown))
	slices.SortFunc(names, func(a, b *NameTime) int {
		return cmp.Or(cmp.Compare(b.Seconds, a.Seconds), cmp.Compare(a.Name, b.Name))
	})
	for i, u := range names {
		if i < maxUnclassified {
			c.Unclassified = append(c.Unclassified, *u)
			continue
		}
		c.UnclassifiedRest.Kernels += u.Kernels
		c.UnclassifiedRest.Seconds += u.Seconds
	}
	if n := len(names) - maxUnclassified; n > 0 {
		c.UnclassifiedRest.Name = fmt.Sprintf("%d more names", n)
	}
	return c
}

// relErr is pred/meas − 1, NaN when meas is 0.
func relErr(pred, meas float64) float64 {
	if meas <= 0 {
		return math.NaN()
	}
	return pred/meas - 1
}

// maxNameColumn cuts long kernel names in WriteComparison.
const maxNameColumn = 110

// WriteComparison prints c as aligned text tables, times in microseconds:
// the rows, the class totals, per layer and per step, then the unclassified
// kernels by name (the top 20 by time, then a count of the rest).
func WriteComparison(w io.Writer, c Comparison) error {
	ew := &errWriter{w: w}
	us := func(s float64) string { return fmt.Sprintf("%.1f", s*1e6) }
	pct := func(e float64) string {
		if math.IsNaN(e) {
			return "-"
		}
		return fmt.Sprintf("%+.1f%%", 100*e)
	}
	dev := c.Device
	if dev == "" {
		dev = "an unnamed device"
	}
	var totalK, totalS float64
	if n := len(c.Classes); n > 0 {
		totalK, totalS = c.Classes[n-1].Kernels, c.Classes[n-1].MeasuredSeconds
	}
	ew.printf("%s: %.0f GPU kernels, %s µs on %s (rank %d of %d), %d profiler steps\n\n", c.Trace, totalK, us(totalS), dev, c.Rank, c.WorldSize, c.Steps)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "class\tprecision\tshape\tkernels\tmeasured µs\tmedian µs\tpredicted µs/kernel\tpredicted µs\terror\tnote")
	for _, r := range c.Rows {
		pred, predTotal := "-", "-"
		if r.Priced > 0 {
			pred, predTotal = us(r.PredictedSeconds), us(r.PredictedTotalSeconds)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Class, cmp.Or(r.Precision, "-"), cmp.Or(r.Shape, "-"),
			r.Kernels, us(r.MeasuredSeconds), us(r.MedianSeconds), pred, predTotal, pct(r.RelErr), oneLine(r.Why))
	}
	tw.Flush()
	totals := func(title string, ts []Totals, frac bool) {
		ew.printf("\n%s\n", title)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "class\tkernels\tmeasured µs\tmeasured priced µs\tpredicted µs\terror")
		for _, t := range ts {
			n := fmt.Sprintf("%.0f", t.Kernels)
			if frac {
				n = fmt.Sprintf("%.2f", t.Kernels)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Label, n, us(t.MeasuredSeconds), us(t.MeasuredPricedSeconds), us(t.PredictedSeconds), pct(t.RelErr))
		}
		tw.Flush()
	}
	totals("By class:", c.Classes, false)
	if c.PerLayer != nil {
		totals(fmt.Sprintf("Per layer (the totals ÷ %d attention forward kernels: one per layer per micro-batch):", c.AttentionFwdKernels), c.PerLayer, true)
	} else {
		ew.printf("\nPer layer: none (no attention forward kernels to count layers by)\n")
	}
	if c.PerStep != nil {
		totals(fmt.Sprintf("Per step (the totals ÷ %d ProfilerStep annotations):", c.Steps), c.PerStep, true)
	}
	if len(c.Unclassified) > 0 {
		ew.printf("\nUnclassified kernels (top %d names by time):\n", maxUnclassified)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "kernels\tµs\tname")
		for _, u := range c.Unclassified {
			fmt.Fprintf(tw, "%d\t%s\t%s\n", u.Kernels, us(u.Seconds), short(oneLine(u.Name), maxNameColumn))
		}
		if c.UnclassifiedRest.Kernels > 0 {
			fmt.Fprintf(tw, "%d\t%s\t(%s)\n", c.UnclassifiedRest.Kernels, us(c.UnclassifiedRest.Seconds), c.UnclassifiedRest.Name)
		}
		tw.Flush()
	}
	return ew.err
}

// oneLine replaces control characters so a name stays on its table line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }
