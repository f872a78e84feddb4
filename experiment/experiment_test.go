package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/results"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
)

// tiny is a 48-GPU scenario that runs in well under a second, with options for
// two policies (run concurrently, they share the decoded options).
const tiny = `name = "tiny"
` + tinyJob + `
[run]
iterations = 3
warmup_iterations = 1
policies = ["hydra", "mcore", "static"]

[run.options.hydra]
cap = 8

[run.options.mcore]
stall_model = "megatron-dev"
`

// tinyJob is the cluster, model, layout and workload of tiny, which the
// other small scenarios of these tests share.
const tinyJob = `
[cluster]
gpu = "H20"
gpus = 48

[model]
preset = "deepseek-v2-lite"

[parallel]
pp = 3
ep = 8
budget_tokens = 8192

[workload]
preset = "long-256k"
context_tokens = 32768
batch_tokens = 131072
`

func parse(t testing.TB, src string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse([]byte(src), "tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// withoutWallTimes zeroes the measured Go planner times, the only numbers
// that differ between runs.
func withoutWallTimes(o *Outcome) *Outcome {
	c := *o
	c.Timings = results.Timings{}
	return &c
}

// TestRunParallelEqualsSequential: policies with options run concurrently
// (under -race in make test) give the same outcome as one after another, and
// the options reach the policies.
func TestRunParallelEqualsSequential(t *testing.T) {
	sc := parse(t, tiny)
	par, err := Run(sc, Options{Timelines: true})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := Run(sc, Options{Timelines: true, Sequential: true})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(withoutWallTimes(par))
	b, _ := json.Marshal(withoutWallTimes(seq))
	if !bytes.Equal(a, b) {
		t.Fatalf("parallel and sequential runs differ:\n%s\n%s", a, b)
	}
	s := par.Summary
	if len(s.Policies) != 3 || len(par.Rows) != 9 || len(par.Timelines) != 3 {
		t.Fatalf("%d policies, %d rows, %d timelines", len(s.Policies), len(par.Rows), len(par.Timelines))
	}
	for _, p := range s.Policies {
		if p.Error != "" || p.Iterations != 2 || p.StepSecondsMean <= 0 {
			t.Errorf("%s: %+v", p.Policy, p)
		}
		sum := p.ComputeShare + p.ExposedCommShare + p.PPBubbleShare + p.DPBubbleShare + p.PlannerStallShare + p.SyncShare
		if sum < 0.999 || sum > 1.001 {
			t.Errorf("%s: shares sum to %v", p.Policy, sum)
		}
	}
	// The forced cap reached HyDra: its diagnostics still name the closed
	// form's own choice.
	if c := s.Policies[0].ChosenOptions["cap"]; c < 1 {
		t.Errorf("hydra chosen cap %v", c)
	}
	if d := s.Policies[0].DegreeShares; slices.ContainsFunc(d, func(x sched.DegreeShare) bool { return x.Degree > 8 }) {
		t.Errorf("hydra ran degrees above its forced cap 8: %v", d)
	}
	if s.Policies[0].SpeedupOfFirst != 1 || s.Policies[1].DollarsPer1TTokens <= 0 {
		t.Errorf("comparison columns: %+v", s.Policies[:2])
	}
}

// TestRunOnePolicyAndErrors: Options.Policy runs one policy; a policy the
// registry does not know is bad input; a policy that fails is reported in its
// row while the run goes on.
func TestRunOnePolicyAndErrors(t *testing.T) {
	sc := parse(t, tiny)
	out, err := Run(sc, Options{Policy: "static"})
	if err != nil || len(out.Summary.Policies) != 1 || out.Summary.Policies[0].Policy != "static" {
		t.Fatalf("%v %+v", err, out)
	}
	if _, err := Run(sc, Options{Policy: "wlb"}); !badinput.Is(err) {
		t.Errorf("unknown policy: %v", err)
	}
	// A forced cap below C_mem (the 32K context at B = 8192 needs 4 ranks):
	// HyDra refuses every batch, the others run.
	bad := parse(t, strings.Replace(tiny, "cap = 8", "cap = 2", 1))
	out, err = Run(bad, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := out.Summary.Policies[0]; !strings.Contains(p.Error, "iteration 0: plan: hydra: cap = 2") || p.StepSecondsMean != 0 {
		t.Errorf("hydra row %+v", p)
	}
	if out.Summary.Policies[1].Error != "" || out.Summary.Policies[1].SpeedupOfFirst != 0 {
		t.Errorf("mcore row %+v (no reference to compare with)", out.Summary.Policies[1])
	}
}

// TestWriteRun: every promised file, manifest last (failures and
// interruptions: TestWriteRunInterrupted).
func TestWriteRun(t *testing.T) {
	sc := parse(t, tiny)
	out, err := Run(sc, Options{Timelines: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := WriteRun(context.Background(), dir, sc, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"iterations.csv", "manifest.json", "summary.json", "timings.json", "trace-hydra.json", "trace-mcore.json", "trace-static.json"}
	if files[len(files)-1] != "manifest.json" || !slices.Equal(slices.Sorted(slices.Values(files)), want) {
		t.Errorf("files %v, want %v with manifest.json last", files, want)
	}
	var m Manifest
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err := json.Unmarshal(b, &m); err != nil || m.Scenario != "tiny" || m.Hash != out.Summary.Hash || len(m.Files) != len(want)-1 {
		t.Errorf("manifest %+v (%v)", m, err)
	}
}

// TestHash: the hash follows the options, the name and the text.
func TestHash(t *testing.T) {
	a := parse(t, tiny)
	b := parse(t, strings.Replace(tiny, "cap = 8", "cap = 16", 1))
	if Hash(a) == Hash(b) || Hash(a) != Hash(parse(t, tiny)) || len(Hash(a)) != 64 {
		t.Errorf("hashes %s %s", Hash(a), Hash(b))
	}
}

// unevenPolicy gives DP replica A (ranks 0-3) three microbatches and replica
// B (ranks 4-7) two: a plan of partial microbatches, as ByteScale and WLB-LLM
// make.
type unevenPolicy struct{}

func (unevenPolicy) Name() string { return "uneven" }

func (unevenPolicy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.Check(lengths); err != nil {
		return nil, err
	}
	if in.PoolRanks != 8 || len(lengths) != 5 {
		return nil, errors.New("uneven: wants 8 ranks and 5 sequences")
	}
	mb := func(first, size int, seqs ...int) sched.Microbatch {
		return sched.Microbatch{Groups: []sched.Group{{FirstRank: first, Size: size, Seqs: seqs}}}
	}
	return &sched.Plan{Policy: "uneven", PoolRanks: 8, PartialMicrobatches: true, Microbatches: []sched.Microbatch{
		mb(0, 4, 0), mb(4, 4, 1), mb(0, 4, 2), mb(4, 4, 3), mb(0, 4, 4)}}, nil
}

// TestUnevenPlanLoadMode: a plan whose ranks run different microbatch counts
// runs end to end through the --batches load contract. With ep = 2 and pp = 2
// each replica is its own domain chain: A runs loads 4e6/4 = 1e6 (F 0.5 µs per
// stage) three times, B twice, so A sets the iteration: 1F1B of 3 equal MBs on
// 2 stages, (3 + 1)·(0.5 + 1) = 6 µs; B's ranks wait for the gradient sync.
func TestUnevenPlanLoadMode(t *testing.T) {
	in := `{"ranks": 8, "budget_tokens": 2000, "lengths": [2000, 2000, 2000, 2000, 2000], "pp": 2, "ep": 2}`
	var out bytes.Buffer
	if err := RunBatches(strings.NewReader(in), "in.jsonl", &out, unevenPolicy{}); err != nil {
		t.Fatal(err)
	}
	var line RunLine
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line.IterationSeconds != 6e-6 || line.MicrobatchCount != 5 || line.DPBubble <= 0 {
		t.Errorf("line %+v, want a 6 µs iteration of 5 MBs with a DP bubble", line)
	}
	// An EP block split across replicas is refused: ep = 8 couples A and B.
	in = strings.Replace(in, `"ep": 2`, `"ep": 8`, 1)
	err := RunBatches(strings.NewReader(in), "in.jsonl", &out, unevenPolicy{})
	if err == nil || !strings.Contains(err.Error(), "EP block of ranks 0..7") {
		t.Errorf("ep 8: %v", err)
	}
}

// TestBatchesErrors: a bad line is bad input naming the file and line.
func TestBatchesErrors(t *testing.T) {
	p, _ := hydra.New(hydra.DefaultOptions())
	for _, c := range []struct{ in, want string }{
		{`{"ranks": 4, "budget": 4, "lengths": [1]}`, "b.jsonl:1: not a batch object"},
		{"\n" + `{"ranks": 0, "budget_tokens": 4, "lengths": [1]}`, "b.jsonl:2: invalid scheduling input: sched: ranks = 0: must be in [1, 1048576]"},
	} {
		err := PlanBatches(strings.NewReader(c.in), "b.jsonl", &bytes.Buffer{}, p, -1)
		if !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

// TestSweepAxes: a sweep point's axes come from the scenario's points, option
// axes included, and the sweep CSV names the chosen options.
func TestSweepAxes(t *testing.T) {
	src := strings.Replace(tiny, `policies = ["hydra", "mcore", "static"]`, `policies = ["hydra"]`, 1)
	src = strings.Replace(src, "\n[run.options.mcore]\nstall_model = \"megatron-dev\"\n", "", 1)
	sc := parse(t, src+"\n[sweep]\ngpus = [48]\n\n[sweep.options.hydra]\ncap = [4, 8]\n")
	dir := t.TempDir()
	res, err := Sweep(context.Background(), sc, SweepOptions{Dir: dir, Jobs: 2, Figures: report.Figures{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Points != 2 || res.Skipped != 0 || !slices.Contains(res.Files, "sweep-hydra-cap.png") {
		t.Fatalf("%+v", res)
	}
	var sf SweepFile
	b, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err := json.Unmarshal(b, &sf); err != nil {
		t.Fatal(err)
	}
	if want := []results.Axis{{Key: "gpus", Value: "48"}, {Key: "hydra.cap", Value: "8"}}; !slices.Equal(sf.Points[1].Axes, want) {
		t.Errorf("axes %+v, want %+v", sf.Points[1].Axes, want)
	}
	rows := readCSV(t, filepath.Join(dir, "sweep.csv"))
	if len(rows) != 1+2 {
		t.Fatalf("sweep.csv: %d records, want a header and 2 points", len(rows))
	}
	col := func(rec []string, name string) string { return rec[slices.Index(rows[0], name)] }
	if r := rows[2]; col(r, "axes") != "gpus=48 hydra.cap=8" || col(r, "gpus") != "48" || col(r, "policy") != "hydra" ||
		col(r, "gpu") != "H20" || col(r, "pp") != "3" || col(r, "recompute") != "none" || !strings.HasPrefix(col(r, "chosen_options"), "cap=") {
		t.Errorf("sweep.csv row %q (header %q)", r, rows[0])
	}
	again, err := Sweep(context.Background(), sc, SweepOptions{Dir: dir, Jobs: 1})
	if err != nil || again.Skipped != 2 {
		t.Errorf("resume: %+v, %v", again, err)
	}
}
