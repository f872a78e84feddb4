// Package policies is the one list of the DCP policies dcpsim implements: a
// Descriptor per policy with its name, summary, the CP execution its plans
// assume, its options schema and its constructor. Every other package (the
// scenario parser, the experiments, the CLI, the cost model) asks this list;
// none keeps its own. Adding a policy is one package under sched/ plus one
// entry in All.
package policies

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/bytescale"
	"github.com/dcpsim/dcpsim/sched/flexsp"
	"github.com/dcpsim/dcpsim/sched/heterodp"
	"github.com/dcpsim/dcpsim/sched/hexiseq"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sched/hydrahetero"
	"github.com/dcpsim/dcpsim/sched/mcore"
	"github.com/dcpsim/dcpsim/sched/static"
	"github.com/dcpsim/dcpsim/sched/usp"
	"github.com/dcpsim/dcpsim/sched/wlbllm"
)

// Descriptor is everything dcpsim knows of one policy besides its code.
type Descriptor struct {
	// Name is the registry and scenario name, e.g. "hydra".
	Name string
	// Summary is one line for listings.
	Summary string
	// Exec is the CP execution the policy's plans assume; the cost model prices
	// every group under it (a scenario's [costs] cp_exec may override it as a
	// what-if).
	Exec sched.CPExec
	// OverlapAllToAll says whether the policy hides its Q/K/V all-to-alls behind
	// independent compute (HyDra §5.2.2) or leaves them exposed.
	OverlapAllToAll bool
	// Options returns a fresh pointer to the policy's options struct holding
	// its defaults. Its fields' `toml` tags are the keys of the scenario table
	// [run.options.<Name>] (OptionKeys); it is the options schema.
	Options func() any
	// New builds the policy from options (a value Options returned, possibly
	// decoded into; nil means the defaults) and env (what the job and the
	// machine give it), and validates the options: an error names the key
	// and the allowed range. A policy that needs what env lacks returns an
	// error wrapping sched.ErrEnvMissing (after checking its options).
	New func(options any, env sched.Env) (sched.Policy, error)
	// Requires names the MILP solver program the policy cannot plan without
	// (zero when none): whoever builds the policy finds it and hands it over
	// in sched.Env.Solver, or skips the policy naming the package; it never
	// substitutes something else.
	Requires Requirement
	// PlansAhead says the policy's planner runs a batch ahead of training,
	// overlapped with the previous iteration (FlexSP §5: a CPU solver
	// service): only the planning stall beyond the previous iteration's step
	// is on the critical path.
	PlansAhead bool
	// Defers says the policy may hold sequences of a batch back for later
	// iterations (WLB-LLM's outlier delay queues): an iteration then trains
	// plan.Trained(lengths), not every length of its batch, so a bound
	// computed from a batch's lengths does not bound that policy's step.
	Defers bool
}

// Requirement is an external program and the Debian package that installs
// it.
type Requirement struct {
	// Program is the executable looked up on PATH, e.g. "cbc".
	Program string
	// Package is the Debian package that installs it, e.g. "coinor-cbc".
	Package string
}

// All returns every policy, sorted by name.
func All() []Descriptor {
	return []Descriptor{
		describe(bytescale.Name, "ByteScale HDP: any-integer degrees D(s) (⌈s/C⌉, fewer with selective offload), best-fit bins, balance scheduler with per-rank microbatch counts",
			sched.Ring, false, bytescale.DefaultOptions, bytescale.New),
		flexSP(),
		describe(heterodp.Name, "heterogeneity-aware data parallelism: sequences split across GPU kinds in proportion to their speed, static CP inside each kind (what one runs without HexiSeq)",
			sched.Ulysses, false, heterodp.DefaultOptions, noEnv(heterodp.New)),
		describe(hexiseq.Name, "HexiSeq: asymmetric CP × HP for mixed GPU kinds: per-rank shard lengths and head counts by capability under memory (clustering, capability split, coordinate descent)",
			sched.UlyssesRing, false, hexiseq.DefaultOptions, noEnv(hexiseq.New)),
		describe(hydra.Name, "HyDra: load-driven degrees from the closed-form cap C*, piggyback packing with heaps",
			sched.UlyssesRing, true, hydra.DefaultOptions, noEnv(hydra.New)),
		describe(hydrahetero.Name, "HyDra on mixed GPU kinds: per-rank load in seconds on each rank's own kind (attention and linear work), so a slower GPU gets proportionally less",
			sched.UlyssesRing, true, hydrahetero.DefaultOptions, noEnv(hydrahetero.New)),
		describe(hydra.ScanName, "HyDra with the plain linear-scan placement (reference; identical plans)",
			sched.UlyssesRing, true, hydra.DefaultOptions, noEnv(hydra.NewScan)),
		describe(mcore.Name, "Megatron-Core dynamic CP (dev next_hdp_group_packing_aware): memory-driven degrees, exact",
			sched.Ulysses, false, mcore.DefaultOptions, noEnv(mcore.New)),
		describe(static.Name, "static CP at the smallest degree whose cp·B holds the context, Megatron dp_balanced packing",
			sched.Ulysses, false, static.DefaultOptions, noEnv(static.New)),
		describe(usp.Name, "USP: the best equal-share CP × HP factorization (Ulysses inside groups of u, ring across them; plain ring and Ulysses its corners)",
			sched.UlyssesRing, false, usp.DefaultOptions, noEnv(usp.New)),
		wlbLLM(),
	}
}

// wlbLLM is WLB-LLM's descriptor: all-gather-KV CP, outliers deferred to
// later iterations.
func wlbLLM() Descriptor {
	d := describe(wlbllm.Name, "WLB-LLM: fixed CP, variable-length packing by predicted workload with outlier delay queues across iterations, all-gather-KV CP",
		sched.AllGatherKV, false, wlbllm.DefaultOptions, noEnv(wlbllm.New))
	d.Defers = true
	return d
}

// flexSP is FlexSP's descriptor: Ulysses with exposed all-to-alls, a MILP
// solver required (COIN-OR CBC), planning ahead of training.
func flexSP() Descriptor {
	d := describe(flexsp.Name, "FlexSP: Sequence Blaster microbatches, a MILP per microbatch choosing heterogeneous Ulysses group sizes (needs cbc)",
		sched.Ulysses, false, flexsp.DefaultOptions, flexsp.New)
	d.Requires = Requirement{Program: "cbc", Package: "coinor-cbc"}
	d.PlansAhead = true
	return d
}

// noEnv adapts the constructor of a policy that needs nothing from its Env.
func noEnv[O any, P sched.Policy](build func(O) (P, error)) func(O, sched.Env) (P, error) {
	return func(o O, _ sched.Env) (P, error) { return build(o) }
}

// describe builds a Descriptor from a policy package's typed options and
// constructor.
func describe[O any, P sched.Policy](name, summary string, exec sched.CPExec, overlap bool,
	defaults func() O, build func(O, sched.Env) (P, error)) Descriptor {
	return Descriptor{
		Name: name, Summary: summary, Exec: exec, OverlapAllToAll: overlap,
		Options: func() any { o := defaults(); return &o },
		New: func(options any, env sched.Env) (sched.Policy, error) {
			o := defaults()
			if options != nil {
				p, ok := options.(*O)
				if !ok || p == nil {
					return nil, fmt.Errorf("policies: %s: options of type %T, want %T", name, options, &o)
				}
				o = *p
			}
			p, err := build(o, env)
			if err != nil {
				return nil, fmt.Errorf("policy %s: %w", name, err)
			}
			return p, nil
		},
	}
}

// Names returns the policy names, sorted.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, d := range all {
		names[i] = d.Name
	}
	return names
}

// Lookup returns the named policy's descriptor, or an error listing the known
// names.
func Lookup(name string) (Descriptor, error) {
	for _, d := range All() {
		if d.Name == name {
			return d, nil
		}
	}
	return Descriptor{}, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(Names(), ", "))
}

// New builds the named policy with its default options and an empty Env.
func New(name string) (sched.Policy, error) {
	d, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return d.New(nil, sched.Env{})
}

// CheckOptions validates options (as New would) without what the policy
// needs from its Env: a policy refused only for lacking its environment
// (sched.ErrEnvMissing) has valid options.
func (d Descriptor) CheckOptions(options any) error {
	if _, err := d.New(options, sched.Env{}); err != nil && !errors.Is(err, sched.ErrEnvMissing) {
		return err
	}
	return nil
}

// CheckOptionsFor validates options as CheckOptions does and then against a
// job's Inputs (sched.InputChecker: options valid only for some pools, as
// mcore's min_cp_size). in needs only the job's sizes (PoolRanks,
// BudgetTokens, MaxDegree); no batch is checked.
func (d Descriptor) CheckOptionsFor(options any, in sched.Inputs) error {
	p, err := d.New(options, sched.Env{})
	if err != nil {
		if errors.Is(err, sched.ErrEnvMissing) {
			return nil
		}
		return err
	}
	if c, ok := p.(sched.InputChecker); ok {
		return c.CheckInputs(in)
	}
	return nil
}

// OptionKeys returns the keys of the policy's options table, in field order:
// the `toml` tags of its options struct.
func (d Descriptor) OptionKeys() []string {
	t := reflect.TypeOf(d.Options()).Elem()
	var keys []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// HasOption reports whether key is one of the policy's option keys.
func (d Descriptor) HasOption(key string) bool { return slices.Contains(d.OptionKeys(), key) }
