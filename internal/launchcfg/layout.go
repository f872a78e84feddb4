package launchcfg

// The arguments whose values are small languages: Megatron-Core's pipeline
// layout ("Et*3|(tt|)*29,m|L", or a recipe's list of lists of layer
// names), --moe-layer-freq's Python list expression ("([0]*3+[1]*58)"),
// and the few with rules of their own.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/job"
)

// maxLayoutChars bounds a pipeline layout once its repetitions are
// unrolled: every virtual stage of the largest job, each with every layer
// and the embedding, loss and MTP marks.
const maxLayoutChars = job.MaxPP*job.MaxVPP + 4*maxLayers

// stageLayers is one virtual stage of a pipeline layout: its decoder
// layers and MTP layers.
type stageLayers struct{ decoder, mtp int }

// parseLayoutString reads Megatron-Core's pipeline_model_parallel_layout
// string: commas are cosmetic, "(X)*n" and "x*n" repeat, "|" separates
// virtual stages, and E, L, t, m are the embedding, the loss, a decoder
// layer and an MTP layer (PipelineParallelLayerLayout.parse_str_to_list).
// Its unrolled size is bounded by maxLayoutChars before it is built.
func parseLayoutString(s string) ([]stageLayers, error) {
	s = strings.ReplaceAll(s, ",", "")
	s = strings.ReplaceAll(s, " ", "")
	var err error
	if s, err = unrollGroups(s); err != nil {
		return nil, err
	}
	if s, err = unrollChars(s); err != nil {
		return nil, err
	}
	var out []stageLayers
	for _, stage := range strings.Split(s, "|") {
		var st stageLayers
		for _, c := range stage {
			switch c {
			case 't':
				st.decoder++
			case 'm':
				st.mtp++
			case 'E', 'L':
			default:
				return nil, fmt.Errorf("layer %q: the layers are E (embedding), L (loss), t (decoder) and m (MTP)", c)
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// unrollGroups expands "(X)*n" (X without parentheses), as Megatron's one
// regular-expression pass does.
func unrollGroups(s string) (string, error) {
	var b strings.Builder
	for {
		open := strings.IndexByte(s, '(')
		if open < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:open])
		end := strings.IndexByte(s[open:], ')')
		if end < 0 {
			return "", fmt.Errorf("an unclosed '('")
		}
		inner := s[open+1 : open+end]
		if strings.ContainsRune(inner, '(') || inner == "" {
			return "", fmt.Errorf("a group (...) must hold layers and no other group")
		}
		rest := s[open+end+1:]
		n, k, err := repeatCount(rest)
		if err != nil {
			return "", err
		}
		if b.Len()+len(inner)*n > maxLayoutChars {
			return "", fmt.Errorf("more than %d layers and stage marks once unrolled", maxLayoutChars)
		}
		b.WriteString(strings.Repeat(inner, n))
		s = rest[k:]
	}
	if strings.ContainsRune(b.String(), ')') {
		return "", fmt.Errorf("an unmatched ')'")
	}
	return b.String(), nil
}

// repeatCount reads "*n" at the start of s: n and its length; a group
// needs one.
func repeatCount(s string) (n, length int, err error) {
	if !strings.HasPrefix(s, "*") {
		return 0, 0, fmt.Errorf("a group (...) must be followed by *n")
	}
	j := 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	n, err = strconv.Atoi(s[1:j])
	if err != nil || n < 0 || n > maxLayoutChars {
		return 0, 0, fmt.Errorf("a repetition *n needs a count in [0, %d]", maxLayoutChars)
	}
	return n, j, nil
}

// unrollChars expands "x*n" into n x's.
func unrollChars(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i+1 < len(s) && s[i+1] == '*' {
			n, k, err := repeatCount(s[i+1:])
			if err != nil {
				return "", err
			}
			if b.Len()+n > maxLayoutChars {
				return "", fmt.Errorf("more than %d layers and stage marks once unrolled", maxLayoutChars)
			}
			b.WriteString(strings.Repeat(s[i:i+1], n))
			i += k
			continue
		}
		if s[i] == '*' {
			return "", fmt.Errorf("a '*' without a layer before it")
		}
		b.WriteByte(s[i])
	}
	if b.Len() > maxLayoutChars {
		return "", fmt.Errorf("more than %d layers and stage marks", maxLayoutChars)
	}
	return b.String(), nil
}

// layoutFromNode reads a recipe's layout: a string, or a list of virtual
// stages, each a list of layer names (embedding, decoder, mtp, loss) or
// letters.
func layoutFromNode(n *Node) ([]stageLayers, error) {
	if n.Kind == Scalar {
		return parseLayoutString(n.Value)
	}
	if n.Kind != Sequence {
		return nil, fmt.Errorf("must be a layout string or a list of stages")
	}
	if len(n.Items) > job.MaxPP*job.MaxVPP {
		return nil, fmt.Errorf("%d virtual stages: at most %d", len(n.Items), job.MaxPP*job.MaxVPP)
	}
	out := make([]stageLayers, len(n.Items))
	for i, stage := range n.Items {
		if stage.Kind != Sequence {
			return nil, fmt.Errorf("stage %d must be a list of layers", i)
		}
		for _, l := range stage.Items {
			if l.Kind != Scalar {
				return nil, fmt.Errorf("stage %d: a layer must be a name", i)
			}
			switch l.Value {
			case "decoder", "t":
				out[i].decoder++
			case "mtp", "m":
				out[i].mtp++
			case "embedding", "E", "loss", "L":
			default:
				return nil, fmt.Errorf("stage %d: layer %q: the layers are embedding, decoder, mtp and loss", i, l.Value)
			}
		}
	}
	return out, nil
}

// applyLayout reads --pipeline-model-parallel-layout.
func applyLayout(s *settings, a *arg) error {
	var stages []stageLayers
	var err error
	if a.node != nil {
		stages, err = layoutFromNode(a.node)
	} else {
		var v string
		if v, err = a.one(); err == nil {
			stages, err = parseLayoutString(v)
		}
	}
	if err != nil {
		return a.errf("%v", err)
	}
	counts := make([]int, len(stages))
	mtp := 0
	for i, st := range stages {
		counts[i] = st.decoder
		mtp += st.mtp
	}
	if mtp > 0 {
		if err := put(&s.layoutMTP, mtp, a); err != nil {
			return err
		}
	}
	return put(&s.layout, counts, a)
}

// maxPatternLayers bounds a --moe-layer-freq pattern.
const maxPatternLayers = maxLayers

// parseFreqPattern evaluates --moe-layer-freq's Python list expression:
// lists of 0 and 1, "+" to concatenate, "*n" to repeat, parentheses.
func parseFreqPattern(s string) ([]int, error) {
	p := freqParser{s: strings.ReplaceAll(s, " ", "")}
	v, err := p.sum(0)
	if err != nil {
		return nil, err
	}
	if p.i != len(p.s) {
		return nil, fmt.Errorf("unexpected %q", p.s[p.i:])
	}
	return v, nil
}

type freqParser struct {
	s string
	i int
}

func (p *freqParser) sum(depth int) ([]int, error) {
	v, err := p.term(depth)
	for err == nil && p.i < len(p.s) && p.s[p.i] == '+' {
		p.i++
		var w []int
		if w, err = p.term(depth); err == nil {
			if len(v)+len(w) > maxPatternLayers {
				return nil, fmt.Errorf("more than %d layers", maxPatternLayers)
			}
			v = append(v, w...)
		}
	}
	return v, err
}

func (p *freqParser) term(depth int) ([]int, error) {
	v, err := p.atom(depth)
	for err == nil && p.i < len(p.s) && p.s[p.i] == '*' {
		n, k, err2 := repeatCount(p.s[p.i:])
		if err2 != nil {
			return nil, err2
		}
		p.i += k
		if len(v)*n > maxPatternLayers {
			return nil, fmt.Errorf("more than %d layers", maxPatternLayers)
		}
		rep := make([]int, 0, len(v)*n)
		for range n {
			rep = append(rep, v...)
		}
		v = rep
	}
	return v, err
}

func (p *freqParser) atom(depth int) ([]int, error) {
	if depth > 16 {
		return nil, fmt.Errorf("nested too deep")
	}
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("ends early")
	}
	switch p.s[p.i] {
	case '(':
		p.i++
		v, err := p.sum(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return nil, fmt.Errorf("an unclosed '('")
		}
		p.i++
		return v, nil
	case '[':
		end := strings.IndexByte(p.s[p.i:], ']')
		if end < 0 {
			return nil, fmt.Errorf("an unclosed '['")
		}
		body := p.s[p.i+1 : p.i+end]
		p.i += end + 1
		if body == "" {
			return nil, nil
		}
		var out []int
		for _, f := range strings.Split(body, ",") {
			switch f {
			case "0":
				out = append(out, 0)
			case "1":
				out = append(out, 1)
			default:
				return nil, fmt.Errorf("entry %q: every layer is 0 (dense) or 1 (MoE)", f)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected %q", p.s[p.i:])
}

// applyMoEFreq reads --moe-layer-freq: an integer N (MoE every N-th layer
// from layer 0) or a pattern.
func applyMoEFreq(s *settings, a *arg) error {
	if a.node != nil && a.node.Kind == Sequence {
		pattern := make([]int, 0, len(a.node.Items))
		for _, it := range a.node.Items {
			if it.Kind != Scalar || (it.Value != "0" && it.Value != "1") {
				return a.errf("every layer is 0 (dense) or 1 (MoE)")
			}
			pattern = append(pattern, int(it.Value[0]-'0'))
		}
		if len(pattern) > maxPatternLayers {
			return a.errf("more than %d layers", maxPatternLayers)
		}
		return put(&s.moeFreq, pattern, a)
	}
	v, err := a.one()
	if err != nil {
		return err
	}
	v = strings.TrimSpace(v)
	if n, err := strconv.Atoi(v); err == nil {
		if n < 1 || n > maxLayers {
			return a.errf("must be an integer in [1, %d] or a pattern such as \"([0]*3+[1]*58)\"", maxLayers)
		}
		return put(&s.moeFreqN, n, a)
	}
	pattern, err := parseFreqPattern(v)
	if err != nil {
		return a.errf("%v", err)
	}
	return put(&s.moeFreq, pattern, a)
}

// denseAndStep turns a MoE layer pattern into dcpsim's dense_layers and
// moe_layer_step: d dense layers, then MoE every N-th layer at positions
// d+N-1, d+2N-1, ...; ok is false when the pattern is not of that form.
func denseAndStep(pattern []int) (dense, step int, ok bool) {
	var ones []int
	for i, v := range pattern {
		if v == 1 {
			ones = append(ones, i)
		}
	}
	if len(ones) == 0 {
		return 0, 0, false
	}
	step = 1
	if len(ones) > 1 {
		step = ones[1] - ones[0]
	} else if last := len(pattern) - 1; ones[0] != last {
		// One MoE layer not at the end: it ends a period longer than what follows it.
		step = last - ones[0] + 1
	}
	dense = ones[0] - (step - 1)
	if dense < 0 {
		return 0, 0, false
	}
	for i, v := range pattern {
		moe := i >= dense && (i-dense)%step == step-1
		if moe != (v == 1) {
			return 0, 0, false
		}
	}
	return dense, step, true
}

// applyCapacity reads --moe-expert-capacity-factor.
func applyCapacity(s *settings, a *arg) error {
	v, err := a.float(0, 16)
	if err != nil {
		return err
	}
	return put(&s.capacity, v, a)
}

// applyRankCapacity reads --moe-expert-rank-capacity-factor: every expert
// rank padded to that capacity.
func applyRankCapacity(s *settings, a *arg) error {
	if err := applyCapacity(s, a); err != nil {
		return err
	}
	return put(&s.padCapacity, true, a)
}

// fsdpFlag reads --use-megatron-fsdp and --use-torch-fsdp2.
func fsdpFlag(s *settings, a *arg, impl string) error {
	on, err := a.bool()
	if err != nil || !on {
		return err
	}
	return put(&s.fsdp, impl, a)
}

// applyAttentionBackend accepts the FlashAttention backends dcpsim prices.
func applyAttentionBackend(_ *settings, a *arg) error {
	v, err := a.one()
	if err != nil {
		return err
	}
	switch strings.TrimPrefix(v, "AttnBackend.") {
	case "flash", "fused", "auto":
		return nil
	}
	return a.errf("must be flash, fused or auto: the unfused and local backends' attention is not priced")
}

// applyTransformerImpl accepts Transformer Engine's layers.
func applyTransformerImpl(_ *settings, a *arg) error {
	if _, err := a.choice("transformer_engine"); err != nil {
		return fmt.Errorf("%w: the local implementation's kernels are not priced", err)
	}
	return nil
}
