package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched/policies"
)

// contractLines are --batches lines every policy must plan: no pipeline, an
// interleaved pipeline with EP, and a batch whose 3,000-token sequence needs
// a group of a size that is no power of two under ByteScale's D(s) = ⌈s/C⌉.
const contractLines = `{"ranks": 8, "budget_tokens": 1000, "lengths": [1000, 700, 300, 250, 900, 120, 40, 500]}
{"ranks": 8, "budget_tokens": 2000, "lengths": [2000, 1800, 1500, 900, 700, 600, 500, 400, 300, 200, 100, 64, 32, 16, 8, 4], "pp": 2, "vpp": 2, "ep": 2}
{"ranks": 8, "budget_tokens": 1000, "context_tokens": 4000, "lengths": [3000, 400, 300, 200, 100, 900, 800]}
`

// TestEveryPolicyBatchContracts: for every registered policy, plan --batches
// writes exactly the contract's fields (lengths only for a policy that chose
// its own sequences), and run --batches --costs load times the same lines
// (uneven microbatch counts included) with exactly the RunLine fields.
func TestEveryPolicyBatchContracts(t *testing.T) {
	for _, d := range policies.All() {
		t.Run(d.Name, func(t *testing.T) {
			p, err := BuildPolicy(d, nil, nil)
			if mp := (*missingProgram)(nil); errors.As(err, &mp) {
				t.Skip(err)
			} else if err != nil {
				t.Fatal(err)
			}
			var plans bytes.Buffer
			if err := PlanBatches(strings.NewReader(contractLines), "c.jsonl", &plans, p, -1); err != nil {
				t.Fatalf("plan --batches: %v", err)
			}
			lines := strings.Split(strings.TrimSuffix(plans.String(), "\n"), "\n")
			if len(lines) != 3 {
				t.Fatalf("%d plan lines, want 3", len(lines))
			}
			for i, l := range lines {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				keys := slices.Sorted(func(yield func(string) bool) {
					for k := range m {
						if !yield(k) {
							return
						}
					}
				})
				keys = slices.DeleteFunc(keys, func(k string) bool { return k == "lengths" })
				if !slices.Equal(keys, []string{"diagnostics", "groups", "microbatches"}) {
					t.Errorf("line %d: fields %v, want diagnostics, groups, microbatches (and lengths)", i+1, keys)
				}
				var pl PlanLine
				if err := json.Unmarshal([]byte(l), &pl); err != nil || len(pl.Groups) == 0 {
					t.Errorf("line %d: %v, %d microbatches", i+1, err, len(pl.Groups))
				}
				three := false
				for _, mb := range pl.Groups {
					for _, g := range mb {
						if g.Size < 1 || g.FirstRank < 0 || g.FirstRank+g.Size > 8 || len(g.Seqs) == 0 {
							t.Errorf("line %d: group %+v", i+1, g)
						}
						three = three || g.Size == 3 && slices.Contains(g.Seqs, 0)
					}
				}
				if d.Name == "bytescale" && i == 2 && !three {
					t.Errorf("bytescale: the 3,000-token sequence is not on 3 ranks: %s", l)
				}
			}
			p, _ = BuildPolicy(d, nil, nil) // a fresh state for a stateful policy
			var runs bytes.Buffer
			if err := RunBatches(strings.NewReader(contractLines), "c.jsonl", &runs, p); err != nil {
				t.Fatalf("run --batches --costs load: %v", err)
			}
			dec := json.NewDecoder(&runs)
			dec.DisallowUnknownFields()
			for i := range 3 {
				var rl RunLine
				if err := dec.Decode(&rl); err != nil || !(rl.IterationSeconds > 0) || rl.MicrobatchCount < 1 || len(rl.MBSeconds) == 0 {
					t.Errorf("run line %d: %+v, %v", i+1, rl, err)
				}
			}
		})
	}
}

// TestEveryPolicyCostModel: every registered policy runs a scenario end to
// end under the cost model, uneven plans included.
func TestEveryPolicyCostModel(t *testing.T) {
	src := strings.Replace(tiny, `policies = ["hydra", "mcore", "static"]`, `policies = ["`+strings.Join(policies.Names(), `", "`)+`"]`, 1)
	out, err := Run(parse(t, src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Summary.Policies) != len(policies.Names()) {
		t.Fatalf("%d policies ran, want %d", len(out.Summary.Policies), len(policies.Names()))
	}
	var skipped []string
	for _, p := range out.Summary.Policies {
		if p.Skipped && errors.Is(cbcMissing(), exec.ErrNotFound) {
			skipped = append(skipped, p.Policy) // FlexSP without cbc: a note, as the run gives
			continue
		}
		if p.Error != "" || !(p.StepSecondsMean > 0) || !(p.TokensPerDay > 0) {
			t.Errorf("%s: error %q, step %g, tokens/day %g", p.Policy, p.Error, p.StepSecondsMean, p.TokensPerDay)
		}
	}
	if len(skipped) > 0 {
		t.Skipf("%v not run: cbc not installed (Debian package coinor-cbc); every other policy ran", skipped)
	}
}

// cbcMissing is the error of looking cbc up on PATH (nil when installed).
func cbcMissing() error {
	_, err := exec.LookPath("cbc")
	return err
}
