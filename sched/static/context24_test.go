package static

import (
	"errors"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestContextShorterThanSequence: a context shorter than a sequence is blamed
// on context_tokens, not on cp·B (issue 24 item 20); a forced degree or no
// context keeps the cp·B message.
func TestContextShorterThanSequence(t *testing.T) {
	lengths := []int{2000, 1000, 10, 10}
	in := sched.Inputs{PoolRanks: 4, BudgetTokens: 1000, PP: 1, VPP: 1, ContextTokens: 1000}
	_, err := newPolicy(t, Options{}).Plan(lengths, in)
	var tl *sched.ErrSequenceTooLong
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "longer than context_tokens = 1000") {
		t.Errorf("context 1000, sequence 2000: %v", err)
	}
	_, err = newPolicy(t, Options{Degree: 1}).Plan(lengths, in)
	if err == nil || strings.Contains(err.Error(), "context_tokens") || !strings.Contains(err.Error(), "cp·B = 1·1000") {
		t.Errorf("forced degree 1: %v", err)
	}
}
