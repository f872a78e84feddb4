package calibrate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sim/network"
)

// Target is the profile a calibration writes: its name (empty: the base's)
// and the file it goes to.
type Target struct {
	Name, Out string
}

// name returns t.Name, or baseName when it is empty.
func (t Target) name(baseName string) string {
	if t.Name == "" {
		return baseName
	}
	return t.Name
}

// Fit fits ms over base with source "fit:<source>" (calib.FitDetermined:
// curves the data cannot determine keep the base's values) and prints the
// table, listing the refused curves with the reason; it fails when no curve
// fits or a measurement is unusable.
func Fit(ms []calib.Measurement, base *calib.Profile, source string, w io.Writer) (*calib.Profile, error) {
	fit, err := calib.FitDetermined(ms, base, "fit:"+source)
	if errors.Is(err, calib.ErrNoCurveFitted) {
		report.WriteFitTable(w, base, nil, fit.Refused)
		return nil, fmt.Errorf("no curve could be fitted from %s (see the table)", source)
	}
	if err != nil {
		return nil, err
	}
	if err := report.WriteFitTable(w, fit.Profile, fit.Reports, fit.Refused); err != nil {
		return nil, err
	}
	return fit.Profile, nil
}

// WriteProfile writes prof to out atomically (calib.Profile.Encode checks
// that it reads back) and says so on w.
func WriteProfile(prof *calib.Profile, out string, w io.Writer) error {
	b, err := prof.Encode()
	if err != nil {
		return err
	}
	if err := safeio.WriteFileAtomic(out, func(f io.Writer) error { _, err := f.Write(b); return err }); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote profile %q to %s\n", prof.Name, out)
	return nil
}

// FromMeasurements fits the measurements CSV at path (calib.ReadMeasurements,
// read within safeio.MaxMeasurementBytes) onto base and writes the profile.
// Errors of the file are bad input naming it.
func FromMeasurements(path string, base *calib.Profile, t Target, w io.Writer) error {
	file, err := os.Open(path)
	if err != nil {
		return badinput.Mark(err)
	}
	defer file.Close()
	ms, err := calib.ReadMeasurements(safeio.Limit(file, safeio.MaxMeasurementBytes, path), path)
	if err != nil {
		return badinput.Mark(err)
	}
	if len(ms) == 0 {
		return badinput.Errorf("%s: no measurements", path)
	}
	prof, err := Fit(ms, base, path, w)
	if err != nil {
		return badinput.Errorf("%s: %v", path, err) // the file is the input: whatever fails to fit is in it
	}
	prof.Name = t.name(base.Name)
	prof.Description = fmt.Sprintf("curves fitted by dcpsim calibrate from %s; other constants from %s (%s)", path, base.Name, base.Description)
	return WriteProfile(prof, t.Out, w)
}

// NCCLTestsRun says which program wrote an nccl-tests output and on how many
// ranks (calib.ReadNCCLTests).
type NCCLTestsRun struct {
	Program            string
	Ranks, GPUsPerNode int
}

// FromNCCLTests fits an nccl-tests output at path onto base, prints its
// times beside the cost model's with the base and the fitted profile, and
// writes the profile. Errors of the file are bad input naming it.
func FromNCCLTests(path string, run NCCLTestsRun, base *calib.Profile, t Target, w io.Writer) error {
	file, err := os.Open(path)
	if err != nil {
		return badinput.Mark(err)
	}
	defer file.Close()
	nt, err := calib.ReadNCCLTests(safeio.Limit(file, safeio.MaxMeasurementBytes, path), path, run.Program, run.Ranks, run.GPUsPerNode)
	if err != nil {
		return badinput.Mark(err)
	}
	fmt.Fprintf(w, "%s: %s over %d ranks on %d node(s) (%d per node)%s: %d sizes, %d timings (out-of-place and in-place)\n",
		path, nt.Collective, nt.Ranks, nt.Nodes, nt.GPUsPerNode, deviceNote(nt.Devices), nt.Rows, len(nt.Measurements))
	if len(nt.Measurements) == 0 {
		return badinput.Errorf("%s: no measurements", path)
	}
	prof, err := Fit(nt.Measurements, base, path, w)
	if err != nil {
		return badinput.Errorf("%s: %v", path, err)
	}
	if err := WriteNCCLTestsBeside(w, nt, base, prof); err != nil {
		return err
	}
	prof.Name = t.name(base.Name)
	prof.Description = fmt.Sprintf("curves fitted by dcpsim calibrate from %s; other constants from %s (%s)", path, base.Name, base.Description)
	return WriteProfile(prof, t.Out, w)
}

// WriteNCCLTestsBeside prints an nccl-tests output's out-of-place times
// beside what the cost model predicts for them with the base profile and
// with the fitted one (sim/network, the collective alone on its links), at
// every fourth size.
func WriteNCCLTestsBeside(w io.Writer, nt *calib.NCCLTests, base, fitted *calib.Profile) error {
	c, err := network.ParseCollective(strings.ReplaceAll(nt.Collective, "_", "-"))
	if err != nil {
		return err
	}
	cluster := job.Cluster{GPU: base.Name, GPUs: nt.Ranks, GPUsPerNode: nt.GPUsPerNode}
	tb, err := network.NewTopology(*base, cluster, 1, 1)
	if err != nil {
		return err
	}
	tf, err := network.NewTopology(*fitted, cluster, 1, 1)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmeasured (out-of-place) beside the cost model, %s over %d × %s-priced GPUs (%d per node):\n", nt.Collective, nt.Ranks, base.Name, nt.GPUsPerNode)
	fmt.Fprintf(w, "%14s  %14s  %16s  %10s  %16s  %10s\n", "bytes", "measured (us)", "base model (us)", "base err", "fitted (us)", "fitted err")
	var outOfPlace []calib.Measurement
	for i, m := range nt.Measurements {
		if i%2 == 0 || len(nt.Measurements) == nt.Rows {
			outOfPlace = append(outOfPlace, m)
		}
	}
	for i, m := range outOfPlace {
		if i%4 != 0 && i != len(outOfPlace)-1 {
			continue
		}
		b := float64(m.Shape["bytes"])
		pb, _ := network.NCCLTestsShared(tb, c, nt.Ranks, b, 0)
		pf, _ := network.NCCLTestsShared(tf, c, nt.Ranks, b, 0)
		fmt.Fprintf(w, "%14.0f  %14.1f  %16.1f  %+9.1f%%  %16.1f  %+9.1f%%\n", b, m.Seconds*1e6, pb*1e6, 100*(pb/m.Seconds-1), pf*1e6, 100*(pf/m.Seconds-1))
	}
	return nil
}

// deviceNote is " on NAME" for the devices an output names.
func deviceNote(devices []string) string {
	if len(devices) == 0 {
		return ""
	}
	return " on " + strings.Join(devices, ", ")
}
