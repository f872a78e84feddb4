package kineto

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
)

// Skipped is a group of kernels Measurements left out for one reason.
type Skipped struct {
	// Class is the kernels' class.
	Class Class
	// Reason says why they were left out (Kernel.Why, or the class's reason).
	Reason string
	// Kernels is how many, Seconds their total time.
	Kernels int
	Seconds float64
}

// classReason is why kernels of class c are never fitted.
func classReason(c Class) string {
	switch c {
	case ClassAttentionAux:
		return "attention pre/post-processing: not fitted (attention_bwd rows are the main kernel's time alone)"
	case ClassCollective:
		return "collective: not fitted from a trace (a kernel's time includes waiting for its peers; calibrate with nccl-tests)"
	case ClassEPDispatch:
		return "EP dispatch/combine: not fitted or priced"
	case ClassMemoryBound:
		return "memory-bound: no curve to fit (memory_bound_efficiency is one constant)"
	case ClassMemcpy, ClassMemset:
		return c.String() + ": not fitted or priced"
	case ClassUnknown:
		return "unclassified kernel: listed, not fitted or priced"
	}
	return c.String() + ": not fittable"
}

// shapeKey writes a measurement shape with sorted keys, as a measurements
// file does.
func shapeKey(shape map[string]int64) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(shape)) {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k + "=" + strconv.FormatInt(shape[k], 10))
	}
	return b.String()
}

// median of xs (sorted in place); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Measurements groups the fittable kernels (bf16/fp16 dense GEMMs, fp8
// dense GEMMs as gemm_fp8 rows, and
// causal attention forward and backward main kernels of an exact shape at
// d_qk <= 128, 192 or 256, at bf16 or fp16 or an unrecorded precision) by
// operation and shape into measurement rows for calib.Fit and
// calib.FitDetermined: Seconds the median kernel duration, Repeats the count
// (kernels of zero duration, which a trace in whole microseconds can hold,
// are left out). The rows are sorted by operation, then shape (its keys
// sorted, as in a measurements file). The kernels left out are returned
// grouped by class and reason (Kernel.Why, or the class's reason:
// memory-bound kernels have no curve, collectives are calibrated with
// nccl-tests, unknown kernels are only listed), sorted by class then
// reason, with counts and total seconds.
//
// The fitter subtracts the base profile's KernelLaunchSeconds from every
// compute row and fails on a row not above it, and fits every GEMM row to
// the compute side of the roofline: use MeasurementsFor with that profile to
// leave out the rows that would fail or mislead.
func (t *Trace) Measurements() ([]calib.Measurement, []Skipped) { return t.measurements(nil) }

// MeasurementsFor is Measurements for fitting onto base: it also leaves out
// the rows whose median is not above base.KernelLaunchSeconds (kernels that
// short say nothing about the curve, and calib.Fit refuses them) and the
// GEMMs that base's roofline prices by their memory side (2·(mk + kn + mn)
// bytes at HBM × memory_bound_efficiency not below 2mnk FLOPs at the peak ×
// base's GEMM efficiency: a GEMV or a GEMM of a few rows, whose time says
// nothing about the GEMM curve the fit would put it on), listing their
// kernels among the skipped. The rows are the trace's times as recorded: a
// profile fitted on them prices the trace's sustained rates, so its base
// should carry no sustained_efficiency (calib.Profile.SustainedFolded).
func (t *Trace) MeasurementsFor(base *calib.Profile) ([]calib.Measurement, []Skipped) {
	return t.measurements(base)
}

// memoryBoundGEMM reports whether base's roofline (compute.Compute.GEMMRoofline,
// the FP8 one for fp8) prices the GEMM row by its memory side.
func memoryBoundGEMM(base *calib.Profile, shape map[string]int64, fp8 bool) bool {
	g := compute.GEMMShape{M: float64(shape["m"]), N: float64(shape["n"]), K: float64(shape["k"]), Count: float64(max(shape["batch"], 1))}
	compute, memory := (&compute.Compute{Profile: base}).GEMMRoofline(g, fp8)
	return memory >= compute
}

// measurements is Measurements, or MeasurementsFor when base is not nil.
func (t *Trace) measurements(base *calib.Profile) ([]calib.Measurement, []Skipped) {
	floor := 0.0
	if base != nil {
		floor = base.KernelLaunchSeconds.Value
	}
	type group struct {
		op    string
		class Class
		shape map[string]int64
		secs  []float64
	}
	groups := map[string]*group{}
	type skipKey struct {
		class  Class
		reason string
	}
	skipped := map[skipKey]*Skipped{}
	skip := func(c Class, reason string, n int, secs float64) {
		key := skipKey{c, reason}
		s := skipped[key]
		if s == nil {
			s = &Skipped{Class: c, Reason: reason}
			skipped[key] = s
		}
		s.Kernels += n
		s.Seconds += secs
	}
	for i := range t.Kernels {
		k := &t.Kernels[i]
		op, shape, ok := k.measurement()
		if !ok || !(k.Seconds > 0) {
			r := cmp.Or(k.Why, k.fitReason())
			if r == "" && ok {
				r = "zero duration"
			}
			if r == "" {
				r = classReason(k.Class)
			}
			skip(k.Class, r, 1, k.Seconds)
			continue
		}
		key := op + "\x00" + shapeKey(shape)
		g := groups[key]
		if g == nil {
			g = &group{op: op, class: k.Class, shape: shape}
			groups[key] = g
		}
		g.secs = append(g.secs, k.Seconds)
	}
	var rows []calib.Measurement
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		total := 0.0
		for _, s := range g.secs {
			total += s
		}
		m := median(g.secs)
		if base != nil && m <= floor {
			skip(g.class, fmt.Sprintf("median not above the base profile's kernel_launch_seconds (%.3g µs), which the fitter subtracts", floor*1e6), len(g.secs), total)
			continue
		}
		if base != nil && g.op == calib.OpGEMMFP8 && !base.HasFP8() {
			skip(g.class, fmt.Sprintf("fp8 GEMM: the base profile %s has no FP8 peak (peak_fp8_flops) to fit gemm_fp8 against", base.Name), len(g.secs), total)
			continue
		}
		if base != nil && (g.op == calib.OpGEMM || g.op == calib.OpGEMMFP8) {
			if memoryBoundGEMM(base, g.shape, g.op == calib.OpGEMMFP8) {
				skip(g.class, "memory-bound in the base profile's roofline (its memory side is the longer): its time does not inform the GEMM curve", len(g.secs), total)
				continue
			}
		}
		rows = append(rows, calib.Measurement{Operation: g.op, Shape: g.shape, Seconds: m, Repeats: len(g.secs)})
	}
	var out []Skipped
	for _, s := range skipped {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Skipped) int {
		if c := cmp.Compare(a.Class.rank(), b.Class.rank()); c != 0 {
			return c
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	return rows, out
}
