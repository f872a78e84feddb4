package calibrate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/calib/kineto"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sim/network"
)

// FromTrace reads the PyTorch profiler (Kineto) trace at path, checks it
// against base and prints its kernels beside the cost model's prices; with
// t.Out set it fits the curves the trace determines onto base (with its
// sustained_efficiency folded in: the trace ran at the sustained rate),
// prints the fitted profile's prices per class and writes it. The profile's
// curves are sourced "fit:<path> <sha256>". Errors of the trace are bad
// input.
func FromTrace(path string, base *calib.Profile, t Target, w io.Writer) error {
	file, err := os.Open(path)
	if err != nil {
		return badinput.Mark(err)
	}
	defer file.Close()
	h := sha256.New()
	tr, err := kineto.Read(io.TeeReader(file, h), path)
	if err != nil {
		return badinput.Mark(err)
	}
	if _, err := io.Copy(h, file); err != nil { // a reader that stopped early: hash the whole file
		return badinput.Mark(err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := tr.Check(base); err != nil {
		return badinput.Mark(err)
	}
	if err := kineto.WriteComparison(w, kineto.Compare(tr, NewTracePredictor(base))); err != nil {
		return err
	}
	base = base.SustainedFolded()
	ms, skipped := tr.MeasurementsFor(base)
	fmt.Fprintf(w, "\nfit rows: %d (operation, shape) groups", len(ms))
	if len(skipped) > 0 {
		fmt.Fprint(w, "; left out of the fit:")
	}
	fmt.Fprintln(w)
	for _, s := range skipped {
		fmt.Fprintf(w, "  %-14s %6d kernels %12.1f µs  %s\n", s.Class, s.Kernels, s.Seconds*1e6, s.Reason)
	}
	if t.Out == "" {
		fmt.Fprintf(w, "\n(no --out: nothing fitted; with --out PROFILE.toml the curves these rows determine are fitted onto %s)\n", base.Name)
		return nil
	}
	if len(ms) == 0 {
		return badinput.Errorf("%s: no kernel of the trace can be fitted (see the list above): no profile written", path)
	}
	fmt.Fprintln(w)
	prof, err := Fit(ms, base, path+" "+sum, w)
	if err != nil {
		return badinput.Errorf("%s: %v", path, err)
	}
	prof.Name = t.name(base.Name)
	prof.Description = fmt.Sprintf("curves fitted by dcpsim calibrate from the trace %s (sha256 %.12s); other constants from %s (%s)", path, sum, base.Name, base.Description)
	fmt.Fprintf(w, "\nwith the fitted profile, per class:\n")
	if err := writeClassTotals(w, kineto.Compare(tr, NewTracePredictor(prof)).Classes); err != nil {
		return err
	}
	return WriteProfile(prof, t.Out, w)
}

// writeClassTotals prints one line per class: measured, predicted, error.
func writeClassTotals(w io.Writer, totals []kineto.Totals) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "class\tkernels\tmeasured µs\tpriced µs\tpredicted µs\terror")
	for _, t := range totals {
		e := "-"
		if !math.IsNaN(t.RelErr) {
			e = fmt.Sprintf("%+.1f%%", 100*t.RelErr)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.1f\t%s\n", t.Label, t.Kernels, t.MeasuredSeconds*1e6, t.MeasuredPricedSeconds*1e6, t.PredictedSeconds*1e6, e)
	}
	return tw.Flush()
}

// tracePredictor prices a trace's kernels: compute kernels as
// kineto.NewComputePredictor does, NCCL collectives alone on the profile's
// links (sim/network.NCCLTestsShared over a contiguous set of ranks, the
// profile's GPUs per node).
type tracePredictor struct {
	compute kineto.Predictor
	prof    *calib.Profile
}

// NewTracePredictor prices a trace's kernels with profile p: compute
// kernels as costmodel/compute does, NCCL collectives alone on p's links
// (sim/network, over whole nodes of p's GPUs per node).
func NewTracePredictor(p *calib.Profile) kineto.Predictor {
	return &tracePredictor{compute: kineto.NewComputePredictor(p), prof: p}
}

// maxTraceRanks bounds the ranks of a collective priced (a topology of that
// many GPUs is built per kernel group).
const maxTraceRanks = 1 << 16

// Predict implements kineto.Predictor.
func (p *tracePredictor) Predict(k *kineto.Kernel) (float64, string) {
	if k.Class != kineto.ClassCollective {
		return p.compute.Predict(k)
	}
	s := k.Shape
	c, err := network.ParseCollective(strings.ReplaceAll(s.Collective, "_", "-"))
	if err != nil {
		return 0, fmt.Sprintf("collective %q: not one the network model prices (%v)", s.Collective, err)
	}
	if s.Ranks < 2 || s.Ranks > maxTraceRanks || s.Bytes <= 0 {
		return 0, "collective without its ranks and bytes (recorded by PyTorch >= 2.3): not priced"
	}
	n := int(s.Ranks)
	per := min(int(p.prof.GPUsPerNode.Value), n)
	if n%per != 0 {
		return 0, fmt.Sprintf("collective over %d ranks: not whole nodes of %d: not priced", n, per)
	}
	t, err := network.NewTopology(*p.prof, job.Cluster{GPU: p.prof.Name, GPUs: n, GPUsPerNode: per}, 1, 1)
	if err != nil {
		return 0, "collective: " + err.Error()
	}
	sec, _ := network.NCCLTestsShared(t, c, n, float64(s.Bytes), 0)
	return sec, ""
}
