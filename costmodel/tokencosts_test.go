package costmodel

import (
	"math"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestTokenCosts: the linear form takes its a1 and b1 from Overhead, its a2
// from the stage's ops at B tokens, and one all-to-all entry per power of
// two up to the Ulysses limit (DeepSeek-V2-Lite: 16 heads, so 2..16 on 16
// GPUs), dearer per token once the group leaves the node; without
// communication the all-to-alls cost nothing. The result passes
// sched.TokenCosts.Check.
func TestTokenCosts(t *testing.T) {
	m, comp, _ := modelSetup(t, false, Options{})
	tc := m.TokenCosts()
	if err := tc.Check(); err != nil {
		t.Fatal(err)
	}
	o := m.Overhead()
	if tc.AttentionSecondsPerToken2 != o.CSecondsPerSquareToken || tc.FixedSeconds != o.ThetaSeconds {
		t.Errorf("a1 %g b1 %g, want Overhead's c %g and θ %g", tc.AttentionSecondsPerToken2, tc.FixedSeconds, o.CSecondsPerSquareToken, o.ThetaSeconds)
	}
	s := comp.RankStageSeconds(o.Stage, 8192, nil)
	if ops := (s.GEMMFwd + s.GEMMBwd + s.MemoryFwd + s.MemoryBwd) / 8192; !(tc.LinearSecondsPerToken > ops) {
		t.Errorf("a2 = %g, want more than the ops alone (%g): the MoE dispatch and combine add to it", tc.LinearSecondsPerToken, ops)
	}
	if got := tc.MaxDegree(); got != 16 {
		t.Errorf("widest group %d, want 16 (the query heads)", got)
	}
	for i := 1; i < len(tc.AllToAll); i++ {
		a, b := tc.AllToAll[i-1], tc.AllToAll[i]
		if b.SecondsPerToken <= a.SecondsPerToken {
			t.Errorf("u_%d = %g <= u_%d = %g: a wider all-to-all moves more per token", b.Degree, b.SecondsPerToken, a.Degree, a.SecondsPerToken)
		}
	}
	if u8, _ := tc.AllToAllSecondsPerToken(8); !(u8 > 0) {
		t.Errorf("u_8 = %g", u8)
	}
	if u16, _ := tc.AllToAllSecondsPerToken(16); u16 < 1.5*tc.AllToAll[2].SecondsPerToken {
		t.Errorf("u_16 = %g vs u_8 = %g: leaving the node should cost more", u16, tc.AllToAll[2].SecondsPerToken)
	}
	free, _, _ := modelSetup(t, false, Options{NoComm: true})
	for _, d := range free.TokenCosts().AllToAll {
		if d.SecondsPerToken != 0 || math.IsNaN(d.SecondsPerToken) {
			t.Errorf("NoComm: u_%d = %g", d.Degree, d.SecondsPerToken)
		}
	}
	var _ sched.TokenCosts = tc
}
