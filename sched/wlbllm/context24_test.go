package wlbllm

import (
	"errors"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestContextShorterThanSequence: a context shorter than a sequence is blamed
// on context_tokens, not on cp·B (issue 24 item 20).
func TestContextShorterThanSequence(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := sched.Inputs{PoolRanks: 4, BudgetTokens: 1000, PP: 1, VPP: 1, ContextTokens: 1000}
	_, err = p.Plan([]int{2000, 1000, 10, 10}, in)
	var tl *sched.ErrSequenceTooLong
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "longer than context_tokens = 1000") {
		t.Errorf("context 1000, sequence 2000: %v", err)
	}
}
