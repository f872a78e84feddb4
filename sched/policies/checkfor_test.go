package policies

import (
	"errors"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/mcore"
)

// TestCheckOptionsFor: mcore's min_cp_size is checked against the pool before
// any batch (issue 24 item 20): 1048576 on a 48-rank pool is refused naming
// the key, the pool and the limit (not "engine limit 0"); a min_cp_size the
// pool holds, and every policy's defaults, pass.
func TestCheckOptionsFor(t *testing.T) {
	d, err := Lookup("mcore")
	if err != nil {
		t.Fatal(err)
	}
	in := sched.Inputs{PoolRanks: 48, BudgetTokens: 8192, PP: 1, VPP: 1}
	err = d.CheckOptionsFor(&mcore.Options{MinCPSize: 1 << 20}, in)
	if err == nil || !errors.Is(err, sched.ErrInvalidInput) {
		t.Fatalf("min_cp_size 2^20 on G = 48: %v, want an invalid-input error", err)
	}
	for _, w := range []string{"min_cp_size = 1048576", "largest CP degree 48", "G = 48"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v: lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "engine limit 0") {
		t.Errorf("%v: names engine limit 0", err)
	}
	in.MaxDegree = 16
	if err := d.CheckOptionsFor(&mcore.Options{MinCPSize: 32}, in); err == nil || !strings.Contains(err.Error(), "largest CP degree 16 (the CP engine's largest group") {
		t.Errorf("min_cp_size 32 under an engine limit of 16: %v", err)
	}
	if err := d.CheckOptionsFor(&mcore.Options{MinCPSize: 16}, in); err != nil {
		t.Errorf("min_cp_size 16 under 16: %v", err)
	}
	in.MaxDegree = 0
	for _, p := range All() {
		if err := p.CheckOptionsFor(nil, in); err != nil {
			t.Errorf("%s defaults: %v", p.Name, err)
		}
	}
	// Plan says the same as CheckOptionsFor.
	pol, _ := mcore.New(mcore.Options{MinCPSize: 1 << 20})
	if _, err := pol.Plan([]int{100}, in); err == nil || !strings.Contains(err.Error(), "G = 48") {
		t.Errorf("Plan: %v", err)
	}
}
