package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// importArgs is a small valid launch line after the importer's flags.
var importArgs = []string{"import", "megatron", "--gpu", "H100-SXM", "--gpus", "16", "--",
	"--num-layers", "4", "--hidden-size", "1024", "--num-attention-heads", "16", "--seq-length", "4096",
	"--micro-batch-size", "1", "--vocab-size", "32000", "--bf16", "--lr", "1e-4"}

// TestImportCommand: a launch line, a launch script and a recipe print
// scenarios that dcpsim scenarios check accepts; --out writes one.
func TestImportCommand(t *testing.T) {
	code, stdout, stderr := dcpsim(t, importArgs...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"#   --num-layers 4", "#   learning rate: --lr", "name = \"imported\"", "[run.options.static]"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, stdout)
		}
	}
	// Without "--" the importer's flags end at the first argument of
	// Megatron-LM's.
	noDash := append(append([]string{}, importArgs[:6]...), importArgs[7:]...)
	if code, stdout2, stderr := dcpsim(t, noDash...); code != exitOK || stdout2 != stdout {
		t.Errorf("without --: exit %d %s", code, stderr)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "llama.toml")
	script := filepath.Join("..", "..", "internal", "launchcfg", "testdata", "golden", "llama3-70b.sh")
	code, stdout, stderr = dcpsim(t, "import", "megatron", "--gpu", "H100-SXM", "--file", script, "--out", out, "--policies", "hydra,mcore")
	if code != exitOK || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if code, stdout, stderr := dcpsim(t, "scenarios", "check", out); code != exitOK || !strings.Contains(stdout, "ok   "+out+" (llama3-70b") {
		t.Errorf("scenarios check: exit %d %s %s", code, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), `policies = ["static", "hydra", "mcore"]`) {
		t.Errorf("--policies: %v\n%s", err, b)
	}
	recipe := filepath.Join("..", "..", "internal", "launchcfg", "testdata", "atscale", "NEMOLS-08.yaml")
	code, stdout, stderr = dcpsim(t, "import", "nemo", recipe, "--gpu", "B200", "--gpus", "16", "--workload", "long-256k")
	if code != exitOK || !strings.Contains(stdout, `preset = "long-256k"`) || !strings.Contains(stdout, "name = \"nemols-08\"") {
		t.Errorf("nemo: exit %d %s\n%s", code, stderr, stdout)
	}
}

// TestImportBadInput: a bad argument, flag or file exits 2 naming it;
// unknown arguments are listed with --ignore-unknown.
func TestImportBadInput(t *testing.T) {
	with := func(extra ...string) []string { return append(append([]string{}, importArgs...), extra...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import"}, "takes a format, megatron or nemo"},
		{[]string{"import", "pytorch"}, "takes a format"},
		{[]string{"import", "megatron", "--gpus", "8", "--", "--num-layers", "4"}, "--gpu is required"},
		{[]string{"import", "megatron", "--gpu", "Z80", "--", "--num-layers", "4"}, `--gpu "Z80": no calibration profile`},
		{[]string{"import", "megatron", "--gpu", "H100-SXM"}, "give the arguments"},
		{[]string{"import", "megatron", "--gpu", "H100-SXM", "stray", "--num-layers", "4"}, `"stray" before the Megatron-LM arguments`},
		{with("--num-layers", "x"), "--num-layers x: must be an integer in [1, 1024]"},
		{with("--frobnicate"), "--frobnicate: unknown argument"},
		{with("--cpu-offloading-num-layers", "2"), "--cpu-offloading-num-layers 2: refused"},
		{with("--hidden-size", "1000"), "--num-attention-heads 16 does not divide --hidden-size 1000"},
		{[]string{"import", "megatron", "--gpu", "H100-SXM", "--file", "no-such.sh"}, "no-such.sh"},
		{[]string{"import", "megatron", "--gpu", "H100-SXM", "--file", "testdata/search-small.toml"}, "no command runs a pretrain_*.py"},
		{[]string{"import", "nemo", "--gpu", "H100-SXM", "--gpus", "8", "testdata/search-small.toml"}, "search-small.toml:3: \"name = \\\"search-small\\\"\": want key: value"},
		{[]string{"import", "nemo", "--gpu", "H100-SXM"}, "takes one recipe file"},
		{append([]string{"import", "megatron", "--policies", "nosuch"}, importArgs[2:]...), `unknown policy "nosuch"`},
		{append([]string{"import", "megatron", "--out", "testdata"}, importArgs[2:]...), "--out testdata"},
	} {
		code, stdout, stderr := dcpsim(t, c.args...)
		if code != exitInput || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 and %q:\n%s%s", c.args, code, c.want, stdout, stderr)
		}
	}
	code, stdout, stderr := dcpsim(t, append([]string{"import", "megatron", "--ignore-unknown"}, with("--frobnicate", "3")[2:]...)...)
	if code != exitOK || !strings.Contains(stderr, "ignored unknown argument --frobnicate 3") || !strings.Contains(stdout, "#   --frobnicate 3") {
		t.Errorf("--ignore-unknown: exit %d %s", code, stderr)
	}
}

// TestExportCommand: a scenario's layout as Megatron-LM arguments, which
// import reads back; what cannot be exported exits 2.
func TestExportCommand(t *testing.T) {
	code, stdout, stderr := dcpsim(t, "export", "megatron", "testbed-32k", "--policy", "static")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"--expert-model-parallel-size 8", "--context-parallel-size 8", "--cp-comm-type a2a", "torchrun --nproc-per-node 8 --nnodes 64 pretrain_gpt.py"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("export lacks %q:\n%s", want, stdout)
		}
	}
	script := filepath.Join(t.TempDir(), "launch.sh")
	if err := os.WriteFile(script, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := dcpsim(t, "import", "megatron", "--gpu", "H20", "--file", script); code != exitOK {
		t.Errorf("import of the export: exit %d %s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export"}, "takes a format, megatron"},
		{[]string{"export", "megatron"}, "takes one scenario"},
		{[]string{"export", "megatron", "testbed-32k", "--policy", "flexsp"}, `--policy "flexsp": scenario testbed-32k runs`},
		{[]string{"export", "megatron", "hetero-long-256k"}, "a mixed cluster"},
	} {
		code, stdout, stderr := dcpsim(t, c.args...)
		if code != exitInput || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 and %q: %s%s", c.args, code, c.want, stdout, stderr)
		}
	}
}

// TestSearchBestAs: search --best-as megatron prints the winner's launch
// line; the flag's misuses exit 2.
func TestSearchBestAs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s")
	code, stdout, stderr := dcpsim(t, "search", "testdata/search-small.toml", "--out", out, "--no-figures", "--top", "1", "--best-as", "megatron")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	i := strings.Index(stdout, "\nthe best candidate (")
	if i < 0 {
		t.Fatalf("no launch line:\n%s", stdout)
	}
	best := stdout[i:]
	for _, want := range []string{"PARALLEL_ARGS=(", "--tensor-model-parallel-size", "pretrain_gpt.py"} {
		if !strings.Contains(best, want) {
			t.Errorf("the winner's launch line lacks %q:\n%s", want, best)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--best-as", "nemo"}, `--best-as "nemo": the one format is megatron`},
		{[]string{"--best-as", "megatron", "--json"}, "--best-as with --json"},
		{[]string{"--best-as", "megatron", "--shard", "0/2"}, "--best-as with --shard"},
	} {
		args := append([]string{"search", "testdata/search-small.toml", "--out", filepath.Join(t.TempDir(), "x")}, c.args...)
		code, stdout, stderr := dcpsim(t, args...)
		if code != exitInput || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("%q: exit %d, want 2 and %q: %s%s", c.args, code, c.want, stdout, stderr)
		}
	}
}
