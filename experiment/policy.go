package experiment

import (
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/badinput"

	"github.com/dcpsim/dcpsim/milp"
	"github.com/dcpsim/dcpsim/milp/cbc"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// ErrMissingProgram is wrapped by BuildPolicy's error when a policy needs a
// program that is not installed (policies.Descriptor.Requires): a run skips
// that policy with a note naming the package, and the --batches contracts
// refuse it (exit 2). Nothing is substituted for the program.
var ErrMissingProgram = errors.New("a program the policy needs is not installed")

// missingProgram is ErrMissingProgram with the policy and the package
// named; it blames the caller's machine, as bad input does (badinput.Err).
type missingProgram struct {
	policy string
	req    policies.Requirement
	err    error
}

func (e *missingProgram) Error() string {
	return fmt.Sprintf("policy %s needs the %s program (Debian package %s; install it with apt-get install %s): %v",
		e.policy, e.req.Program, e.req.Package, e.req.Package, e.err)
}

func (e *missingProgram) Is(target error) bool {
	return target == ErrMissingProgram || target == badinput.Err
}

func (e *missingProgram) Unwrap() error { return e.err }

// findSolver finds the MILP solver a policy requires (cbc.Find).
var findSolver = func() (milp.Solver, error) { return cbc.Find() }

// BuildPolicy builds descriptor d's policy with options (nil: defaults) and
// the Env it is built with: the MILP solver its descriptor requires (an
// error wrapping ErrMissingProgram, naming the Debian package, when the
// program is not installed) and, when setup is not nil, the job's token
// costs (without a setup it plans with its own defaults, as for --batches
// lines, which name no model or GPU).
func BuildPolicy(d policies.Descriptor, options any, setup *Setup) (sched.Policy, error) {
	var env sched.Env
	if d.Requires.Program != "" {
		if err := d.CheckOptions(options); err != nil {
			return nil, badInput("%w", err)
		}
		s, err := findSolver()
		if err != nil {
			return nil, &missingProgram{policy: d.Name, req: d.Requires, err: err}
		}
		env.Solver = s
	}
	if setup != nil {
		tc := setup.TokenCosts
		env.TokenCosts = &tc
		env.Offload = setup.Offload
	}
	p, err := d.New(options, env)
	if err != nil {
		return nil, badInput("%w", err)
	}
	return p, nil
}

// NewPolicy is BuildPolicy for the named policy with its defaults and no
// job (the --batches contracts); an unknown name matches badinput.Err.
func NewPolicy(name string) (sched.Policy, error) {
	d, err := policies.Lookup(name)
	if err != nil {
		return nil, badInput("%w", err)
	}
	return BuildPolicy(d, nil, nil)
}

// PolicyFor is BuildPolicy for the named policy of a scenario, with the
// scenario's options for it and its setup's costs.
func PolicyFor(sc *scenarios.Scenario, name string, setup *Setup) (sched.Policy, error) {
	d, err := policies.Lookup(name)
	if err != nil {
		return nil, badInput("%w", err)
	}
	return BuildPolicy(d, sc.Run.Options[name], setup)
}
