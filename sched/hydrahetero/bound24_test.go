package hydrahetero

import (
	"errors"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestPackWorkBounded: a batch whose sequences × target microbatches pass
// MaxPackWork is refused before packing, at once (issue 24 item 12: 10^6
// sequences on 1,024 ranks planned for 22 s; the --batches maxima for hours).
func TestPackWorkBounded(t *testing.T) {
	lengths := make([]int, 1_000_000)
	for i := range lengths {
		lengths[i] = 100 + i*7919%9000
	}
	p, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := sched.Inputs{PoolRanks: 1024, BudgetTokens: 16384, PP: 1, VPP: 1, OverheadRatio: 1 << 24}
	_, err = p.Plan(lengths, in)
	if !errors.Is(err, sched.ErrInvalidInput) || !strings.Contains(err.Error(), "1000000 sequences × 330 target microbatches = 330000000: more than 67108864") {
		t.Fatalf("10^6 sequences: %v", err)
	}
	if _, err := p.Plan(lengths[:20000], in); err != nil {
		t.Errorf("2·10^4 sequences: %v", err)
	}
}
