package launchcfg

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseYAML: the subset recipes use, and everything else refused with
// its line.
func TestParseYAML(t *testing.T) {
	root, err := ParseYAML([]byte(`# a recipe
---
model:
  num_layers: 4   # four
  name: "a: b # not a comment"
  quote: 'it''s'
  empty:
  list: [1, 2, [3, 4]]
  map: {a: 1, b: [x, y]}
  long: [1, 2,
    3]
  block:
  - a
  - b: 1
    c: 2
  - - nested
train:
    micro_batch_size: 1
...
`), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := root.Get("model")
	for _, c := range []struct {
		key, want string
	}{
		{"num_layers", "4"}, {"name", "a: b # not a comment"}, {"quote", "it's"}, {"empty", "null"},
		{"list", "[1 2 [3 4]]"}, {"map", "{a:1 b:[x y]}"}, {"long", "[1 2 3]"}, {"block", "[a {b:1 c:2} [nested]]"},
	} {
		if got := show(m.Get(c.key)); got != c.want {
			t.Errorf("model.%s = %s, want %s", c.key, got, c.want)
		}
	}
	if got := show(root.Get("train").Get("micro_batch_size")); got != "1" {
		t.Errorf("train.micro_batch_size = %s", got)
	}
	for _, c := range []struct{ in, want string }{
		{"a: &x 1", ":1: &x 1: anchors and aliases are not supported"},
		{"a: *x", "anchors and aliases"},
		{"a: !!int 1", "tags are not supported"},
		{"a: |\n  text", "block scalars are not supported"},
		{"a: 1\na: 2", ":2: key \"a\" repeated (first on line 1)"},
		{"a:\n\tb: 1", "a tab in the indentation"},
		{"a: 1\n---\nb: 2", ":2: a second document"},
		{"- 1\n- 2", "the top level must be a mapping"},
		{"a: [1, 2", "an unclosed [ or {"},
		{"a: 'open", "an unclosed ' quote"},
		{"a: 1\n  b: 2", "unexpected indentation"},
		{"? complex\n: 1", "complex keys"},
		{"a: b: c", "a mapping must start on its own line"},
		{"%YAML 1.2\na: 1", "YAML directives"},
		{"", "empty"},
		{"a: {b: 1, b: 2}", "key \"b\" repeated"},
		{strings.Repeat("a:\n", 0) + nested(40), "nested more than 32 deep"},
		{"a: [" + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "]", "nested more than 32 deep"},
		{"a: 1\n...\nb: 2", "content after the end of the document"},
	} {
		_, err := ParseYAML([]byte(c.in), "r.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

// nested is a mapping n deep.
func nested(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
	}
	fmt.Fprintf(&b, "%sk: 1\n", strings.Repeat(" ", n))
	return b.String()
}

// show writes a node compactly.
func show(n *Node) string {
	if n == nil {
		return "<nil>"
	}
	switch n.Kind {
	case Mapping:
		parts := make([]string, len(n.Keys))
		for i, k := range n.Keys {
			parts[i] = k + ":" + show(n.Values[i])
		}
		return "{" + strings.Join(parts, " ") + "}"
	case Sequence:
		parts := make([]string, len(n.Items))
		for i, it := range n.Items {
			parts[i] = show(it)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	if n.Null {
		return "null"
	}
	return n.Value
}

// TestYAMLBounds: a recipe too large, or with too many values, is refused
// before it is built.
func TestYAMLBounds(t *testing.T) {
	big := make([]byte, MaxYAMLBytes+1)
	if _, err := ParseYAML(big, "r.yaml"); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("size: %v", err)
	}
	many := "a: [" + strings.TrimSuffix(strings.Repeat("1,", MaxYAMLNodes), ",") + "]"
	if _, err := ParseYAML([]byte(many), "r.yaml"); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("nodes: %v", err)
	}
	if _, err := ParseYAML([]byte("a: \xff"), "r.yaml"); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("bytes: %v", err)
	}
}

// TestRecipeKeys: a recipe's keys go through the catalog by section:
// unknown keys of the strict sections are errors, the others' fall back
// to their section's group; features left off are not refused.
func TestRecipeKeys(t *testing.T) {
	const head = "model:\n  num_layers: 4\n  hidden_size: 1024\n  num_attention_heads: 16\n  seq_length: 4096\n  vocab_size: 32000\ntrain:\n  micro_batch_size: 1\nmixed_precision: bf16_mixed\n"
	o := Options{GPU: "H100-SXM", GPUs: 8}
	for _, c := range []struct {
		extra, want string
	}{
		{"ddp:\n  frobnicate: 1\n", "ddp.frobnicate: unknown key"},
		{"model:\n  x: 1\n", "key \"model\" repeated"},
		{"peft:\n  dim: 8\n", "peft: refused"},
		{"wandb: {}\n", "wandb: unknown key"},
		{"comm_overlap:\n  tp_comm_overlap: maybe\n", "comm_overlap.tp_comm_overlap maybe: must be true or false"},
		{"dist:\n  use_megatron_fsdp: true\nddp:\n  data_parallel_sharding_strategy: optim_grads_params\n", ""},
		{"optimizer:\n  lr: 1\n  some_new_knob: 3\n", ""},
		{"logger:\n  anything: [1, 2]\n", ""},
		{"tokenizer:\n  vocab_size: 64000\n", "tokenizer.vocab_size 64000: disagrees with model.vocab_size 32000"},
	} {
		_, err := NeMo([]byte(head+c.extra), "r.yaml", o)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.extra, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want %q", c.extra, err, c.want)
		}
	}
	// Off is what dcpsim prices: a refused feature left off is accepted.
	im, err := NeMo([]byte(strings.Replace(head, "model:\n", "model:\n  cpu_offloading: false\n  fp4: null\n  window_size: null\n", 1)), "r.yaml", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range im.Uses {
		if u.Arg == "model.cpu_offloading" && (u.Class != Mapped || u.Note != "off, as priced") {
			t.Errorf("cpu_offloading false: %+v", u)
		}
	}
	if _, err := NeMo([]byte(strings.Replace(head, "model:\n", "model:\n  cpu_offloading: true\n", 1)), "r.yaml", o); err == nil || !strings.Contains(err.Error(), "model.cpu_offloading true: refused") {
		t.Errorf("cpu_offloading true: %v", err)
	}
}
