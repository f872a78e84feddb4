package hydra

import (
	"errors"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestScanStepLimit: hydra-scan refuses a batch once its linear scan passes
// ScanStepLimit (issue 24 item 12: 10^5 sequences on 2^20 ranks took 11 s,
// the --batches maxima hours), naming the bound and hydra; below the bound
// it plans as hydra does.
func TestScanStepLimit(t *testing.T) {
	lengths := make([]int, 2000)
	for i := range lengths {
		lengths[i] = 100 + i*7919%9000
	}
	in := sched.Inputs{PoolRanks: 1024, BudgetTokens: 16384, PP: 1, VPP: 1, OverheadRatio: 1 << 24}
	scan, _ := NewScan(DefaultOptions())
	heap, _ := New(DefaultOptions())
	want, err := heap.Plan(lengths, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := scan.Plan(lengths, in)
	if err != nil || len(got.Microbatches) != len(want.Microbatches) {
		t.Fatalf("under the default bound: %v", err)
	}
	defer func(old int64) { ScanStepLimit = old }(ScanStepLimit)
	ScanStepLimit = got.WorkUnits / 2
	_, err = scan.Plan(lengths, in)
	if !errors.Is(err, ErrScanTooLarge) || !errors.Is(err, sched.ErrInvalidInput) {
		t.Fatalf("past the bound: %v", err)
	}
	for _, w := range []string{"hydra-scan", "more than", "2000 sequences on 1024 ranks", "plan it with hydra"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v: lacks %q", err, w)
		}
	}
}
