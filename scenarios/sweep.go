package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched/policies"
)

func (p *parser) sweep(md *toml.MetaData, s *rawSweep, base job.Parallel, baseFabric job.Fabric, policyNames []string) *Sweep {
	out := &Sweep{GPUs: s.GPUs, ContextTokens: s.ContextTokens, BudgetTokens: s.BudgetTokens, Policies: s.Policies}
	axes := []struct {
		key    string
		vals   []int
		lo, hi int
	}{
		{"sweep.gpus", s.GPUs, 1, job.MaxGPUs},
		{"sweep.context_tokens", s.ContextTokens, 1, job.MaxContextTokens},
		{"sweep.budget_tokens", s.BudgetTokens, 1, job.MaxBudgetTokens},
	}
	for _, a := range axes {
		for _, v := range a.vals {
			if v < a.lo || v > a.hi {
				p.addf(a.key, "%s: value %d must be in [%d, %d]", a.key, v, a.lo, a.hi)
			}
		}
		if hasDuplicates(a.vals) {
			p.addf(a.key, "%s: values must be distinct", a.key)
		}
	}
	out.Options = p.optionAxes(md, s.Options, policyNames)
	names := map[string]bool{}
	for i, v := range s.Variants {
		at := fmt.Sprintf("sweep.variant[%d]", i)
		if !nameRE.MatchString(v.Name) {
			p.addf("sweep.variant.name", "%s.name = %q: must match [a-z0-9._-]{1,64}", at, v.Name)
		}
		if names[v.Name] {
			p.addf("sweep.variant.name", "%s.name = %q: used twice", at, v.Name)
		}
		names[v.Name] = true
		if v.Model != "" {
			if _, err := job.LookupModel(v.Model); err != nil {
				p.addf("sweep.variant.model", "%s.model = %q: unknown model; known: %s", at, v.Model, strings.Join(job.ModelNames(), ", "))
			}
		}
		rp := newRawParallel(base)
		if err := md.PrimitiveDecode(v.Parallel, &rp); err != nil {
			p.decodeErr("sweep.variant.parallel", err)
		}
		par := rp.parallel()
		fab := baseFabric
		if err := md.PrimitiveDecode(v.Cluster, &fab); err != nil {
			p.decodeErr("sweep.variant.cluster", err)
		}
		out.Variants = append(out.Variants, Variant{Name: v.Name, Model: v.Model, Parallel: par, Fabric: fab,
			Options: p.variantOptions(md, v.Options, at, policyNames)})
	}
	for _, k := range md.Undecoded() {
		if len(k) >= 4 && k[0] == "sweep" && k[1] == "variant" && (k[2] == "parallel" || k[2] == "cluster") {
			p.addf(k.String(), "%s: unknown key%s", k.String(), suggest(k))
		}
	}
	return out
}

// optionAxes reads [sweep.options.<policy>]: each key an option of that
// policy (which the scenario runs), each value a non-empty list of distinct
// values. Whether every value is valid is checked per point (Points).
func (p *parser) optionAxes(md *toml.MetaData, raw map[string]toml.Primitive, policyNames []string) []OptionAxis {
	var out []OptionAxis
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		table := "sweep.options." + name
		d, err := policies.Lookup(name)
		if err != nil || !slices.Contains(policyNames, name) {
			p.addf(table, "[%s]: %q is not in run.policies or sweep.policies %q", table, name, policyNames)
			continue
		}
		t, ok := p.table(md, raw[name], table)
		if !ok {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(t)) {
			at := table + "." + key
			if !d.HasOption(key) {
				p.addf(at, "%s: unknown option for policy %q (allowed: %s)", at, name, strings.Join(d.OptionKeys(), ", "))
				continue
			}
			vals, ok := t[key].([]any)
			if !ok || len(vals) == 0 {
				p.addf(at, "%s: must be a non-empty list of values of %s's option %q, e.g. [1, 2]", at, name, key)
				continue
			}
			seen := map[string]bool{}
			for _, v := range vals {
				s := fmt.Sprint(v)
				if seen[s] {
					p.addf(at, "%s: values must be distinct (%s twice)", at, s)
				}
				seen[s] = true
			}
			out = append(out, OptionAxis{Policy: name, Key: key, Values: vals})
		}
	}
	return out
}

// Point is one concrete scenario of a sweep.
type Point struct {
	// Name identifies the point, e.g. "hy3/gpus=8192".
	Name string
	// Axes are the point's value on each swept axis, in the sweep's order.
	Axes []AxisValue
	// Scenario is the base scenario with the point's values applied, validated.
	Scenario *Scenario
}

// AxisValue is a point's value on one swept axis. Keys are "variant", "gpus",
// "context_tokens", "budget_tokens", "<policy>.<key>" for a policy option
// (OptionAxis.Name) and "policy".
type AxisValue struct {
	Key, Value string
}

// axis is one dimension of a sweep's cartesian product: n values, its key,
// the label of its part of point names ("" for the variant, whose value is
// the part), and how to apply value i to a point (returning the value).
type axis struct {
	n          int
	key, label string
	apply      func(pt *Scenario, i int) string
}

// sweepAxes lists the axes of s's sweep in the fixed order of Points.
func (s *Scenario) sweepAxes() []axis {
	sw := s.Sweep
	var axes []axis
	if len(sw.Variants) > 0 {
		axes = append(axes, axis{len(sw.Variants), "variant", "", func(pt *Scenario, i int) string {
			v := sw.Variants[i]
			pt.Job.Parallel = v.Parallel
			pt.Job.Cluster.Fabric = v.Fabric
			for _, name := range slices.Sorted(maps.Keys(v.Options)) {
				t := maps.Clone(pt.optionTables[name])
				if t == nil {
					t = map[string]any{}
				}
				maps.Copy(t, v.Options[name])
				pt.optionTables[name] = t
			}
			if v.Model != "" {
				pt.Job.Model, _ = job.LookupModel(v.Model) // checked when parsed
			}
			return v.Name
		}})
	}
	intAxis := func(vals []int, key, label string, set func(pt *Scenario, v int)) {
		if len(vals) > 0 {
			axes = append(axes, axis{len(vals), key, label, func(pt *Scenario, i int) string {
				set(pt, vals[i])
				return strconv.Itoa(vals[i])
			}})
		}
	}
	intAxis(sw.GPUs, "gpus", "gpus", func(pt *Scenario, g int) { pt.Job.Cluster.GPUs = g })
	intAxis(sw.ContextTokens, "context_tokens", "context", func(pt *Scenario, c int) { pt.Job.ContextTokens, pt.Workload.ContextTokens = c, c })
	intAxis(sw.BudgetTokens, "budget_tokens", "budget", func(pt *Scenario, b int) { pt.Job.Parallel.BudgetTokens = b })
	for _, oa := range sw.Options {
		axes = append(axes, axis{len(oa.Values), oa.Name(), oa.Name(), func(pt *Scenario, i int) string {
			t := maps.Clone(pt.optionTables[oa.Policy])
			if t == nil {
				t = map[string]any{}
			}
			t[oa.Key] = oa.Values[i]
			pt.optionTables[oa.Policy] = t
			return fmt.Sprint(oa.Values[i])
		}})
	}
	if len(sw.Policies) > 0 {
		axes = append(axes, axis{len(sw.Policies), "policy", "policy", func(pt *Scenario, i int) string {
			pt.Run.Policies = []string{sw.Policies[i]}
			return sw.Policies[i]
		}})
	}
	return axes
}

// Points expands the sweep into its concrete scenarios in a fixed order:
// variants, then gpus, then context_tokens, then budget_tokens, then the
// option axes (by policy, then key), then policies; the last axis varies
// fastest. A scenario without a sweep is one point named after it. Every point
// is validated (its job, batch size and policy options); the error names the
// failing points.
func (s *Scenario) Points() ([]Point, error) {
	if s.Sweep == nil {
		return []Point{{Name: s.Name, Scenario: s}}, nil
	}
	axes := s.sweepAxes()
	n := 1
	for _, a := range axes {
		n *= a.n
		if n > MaxSweepPoints {
			return nil, &Error{File: s.File, Problems: []Problem{{Line: lineOf(s.lines, "sweep"), Key: "sweep",
				Message: fmt.Sprintf("[sweep]: more than %d points", MaxSweepPoints)}}}
		}
	}
	p := &parser{file: s.File, lines: s.lines}
	points := make([]Point, 0, n)
	idx := make([]int, len(axes))
	for range n {
		pt := *s
		pt.Sweep = nil
		pt.optionTables = maps.Clone(s.optionTables)
		if pt.optionTables == nil {
			pt.optionTables = map[string]map[string]any{}
		}
		var parts []string
		var vals []AxisValue
		for k, a := range axes {
			v := a.apply(&pt, idx[k])
			vals = append(vals, AxisValue{Key: a.key, Value: v})
			if a.label != "" {
				v = a.label + "=" + v
			}
			parts = append(parts, v)
		}
		if pt.Workload.BatchTokensPerGPU > 0 {
			pt.Workload.BatchTokens = pt.Workload.BatchTokensPerGPU * int64(pt.Job.Cluster.GPUs)
		}
		pt.Name = s.Name + "/" + strings.Join(parts, "/")
		if p.point(&pt, s.Sweep.Options) {
			points = append(points, Point{Name: pt.Name, Axes: vals, Scenario: &pt})
		}
		for k := len(idx) - 1; k >= 0; k-- { // next index, the last axis fastest
			if idx[k]++; idx[k] < axes[k].n {
				break
			}
			idx[k] = 0
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return points, nil
}

// point validates one sweep point and decodes its policies' options; false
// when it has a problem (recorded in p, attributed to the [sweep] table).
func (p *parser) point(pt *Scenario, swept []OptionAxis) bool {
	return p.pointJob(pt) && p.pointOptions(pt, swept)
}

// pointJob validates a point's job, batch size and per-kind budgets
// (resolving an automatic budget); false when it has a problem.
func (p *parser) pointJob(pt *Scenario) bool {
	line := lineOf(p.lines, "sweep")
	n := len(p.problems)
	if err := pt.Job.Validate(); err != nil {
		fields, others := job.FieldErrors(err)
		for _, f := range fields {
			p.problems = append(p.problems, Problem{Line: line, Key: jobKey(f.Key),
				Message: fmt.Sprintf("sweep point %s: %s = %v: %s", pt.Name, jobKey(f.Key), f.Value, f.Rule)})
		}
		for _, o := range others {
			p.problems = append(p.problems, Problem{Line: line, Message: fmt.Sprintf("sweep point %s: %v", pt.Name, o)})
		}
		return false
	}
	if pt.Workload.BatchTokens > MaxBatchTokens {
		p.problems = append(p.problems, Problem{Line: line, Key: "workload.batch_tokens_per_gpu",
			Message: fmt.Sprintf("sweep point %s: %d tokens per batch; must be <= %d", pt.Name, pt.Workload.BatchTokens, int64(MaxBatchTokens))})
		return false
	}
	if p.kindBudgets(pt, "sweep point "+pt.Name+": "); len(p.problems) > n {
		return false
	}
	p.batch(pt, "sweep point "+pt.Name+": ")
	return len(p.problems) == n
}

// pointOptions decodes the options of a point's policies (swept ones are
// attributed to [sweep.options]); false when one is not valid.
func (p *parser) pointOptions(pt *Scenario, swept []OptionAxis) bool {
	n := len(p.problems)
	opts := make(map[string]any, len(pt.Run.Options))
	for _, name := range pt.Run.Policies {
		d, err := policies.Lookup(name)
		if err != nil {
			continue // reported when parsed
		}
		prefix := "run.options." + name
		for _, oa := range swept {
			if oa.Policy == name {
				prefix = "sweep.options." + name
			}
		}
		if o := p.decodeOptions(d, pt.optionTables[name], prefix, " at sweep point "+pt.Name); o != nil {
			opts[name] = o
		}
	}
	pt.Run.Options = opts
	return len(p.problems) == n
}

// variantOptions reads a variant's [sweep.variant.options.<policy>] tables:
// options of policies the scenario runs, checked per point (Points).
func (p *parser) variantOptions(md *toml.MetaData, raw map[string]toml.Primitive, at string, policyNames []string) map[string]map[string]any {
	var out map[string]map[string]any
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		table := "sweep.variant.options." + name
		d, err := policies.Lookup(name)
		if err != nil || !slices.Contains(policyNames, name) {
			p.addf(table, "%s.options.%s: %q is not in run.policies or sweep.policies %q", at, name, name, policyNames)
			continue
		}
		t, ok := p.table(md, raw[name], table)
		if !ok {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(t)) {
			if !d.HasOption(key) {
				p.addf(table+"."+key, "%s.options.%s.%s: unknown option for policy %q (allowed: %s)", at, name, key, name, strings.Join(d.OptionKeys(), ", "))
			}
		}
		if out == nil {
			out = map[string]map[string]any{}
		}
		out[name] = t
	}
	return out
}
