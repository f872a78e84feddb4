package launchcfg

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/scenarios"
)

// seeds adds the testdata's recipes and scripts to a fuzz corpus.
func seeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", pattern))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
}

// checkImport: an import that succeeds prints a scenario which, when
// dcpsim reads it, is the imported job.
func checkImport(t *testing.T, im *Import) {
	text := im.Scenario(ScenarioOptions{Name: "fuzz"})
	sc, err := scenarios.Parse([]byte(text), "fuzz.toml")
	if err != nil {
		return // the batch's size bounds are the scenario's to check
	}
	if !reflect.DeepEqual(sc.Job, im.Job) {
		t.Fatalf("the printed scenario's job differs from the import's:\n%s", text)
	}
}

// FuzzNeMo: any bytes as a recipe: no panic, bounded work, and a recipe
// that imports prints its own job.
func FuzzNeMo(f *testing.F) {
	seeds(f, "*.yaml")
	f.Add("a: [[[[")
	f.Add("model:\n  num_layers: 4\n  - x\n")
	f.Fuzz(func(t *testing.T, s string) {
		im, err := NeMo([]byte(s), "f.yaml", Options{GPU: "H100-SXM", GPUs: 64})
		if err == nil {
			checkImport(t, im)
		}
	})
}

// FuzzMegatronScript: any text as a launch script: no panic, bounded
// expansion, and a script that imports prints its own job.
func FuzzMegatronScript(f *testing.F) {
	seeds(f, "*.sh")
	f.Add("A=(${A[@]} ${A[@]})\npython pretrain_gpt.py $((1/0)) ${A:-${B:-${C}}}\n")
	f.Add("python pretrain_gpt.py --pipeline-model-parallel-layout '(t|)*99999' --moe-layer-freq '([1]*9)*9999'\n")
	f.Fuzz(func(t *testing.T, s string) {
		im, err := MegatronScript(s, "f.sh", Options{GPU: "H100-SXM", GPUs: 64})
		if err == nil {
			checkImport(t, im)
		}
	})
}

// FuzzMegatronArgs: any words as Megatron-LM's arguments.
func FuzzMegatronArgs(f *testing.F) {
	f.Add(base + " --tensor-model-parallel-size 2 --sequence-parallel")
	f.Add(base + " --num-experts 8 --moe-router-topk 2 --moe-layer-freq [0]*1+[1]*3 --expert-model-parallel-size 2")
	f.Fuzz(func(t *testing.T, s string) {
		im, err := Megatron(strings.Fields(s), Options{GPU: "H100-SXM", GPUs: 16})
		if err == nil {
			checkImport(t, im)
		}
	})
}
