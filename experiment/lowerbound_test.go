package experiment

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
)

// lbDraw is one random layout of the lower-bound property test.
type lbDraw struct {
	gpus                               []string // one kind, or two pools of half the GPUs each
	model, recompute, workload, budget string
	gpuCount, tp, pp, vpp, ep          int
	recomputeLayers, lastStageLayers   int
	contextTokens, batchTokens         int
	sequenceParallel                   bool
	policies                           []string
	// The fabric (contention), the gradient sync and the [costs] what-ifs.
	nicsPerNode, nodesPerLeaf int
	spineOversubscription     float64
	gradSync, plannerStall    string
	ulyssesAcrossNodes        bool
	cpExec                    map[string]string
	cpOverlap                 map[string]bool
}

// What the draws pick from.
var (
	lbGPUs      = []string{"H800", "H100-SXM", "H20", "H200", "A100-80G", "B200"}
	lbModels    = []string{"qwen3-30b-a3b", "paper-mla", "deepseek-v2-lite", "llama-3-8b", "llama-3-70b", "qwen3-235b-a22b"}
	lbPolicies  = []string{"hydra", "mcore", "static", "bytescale", "wlb-llm", "usp"}
	lbWorkloads = []string{"long-256k", "long-32k", "byted-like"}
)

// draw picks a random layout, mended where a preset's shape makes the draw
// invalid outright (tp past the KV heads, ep on a dense model, an uneven
// stage split); what is still invalid scenarios.Parse refuses.
func (d *lbDraw) draw(t *testing.T, rng *rand.Rand) {
	pick := func(xs ...int) int { return xs[rng.IntN(len(xs))] }
	*d = lbDraw{vpp: 1}
	d.gpus = []string{lbGPUs[rng.IntN(len(lbGPUs))]}
	if rng.IntN(6) == 0 {
		d.gpus = append(d.gpus, lbGPUs[rng.IntN(len(lbGPUs))])
	}
	d.model = lbModels[rng.IntN(len(lbModels))]
	m, err := job.LookupModel(d.model)
	if err != nil {
		t.Fatal(err)
	}
	d.gpuCount = pick(16, 32, 64, 128, 256)
	d.tp = pick(1, 2, 4, 8)
	for m.KVHeads%d.tp != 0 {
		d.tp /= 2
	}
	d.pp = pick(1, 2, 4)
	if d.pp > 1 && rng.IntN(3) == 0 {
		d.vpp = 2
	}
	if per := m.Layers / d.pp / d.vpp * d.vpp; m.Layers%(d.pp*d.vpp) != 0 && d.pp > 1 {
		d.lastStageLayers = m.Layers - (d.pp-1)*per
	}
	d.ep = 1
	if m.RoutedExperts > 0 {
		d.ep = pick(1, 2, 4, 8)
	}
	pool := d.gpuCount / (d.tp * d.pp)
	for d.ep > 1 && pool%d.ep != 0 {
		d.ep /= 2
	}
	d.recompute = []string{"none", "selective", "full"}[rng.IntN(3)]
	if d.recompute == "full" && rng.IntN(2) == 0 {
		d.recomputeLayers = pick(1, 2, 3)
	}
	d.sequenceParallel = rng.IntN(4) != 0
	budget := pick(4096, 8192, 16384)
	d.budget = fmt.Sprint(budget)
	if rng.IntN(3) == 0 {
		d.budget, budget = `"auto"`, 16384
	}
	d.workload = lbWorkloads[rng.IntN(len(lbWorkloads))]
	d.contextTokens = pick(32768, 65536, 131072, 262144)
	if d.workload == "long-32k" {
		d.contextTokens = 32768
	}
	for d.contextTokens > 4096 && d.contextTokens > pool*budget {
		d.contextTokens /= 2
	}
	d.batchTokens = max(pool, 1) * pick(4096, 8192, 16384) * pick(1, 2)
	for _, p := range lbPolicies {
		if rng.IntN(2) == 0 {
			d.policies = append(d.policies, p)
		}
	}
	if len(d.gpus) > 1 && rng.IntN(2) == 0 {
		d.policies = append(d.policies, "hydra-hetero", "hexiseq")
	}
	if len(d.policies) == 0 {
		d.policies = []string{"hydra"}
	}
	d.nicsPerNode, d.nodesPerLeaf = pick(8, 4), pick(2, 4, 32)
	d.spineOversubscription = []float64{1, 2, 4}[rng.IntN(3)]
	d.gradSync = []string{"reduce-scatter", "all-reduce"}[rng.IntN(2)]
	d.plannerStall = []string{"modeled", "none"}[rng.IntN(2)]
	d.ulyssesAcrossNodes = rng.IntN(2) == 0
	d.cpExec, d.cpOverlap = map[string]string{}, map[string]bool{}
	for _, p := range d.policies {
		if rng.IntN(4) == 0 {
			d.cpExec[p] = sched.CPExecNames()[rng.IntN(len(sched.CPExecNames()))]
		}
		if rng.IntN(4) == 0 {
			d.cpOverlap[p] = rng.IntN(2) == 0
		}
	}
}

// toml writes the draw as a scenario file.
func (d *lbDraw) toml(seed int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name = \"lb-%d\"\ndescription = \"lower-bound property draw\"\n", seed)
	if len(d.gpus) == 1 {
		fmt.Fprintf(&b, "[cluster]\ngpu = %q\ngpus = %d\ngpus_per_node = 8\n", d.gpus[0], d.gpuCount)
	} else {
		fmt.Fprintf(&b, "[cluster]\ngpus_per_node = 8\npools = [{gpu = %q, gpus = %d}, {gpu = %q, gpus = %d}]\n",
			d.gpus[0], d.gpuCount/2, d.gpus[1], d.gpuCount/2)
	}
	fmt.Fprintf(&b, "nics_per_node = %d\nnodes_per_leaf = %d\nspine_oversubscription = %g\n", d.nicsPerNode, d.nodesPerLeaf, d.spineOversubscription)
	fmt.Fprintf(&b, "[model]\npreset = %q\n", d.model)
	fmt.Fprintf(&b, "[parallel]\ntp = %d\npp = %d\nvpp = %d\nep = %d\nbudget_tokens = %s\nsequence_parallel = %t\nrecompute = %q\n",
		d.tp, d.pp, d.vpp, d.ep, d.budget, d.sequenceParallel, d.recompute)
	if d.recomputeLayers > 0 {
		fmt.Fprintf(&b, "recompute_layers = %d\n", d.recomputeLayers)
	}
	if d.lastStageLayers > 0 {
		fmt.Fprintf(&b, "last_stage_layers = %d\n", d.lastStageLayers)
	}
	fmt.Fprintf(&b, "grad_sync = %q\n", d.gradSync)
	fmt.Fprintf(&b, "[workload]\npreset = %q\ncontext_tokens = %d\nbatch_tokens = %d\noverlong = \"split\"\n",
		d.workload, d.contextTokens, d.batchTokens)
	quoted := make([]string, len(d.policies))
	for i, p := range d.policies {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	fmt.Fprintf(&b, "[run]\niterations = 2\nwarmup_iterations = 0\nseed = %d\npolicies = [%s]\n", seed, strings.Join(quoted, ", "))
	fmt.Fprintf(&b, "[costs]\nplanner_stall = %q\nulysses_across_nodes = %t\n", d.plannerStall, d.ulyssesAcrossNodes)
	for _, p := range slices.Sorted(maps.Keys(d.cpExec)) {
		fmt.Fprintf(&b, "cp_exec.%s = %q\n", p, d.cpExec[p])
	}
	for _, p := range slices.Sorted(maps.Keys(d.cpOverlap)) {
		fmt.Fprintf(&b, "cp_overlap.%s = %t\n", p, d.cpOverlap[p])
	}
	return b.String()
}

// trainedLengths replays the policy's plans of sc's batches as Run makes
// them and returns the lengths each iteration trains (sched.Plan.Trained:
// the batch, or a stateful policy's own set).
func trainedLengths(t *testing.T, sc *scenarios.Scenario, setup *Setup, name string) [][]int {
	t.Helper()
	pol, err := PolicyFor(sc, name, setup)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sampler, err := sc.NewSampler()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]int
	for k := range sc.Run.Iterations {
		b := sampler.Batch(k)
		plan, err := pol.Plan(b.Lengths, setup.Inputs)
		if err != nil {
			return out // Run failed here too: its rows stop
		}
		out = append(out, plan.Trained(b.Lengths))
	}
	return out
}

// TestStepLowerBoundProperty: on random layouts (GPU kinds and mixed pools,
// models, tp, pp, vpp, ep, budgets, recomputation, gradient sync, fabrics
// that contend, CP executions, workloads) and the policies that run them, no
// iteration's step is below costmodel's StepLowerBoundSeconds of the lengths
// it trained. It logs how tight the bound is: LB/step over every iteration,
// and over each layout's best policy (the step a layout search prunes
// against).
func TestStepLowerBoundProperty(t *testing.T) {
	candidates := 100
	if testing.Short() {
		candidates = 25
	}
	rng := rand.New(rand.NewPCG(2024, 7))
	start := time.Now()
	var ratios, best []float64
	tried, ran := 0, 0
	for ran < candidates && tried < 20*candidates {
		tried++
		var d lbDraw
		d.draw(t, rng)
		src := d.toml(tried)
		sc, err := scenarios.Parse([]byte(src), fmt.Sprintf("lb-%d.toml", tried))
		if err != nil {
			continue // an invalid draw
		}
		setup, err := NewSetup(sc)
		if err != nil {
			continue // a job the cost model refuses
		}
		out, err := Run(sc, Options{Sequential: true})
		if err != nil || len(out.Rows) == 0 {
			continue // every policy failed (out of memory, no plan)
		}
		ran++
		byPolicy := map[string][]results.IterationRow{}
		for _, row := range out.Rows {
			byPolicy[row.Policy] = append(byPolicy[row.Policy], row)
		}
		bestStep := map[int]float64{}
		lbs := map[int]float64{}
		for _, name := range slices.Sorted(maps.Keys(byPolicy)) {
			trained := trainedLengths(t, sc, setup, name)
			for _, row := range byPolicy[name] {
				if row.Iteration >= len(trained) {
					t.Fatalf("draw %d %s iteration %d: the replay did not plan it", tried, name, row.Iteration)
				}
				lengths := trained[row.Iteration]
				var tokens int64
				for _, s := range lengths {
					tokens += int64(s)
				}
				if tokens != row.Tokens || len(lengths) != row.Sequences {
					t.Fatalf("draw %d %s iteration %d: the replay trains %d tokens in %d sequences, the run %d in %d",
						tried, name, row.Iteration, tokens, len(lengths), row.Tokens, row.Sequences)
				}
				lb := setup.Model.StepLowerBoundSeconds(lengths)
				if !(lb > 0) || lb > row.StepSeconds*(1+1e-9) {
					t.Errorf("draw %d %s iteration %d: lower bound %.9g s, step %.9g s\n%s", tried, name, row.Iteration, lb, row.StepSeconds, src)
				}
				ratios = append(ratios, lb/row.StepSeconds)
				if name != "wlb-llm" { // the others train the batch itself
					lbs[row.Iteration] = lb
					if b, ok := bestStep[row.Iteration]; !ok || row.StepSeconds < b {
						bestStep[row.Iteration] = row.StepSeconds
					}
				}
			}
		}
		for k, step := range bestStep {
			best = append(best, lbs[k]/step)
			if testing.Verbose() && lbs[k]/step < 0.3 {
				t.Logf("draw %d iteration %d: LB %.4g s, best step %.4g s\n%s", tried, k, lbs[k], step, src)
			}
		}
	}
	if ran < candidates {
		t.Errorf("only %d of %d layouts ran (%d drawn)", ran, candidates, tried)
	}
	if len(ratios) == 0 {
		return
	}
	slices.Sort(ratios)
	slices.Sort(best)
	t.Logf("%d layouts (%d drawn), %d iterations in %v: LB/step min %.3f median %.3f max %.3f; against each layout's best policy min %.3f median %.3f max %.3f",
		ran, tried, len(ratios), time.Since(start).Round(time.Millisecond),
		ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1], best[0], best[len(best)/2], best[len(best)-1])
}
