package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/calib"
)

// WriteFitTable prints the calibration fit table: one row per fitted curve,
// then the refused ones with why.
func WriteFitTable(w io.Writer, p *calib.Profile, reports []calib.FitReport, refused map[string]error) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "curve\toperations\tpoints\tsizes\tR²\tmax rel err\tMax\tHalf\tMax × peak\t")
	for _, r := range reports {
		peak, unit := p.CurvePeak(r.Curve)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.4f\t%.1f%%\t%.4g\t%.4g\t%s\t\n", r.Curve, strings.Join(r.Operations, ","),
			r.Points, r.Sizes, r.RSquared, 100*r.MaxRelErr, r.Max, r.Half, siRate(r.Max*peak, unit))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reports {
		if r.RSquared < calib.PoorFitRSquared {
			fmt.Fprintf(w, "WARNING: %s: R² %.4f is below %.2f: the fitted curve misses its measurements by up to %.0f%%; check them beside the model before using the profile\n",
				r.Curve, r.RSquared, calib.PoorFitRSquared, 100*r.MaxRelErr)
		}
	}
	curves := make([]string, 0, len(refused))
	for c := range refused {
		curves = append(curves, c)
	}
	slices.Sort(curves)
	for _, c := range curves {
		fmt.Fprintf(w, "%s: not fitted, the base's values kept: %v\n", c, refused[c])
	}
	return nil
}

// siRate formats a rate with an SI prefix, e.g. "9.3 GFLOP/s".
func siRate(v float64, unit string) string {
	for _, p := range []struct {
		scale  float64
		prefix string
	}{{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= p.scale {
			return fmt.Sprintf("%.3g %s%s", v/p.scale, p.prefix, unit)
		}
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}
