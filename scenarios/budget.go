package scenarios

import (
	"fmt"

	"github.com/dcpsim/dcpsim/job"
)

// rawParallel is a [parallel] table (and a sweep variant's): job.Parallel
// with budget_tokens either a token count or "auto".
type rawParallel struct {
	job.Parallel
	Budget budgetTokens `toml:"budget_tokens"`
}

// budgetTokens is budget_tokens as written: a count, or "auto" (the largest
// budget whose peak memory fits, resolved per GPU kind by kindBudgets).
type budgetTokens struct {
	n    int
	auto bool
}

// AutoBudget is the budget_tokens value that asks for the largest budget
// whose peak memory fits.
const AutoBudget = "auto"

// UnmarshalTOML takes an integer or "auto".
func (b *budgetTokens) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		*b = budgetTokens{n: int(max(min(x, 1<<40), -1<<40))}
		return nil
	case string:
		if x == AutoBudget {
			*b = budgetTokens{auto: true}
			return nil
		}
		return fmt.Errorf("budget_tokens = %q: must be a token count in [1, %d] or %q", x, job.MaxBudgetTokens, AutoBudget)
	}
	return fmt.Errorf("budget_tokens = %v: must be a token count in [1, %d] or %q", v, job.MaxBudgetTokens, AutoBudget)
}

// newRawParallel wraps p, its budget included.
func newRawParallel(p job.Parallel) rawParallel {
	return rawParallel{Parallel: p, Budget: budgetTokens{n: p.BudgetTokens, auto: p.BudgetAuto}}
}

// parallel is the table as a job.Parallel.
func (r rawParallel) parallel() job.Parallel {
	p := r.Parallel
	p.BudgetTokens, p.BudgetAuto = r.Budget.n, r.Budget.auto
	return p
}
