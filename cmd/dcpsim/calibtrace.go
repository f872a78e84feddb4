package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/calib/kineto"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sim/network"
)

// calibrateFromTrace is dcpsim calibrate --from-trace: read, check and
// compare a Kineto trace against a profile, and with --out fit the curves it
// determines onto it.
func calibrateFromTrace(f calibrateFlags, stdout io.Writer) error {
	for _, name := range []string{"backend", "budget", "measurements", "workers", "device", "ranks", "from", "from-nccl-tests", "nccl-program", "nccl-ranks", "nccl-gpus-per-node"} {
		if f.set[name] {
			return badInput("--%s does not go with --from-trace", name)
		}
	}
	var base *calib.Profile
	var err error
	switch {
	case f.gpu != "" && f.base != "":
		return badInput("--from-trace: give --gpu KIND or --base FILE.toml, not both")
	case f.gpu != "":
		if base, err = calib.LookupProfile(f.gpu); err != nil {
			return badInput("--gpu %q: %v", f.gpu, err)
		}
	case f.base != "":
		if base, err = loadBase(f.base); err != nil {
			return err
		}
	default:
		return badInput("--from-trace needs --gpu KIND (known: %s) or --base FILE.toml: the profile to predict with and fit onto", strings.Join(calib.ProfileNames(), ", "))
	}
	if f.out != "" {
		if err := checkOutFile("--out", f.out); err != nil {
			return err
		}
		for _, in := range []struct{ flag, path string }{{"--from-trace", f.trace}, {"--base", f.base}} {
			if err := checkNotInput("--out", f.out, in.flag, in.path); err != nil {
				return err
			}
		}
	} else if f.set["name"] {
		return badInput("--name goes with --out (the profile written)")
	}
	name, err := profileName(f.name, base.Name)
	if err != nil {
		return err
	}
	file, err := os.Open(f.trace)
	if err != nil {
		return badInput("--from-trace: %v", err)
	}
	defer file.Close()
	h := sha256.New()
	tr, err := kineto.Read(io.TeeReader(file, h), f.trace)
	if err != nil {
		return badInput("--from-trace: %v", err)
	}
	if _, err := io.Copy(h, file); err != nil { // a reader that stopped early: hash the whole file
		return badInput("--from-trace: %v", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := tr.Check(base); err != nil {
		return badInput("--from-trace: %v", err)
	}
	cmp := kineto.Compare(tr, newTracePredictor(base))
	if err := kineto.WriteComparison(stdout, cmp); err != nil {
		return err
	}
	// The trace ran at the sustained rate: fit onto the base with its
	// sustained_efficiency folded into its curves.
	base = base.SustainedFolded()
	ms, skipped := tr.MeasurementsFor(base)
	fmt.Fprintf(stdout, "\nfit rows: %d (operation, shape) groups", len(ms))
	if len(skipped) > 0 {
		fmt.Fprint(stdout, "; left out of the fit:")
	}
	fmt.Fprintln(stdout)
	for _, s := range skipped {
		fmt.Fprintf(stdout, "  %-14s %6d kernels %12.1f µs  %s\n", s.Class, s.Kernels, s.Seconds*1e6, s.Reason)
	}
	if f.out == "" {
		fmt.Fprintf(stdout, "\n(no --out: nothing fitted; with --out PROFILE.toml the curves these rows determine are fitted onto %s)\n", base.Name)
		return nil
	}
	if len(ms) == 0 {
		return badInput("--from-trace %s: no kernel of the trace can be fitted (see the list above): no profile written", f.trace)
	}
	fmt.Fprintln(stdout)
	prof, err := fitProfile(ms, base, f.trace+" "+sum, stdout)
	if err != nil {
		return badInput("--from-trace %s: %v", f.trace, err)
	}
	prof.Name = name
	prof.Description = fmt.Sprintf("curves fitted by dcpsim calibrate from the trace %s (sha256 %.12s); other constants from %s (%s)", f.trace, sum, base.Name, base.Description)
	fmt.Fprintf(stdout, "\nwith the fitted profile, per class:\n")
	if err := writeClassTotals(stdout, kineto.Compare(tr, newTracePredictor(prof)).Classes); err != nil {
		return err
	}
	return writeProfile(prof, f.out, stdout)
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

func newTracePredictor(p *calib.Profile) kineto.Predictor {
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
