package experiment

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/scenarios"
)

// paperStaticStep32K is the HyDra paper's mean step of static CP on its
// 512-GPU H20 testbed at 32K context (§6.2): the one number dcpsim fits.
const paperStaticStep32K = 10.3

// TestPaperMLAFittedPoint pins the one fitted constant, job.PaperMLALayers:
// with it static CP on testbed-32k runs the paper's 10.3 s step (within the
// resolution of one layer), and it is the layer count closest to it. Every
// other number dcpsim prints is out of sample.
func TestPaperMLAFittedPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("three scenario runs")
	}
	src, err := scenarios.PresetSource("testbed-32k")
	if err != nil {
		t.Fatal(err)
	}
	step := func(layers int) float64 {
		text := strings.Replace(string(src), `preset = "paper-mla"`, fmt.Sprintf("preset = \"paper-mla\"\nlayers = %d", layers), 1)
		if rest := layers - 3*(job.PaperMLALayers/4); layers != job.PaperMLALayers {
			// Three stages keep their share, the last takes the difference.
			text = strings.Replace(text, "budget_tokens = 4096", fmt.Sprintf("budget_tokens = 4096\nlast_stage_layers = %d", rest), 1)
		}
		sc, err := scenarios.Parse([]byte(text), "testbed-32k.toml")
		if err != nil {
			t.Fatal(err)
		}
		out, err := Run(sc, Options{Policy: "static"})
		if err != nil {
			t.Fatal(err)
		}
		return out.Summary.Policies[0].StepSecondsMean
	}
	l := job.PaperMLALayers
	at := step(l)
	if math.Abs(at/paperStaticStep32K-1) > 0.02 {
		t.Errorf("static CP on testbed-32k with %d layers: %.3f s, want the paper's %.1f s within 2%%", l, at, paperStaticStep32K)
	}
	for _, other := range []int{l - 1, l + 1} {
		if s := step(other); math.Abs(s-paperStaticStep32K) < math.Abs(at-paperStaticStep32K) {
			t.Errorf("%d layers give %.3f s, closer to %.1f s than %d layers' %.3f s: refit job.PaperMLALayers", other, s, paperStaticStep32K, l, at)
		}
	}
	t.Logf("static CP on testbed-32k: %.3f s with %d layers (paper %.1f s)", at, l, paperStaticStep32K)
}
