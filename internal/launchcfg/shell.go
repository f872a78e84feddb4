package launchcfg

// Reading a launch script without running it: the script is lexed as the
// shell would (quotes, line continuations, comments), its variable and
// array assignments are recorded top to bottom, and the words of the one
// command that runs a pretrain_*.py are expanded with them ($V, ${V},
// ${V[@]}, ${V:-default}, $((arithmetic))). Nothing is executed: a command
// substitution, a positional parameter or a variable the script never sets
// stays unresolved, and an argument that needs its value says so.

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Bounds of a launch script.
const (
	// MaxScriptBytes bounds a script's size.
	MaxScriptBytes = 1 << 20
	// MaxScriptWords bounds the words of a script, expansions included.
	MaxScriptWords = 200_000
	// maxExpansionBytes bounds the text all expansions produce together.
	maxExpansionBytes = 8 << 20
	// maxExpansionDepth bounds nested ${V:-${W:-...}} defaults.
	maxExpansionDepth = 8
)

// Word is one argument of a launch line: its text after expansion, and
// whether some of it could not be resolved without running the script
// (then Text shows the expression).
type Word struct {
	Text       string
	Unresolved bool
}

// Words turns plain arguments into Words.
func Words(args []string) []Word {
	out := make([]Word, len(args))
	for i, a := range args {
		out[i] = Word{Text: a}
	}
	return out
}

// Launch is the launch line of a script.
type Launch struct {
	// Line is where the command starts (1-based); Program the pretrain
	// script it runs.
	Line    int
	Program string
	// Args are the words after the program: Megatron-LM's arguments.
	Args []Word
	// NProcPerNode and NNodes are the launcher's (torchrun's
	// --nproc-per-node and --nnodes, srun's --ntasks-per-node and --nodes);
	// 0 when not given or unresolved.
	NProcPerNode, NNodes int
}

var programRE = regexp.MustCompile(`^pretrain_[A-Za-z0-9_]*\.py$`)

// ScriptLaunch finds the one command of a shell script that runs a
// pretrain_*.py (Megatron-LM's pretrain_gpt.py and its kin) and returns
// its arguments with the script's variables expanded; name names the
// script in errors.
func ScriptLaunch(script, name string) (*Launch, error) {
	if len(script) > MaxScriptBytes {
		return nil, fmt.Errorf("%s: %d bytes: a launch script may have at most %d", name, len(script), MaxScriptBytes)
	}
	lx := &shellLexer{src: script, name: name, line: 1, vars: map[string][]string{}}
	var found []*Launch
	for {
		cmd, line, err := lx.command()
		if err != nil {
			return nil, err
		}
		if cmd == nil {
			break
		}
		for i, w := range cmd {
			if programRE.MatchString(path.Base(w.Text)) {
				l := &Launch{Line: line, Program: w.Text, Args: cmd[i+1:]}
				l.NProcPerNode, l.NNodes = launcher(cmd[:i])
				found = append(found, l)
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s: no command runs a pretrain_*.py (e.g. torchrun ... pretrain_gpt.py ARGS); pass the arguments themselves instead", name)
	case 1:
		return found[0], nil
	}
	lines := make([]string, len(found))
	for i, l := range found {
		lines[i] = strconv.Itoa(l.Line)
	}
	return nil, fmt.Errorf("%s: %d commands run a pretrain_*.py (lines %s): keep one, or pass the arguments themselves", name, len(found), strings.Join(lines, ", "))
}

// launcher reads the GPU counts from the words before the program:
// torchrun (or python -m torch.distributed.run/launch) and srun options.
func launcher(words []Word) (perNode, nodes int) {
	for i := 0; i < len(words); i++ {
		name, val, hasVal := strings.Cut(words[i].Text, "=")
		unresolved := words[i].Unresolved
		if !hasVal && i+1 < len(words) {
			val, unresolved = words[i+1].Text, words[i+1].Unresolved
		}
		if unresolved {
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			// torchrun's elastic "--nnodes 2:4" has no one size.
			continue
		}
		switch name {
		case "--nproc_per_node", "--nproc-per-node", "--ntasks-per-node", "--gpus-per-node":
			perNode = n
		case "--nnodes", "--nodes", "-N":
			nodes = n
		}
	}
	return perNode, nodes
}

// shellLexer splits a script into commands of expanded words.
type shellLexer struct {
	src      string
	name     string
	i        int
	line     int
	vars     map[string][]string
	words    int
	expanded int
}

func (lx *shellLexer) errf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", lx.name, lx.line, fmt.Sprintf(format, args...))
}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\+?)=`)

// command reads the next simple command (words up to a newline, ;, &, |,
// && or ||), recording its leading assignments; nil at the end of the
// script. Assignments alone make an empty command, skipped.
func (lx *shellLexer) command() ([]Word, int, error) {
	for {
		lx.skipSeparators()
		if lx.i >= len(lx.src) {
			return nil, 0, nil
		}
		start := lx.line
		var words []Word
		assigning := true
		for {
			lx.skipBlanks()
			if ok, err := lx.redirect(); err != nil {
				return nil, 0, err
			} else if ok {
				continue
			}
			if lx.i >= len(lx.src) || strings.ContainsRune("\n;&|()", rune(lx.src[lx.i])) {
				break
			}
			if lx.src[lx.i] == '#' {
				lx.skipComment()
				continue
			}
			if assigning {
				if m := assignRE.FindStringSubmatch(lx.src[lx.i:]); m != nil {
					if err := lx.assignment(m); err != nil {
						return nil, 0, err
					}
					continue
				}
				if w := lx.peekBare(); w == "export" || w == "local" || w == "readonly" || w == "declare" || w == "typeset" {
					lx.i += len(w)
					lx.skipOptions()
					continue
				}
			}
			assigning = false
			ws, err := lx.word()
			if err != nil {
				return nil, 0, err
			}
			words = append(words, ws...)
			if lx.words += len(ws); lx.words > MaxScriptWords {
				return nil, 0, lx.errf("more than %d words", MaxScriptWords)
			}
		}
		if len(words) > 0 {
			return words, start, nil
		}
	}
}

// peekBare returns the run of letters at the cursor.
func (lx *shellLexer) peekBare() string {
	j := lx.i
	for j < len(lx.src) && (lx.src[j] >= 'a' && lx.src[j] <= 'z') {
		j++
	}
	if j < len(lx.src) && lx.src[j] != ' ' && lx.src[j] != '\t' {
		return ""
	}
	return lx.src[lx.i:j]
}

// skipOptions skips the -a / -x options of declare and export.
func (lx *shellLexer) skipOptions() {
	for {
		lx.skipBlanks()
		if lx.i+1 < len(lx.src) && lx.src[lx.i] == '-' && lx.src[lx.i+1] != '-' {
			for lx.i < len(lx.src) && lx.src[lx.i] != ' ' && lx.src[lx.i] != '\t' && lx.src[lx.i] != '\n' {
				lx.i++
			}
			continue
		}
		return
	}
}

func (lx *shellLexer) skipBlanks() {
	for lx.i < len(lx.src) {
		switch {
		case lx.src[lx.i] == ' ' || lx.src[lx.i] == '\t' || lx.src[lx.i] == '\r':
			lx.i++
		case strings.HasPrefix(lx.src[lx.i:], "\\\n"):
			lx.i += 2
			lx.line++
		default:
			return
		}
	}
}

var redirectRE = regexp.MustCompile(`^(&>>?|[0-9]*(>>|>&|<&|<<-?|<>|>\||>|<))`)

// redirect skips a redirection at the cursor (2>&1, > log, <<EOF with its
// here-document) and reports whether there was one.
func (lx *shellLexer) redirect() (bool, error) {
	op := redirectRE.FindString(lx.src[lx.i:])
	if op == "" {
		return false, nil
	}
	lx.i += len(op)
	if strings.HasSuffix(op, "&") {
		// 2>&1, >&-: the target is a descriptor.
		for lx.i < len(lx.src) && (lx.src[lx.i] >= '0' && lx.src[lx.i] <= '9' || lx.src[lx.i] == '-') {
			lx.i++
		}
		return true, nil
	}
	lx.skipBlanks()
	target, err := lx.wordNoSplit()
	if err != nil {
		return false, err
	}
	if strings.HasPrefix(strings.TrimLeft(op, "0123456789"), "<<") {
		lx.hereDoc(strings.Trim(target.Text, `"'`), strings.HasSuffix(op, "-"))
	}
	return true, nil
}

// hereDoc skips a here-document's lines, from the next line to the one
// that is its delimiter.
func (lx *shellLexer) hereDoc(delim string, tabs bool) {
	nl := strings.IndexByte(lx.src[lx.i:], '\n')
	if nl < 0 {
		lx.i = len(lx.src)
		return
	}
	j := lx.i + nl + 1
	for j < len(lx.src) {
		end := strings.IndexByte(lx.src[j:], '\n')
		line := lx.src[j:]
		if end >= 0 {
			line = lx.src[j : j+end]
		}
		lx.line++
		if tabs {
			line = strings.TrimLeft(line, "\t")
		}
		if end < 0 {
			j = len(lx.src)
			break
		}
		j += end + 1
		if line == delim {
			break
		}
	}
	// Keep the rest of the command's line; drop the document's lines.
	lx.src = lx.src[:lx.i+nl+1] + lx.src[j:]
}

func (lx *shellLexer) skipComment() {
	for lx.i < len(lx.src) && lx.src[lx.i] != '\n' {
		lx.i++
	}
}

func (lx *shellLexer) skipSeparators() {
	for lx.i < len(lx.src) {
		lx.skipBlanks()
		if lx.i >= len(lx.src) {
			return
		}
		switch c := lx.src[lx.i]; {
		case c == '\n':
			lx.line++
			lx.i++
		case c == ';' || c == '&' || c == '|' || c == '(' || c == ')':
			lx.i++
		case c == '#':
			lx.skipComment()
		default:
			return
		}
	}
}

// assignment records NAME=value or NAME=(words...) (m matched NAME= or
// NAME+=).
func (lx *shellLexer) assignment(m []string) error {
	name := strings.TrimSuffix(strings.TrimSuffix(m[0], "="), "+")
	appendTo := m[1] == "+"
	lx.i += len(m[0])
	var val []string
	if lx.i < len(lx.src) && lx.src[lx.i] == '(' {
		lx.i++
		for {
			lx.skipSeparatorsInArray()
			if lx.i >= len(lx.src) {
				return lx.errf("array %s=( is not closed", name)
			}
			if lx.src[lx.i] == ')' {
				lx.i++
				break
			}
			ws, err := lx.word()
			if err != nil {
				return err
			}
			if len(ws) == 0 {
				if lx.i >= len(lx.src) {
					return lx.errf("array %s=( is not closed", name)
				}
				return lx.errf("unexpected %q in the array %s", lx.src[lx.i], name)
			}
			for _, w := range ws {
				val = append(val, w.Text)
			}
			if lx.words += len(ws); lx.words > MaxScriptWords {
				return lx.errf("more than %d words", MaxScriptWords)
			}
		}
	} else {
		ws, err := lx.wordNoSplit()
		if err != nil {
			return err
		}
		val = []string{ws.Text}
		if ws.Unresolved {
			// The variable's value is unknown: forget any earlier one, so
			// that an expansion of it is unresolved too.
			delete(lx.vars, name)
			return nil
		}
	}
	if appendTo {
		val = append(append([]string(nil), lx.vars[name]...), val...)
	}
	if len(lx.vars) >= MaxScriptWords {
		return lx.errf("more than %d variables", MaxScriptWords)
	}
	lx.vars[name] = val
	return nil
}

func (lx *shellLexer) skipSeparatorsInArray() {
	for lx.i < len(lx.src) {
		lx.skipBlanks()
		if lx.i >= len(lx.src) {
			return
		}
		switch lx.src[lx.i] {
		case '\n':
			lx.line++
			lx.i++
		case '#':
			lx.skipComment()
		default:
			return
		}
	}
}

// piece is part of a word: literal text (never split) or an expansion's
// result (split on blanks when unquoted).
type piece struct {
	text       string
	fields     []string // an unquoted expansion's words, or a quoted "${A[@]}"'s elements
	split      bool
	unresolved bool
}

// word reads one shell word and expands it into zero or more words.
func (lx *shellLexer) word() ([]Word, error) {
	pieces, err := lx.pieces(false)
	if err != nil {
		return nil, err
	}
	return join(pieces), nil
}

// wordNoSplit reads one word as an assignment's value: expansions are not
// split.
func (lx *shellLexer) wordNoSplit() (Word, error) {
	pieces, err := lx.pieces(true)
	if err != nil {
		return Word{}, err
	}
	var b strings.Builder
	w := Word{}
	for _, p := range pieces {
		if p.fields != nil {
			b.WriteString(strings.Join(p.fields, " "))
		} else {
			b.WriteString(p.text)
		}
		w.Unresolved = w.Unresolved || p.unresolved
	}
	w.Text = b.String()
	return w, nil
}

// join turns a word's pieces into words: literal pieces glue to their
// neighbours, split pieces cut the word at their blanks.
func join(pieces []piece) []Word {
	var out []Word
	var cur strings.Builder
	open, unresolved := false, false
	flush := func() {
		if open {
			out = append(out, Word{Text: cur.String(), Unresolved: unresolved})
		}
		cur.Reset()
		open, unresolved = false, false
	}
	for _, p := range pieces {
		if p.fields == nil {
			cur.WriteString(p.text)
			open = true
			unresolved = unresolved || p.unresolved
			continue
		}
		for k, f := range p.fields {
			if k > 0 {
				flush()
			}
			cur.WriteString(f)
			open = open || !p.split || f != ""
			unresolved = unresolved || p.unresolved
		}
	}
	flush()
	return out
}

// pieces reads the characters of one word up to an unquoted blank or
// operator.
func (lx *shellLexer) pieces(assign bool) ([]piece, error) {
	var out []piece
	lit := func(s string) { out = append(out, piece{text: s}) }
	for lx.i < len(lx.src) {
		c := lx.src[lx.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '&' || c == '|' || c == ')' || c == '(' || c == '<' || c == '>':
			return out, nil
		case c == '\\':
			if lx.i+1 < len(lx.src) {
				if lx.src[lx.i+1] == '\n' {
					lx.line++
					lx.i += 2
					return out, nil
				}
				lit(lx.src[lx.i+1 : lx.i+2])
				lx.i += 2
			} else {
				lx.i++
			}
		case c == '\'':
			end := strings.IndexByte(lx.src[lx.i+1:], '\'')
			if end < 0 {
				return nil, lx.errf("an unclosed ' quote")
			}
			s := lx.src[lx.i+1 : lx.i+1+end]
			lx.line += strings.Count(s, "\n")
			out = append(out, piece{text: s})
			lx.i += end + 2
		case c == '"':
			ps, err := lx.doubleQuoted()
			if err != nil {
				return nil, err
			}
			if len(ps) == 0 {
				lit("")
			}
			out = append(out, ps...)
		case c == '$' || c == '`':
			p, err := lx.expansion(false, 0)
			if err != nil {
				return nil, err
			}
			p.split = !assign
			if p.fields == nil {
				p.fields = []string{p.text}
			}
			if p.split {
				var fs []string
				for _, f := range p.fields {
					fs = append(fs, strings.Fields(f)...)
				}
				if len(fs) == 0 {
					fs = []string{""}
				}
				p.fields = fs
			}
			out = append(out, p)
		default:
			j := lx.i
			for j < len(lx.src) && !strings.ContainsRune(" \t\r\n;&|()<>\\'\"$`", rune(lx.src[j])) {
				j++
			}
			lit(lx.src[lx.i:j])
			lx.i = j
		}
	}
	return out, nil
}

// doubleQuoted reads "..." from the opening quote: literal text and
// expansions that are not split ("${A[@]}" keeps its elements apart).
func (lx *shellLexer) doubleQuoted() ([]piece, error) {
	lx.i++
	var out []piece
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, piece{text: b.String()})
			b.Reset()
		}
	}
	for lx.i < len(lx.src) {
		c := lx.src[lx.i]
		switch c {
		case '"':
			lx.i++
			flush()
			if len(out) == 0 {
				out = append(out, piece{text: ""})
			}
			return out, nil
		case '\\':
			if lx.i+1 < len(lx.src) {
				switch n := lx.src[lx.i+1]; n {
				case '\n':
					lx.line++
				case '"', '\\', '$', '`':
					b.WriteByte(n)
				default:
					b.WriteByte('\\')
					b.WriteByte(n)
				}
				lx.i += 2
				continue
			}
			lx.i++
		case '$', '`':
			flush()
			p, err := lx.expansion(true, 0)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		default:
			if c == '\n' {
				lx.line++
			}
			b.WriteByte(c)
			lx.i++
		}
	}
	return nil, lx.errf("an unclosed \" quote")
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

// expansion reads $NAME, ${...}, $(...), $((...)), `...` or a special
// parameter at the cursor.
func (lx *shellLexer) expansion(quoted bool, depth int) (piece, error) {
	src := lx.src
	start := lx.i
	if src[lx.i] == '`' {
		end := strings.IndexByte(src[lx.i+1:], '`')
		if end < 0 {
			return piece{}, lx.errf("an unclosed ` command substitution")
		}
		lx.i += end + 2
		return lx.unresolvedPiece(src[start:lx.i]), nil
	}
	lx.i++ // $
	if lx.i >= len(src) {
		return piece{text: "$"}, nil
	}
	switch c := src[lx.i]; {
	case strings.HasPrefix(src[lx.i:], "(("):
		end, err := lx.closing(lx.i+2, "((", "))")
		if err != nil {
			return piece{}, err
		}
		expr := src[lx.i+2 : end]
		lx.i = end + 2
		if v, ok := lx.arith(expr); ok {
			return lx.value(strconv.FormatInt(v, 10))
		}
		return lx.unresolvedPiece(src[start:lx.i]), nil
	case c == '(':
		end, err := lx.closing(lx.i+1, "(", ")")
		if err != nil {
			return piece{}, err
		}
		lx.i = end + 1
		return lx.unresolvedPiece(src[start:lx.i]), nil
	case c == '{':
		end, err := lx.closing(lx.i+1, "{", "}")
		if err != nil {
			return piece{}, err
		}
		body := src[lx.i+1 : end]
		lx.i = end + 1
		return lx.braced(body, src[start:lx.i], quoted, depth)
	case strings.ContainsRune("0123456789@*#?$!-", rune(c)):
		lx.i++
		return lx.unresolvedPiece(src[start:lx.i]), nil
	default:
		name := nameRE.FindString(src[lx.i:])
		if name == "" {
			return piece{text: "$"}, nil
		}
		lx.i += len(name)
		v, ok := lx.vars[name]
		if !ok {
			return lx.unresolvedPiece(src[start:lx.i]), nil
		}
		if len(v) == 0 {
			return lx.value("")
		}
		return lx.value(v[0])
	}
}

// closing finds the end of a bracketed expansion from i, nested pairs
// counted; the cursor does not move.
func (lx *shellLexer) closing(i int, open, close string) (int, error) {
	depth := 1
	for j := i; j < len(lx.src); j++ {
		switch {
		case strings.HasPrefix(lx.src[j:], close):
			if depth--; depth == 0 {
				return j, nil
			}
			j += len(close) - 1
		case strings.HasPrefix(lx.src[j:], open):
			depth++
			j += len(open) - 1
		}
	}
	return 0, lx.errf("an unclosed $%s", open)
}

// braced expands ${NAME}, ${NAME[@]}, ${NAME[*]}, ${NAME[i]}, ${#NAME} and
// ${NAME:-default} (also -, :=, =); other forms are unresolved.
func (lx *shellLexer) braced(body, text string, quoted bool, depth int) (piece, error) {
	name := nameRE.FindString(body)
	rest := body[len(name):]
	if name == "" {
		return lx.unresolvedPiece(text), nil
	}
	v, set := lx.vars[name]
	switch {
	case rest == "":
		if !set {
			return lx.unresolvedPiece(text), nil
		}
		if len(v) == 0 {
			return lx.value("")
		}
		return lx.value(v[0])
	case rest == "[@]" || rest == "[*]":
		if !set {
			return lx.unresolvedPiece(text), nil
		}
		if rest == "[*]" || !quoted {
			return lx.value(strings.Join(v, " "))
		}
		return lx.values(v)
	case strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]"):
		k, err := strconv.Atoi(rest[1 : len(rest)-1])
		if !set || err != nil {
			return lx.unresolvedPiece(text), nil
		}
		if k < 0 || k >= len(v) {
			return lx.value("")
		}
		return lx.value(v[k])
	}
	for _, op := range []string{":-", ":=", "-", "="} {
		if !strings.HasPrefix(rest, op) {
			continue
		}
		useDefault := !set || strings.HasPrefix(op, ":") && (len(v) == 0 || v[0] == "")
		if !useDefault {
			if len(v) == 0 {
				return lx.value("")
			}
			return lx.value(v[0])
		}
		if depth >= maxExpansionDepth {
			return piece{}, lx.errf("${...} defaults nested more than %d deep", maxExpansionDepth)
		}
		d, unresolved := lx.expandText(rest[len(op):], depth+1)
		if unresolved {
			return lx.unresolvedPiece(text), nil
		}
		if strings.HasSuffix(op, "=") {
			lx.vars[name] = []string{d}
		}
		return lx.value(d)
	}
	return lx.unresolvedPiece(text), nil
}

// expandText expands a default's text (its quotes removed, its
// expansions resolved); unresolved says some were not.
func (lx *shellLexer) expandText(s string, depth int) (string, bool) {
	sub := &shellLexer{src: s, name: lx.name, line: lx.line, vars: lx.vars, expanded: lx.expanded}
	var b strings.Builder
	unresolved := false
	for sub.i < len(sub.src) {
		switch c := sub.src[sub.i]; c {
		case '"', '\'':
			sub.i++
		case '$':
			p, err := sub.expansion(true, depth)
			if err != nil {
				return "", true
			}
			b.WriteString(strings.Join(append([]string{p.text}, p.fields...), ""))
			unresolved = unresolved || p.unresolved
		default:
			b.WriteByte(c)
			sub.i++
		}
	}
	lx.expanded = sub.expanded
	return b.String(), unresolved
}

// value is an expansion's result, counted against maxExpansionBytes.
func (lx *shellLexer) value(s string) (piece, error) {
	if lx.expanded += len(s); lx.expanded > maxExpansionBytes {
		return piece{}, lx.errf("the expansions produce more than %d bytes", maxExpansionBytes)
	}
	return piece{text: s, fields: []string{s}}, nil
}

// values is a quoted "${A[@]}": one field per element.
func (lx *shellLexer) values(v []string) (piece, error) {
	for _, s := range v {
		if lx.expanded += len(s) + 1; lx.expanded > maxExpansionBytes {
			return piece{}, lx.errf("the expansions produce more than %d bytes", maxExpansionBytes)
		}
	}
	if len(v) == 0 {
		return piece{fields: []string{}}, nil
	}
	return piece{fields: append([]string(nil), v...)}, nil
}

func (lx *shellLexer) unresolvedPiece(text string) piece {
	return piece{text: text, fields: []string{text}, unresolved: true}
}

// arith evaluates $((expr)) over integers and set variables: + - * / %
// and parentheses; ok is false for anything else (or a division by 0).
func (lx *shellLexer) arith(expr string) (int64, bool) {
	a := arithParser{s: expr, vars: lx.vars}
	v, ok := a.sum(0)
	a.blanks()
	return v, ok && a.i == len(a.s)
}

type arithParser struct {
	s    string
	i    int
	vars map[string][]string
}

func (a *arithParser) blanks() {
	for a.i < len(a.s) && (a.s[a.i] == ' ' || a.s[a.i] == '\t') {
		a.i++
	}
}

const maxArithDepth = 32

func (a *arithParser) sum(depth int) (int64, bool) {
	v, ok := a.product(depth)
	for ok {
		a.blanks()
		if a.i >= len(a.s) || (a.s[a.i] != '+' && a.s[a.i] != '-') {
			return v, true
		}
		op := a.s[a.i]
		a.i++
		w, ok2 := a.product(depth)
		if !ok2 {
			return 0, false
		}
		if op == '+' {
			v += w
		} else {
			v -= w
		}
	}
	return 0, false
}

func (a *arithParser) product(depth int) (int64, bool) {
	v, ok := a.atom(depth)
	for ok {
		a.blanks()
		if a.i >= len(a.s) || !strings.ContainsRune("*/%", rune(a.s[a.i])) {
			return v, true
		}
		op := a.s[a.i]
		a.i++
		w, ok2 := a.atom(depth)
		if !ok2 || (op != '*' && w == 0) {
			return 0, false
		}
		switch op {
		case '*':
			v *= w
		case '/':
			v /= w
		default:
			v %= w
		}
	}
	return 0, false
}

func (a *arithParser) atom(depth int) (int64, bool) {
	a.blanks()
	if a.i >= len(a.s) || depth > maxArithDepth {
		return 0, false
	}
	switch c := a.s[a.i]; {
	case c == '(':
		a.i++
		v, ok := a.sum(depth + 1)
		a.blanks()
		if !ok || a.i >= len(a.s) || a.s[a.i] != ')' {
			return 0, false
		}
		a.i++
		return v, true
	case c == '-':
		a.i++
		v, ok := a.atom(depth + 1)
		return -v, ok
	case c == '$':
		a.i++
		if a.i < len(a.s) && a.s[a.i] == '{' {
			end := strings.IndexByte(a.s[a.i:], '}')
			if end < 0 {
				return 0, false
			}
			name := a.s[a.i+1 : a.i+end]
			a.i += end + 1
			return a.variable(name)
		}
		return a.atom(depth + 1)
	case c >= '0' && c <= '9':
		j := a.i
		for j < len(a.s) && a.s[j] >= '0' && a.s[j] <= '9' {
			j++
		}
		v, err := strconv.ParseInt(a.s[a.i:j], 10, 64)
		a.i = j
		return v, err == nil
	}
	name := nameRE.FindString(a.s[a.i:])
	if name == "" {
		return 0, false
	}
	a.i += len(name)
	return a.variable(name)
}

func (a *arithParser) variable(name string) (int64, bool) {
	v, ok := a.vars[name]
	if !ok || len(v) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
	return n, err == nil
}
