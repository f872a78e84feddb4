package report

// A validation's results folder (dcpsim validate --out DIR): every run with
// what the table output prints, as JSON and CSV, and predicted against
// measured on log-log axes.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Files of a validation folder.
const (
	// ValidationRowsFile holds every run (ValidationRecord), as JSON.
	ValidationRowsFile = "validation.json"
	// ValidationCSVFile holds the same, one run per line.
	ValidationCSVFile = "validation.csv"
	// ValidationFigure is the log-log figure's base name.
	ValidationFigure = "predicted-vs-measured"
)

// ValidationRecord is one run of a validation folder: the prediction, the
// published measurement and how the run was set up.
type ValidationRecord struct {
	Name             string   `json:"name"`
	Source           string   `json:"source"`
	GPU              string   `json:"gpu"`
	Kind             string   `json:"kind"`
	PredictedSeconds float64  `json:"predicted_seconds"`
	MeasuredSeconds  float64  `json:"measured_seconds"`
	Error            float64  `json:"error"`
	MeasuredValue    float64  `json:"measured_value"`
	MeasuredUnit     string   `json:"measured_unit"`
	ComputeShare     float64  `json:"compute_share"`
	ExposedCommShare float64  `json:"exposed_comm_share"`
	BubbleShare      float64  `json:"bubble_share"`
	SyncShare        float64  `json:"sync_share"`
	Layout           string   `json:"layout"`
	Assumed          []string `json:"assumed"`
}

// ValidationRows is a validation folder's validation.json: the runs and the
// software of each source family.
type ValidationRows struct {
	Runs     []ValidationRecord `json:"runs"`
	Software map[string]string  `json:"software"`
}

// RecordOf is r as a ValidationRecord.
func RecordOf(r ValidationResult) ValidationRecord {
	return ValidationRecord{Name: r.Name, Source: r.Source, GPU: r.GPU, Kind: r.Kind, PredictedSeconds: r.PredictedSeconds,
		MeasuredSeconds: r.MeasuredSeconds, Error: r.Error, MeasuredValue: r.MeasuredValue, MeasuredUnit: r.MeasuredUnit,
		ComputeShare: r.ComputeShare, ExposedCommShare: r.ExposedCommShare, BubbleShare: r.PPBubbleShare, SyncShare: r.SyncShare,
		Layout: r.Layout, Assumed: slices.Clone(r.Assumed)}
}

// Result is the record as a ValidationResult (what the summaries take).
func (v ValidationRecord) Result() ValidationResult {
	return ValidationResult{Name: v.Name, Source: v.Source, GPU: v.GPU, Kind: v.Kind, PredictedSeconds: v.PredictedSeconds,
		MeasuredSeconds: v.MeasuredSeconds, Error: v.Error, MeasuredValue: v.MeasuredValue, MeasuredUnit: v.MeasuredUnit,
		ComputeShare: v.ComputeShare, ExposedCommShare: v.ExposedCommShare, PPBubbleShare: v.BubbleShare, SyncShare: v.SyncShare,
		Layout: v.Layout, Assumed: slices.Clone(v.Assumed)}
}

// WriteValidationFolder writes validation.json, validation.csv and the
// predicted-vs-measured figure (PNG and SVG) into dir and returns the names
// written, sorted.
func WriteValidationFolder(dir string, rs []ValidationResult, software map[string]string) ([]string, error) {
	rows := ValidationRows{Software: software}
	for _, r := range rs {
		rows.Runs = append(rows.Runs, RecordOf(r))
	}
	var names []string
	err := safeio.WriteFileAtomic(filepath.Join(dir, ValidationRowsFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	})
	if err != nil {
		return nil, err
	}
	names = append(names, ValidationRowsFile)
	err = safeio.WriteFileAtomic(filepath.Join(dir, ValidationCSVFile), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"name", "source", "gpu", "kind", "predicted_seconds", "measured_seconds", "error", "measured_value", "measured_unit", "layout", "assumed"})
		for _, r := range rows.Runs {
			f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
			_ = cw.Write([]string{r.Name, r.Source, r.GPU, r.Kind, f(r.PredictedSeconds), f(r.MeasuredSeconds), f(r.Error), f(r.MeasuredValue),
				r.MeasuredUnit, r.Layout, strings.Join(r.Assumed, "; ")})
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return names, err
	}
	names = append(names, ValidationCSVFile)
	fig, err := validationFigure(rs)
	if err != nil {
		return names, err
	}
	figs, err := writeFigures(dir, []figure{*fig})
	names = append(names, figs...)
	slices.Sort(names)
	return names, err
}

// ReadValidationRows reads a validation.json strictly.
func ReadValidationRows(b []byte) (ValidationRows, error) {
	var rows ValidationRows
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rows); err != nil {
		return ValidationRows{}, err
	}
	if dec.More() {
		return ValidationRows{}, fmt.Errorf("data after the object")
	}
	return rows, nil
}

// validationFigure plots predicted against measured seconds per step on
// log-log axes, one colour per kind, with y = x and the ±25% band.
func validationFigure(rs []ValidationResult) (*figure, error) {
	p := plot.New()
	p.Title.Text = "Predicted against published step times"
	p.X.Label.Text = "measured (s per step)"
	p.Y.Label.Text = "predicted (s per step)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	lo, hi := math.Inf(1), 0.0
	for _, r := range rs {
		for _, v := range []float64{r.MeasuredSeconds, r.PredictedSeconds} {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if hi == 0 {
		return nil, fmt.Errorf("report: validation figure: no run with positive seconds")
	}
	lo, hi = lo/1.5, hi*1.5
	legend := newLegend()
	for i, band := range []float64{1, 0.75, 1.25} {
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo * band}, {X: hi, Y: hi * band}})
		if err != nil {
			return nil, err
		}
		l.Color = mix(policyColor(0), color.White, 0.6)
		if i == 0 {
			l.Color = policyColor(0)
		} else {
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		}
		p.Add(l)
		if i == 0 {
			legend.Add("y = x", l)
		} else if i == 1 {
			legend.Add("±25%", l)
		}
	}
	kinds := map[string]plotter.XYs{}
	for _, r := range rs {
		if r.MeasuredSeconds > 0 && r.PredictedSeconds > 0 {
			kinds[r.Kind] = append(kinds[r.Kind], plotter.XY{X: r.MeasuredSeconds, Y: r.PredictedSeconds})
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}}
	for i, k := range names {
		s, err := plotter.NewScatter(kinds[k])
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Color = policyColor(i + 1)
		s.GlyphStyle.Shape = shapes[i%len(shapes)]
		s.GlyphStyle.Radius = vg.Points(3.5)
		p.Add(s)
		legend.Add(k, s)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	return &figure{name: ValidationFigure, p: p, legend: legend, w: figH + vg.Inch, h: figH + vg.Inch}, nil
}
