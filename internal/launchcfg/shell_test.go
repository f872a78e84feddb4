package launchcfg

import (
	"strings"
	"testing"
)

// TestScriptLaunch: the launch line's words as the shell would pass them,
// its variables expanded and nothing run.
func TestScriptLaunch(t *testing.T) {
	script := `#!/bin/bash
set -euo pipefail
export NNODES=4 GPUS=8
TP=2; PP=$(( NNODES / 2 ))
A=(--num-layers 8 "--hidden-size 1024")   # quoted: one element, split when unquoted
B=("--seq-length" "4096")
B+=(--bf16)
NAME='my run'
EMPTY=
OPTS="--lr 1e-4 --min-lr 1e-5"
cat <<EOF > notes.txt
torchrun pretrain_gpt.py --num-layers 99
EOF
if [ "$NNODES" -gt 1 ]; then echo many; fi
torchrun --nproc_per_node=$GPUS --nnodes ${NNODES} \
    pretrain_gpt.py ${A[@]} "${B[@]}" \
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP \
    $OPTS --wandb-exp-name "$NAME" --save ${CKPT:-/tmp/ckpt} $EMPTY \
    --data-path $1 --tokenizer-model "$(cat tok.txt)" 2>&1 | tee log.txt
`
	l, err := ScriptLaunch(script, "run.sh")
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, w := range l.Args {
		s := w.Text
		if w.Unresolved {
			s = "?" + s
		}
		words = append(words, s)
	}
	want := "--num-layers|8|--hidden-size|1024|--seq-length|4096|--bf16|--tensor-model-parallel-size|2|--pipeline-model-parallel-size|2|" +
		"--lr|1e-4|--min-lr|1e-5|--wandb-exp-name|my run|--save|/tmp/ckpt|--data-path|?$1|--tokenizer-model|?$(cat tok.txt)"
	if got := strings.Join(words, "|"); got != want {
		t.Errorf("words\n%s\nwant\n%s", got, want)
	}
	if l.NNodes != 4 || l.NProcPerNode != 8 || l.Line != 15 || l.Program != "pretrain_gpt.py" {
		t.Errorf("launch %+v", l)
	}
	for _, c := range []struct{ in, want string }{
		{"echo hi\n", "no command runs a pretrain_*.py"},
		{"python pretrain_gpt.py --a\npython pretrain_gpt.py --b\n", "2 commands run a pretrain_*.py (lines 1, 2)"},
		{"A='open\npython pretrain_gpt.py\n", "an unclosed ' quote"},
		{"A=(1 2\n", "array A=( is not closed"},
		{"python pretrain_gpt.py ${A\n", "an unclosed ${"},
	} {
		_, err := ScriptLaunch(c.in, "s.sh")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

// TestScriptBounds: a script whose expansions double must stop at the
// bound, not exhaust memory.
func TestScriptBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("A=xxxxxxxxxxxxxxxx\n")
	for range 40 {
		b.WriteString(`A="$A$A"` + "\n")
	}
	b.WriteString("python pretrain_gpt.py $A\n")
	if _, err := ScriptLaunch(b.String(), "s.sh"); err == nil || !strings.Contains(err.Error(), "the expansions produce more than") {
		t.Errorf("doubling: %v", err)
	}
	if _, err := ScriptLaunch(strings.Repeat("x", MaxScriptBytes+1), "s.sh"); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("size: %v", err)
	}
}

// TestUnresolvedArgument: an argument whose value only the running script
// knows is named, not guessed.
func TestUnresolvedArgument(t *testing.T) {
	script := "python pretrain_gpt.py " + base + " --tensor-model-parallel-size $TP --save $CKPT\n"
	_, err := MegatronScript(script, "s.sh", Options{GPU: "H100-SXM", GPUs: 8})
	if err == nil || !strings.Contains(err.Error(), "--tensor-model-parallel-size $TP: its value is not known without running the script") {
		t.Errorf("unresolved: %v", err)
	}
	_, err = MegatronScript("python pretrain_gpt.py "+base+" $EXTRA_ARGS\n", "s.sh", Options{GPU: "H100-SXM", GPUs: 8})
	if err == nil || !strings.Contains(err.Error(), "$EXTRA_ARGS: what it holds is not known") {
		t.Errorf("unresolved words: %v", err)
	}
}
