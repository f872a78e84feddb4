package launchcfg

import (
	"fmt"
	"strconv"
	"strings"
)

// arg is one argument as the user wrote it: a command-line option with its
// values, or a recipe key with its scalar (or sequence of scalars) value.
type arg struct {
	// src names it as written: "--num-layers" or "model.num_layers".
	src string
	// vals are its values; a command-line flag has none.
	vals []Word
	// node is a recipe value (nil on the command line).
	node *Node
	// yaml says it came from a recipe.
	yaml bool
}

// text is the argument's values as written, for listings.
func (a *arg) text() string {
	if a.node != nil && a.node.Kind != Scalar {
		return describeNode(a.node)
	}
	parts := make([]string, len(a.vals))
	for i, v := range a.vals {
		parts[i] = v.Text
	}
	return strings.Join(parts, " ")
}

// describeNode summarises a recipe value that is not a scalar.
func describeNode(n *Node) string {
	switch n.Kind {
	case Sequence:
		return fmt.Sprintf("[%d items]", len(n.Items))
	case Mapping:
		return "{" + strings.Join(n.Keys, ", ") + "}"
	}
	return n.Value
}

func (a *arg) errf(format string, args ...any) error {
	v := a.text()
	if v == "" {
		return fmt.Errorf("%s: %s", a.src, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("%s %s: %s", a.src, clip(v), fmt.Sprintf(format, args...))
}

// one returns the argument's single value.
func (a *arg) one() (string, error) {
	if len(a.vals) != 1 {
		if len(a.vals) == 0 {
			return "", a.errf("needs a value")
		}
		return "", a.errf("takes one value, got %d", len(a.vals))
	}
	if a.vals[0].Unresolved {
		return "", a.errf("its value is not known without running the script (dcpsim runs nothing): write the value, or set the variable in the script")
	}
	return a.vals[0].Text, nil
}

// int returns the single value as an integer in [lo, hi].
func (a *arg) int(lo, hi int) (int, error) {
	s, err := a.one()
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < lo || v > hi {
		return 0, a.errf("must be an integer in [%d, %d]", lo, hi)
	}
	return v, nil
}

// float returns the single value as a number in [lo, hi].
func (a *arg) float(lo, hi float64) (float64, error) {
	s, err := a.one()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(v >= lo && v <= hi) {
		return 0, a.errf("must be a number in [%g, %g]", lo, hi)
	}
	return v, nil
}

// bool returns a flag's value: true for a command-line flag, the recipe's
// true or false.
func (a *arg) bool() (bool, error) {
	if !a.yaml {
		if len(a.vals) > 0 {
			return false, a.errf("is a flag: it takes no value")
		}
		return true, nil
	}
	s, err := a.one()
	if err != nil {
		return false, err
	}
	switch s {
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	}
	return false, a.errf("must be true or false")
}

// choice returns the single value, which must be one of allowed.
func (a *arg) choice(allowed ...string) (string, error) {
	s, err := a.one()
	if err != nil {
		return "", err
	}
	for _, c := range allowed {
		if s == c {
			return s, nil
		}
	}
	return "", a.errf("must be one of %s", strings.Join(allowed, ", "))
}

// list returns the values: a command line's words, or a recipe's scalar
// or sequence of scalars.
func (a *arg) list() ([]string, error) {
	if len(a.vals) == 0 {
		return nil, a.errf("needs at least one value")
	}
	out := make([]string, len(a.vals))
	for i, v := range a.vals {
		if v.Unresolved {
			return nil, a.errf("value %q is not known without running the script (dcpsim runs nothing)", v.Text)
		}
		out[i] = v.Text
	}
	return out, nil
}

// ints returns the values as integers in [lo, hi].
func (a *arg) ints(lo, hi int) ([]int, error) {
	ss, err := a.list()
	if err != nil {
		return nil, err
	}
	out := make([]int, len(ss))
	for i, s := range ss {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < lo || v > hi {
			return nil, a.errf("every value must be an integer in [%d, %d]", lo, hi)
		}
		out[i] = v
	}
	return out, nil
}

// setting is one value the arguments set, and which argument set it.
type setting[T any] struct {
	v   T
	src string
	set bool
}

// or is the value, or d when nothing set it.
func (s setting[T]) or(d T) T {
	if s.set {
		return s.v
	}
	return d
}

// settings is what the arguments say, in Megatron-LM's terms, before
// Megatron's defaults and dcpsim's rules turn it into a job (build).
type settings struct {
	// The model.
	layers, hidden, ffn, heads, groups, kvChannels setting[int]
	gqa, mla                                       setting[bool]
	qLoRA, kvLoRA, qkHead, qkPos, vHead            setting[int]
	experts, topK, moeFFN, sharedFFN               setting[int]
	moeFreq                                        setting[[]int]
	moeFreqN                                       setting[int]
	expertBias, qkNorm, attnGate                   setting[bool]
	swiglu, squaredReLU, geglu, gated              setting[bool]
	activationFunc                                 setting[string]
	posType                                        setting[string]
	maxPos, vocab, padMultiple, mtp                setting[int]
	untie, tied, padVocab                          setting[bool]

	// The layout.
	tp, pp, cp, ep, etp                      setting[int]
	vppLayers, vppStages, vpp                setting[int]
	layout                                   setting[[]int]
	layoutMTP, mbGroup                       setting[int]
	first, last                              setting[int]
	accEmbedding, accLoss                    setting[bool]
	cpComm                                   setting[[]string]
	hierCP                                   setting[[]int]
	sp, tpOverlap, overlapGrad, overlapParam setting[bool]
	distOpt, overlapMoE, fsdp2NoReshard      setting[bool]
	fsdp                                     setting[string]
	shardingStrategy                         setting[string]
	gradBF16, gradFP32, mpGradFP32           setting[bool]
	dispatcher, flexBackend                  setting[string]
	deepEP, padCapacity                      setting[bool]
	capacity                                 setting[float64]
	hybridCP                                 setting[bool]
	maxSeqlenPerRank                         setting[int]
	mbs, gbs, seq                            setting[int]
	bf16, fp16                               setting[bool]
	fp8, fp8Recipe, granularity, method      setting[string]
	recomputeNum                             setting[int]
	modules                                  setting[[]string]
	nprocPerNode, nnodes                     setting[int]
	recomputeActivations                     setting[bool]
	// mpGiven says a recipe has a mixed_precision section.
	mpGiven bool
}

// put records a setting. On the command line the last occurrence wins, as
// argparse does; in a recipe two keys that mean the same setting must
// agree (model.seq_length and dataset.seq_length).
func put[T any](s *setting[T], v T, a *arg) error {
	if a.yaml && s.set && s.src != a.src && fmt.Sprint(s.v) != fmt.Sprint(v) {
		return a.errf("disagrees with %s %v", s.src, s.v)
	}
	s.v, s.src, s.set = v, a.src, true
	return nil
}
