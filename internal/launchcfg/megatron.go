package launchcfg

import (
	"fmt"
	"strings"
)

// Megatron imports Megatron-LM's command-line arguments: the words after
// pretrain_gpt.py, as a shell would pass them.
func Megatron(args []string, o Options) (*Import, error) {
	return importArgs(Words(args), nil, "the command line", o)
}

// MegatronScript imports the launch line of a shell script (ScriptLaunch):
// its arguments, and the GPU count of its torchrun or srun launcher. name
// names the script in messages.
func MegatronScript(script, name string, o Options) (*Import, error) {
	l, err := ScriptLaunch(script, name)
	if err != nil {
		return nil, &Error{Source: name, Problems: []string{err.Error()}}
	}
	return importArgs(l.Args, l, fmt.Sprintf("%s:%d", name, l.Line), o)
}

// isOption reports whether a word starts an argument.
func isOption(w Word) bool {
	return !w.Unresolved && strings.HasPrefix(w.Text, "--") && len(w.Text) > 2
}

// importArgs reads Megatron-LM arguments and builds the job.
func importArgs(words []Word, l *Launch, source string, o Options) (*Import, error) {
	s := &settings{}
	im := &Import{Format: "megatron", Source: source}
	b := &builder{s: s, o: o, im: im, origin: map[string]string{}, names: func(n string) string { return "--" + n }}
	if l != nil {
		if l.NNodes > 0 {
			s.nnodes = setting[int]{v: l.NNodes, src: "the launcher's --nnodes", set: true}
		}
		if l.NProcPerNode > 0 {
			s.nprocPerNode = setting[int]{v: l.NProcPerNode, src: "the launcher's --nproc-per-node", set: true}
		}
	}
	for i := 0; i < len(words); {
		w := words[i]
		i++
		if !isOption(w) {
			if w.Unresolved {
				if o.IgnoreUnknown {
					im.Uses = append(im.Uses, Use{Arg: w.Text, Class: Unknown, Note: "not known without running the script"})
				} else {
					b.fail("%s: what it holds is not known without running the script (dcpsim runs nothing): set the variable in the script, or --ignore-unknown to list it and go on", w.Text)
				}
				continue
			}
			b.fail("%q: not an argument (arguments start with --)", w.Text)
			continue
		}
		name, val, hasVal := strings.Cut(w.Text[2:], "=")
		sp, known := lookup(name)
		if sp.recipeOnly {
			known = false
		}
		a := &arg{src: "--" + name}
		if hasVal {
			a.vals = []Word{{Text: val}}
		} else {
			ar := anyArity
			if known {
				ar = sp.arity
			}
			switch ar {
			case flagArity:
			case oneArity:
				if i < len(words) && !isOption(words[i]) {
					a.vals = words[i : i+1]
					i++
				}
			default:
				for i < len(words) && !isOption(words[i]) {
					a.vals = append(a.vals, words[i])
					i++
				}
			}
		}
		use := Use{Arg: a.src, Value: a.text()}
		switch {
		case !known:
			use.Class = Unknown
			if !o.IgnoreUnknown {
				b.fail("%s: unknown argument (not in dcpsim's catalog of Megatron-LM arguments)%s; --ignore-unknown lists it and goes on", a.src, suggestDashes(name))
			}
		default:
			use.Class, use.Note = sp.class, sp.note
			if err := apply(s, sp, a, b); err != nil {
				b.failErr(err)
			}
		}
		im.Uses = append(im.Uses, use)
	}
	b.build()
	if err := errorOf(source, b.problems); err != nil {
		return nil, err
	}
	return im, nil
}

// apply records one argument by its class.
func apply(s *settings, sp spec, a *arg, b *builder) error {
	switch sp.class {
	case Mapped:
		if sp.approx {
			b.assume("%s %s", a.src, sp.note)
		}
		if sp.apply != nil {
			return sp.apply(s, a)
		}
	case Refused:
		return a.errf("refused: %s", sp.note)
	}
	return nil
}

// suggestDashes suggests the dashed spelling of an argument written with
// underscores, when the catalog knows it.
func suggestDashes(name string) string {
	if !strings.Contains(name, "_") {
		return ""
	}
	d := strings.ReplaceAll(name, "_", "-")
	if sp, ok := lookup(d); ok && !sp.recipeOnly {
		return fmt.Sprintf(" (did you mean --%s?)", d)
	}
	return ""
}
