package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

const planUsage = `  dcpsim plan --policy P [--scenario S] [--iteration K] [--overhead-ratio R]
  dcpsim plan --policy P --batches FILE.jsonl [--out FILE]

  With --scenario (default ` + scenarios.DefaultPreset + `): plan batch K of the scenario and print a
  readable summary: the policy's diagnostics (HyDra: C*, Λ*, M*), a per-microbatch
  table of groups by degree with max/min per-rank load and tokens, the CP-degree
  share of GPU-slots, and the longest sequences' degrees beside their memory minimum.

  With --batches: read one batch per line, {"ranks": G, "budget_tokens": B,
  "lengths": [...]} plus optional "overhead_ratio" (θ/c, tokens²), "pp", "vpp"
  (0 or absent: 1), "context_tokens" (fields of the conformance vectors, such as
  "microbatches", are accepted and ignored), and write one JSON line per batch line
  (blank lines are skipped and give none):
  {"microbatches": [[[ids] per rank] per MB], "groups": [[{"first_rank","size","seqs"}]
  per MB], "diagnostics": {...}}. Each line is decoded strictly (one JSON object, no
  unknown or repeated key, nothing after it) and bounded: ranks <= 2^20,
  budget_tokens <= 2^24, pp <= 1024, vpp <= 128, lengths in [1, 2^25], at most 10^7
  of them, a line at most 128 MiB. Deterministic; used by external conformance checks.
  --out FILE is written atomically; it must be new or a regular file (not a folder,
  FIFO or device, not the --batches file), in a folder that exists, else exit 2
  before any planning. Ctrl-C (or SIGTERM, SIGHUP) exits 1 leaving no FILE.`

// policyList is the policies with their summaries, for help.
func policyList() string {
	var b strings.Builder
	b.WriteString("  policies:")
	for _, d := range policies.All() {
		fmt.Fprintf(&b, "\n    %-13s %s", d.Name, d.Summary)
	}
	return b.String()
}

func planCommand() command {
	return command{
		name:    "plan",
		summary: "plan one batch with a DCP policy (summary, or JSON lines for --batches)",
		usage:   planUsage + "\n\n" + policyList(),
		run:     runPlan,
	}
}

func runPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", planUsage+"\n\n"+policyList(), stderr)
	policy := fs.String("policy", "", "policy name (required): "+strings.Join(policies.Names(), ", "))
	scenario := fs.String("scenario", "", "embedded scenario name or .toml file (default "+scenarios.DefaultPreset+")")
	iteration := fs.Int("iteration", 0, "which batch of the scenario to plan (>= 0)")
	ratio := fs.Float64("overhead-ratio", -1, "HyDra's θ/c in tokens² (default: from the scenario's GPU profile; 2^24 for --batches lines without one)")
	batches := fs.String("batches", "", "JSONL file of batches (conformance format); '-' for stdin")
	out := fs.String("out", "", "with --batches: write the JSON lines to this file instead of stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput("unexpected arguments %q", fs.Args())
	}
	if *policy == "" {
		return badInput("--policy is required (one of %s)", strings.Join(policies.Names(), ", "))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["overhead-ratio"] && !(*ratio >= 0 && !math.IsInf(*ratio, 1)) { // NaN fails >= 0
		return badInput("--overhead-ratio = %v: must be a finite number >= 0 (tokens²)", *ratio)
	}
	if !set["overhead-ratio"] {
		*ratio = -1 // the profile's (or, for --batches, each line's)
	}
	if *batches != "" {
		if *scenario != "" {
			return badInput("--batches and --scenario are exclusive")
		}
		p, err := experiment.NewPolicy(*policy)
		if err != nil {
			return err
		}
		return withBatches(*batches, *out, stdout, func(r io.Reader, w io.Writer) error {
			return experiment.PlanBatches(r, *batches, w, p, *ratio)
		})
	}
	if *out != "" {
		return badInput("--out goes with --batches")
	}
	if *iteration < 0 {
		return badInput("--iteration = %d: must be >= 0", *iteration)
	}
	sc, err := resolveScenario(*scenario)
	if err != nil {
		return err
	}
	setup, err := experiment.NewSetup(sc)
	if err != nil {
		return err
	}
	p, err := experiment.PolicyFor(sc, *policy, setup)
	if err != nil {
		return err
	}
	sampler, err := sc.NewSampler()
	if err != nil {
		return err
	}
	lengths := sampler.Batch(*iteration).Lengths
	in := setup.Inputs
	ratioNote := "given with --overhead-ratio"
	if *ratio >= 0 {
		in.OverheadRatio = *ratio
	} else {
		o := setup.Overhead
		ratioNote = fmt.Sprintf("from the %s profile: θ = %.2f ms per MB (launches %.2f, p2p %.2f, MoE %.2f, CP %.2f), c = %.3g s/token² at block %d, CP %d",
			profileLabel(sc), o.ThetaSeconds*1e3, o.LaunchSeconds*1e3, o.PipelineP2PSeconds*1e3, o.MoECollectiveSeconds*1e3,
			o.CPCollectiveSeconds*1e3, o.CSecondsPerSquareToken, o.BlockTokens, o.CPDegree)
	}
	start := time.Now()
	plan, err := p.Plan(lengths, in)
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("%s iteration %d: %w", sc.Name, *iteration, err)
	}
	if err := experiment.Check(p, plan, lengths, in); err != nil {
		return fmt.Errorf("%s iteration %d: %w", sc.Name, *iteration, err)
	}
	if err := report.WritePlanTable(stdout, sc, *iteration, lengths, in, ratioNote, plan, wall); err != nil {
		return err
	}
	d, _ := policies.Lookup(*policy)
	if exec, _ := sc.CPExecFor(d, p); exec == sched.Ulysses {
		heads, wide := setup.Model.MaxCPDegree(sched.Ulysses), 0
		for _, mb := range plan.Microbatches {
			for _, g := range mb.Groups {
				if g.Size > heads {
					wide++
				}
			}
		}
		if wide > 0 {
			fmt.Fprintf(stdout, "\nnote: %d groups are wider than the %d query heads per TP rank, which Ulysses cannot run: "+
				"the cost model prices them as Ulysses × ring (Megatron's hierarchical CP)\n", wide, heads)
		}
	}
	return nil
}

// profileLabel names the scenario's profile: the GPU kind, or the file.
func profileLabel(sc *scenarios.Scenario) string {
	if sc.ProfileFile != "" {
		return sc.ProfilePath()
	}
	return sc.Job.Cluster.GPU
}
