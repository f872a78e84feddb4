package scenarios

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// Policy options are decoded once, when the scenario is parsed: each
// [run.options.<policy>] table (as plain TOML values, merged with a sweep
// point's option values) is re-encoded and decoded strictly into a fresh value
// of the policy's options struct, then the policy's constructor validates it.
// Runs only read the decoded values, so policies built in parallel share
// nothing mutable.

// CPExecFor returns the CP execution to price a policy's plans with: the
// scenario's [costs] cp_exec / cp_overlap overrides where given, else the
// policy's own: its descriptor's, or what p (built with its options; may be
// nil) declares as a sched.Executor.
func (s *Scenario) CPExecFor(d policies.Descriptor, p sched.Policy) (sched.CPExec, bool) {
	exec, overlap := d.Exec, d.OverlapAllToAll
	if e, ok := p.(sched.Executor); ok {
		exec, overlap = e.CPExec()
	}
	if e, ok := s.CPExec[d.Name]; ok {
		exec = e
	}
	if o, ok := s.CPOverlap[d.Name]; ok {
		overlap = o
	}
	return exec, overlap
}

// optionTypeRE matches BurntSushi/toml's type errors on the re-encoded table,
// whose line numbers mean nothing to the user: the key and the reason are kept.
var optionTypeRE = regexp.MustCompile(`\(last key "([^"]*)"\): (.*)$`)

// decodeOptions decodes table into policy d's options strictly and validates
// them with its constructor (Descriptor.CheckOptions). where names the table for messages (e.g.
// "run.options.hydra" or "sweep point x/hydra.cap=64"); problems are keyed by
// the dotted option key, prefix + "." + key, for their line.
func (p *parser) decodeOptions(d policies.Descriptor, table map[string]any, prefix, where string) any {
	opts := d.Options()
	known := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(table)) {
		if !d.HasOption(k) {
			allowed := "it has none"
			if keys := d.OptionKeys(); len(keys) > 0 {
				allowed = "allowed: " + strings.Join(keys, ", ")
			}
			p.addf(prefix+"."+k, "%s.%s: unknown option for policy %q%s (%s)", prefix, k, d.Name, where, allowed)
			continue
		}
		known[k] = table[k]
	}
	n := len(p.problems)
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(known); err != nil {
		p.addf(prefix, "%s: %v%s", prefix, err, where)
		return nil
	}
	md, err := toml.Decode(buf.String(), opts)
	if err == nil && len(md.Undecoded()) > 0 {
		err = fmt.Errorf("(last key %q): not an option of %s", md.Undecoded()[0].String(), d.Name)
	}
	if err != nil {
		key, msg := prefix, err.Error()
		if m := optionTypeRE.FindStringSubmatch(msg); m != nil {
			key, msg = prefix+"."+m[1], m[2]
		}
		p.addf(key, "%s: %s%s", key, msg, where)
	}
	if len(p.problems) > n {
		return nil
	}
	if err := d.CheckOptions(opts); err != nil {
		p.addf(prefix, "[%s]: %v%s", prefix, err, where)
		return nil
	}
	return opts
}

// policyOptions decodes [run.options.<policy>] of every policy the scenario
// runs (run.policies and sweep.policies); a table for another policy is a
// problem.
func (p *parser) policyOptions(md *toml.MetaData, raw map[string]toml.Primitive, names []string) (map[string]any, map[string]map[string]any) {
	decoded := map[string]any{}
	tables := map[string]map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		table := "run.options." + name
		if !slices.Contains(names, name) {
			p.addf(table, "[%s]: options for %q, which is not in run.policies or sweep.policies %q", table, name, names)
			continue
		}
		if t, ok := p.table(md, raw[name], table); ok {
			tables[name] = t
		}
	}
	for _, name := range names {
		d, err := policies.Lookup(name)
		if err != nil {
			if _, ok := tables[name]; ok && slices.Contains(p.known, name) {
				p.addf("run.options."+name, "[run.options.%s]: %q is an external policy: its options go in [run.external.%s] options", name, name, name)
			}
			continue // reported by policyList
		}
		if o := p.decodeOptions(d, tables[name], "run.options."+name, ""); o != nil {
			decoded[name] = o
		}
	}
	return decoded, tables
}

// table decodes a TOML table (a policy's options or option axes) into plain
// values; a decoding error is a problem keyed by name.
func (p *parser) table(md *toml.MetaData, prim toml.Primitive, name string) (map[string]any, bool) {
	var t map[string]any
	if err := md.PrimitiveDecode(prim, &t); err != nil {
		p.decodeErr(name, err)
		return nil, false
	}
	return t, true
}
