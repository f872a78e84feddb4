package calibrate

import (
	"context"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"io"
	"time"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/hwbackend"
)

// Measurement is a calibration run on hardware: the backend and its sweep,
// the backend's name in the measurements file's header ("cpu", "cuda"), and
// the measurements CSV it writes.
type Measurement struct {
	Backend      hwbackend.Backend
	Sweep        hwbackend.Sweep
	BackendLabel string
	CSV          string
}

// Measure runs the sweep on the backend (progress on stderr), writes the
// measurements CSV atomically with a header comment naming the backend and
// the time, fits them onto base and writes the profile. A cancelled ctx
// stops the sweep and returns its error.
func Measure(ctx context.Context, m Measurement, base *calib.Profile, t Target, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "calibrate: %s: %d ops (%d warmup + %d timed runs each), budget %v\n", m.Backend.Name(), len(m.Sweep.Ops), m.Sweep.Warmups, m.Sweep.Repeats, m.Sweep.Budget)
	start := time.Now()
	ms, err := hwbackend.Measure(ctx, m.Backend, m.Sweep, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "calibrate: %d measurements in %.1f s\n", len(ms), time.Since(start).Seconds())
	if err := safeio.WriteFileAtomic(m.CSV, func(w io.Writer) error {
		fmt.Fprintf(w, "# dcpsim calibrate --backend %s on %s, %s\n", m.BackendLabel, m.Backend.Name(), start.UTC().Format(time.RFC3339))
		return calib.WriteMeasurements(w, ms)
	}); err != nil {
		return err
	}
	prof, err := Fit(ms, base, m.CSV, stdout)
	if err != nil {
		return err
	}
	prof.Name = t.name(base.Name)
	prof.Description = fmt.Sprintf("%s, curves fitted by dcpsim calibrate from %s; other constants from %s (%s)", m.Backend.Name(), m.CSV, base.Name, base.Description)
	return WriteProfile(prof, t.Out, stdout)
}
