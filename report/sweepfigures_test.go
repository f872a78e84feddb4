package report

import (
	"strconv"
	"testing"
)

// sweepPoint is a sweep point of hydra and mcore at gpus GPUs and hydra cap
// hcap (0: closed form, C* = 4).
func sweepPoint(i, gpus, hcap int) SweepPoint {
	pol := func(name string, scale float64) PolicySummary {
		return PolicySummary{
			Policy: name, StepSecondsMean: scale * (10 + float64(hcap)), TokensPerDay: float64(gpus) * 1e9 / scale,
			ChosenOptions: map[string]float64{"cap": 4}, Measures: Measures{PlannerModeledSeconds: scale * 1e-3 * float64(gpus)},
		}
	}
	return SweepPoint{
		Index: i, GPUs: gpus, Model: "m",
		Axes:    []Axis{{"gpus", strconv.Itoa(gpus)}, {"hydra.cap", strconv.Itoa(hcap)}},
		Summary: Summary{Policies: []PolicySummary{pol("hydra", 1), pol("mcore", 1.2), {Policy: "x", Error: "failed"}}, Layout: Layout{GPUs: gpus}},
	}
}

func TestWriteSweepFigures(t *testing.T) {
	grid := func(gpus, caps []int) []SweepPoint {
		var pts []SweepPoint
		for _, g := range gpus {
			for _, c := range caps {
				pts = append(pts, sweepPoint(len(pts), g, c))
			}
		}
		return pts
	}
	for _, tc := range []struct {
		name string
		pts  []SweepPoint
		want []string
	}{
		{"gpus and caps", grid([]int{8, 16, 32}, []int{0, 2, 4, 8}), []string{"sweep-hydra-cap", "sweep-planner", "sweep-throughput"}},
		{"gpus only", grid([]int{8, 64}, []int{0}), []string{"sweep-planner", "sweep-throughput"}},
		{"caps only", grid([]int{16}, []int{1, 2, 4, 8, 16}), []string{"sweep-hydra-cap"}},
		{"one point", grid([]int{16}, []int{2}), nil},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			got, err := WriteSweepFigures(dir, tc.pts)
			if err != nil {
				t.Fatal(err)
			}
			checkFigureFiles(t, dir, got, figureFiles(tc.want...))
		})
	}
}

// TestMostCommon: the most frequent value, the least of them on a tie, 0 for
// none.
func TestMostCommon(t *testing.T) {
	if got := mostCommon([]int{8, 4, 8, 4, 2}); got != 4 {
		t.Errorf("mostCommon = %d, want 4 (the least of the most frequent)", got)
	}
	if got := mostCommon(nil); got != 0 {
		t.Errorf("mostCommon(nil) = %d, want 0", got)
	}
}
