package launchcfg

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/job"
)

// ScenarioOptions say what the scenario adds to the imported job.
type ScenarioOptions struct {
	// Name is the scenario's name ([a-z0-9._-]{1,64}; ScenarioName makes
	// one of a file name).
	Name string
	// WorkloadPreset or WorkloadFile replace the fixed-length sequences
	// (every one the launch line's sequence length) by a length
	// distribution or a length file.
	WorkloadPreset, WorkloadFile string
	// Policies are more DCP policies to run beside the framework's own
	// (Import.Policy).
	Policies []string
}

// The [run] of an imported scenario: fixed-length batches are all alike,
// so a few iterations measure them.
const (
	importIterations = 3
	importWarmup     = 1
)

var nameCharRE = regexp.MustCompile(`[^a-z0-9._-]+`)

// ScenarioName turns a file's base name into a scenario name: lower case,
// other characters as '-', at most 64 ("imported" when nothing is left).
func ScenarioName(base string) string {
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	n := strings.Trim(nameCharRE.ReplaceAllString(strings.ToLower(base), "-"), "-.")
	if len(n) > 64 {
		n = strings.Trim(n[:64], "-.")
	}
	if n == "" || !regexp.MustCompile(`[a-z0-9]`).MatchString(n) {
		return "imported"
	}
	return n
}

// Scenario writes the imported job as a scenario file: the accounting of
// every argument as comments, then [cluster], [model], [parallel],
// [workload], [run] and the CP execution.
func (im *Import) Scenario(o ScenarioOptions) string {
	var b strings.Builder
	j := im.Job
	comment := func(format string, args ...any) {
		b.WriteString(strings.TrimRight("# "+printable(fmt.Sprintf(format, args...)), " ") + "\n")
	}
	comment("Imported by dcpsim import %s from %s: %s.", im.Format, im.Source, im.summary())
	im.writeAccounting(comment)
	fmt.Fprintf(&b, "name = %s\n", quote(o.Name))
	fmt.Fprintf(&b, "description = %s\n", quote(fmt.Sprintf("Imported from %s: %s", im.Source, im.summary())))

	b.WriteString("\n[cluster]\n")
	fmt.Fprintf(&b, "gpu = %s\ngpus = %d\ngpus_per_node = %d\n", quote(j.Cluster.GPU), j.Cluster.GPUs, j.Cluster.GPUsPerNode)

	b.WriteString("\n[model]\n")
	writeFields(&b, reflect.ValueOf(j.Model), []string{"name", "layers", "dense_layers", "hidden", "attention", "query_heads",
		"kv_heads", "head_dim_qk", "head_dim_v", "dense_ffn", "activation", "learned_positions", "vocab", "tied_embeddings", "max_context_tokens", "source"})

	b.WriteString("\n[parallel]\n")
	writeFields(&b, reflect.ValueOf(j.Parallel), []string{"tp", "pp", "vpp", "ep", "budget_tokens", "sequence_parallel", "tp_comm_overlap",
		"overlap_grad_reduce", "overlap_param_gather", "grad_reduce_fp32", "recompute", "grad_sync", "precision"})

	b.WriteString("\n[workload]\n")
	fmt.Fprintf(&b, "context_tokens = %d\n", im.SeqLen)
	fmt.Fprintf(&b, "batch_tokens = %d\n", int64(im.GlobalBatch)*int64(im.SeqLen))
	switch {
	case o.WorkloadPreset != "":
		fmt.Fprintf(&b, "preset = %s\n", quote(o.WorkloadPreset))
	case o.WorkloadFile != "":
		fmt.Fprintf(&b, "file = %s\n", quote(o.WorkloadFile))
	default:
		comment("every sequence is %d tokens long, the sequence length", im.SeqLen)
		fmt.Fprintf(&b, "\n[[workload.component]]\nkind = \"empirical\"\ntokens = [%d]\ncdf = [1.0]\n", im.SeqLen)
	}

	policies := []string{im.Policy}
	for _, p := range o.Policies {
		if !slices.Contains(policies, p) {
			policies = append(policies, p)
		}
	}
	quoted := make([]string, len(policies))
	for i, p := range policies {
		quoted[i] = quote(p)
	}
	b.WriteString("\n[run]\n")
	fmt.Fprintf(&b, "iterations = %d\nwarmup_iterations = %d\nseed = 1\npolicies = [%s]\n", importIterations, importWarmup, strings.Join(quoted, ", "))
	if slices.Contains(policies, "static") {
		b.WriteString("\n[run.options.static]\n")
		fmt.Fprintf(&b, "degree = %d\n", im.CP)
		if im.CPExec == "ring" {
			b.WriteString("ring = true\n")
		}
		if im.CPExec == "all-gather-kv" || im.CPExec == "ulysses-ring" {
			fmt.Fprintf(&b, "\n[costs.cp_exec]\nstatic = %s\n", quote(im.CPExec))
		}
	}
	return b.String()
}

// summary is the job in one line.
func (im *Import) summary() string {
	j := im.Job
	p := j.Parallel
	s := fmt.Sprintf("%d×%s, %d layers, tp%d pp%d vpp%d cp%d", j.Cluster.GPUs, j.Cluster.GPU, j.Model.Layers, p.TP, p.PP, p.VPP, im.CP)
	if j.Model.RoutedExperts > 0 {
		s += fmt.Sprintf(" ep%d etp%d", p.EP, p.ExpertTP())
	}
	return s + fmt.Sprintf(", %d sequences of %d tokens per step (micro batch %d)", im.GlobalBatch, im.SeqLen, im.MicroBatch)
}

// writeAccounting lists every argument by class: the scenario keys each
// mapped one set, the groups of the no-effect ones, the assumptions.
func (im *Import) writeAccounting(comment func(string, ...any)) {
	var mapped, unknown []Use
	groups := map[string][]string{}
	var order []string
	for _, u := range im.Uses {
		switch u.Class {
		case Mapped:
			mapped = append(mapped, u)
		case NoEffect:
			if _, ok := groups[u.Note]; !ok {
				order = append(order, u.Note)
			}
			groups[u.Note] = append(groups[u.Note], u.Arg)
		case Unknown:
			unknown = append(unknown, u)
		}
	}
	if len(mapped) > 0 {
		comment("")
		comment("mapped (%d):", len(mapped))
		for _, u := range mapped {
			arg := u.Arg
			if u.Value != "" {
				arg += " " + clip(u.Value)
			}
			comment("  %-44s %s", arg, u.Note)
		}
	}
	if len(order) > 0 {
		n := 0
		for _, g := range order {
			n += len(groups[g])
		}
		comment("")
		comment("no effect on timing (%d):", n)
		slices.Sort(order)
		for _, g := range order {
			comment("  %s: %s", g, strings.Join(groups[g], ", "))
		}
	}
	if len(im.Assumed) > 0 {
		comment("")
		comment("assumed (%d):", len(im.Assumed))
		for _, a := range im.Assumed {
			comment("  %s", a)
		}
	}
	if len(unknown) > 0 {
		comment("")
		comment("unknown, ignored (--ignore-unknown) (%d):", len(unknown))
		for _, u := range unknown {
			comment("  %s %s", u.Arg, clip(u.Value))
		}
	}
	comment("")
}

// writeFields writes a struct's fields as TOML keys in field order: the
// always keys, and any other whose value is not zero.
func writeFields(b *strings.Builder, v reflect.Value, always []string) {
	t := v.Type()
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if key == "" || key == "-" {
			continue
		}
		f := v.Field(i)
		if f.IsZero() && !slices.Contains(always, key) {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			s := f.String()
			if s == "" {
				s = zeroName(key)
			}
			fmt.Fprintf(b, "%s = %s\n", key, quote(s))
		case reflect.Int:
			fmt.Fprintf(b, "%s = %d\n", key, f.Int())
		case reflect.Bool:
			fmt.Fprintf(b, "%s = %t\n", key, f.Bool())
		case reflect.Float64:
			fmt.Fprintf(b, "%s = %s\n", key, strconv.FormatFloat(f.Float(), 'g', -1, 64))
		default:
			panic("launchcfg: a field of unexpected kind: " + key)
		}
	}
}

// zeroName is what an empty enumeration means, written out.
func zeroName(key string) string {
	switch key {
	case "recompute":
		return string(job.RecomputeNone)
	case "grad_sync":
		return string(job.GradReduceScatter)
	case "precision":
		return string(job.PrecisionBF16)
	case "activation":
		return string(job.SwiGLU)
	}
	return ""
}

// quote writes a TOML basic string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// printable keeps a comment on one line.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
