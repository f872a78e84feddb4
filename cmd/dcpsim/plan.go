package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/report"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// DefaultOverheadRatio is the θ/c (tokens²) HyDra uses for a --batches line that
// gives none (such a line names no model or GPU, so the cost model cannot derive
// it): a fixed per-microbatch cost equal to the attention work of one 4,096-token
// sequence on one rank (4096² = 2^24). Scenarios derive θ/c from their profile.
const DefaultOverheadRatio = 1 << 24

const planUsage = `  dcpsim plan --policy P [--scenario S] [--iteration K] [--overhead-ratio R]
  dcpsim plan --policy P --batches FILE.jsonl [--out FILE]

  With --scenario (default ` + scenarios.DefaultPreset + `): plan batch K of the scenario and print a
  readable summary: the policy's diagnostics (HyDra: C*, Λ*, M*), a per-microbatch
  table of groups by degree with max/min per-rank load and tokens, the CP-degree
  share of GPU-slots, and the longest sequences' degrees beside their memory minimum.

  With --batches: read one batch per line, {"ranks": G, "budget_tokens": B,
  "lengths": [...]} plus optional "overhead_ratio" (θ/c, tokens²), "pp", "vpp",
  "context_tokens" (fields of the conformance vectors, such as "microbatches", are
  accepted and ignored), and write one JSON line per input line:
  {"microbatches": [[[ids] per rank] per MB], "groups": [[{"first_rank","size","seqs"}]
  per MB], "diagnostics": {...}}. Deterministic; used by external conformance checks.`

func planCommand() command {
	return command{
		name:    "plan",
		summary: "plan one batch with a DCP policy (summary, or JSON lines for --batches)",
		usage:   planUsage,
		run:     runPlan,
	}
}

func runPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", planUsage, stderr)
	policy := fs.String("policy", "", "policy name (required): "+strings.Join(policies.Registry().Names(), ", "))
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
		return badInput("--policy is required (one of %s)", strings.Join(policies.Registry().Names(), ", "))
	}
	if *ratio != -1 && *ratio < 0 {
		return badInput("--overhead-ratio = %v: must be >= 0", *ratio)
	}
	if *batches != "" {
		if *scenario != "" {
			return badInput("--batches and --scenario are exclusive")
		}
		p, err := policies.Registry().New(*policy, nil)
		if err != nil {
			return badInput("%v", err)
		}
		return planBatches(p, *batches, *out, *ratio, stdout)
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
	p, err := policies.Registry().New(*policy, func(v any) error { return sc.DecodeOptions(*policy, v) })
	if err != nil {
		var scErr *scenarios.Error
		if errors.As(err, &scErr) {
			return err
		}
		return badInput("%v", err)
	}
	sampler, err := sc.NewSampler()
	if err != nil {
		return err
	}
	lengths := sampler.Batch(*iteration).Lengths
	in := scenarioInputs(sc, 0)
	ratioNote := "given with --overhead-ratio"
	if *ratio >= 0 {
		in.OverheadRatio = *ratio
	} else {
		o, err := scenarioOverhead(sc)
		if err != nil {
			return err
		}
		in.OverheadRatio = o.RatioSquareTokens
		ratioNote = fmt.Sprintf("from the %s profile: θ = %.2f ms per MB (launches %.2f, p2p %.2f, MoE %.2f, CP %.2f), c = %.3g s/token² at block %d, CP %d",
			profileLabel(sc), o.ThetaSeconds*1e3, o.LaunchSeconds*1e3, o.PipelineP2PSeconds*1e3, o.MoECollectiveSeconds*1e3,
			o.CPCollectiveSeconds*1e3, o.CSecondsPerSquareToken, o.BlockTokens, o.CPDegree)
	}
	start := time.Now()
	plan, err := p.Plan(lengths, in)
	wall := time.Since(start)
	if err != nil {
		if errors.Is(err, sched.ErrInvalidInput) {
			return badInput("%s iteration %d: %v", sc.Name, *iteration, err)
		}
		return fmt.Errorf("%s iteration %d: %w", sc.Name, *iteration, err)
	}
	if pr, ok := p.(sched.Promiser); ok {
		if err := sched.Validate(plan, lengths, in, pr.Promises()); err != nil {
			return fmt.Errorf("policy %s broke its promises on %s iteration %d: %w", p.Name(), sc.Name, *iteration, err)
		}
	}
	return printPlan(stdout, sc, *iteration, lengths, in, ratioNote, plan, wall)
}

// profileLabel names the scenario's profile: the GPU kind, or the file.
func profileLabel(sc *scenarios.Scenario) string {
	if sc.ProfileFile != "" {
		return sc.ProfilePath()
	}
	return sc.Job.Cluster.GPU
}

// scenarioInputs are the scheduling inputs of a scenario's job with θ/c = ratio.
func scenarioInputs(sc *scenarios.Scenario, ratio float64) sched.Inputs {
	par := sc.Job.Parallel
	return sched.Inputs{
		PoolRanks:     sc.Job.PoolRanks(),
		BudgetTokens:  par.BudgetTokens,
		PP:            max(par.PP, 1),
		VPP:           max(par.VPP, 1),
		ContextTokens: sc.Job.ContextTokens,
		OverheadRatio: ratio,
	}
}

// scenarioOverhead derives HyDra's θ/c for a scenario from its GPU profile and
// job (calib.Compute.Overhead), at the memory-minimum CP degree of the context
// and a block of B tokens (a rank at the load target holds up to B tokens).
func scenarioOverhead(sc *scenarios.Scenario) (calib.Overhead, error) {
	comp, err := scenarioCompute(sc)
	if err != nil {
		return calib.Overhead{}, err
	}
	return overheadFor(sc, comp), nil
}

// scenarioCompute is the compute cost model of a scenario: its profile and job.
func scenarioCompute(sc *scenarios.Scenario) (*calib.Compute, error) {
	prof, err := sc.Profile()
	if err != nil {
		return nil, err
	}
	return calib.NewCompute(prof, sc.Job)
}

// overheadFor is scenarioOverhead for an already built cost model.
func overheadFor(sc *scenarios.Scenario, comp *calib.Compute) calib.Overhead {
	b := sc.Job.Parallel.BudgetTokens
	return comp.Overhead(sched.MemoryDegree(sc.Job.ContextTokens, b), b)
}

// batchLine is one input line of --batches.
type batchLine struct {
	Ranks         int      `json:"ranks"`
	BudgetTokens  int      `json:"budget_tokens"`
	Lengths       []int    `json:"lengths"`
	OverheadRatio *float64 `json:"overhead_ratio"`
	PP            int      `json:"pp"`
	VPP           int      `json:"vpp"`
	ContextTokens int      `json:"context_tokens"`
	EP            int      `json:"ep"`
	// Fields of the conformance vectors, accepted and ignored.
	Microbatches    json.RawMessage `json:"microbatches"`
	CPythonSeconds  json.RawMessage `json:"cpython_seconds"`
	MicrobatchCount json.RawMessage `json:"microbatch_count"`
}

// planLine is one output line of --batches.
type planLine struct {
	Microbatches [][][]int       `json:"microbatches"`
	Groups       [][]sched.Group `json:"groups"`
	Diagnostics  map[string]any  `json:"diagnostics"`
}

// planBatches plans every line of file and writes one JSON line per input line.
func planBatches(p sched.Policy, file, out string, ratio float64, stdout io.Writer) error {
	return eachBatchLine(file, out, stdout, func(line []byte) ([]byte, error) { return planOneLine(p, line, ratio) })
}

// eachBatchLine reads the JSONL file ('-': stdin), calls do on every non-blank
// line and writes its result as one line to out (atomically) or stdout. An
// error of do is reported as FILE:LINE, as bad input when it is one.
func eachBatchLine(file, out string, stdout io.Writer, do func(line []byte) ([]byte, error)) error {
	var r io.Reader
	if file == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(file)
		if err != nil {
			return badInput("--batches: %v", err)
		}
		defer f.Close()
		r = f
	}
	write := func(w io.Writer) error {
		br := bufio.NewReaderSize(r, 1<<20)
		bw := bufio.NewWriter(w)
		for n := 1; ; n++ {
			raw, readErr := br.ReadBytes('\n')
			if line := bytes.TrimSpace(raw); len(line) > 0 {
				res, err := do(line)
				if err != nil {
					if errors.Is(err, sched.ErrInvalidInput) || errors.As(err, new(badInputError)) {
						return badInput("%s:%d: %v", file, n, err)
					}
					return fmt.Errorf("%s:%d: %w", file, n, err)
				}
				if _, err := bw.Write(res); err != nil {
					return err
				}
				if err := bw.WriteByte('\n'); err != nil {
					return err
				}
			}
			if errors.Is(readErr, io.EOF) {
				break
			}
			if readErr != nil {
				return fmt.Errorf("%s: %w", file, readErr)
			}
		}
		return bw.Flush()
	}
	if out == "" {
		return write(stdout)
	}
	return report.WriteFileAtomic(out, write)
}

// planBatchLine decodes one --batches line strictly, plans it with p (ratio >=
// 0 overrides the line's overhead_ratio) and checks the policy's promises.
func planBatchLine(p sched.Policy, line []byte, ratio float64) (batchLine, sched.Inputs, *sched.Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var b batchLine
	if err := dec.Decode(&b); err != nil {
		return b, sched.Inputs{}, nil, badInputError{fmt.Errorf("not a batch object: %w", err)}
	}
	in := sched.Inputs{PoolRanks: b.Ranks, BudgetTokens: b.BudgetTokens, PP: max(b.PP, 1), VPP: max(b.VPP, 1),
		ContextTokens: b.ContextTokens, OverheadRatio: DefaultOverheadRatio}
	if b.OverheadRatio != nil {
		in.OverheadRatio = *b.OverheadRatio
	}
	if ratio >= 0 {
		in.OverheadRatio = ratio
	}
	plan, err := p.Plan(b.Lengths, in)
	if err != nil {
		return b, in, nil, err
	}
	if pr, ok := p.(sched.Promiser); ok {
		if err := sched.Validate(plan, b.Lengths, in, pr.Promises()); err != nil {
			return b, in, nil, fmt.Errorf("policy %s broke its promises: %w", p.Name(), err)
		}
	}
	return b, in, plan, nil
}

func planOneLine(p sched.Policy, line []byte, ratio float64) ([]byte, error) {
	_, _, plan, err := planBatchLine(p, line, ratio)
	if err != nil {
		return nil, err
	}
	res := planLine{Microbatches: plan.PerRank(), Groups: make([][]sched.Group, len(plan.Microbatches))}
	for i, mb := range plan.Microbatches {
		res.Groups[i] = mb.Groups
	}
	res.Diagnostics = map[string]any{}
	if plan.Diagnostics != nil {
		raw, err := json.Marshal(plan.Diagnostics)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &res.Diagnostics); err != nil {
			return nil, err
		}
	}
	res.Diagnostics["policy"] = plan.Policy
	res.Diagnostics["work_units"] = plan.WorkUnits
	res.Diagnostics["microbatch_count"] = len(plan.Microbatches)
	return json.Marshal(res)
}

func printPlan(w io.Writer, sc *scenarios.Scenario, iteration int, lengths []int, in sched.Inputs, ratioNote string,
	plan *sched.Plan, wall time.Duration) error {
	var tokens int64
	for _, s := range lengths {
		tokens += int64(s)
	}
	fmt.Fprintf(w, "policy %s on %s, iteration %d: %s sequences, %s tokens; G = %d, B = %d, pp %d, vpp %d\n",
		plan.Policy, sc.Name, iteration, thousands(int64(len(lengths))), thousands(tokens), in.PoolRanks, in.BudgetTokens, in.PP, in.VPP)
	st := sched.ComputeStats(plan, lengths)
	hw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if plan.Diagnostics != nil {
		for _, kv := range plan.Diagnostics.Summary() {
			fmt.Fprintf(hw, "%s\t%s\n", kv.Name, kv.Value)
		}
	}
	target, hasTarget := plan.Diagnostics.(sched.LoadTargeter)
	if hasTarget {
		fmt.Fprintf(hw, "θ/c source\t%s\n", ratioNote)
	}
	fmt.Fprintf(hw, "planner\t%s microbatches, %s work units, %.2f ms Go wall time (this machine)\n",
		thousands(int64(len(plan.Microbatches))), thousands(plan.WorkUnits), wall.Seconds()*1e3)
	fmt.Fprintf(hw, "CP degrees\tshare of GPU-slots: %s\n", sched.FormatDegrees(st.Degrees))
	fmt.Fprintf(hw, "MB max load\tlargest/smallest over MBs %.2f×\n", st.MaxMinMBLoad)
	if err := hw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "MB\tgroups (count×degree)\tmax load (M tok²)\tmin load\tmax tokens\tmin tokens\tI = Σs²/R (M)\t"
	if hasTarget {
		header += "max/Λ*\t"
	}
	fmt.Fprintln(tw, header)
	for m, ms := range st.Microbatches {
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.1f\t%.0f\t%.0f\t%.1f\t", m, groupsByDegree(plan.Microbatches[m]),
			ms.MaxLoad/1e6, ms.MinLoad/1e6, ms.MaxTokens, ms.MinTokens, ms.Intensity/1e6)
		if hasTarget {
			fmt.Fprintf(tw, "%.3f\t", ms.MaxLoad/target.LoadTargetTokens2())
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nwhy each microbatch closed:")
	for m, mb := range plan.Microbatches {
		if mb.Closed != "" {
			fmt.Fprintf(w, "  %d: %s\n", m, mb.Closed)
		}
	}

	// The longest sequences: the degree they got beside Megatron's memory minimum.
	degree := make([]int, len(lengths))
	for _, mb := range plan.Microbatches {
		for _, g := range mb.Groups {
			for _, id := range g.Seqs {
				degree[id] = g.Size
			}
		}
	}
	ids := make([]int, len(lengths))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return lengths[ids[a]] > lengths[ids[b]] })
	fmt.Fprintln(w, "\nlongest sequences: CP degree given vs memory minimum pow2ceil(s/B)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seq\ttokens\tmemory degree\tdegree\tper-rank load (M tok²)\t")
	for _, id := range ids[:min(10, len(ids))] {
		s := lengths[id]
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.1f\t\n", id, thousands(int64(s)), sched.MemoryDegree(s, in.BudgetTokens), degree[id],
			float64(s)*float64(s)/float64(degree[id])/1e6)
	}
	return tw.Flush()
}

// groupsByDegree formats a microbatch's groups as "1×32 4×8 ..." (count×degree,
// largest degree first).
func groupsByDegree(mb sched.Microbatch) string {
	count := map[int]int{}
	for _, g := range mb.Groups {
		count[g.Size]++
	}
	sizes := make([]int, 0, len(count))
	for s := range count {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	slices.Reverse(sizes)
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = strconv.Itoa(count[s]) + "×" + strconv.Itoa(s)
	}
	return strings.Join(parts, " ")
}
