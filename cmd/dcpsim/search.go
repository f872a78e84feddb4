package main

import (
	"encoding/json"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/scenarios"
)

const searchUsage = `  dcpsim search [--scenario S | S] [--out DIR] [--jobs J] [--shard I/N | --shard auto [--shards N]] [--no-figures] [--json]
                [--top N] [--tokens X (--days D | --by YYYY-MM-DD)] [--memory-headroom H] [--allow-exec]
                [--best-as megatron]

  Rank the layouts and policies of scenario S's [search] table (an embedded name
  such as search-h800-4k, or a .toml file) by tokens per day. The space is the
  product of the [search] lists (or ranges {from, to, step|factor}): gpus, gpu
  (or pool_gpus for a mixed cluster), tp, pp, vpp, ep, budget_tokens (counts or
  "auto"), recompute, policies; the first and last pipeline stages take the
  layers an even split leaves over (Megatron's --decoder-first/last-pipeline-
  num-layers), each stage a multiple of vpp. Every candidate is validated as a
  scenario is: an invalid one is listed with the reason, never dropped. Keys
  top (default 5: the leading candidates of each group finished on the [run]
  iterations), eta (3) and margin (0.05) set the halving; a table
  [search.policy.NAME] with any of the axes restricts that policy to subsets
  of them (an expensive policy searched over fewer layouts).

  Candidates compete in groups (one cluster size and kind, one policy: the same
  batches). In a group: memory first (model states, then an automatic budget's
  room), then successive halving over rungs of 1, ..., the scenario's [run]
  iterations (each a factor eta longer, the same first batches; each rung keeps
  the best 1/eta, at least top, the last cut exactly top, and any candidate
  within margin of the cut), with a sound lower bound on the step (compute at
  the calibrated peak plus gradient sync and optimizer step) pruning, in waves,
  what could not survive the rung. The last rung is the scenario's own [run]
  iterations and seed, so a leading candidate's figures are what dcpsim run
  prints for its layout and policy. Same scenario and seed: same ranking, any
  --jobs or --shard.

  With --tokens X and --days D (or --by DATE, days from today) prints first the
  answer, the fewest GPUs searched that train X tokens in time, then the --top N
  (default 10) candidates (tie: the leader's 95% interval of tokens/day overlaps
  the candidate's) and the best layout per policy at the answer's cluster size
  (else at the largest searched). --memory-headroom H leaves out of all three
  the candidates whose peak leaves less than H of their HBM free; every row says
  the share it leaves. Writes DIR (default runs/<scenario>/):
  search.json (the space, the rules, every candidate), search.csv (one row per
  candidate with its status: ok, pruned-bound, pruned-halving, out-of-memory,
  invalid, failed, skipped, and why), the figures search-pareto and search-best
  (PNG and SVG), index.html (the page: the answer, the ranking with its ties,
  the Pareto chart, the best per policy at each size), and evals/ (every simulated run, reused by a resumed search of
  the same scenario text and dcpsim revision: an interrupted search, Ctrl-C or
  SIGTERM, exit 1, continues where it stopped). DIR must be new, empty or a
  dcpsim search folder of the same scenario, else exit 2.

  --json prints one JSON line per candidate (search.csv's columns, among them tp,
  pp, vpp, ep, budget_tokens, recompute, policy, gpus, tokens_per_day,
  step_seconds_mean, peak_memory_bytes, status) instead of the tables.

  --shard auto takes I and N from a Slurm array task or a Kubernetes Indexed
  Job pod, as dcpsim sweep's --shard auto does (see dcpsim help sweep).
  --shard I/N runs the groups whose index mod N is I and writes
  DIR/search-shard.json; dcpsim merge --out DIR SHARD_DIR... joins the shards
  into the same search.json, search.csv and figures as one unsharded search. Progress
  with an ETA goes to stderr: a line rewritten in place on a terminal, a whole
  line every 10% (or 30 s) in a log (a file or pipe: Slurm, nohup, tee).

  --best-as megatron also prints the best candidate's layout, batch and model
  as Megatron-LM arguments (as dcpsim export megatron prints a scenario's),
  to take the answer back to the cluster.

  --allow-exec starts the programs the scenario names (the command of a
  [run.external.NAME] policy): a scenario file can name any program, so
  without this flag a scenario that names one is refused (exit 2, the
  programs listed) before anything runs; with it each program is printed on
  stderr before it starts.`

func searchCommand() command {
	return command{name: "search", summary: "rank a scenario's [search] layouts and policies (pruned, resumable, shardable)", usage: searchUsage, run: runSearch}
}

// searchMemoryLimit is the soft memory limit of a search (the GC works
// harder past it rather than letting the 400% target grow the heap).
const searchMemoryLimit = 1 << 30

func runSearch(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("search", searchUsage, stderr)
	scenarioArg := scenarioFlag(fs)
	out := fs.String("out", "", "results folder (default runs/<scenario>)")
	shard := fs.String("shard", "0/1", "run the groups with index mod N = I; auto: I and N from Slurm's array or a Kubernetes Indexed Job")
	shards := fs.Int("shards", 0, "with --shard auto under Kubernetes: N, the Indexed Job's completions")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "candidates simulated at once")
	noFigures := fs.Bool("no-figures", false, "write no figures")
	asJSON := fs.Bool("json", false, "print one JSON line per candidate instead of the tables")
	top := fs.Int("top", 10, "candidates printed")
	tokens := fs.Float64("tokens", 0, "a token target, e.g. 1e12: print the fewest GPUs searched that reach it (with --days or --by)")
	days := fs.Float64("days", 0, "days to reach --tokens")
	by := fs.String("by", "", "date (YYYY-MM-DD, UTC) by which to reach --tokens; days from today")
	exec := fs.Bool("allow-exec", false, "start the programs the scenario names ([run.external.NAME] command); without it such a scenario is refused")
	headroom := fs.Float64("memory-headroom", 0, "leave out of the tables the candidates whose peak leaves less than this share of HBM free, e.g. 0.1")
	bestAs := fs.String("best-as", "", "also print the best candidate as a launch line: megatron (dcpsim help export)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if rest, err = withScenarioFlag(*scenarioArg, rest); err != nil {
		return err
	}
	if err := checkBestAs(*bestAs, *asJSON, *shard); err != nil {
		return err
	}
	if *jobs < 1 || *jobs > 4096 {
		return badInput("--jobs %d: must be in [1, 4096]", *jobs)
	}
	if !(*headroom >= 0 && *headroom < 1) {
		return badInput("--memory-headroom %v: must be in [0, 1): the share of HBM a candidate's peak must leave free", *headroom)
	}
	if *top < 0 || *top > 100000 {
		return badInput("--top %d: must be in [0, 100000]", *top)
	}
	target, err := parseTarget(*tokens, *days, *by, time.Now().UTC())
	if err != nil {
		return err
	}
	si, sn, err := shardFlags(*shard, *shards, os.Getenv)
	if err != nil {
		return err
	}
	sc, dir, err := tableScenario("search", rest, *out, func(sc *scenarios.Scenario) bool { return sc.Search != nil },
		"add one (dcpsim help search) or run it with dcpsim run")
	if err != nil {
		return err
	}
	if err := allowExec(sc, *exec, stderr); err != nil {
		return err
	}
	ctx, stop := interruptContext()
	defer stop()
	// A search allocates each candidate's short-lived scratch (cost model,
	// plans, timelines) thousands of times: a higher GC target trades some
	// memory for about a tenth of the time (measured on search-h800-4k).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	// ... but not past a soft limit (or a lower one GOMEMLIMIT set): at 400%
	// a space of 200,000 invalid layouts (450 MB live) peaked at 2.2 GiB
	// (docs/limits.md).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(min(debug.SetMemoryLimit(-1), searchMemoryLimit)))
	prog := newProgress(stderr, sc.Name+": candidates settled")
	start := time.Now()
	res, err := experiment.Search(ctx, sc, experiment.SearchOptions{Dir: dir, Shard: si, Shards: sn, Jobs: *jobs, Figures: drawer(*noFigures), Target: target, AllowExec: *exec,
		Progress: func(done, total int) { prog.update(done, total, "") }})
	prog.finish()
	if err != nil {
		return interrupted(ctx, err)
	}
	wall := time.Since(start).Seconds()
	if *asJSON {
		return printSearchJSON(stdout, res.File.Candidates)
	}
	printSearchHead(stdout, &res.File)
	// The wall time goes to stderr: stdout is the same on every rerun.
	fmt.Fprintf(stderr, "simulated %d runs (%d iterations) in %.1f s, %d read back from %s/evals: %.1f candidates/s\n",
		res.Simulations, res.SimulatedIterations, wall, res.Reused, dir, float64(len(res.File.Candidates))/max(wall, 1e-9))
	if sn > 1 {
		fmt.Fprintf(stdout, "shard %d/%d done (%d groups); join the shards' folders with dcpsim merge --out DIR FOLDER...\n", si, sn, len(res.File.Groups))
		return nil
	}
	printSearchTables(stdout, &res.File, *top, target, *headroom)
	fmt.Fprintf(stdout, "wrote %s/: %s\n", dir, strings.Join(res.Files, ", "))
	if *bestAs != "" {
		return printBestAs(stdout, sc, res.File.Candidates)
	}
	return nil
}

// parseTarget reads --tokens with --days or --by (days from now to the
// date's midnight UTC).
func parseTarget(tokens, days float64, by string, now time.Time) (*results.SearchTarget, error) {
	switch {
	case tokens == 0 && days == 0 && by == "":
		return nil, nil
	case !(tokens > 0 && tokens <= 1e18):
		return nil, badInput("--tokens %g: a token target in (0, 1e18] goes with --days or --by", tokens)
	case (days > 0) == (by != ""):
		return nil, badInput("--tokens needs exactly one of --days D or --by YYYY-MM-DD")
	case by != "":
		t, err := time.Parse("2006-01-02", by)
		if err != nil {
			return nil, badInput("--by %q: want a date YYYY-MM-DD", by)
		}
		// Seconds apart, not t.Sub(now): a Duration saturates at 292 years.
		days = float64(t.Unix()-now.Unix()) / 86400
		if days <= 0 {
			return nil, badInput("--by %s: the date has passed (today is %s UTC)", by, now.Format("2006-01-02"))
		}
		if days > 36500 {
			return nil, badInput("--by %s: %.1f days from today: must be in (0, 36500], as --days", by, days)
		}
	case !(days <= 36500):
		return nil, badInput("--days %g: must be in (0, 36500]", days)
	}
	return &results.SearchTarget{Tokens: tokens, Days: days}, nil
}

// printSearchJSON prints one JSON line per candidate, by ID.
func printSearchJSON(w io.Writer, rows []results.SearchRow) error {
	enc := json.NewEncoder(w)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// printSearchHead prints the space, the rules and the counts.
func printSearchHead(w io.Writer, f *experiment.SearchFile) {
	layouts := map[string]bool{}
	for _, r := range f.Candidates {
		layouts[fmt.Sprintf("%d %s %s", r.GPUs, r.GPU, r.Layout())] = true
	}
	fmt.Fprintf(w, "%s: %d candidates (%d layouts × policies) in %d groups (cluster × policy), %s\n",
		f.Search, len(f.Candidates), len(layouts), len(f.Groups), f.Model)
	rungs := make([]string, len(f.Rungs))
	for i, n := range f.Rungs {
		rungs[i] = fmt.Sprintf("%d (%d warm-up)", n, min(f.WarmupIterations, n-1))
	}
	fmt.Fprintf(w, "halving rungs of %s iterations; each keeps the best 1/%d of its group (at least %d; the last cut exactly %d) and every candidate within %g%% of the cut; seed %d\n",
		strings.Join(rungs, ", "), f.Eta, f.Top, f.Top, 100*f.Margin, f.Seed)
	var parts []string
	n := max(len(f.Candidates), 1)
	for _, st := range results.SearchStatuses {
		if c := f.Counts[st]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%.1f%%)", st, c, 100*float64(c)/float64(n)))
		}
	}
	fmt.Fprintf(w, "candidates: %s\n", strings.Join(parts, ", "))
}

// printSearchTables prints, of the candidates that leave at least headroom
// of their HBM free: the answer to a token target first (when one is
// given), the ranking with the leader's ties marked, and the best layout
// per policy at the answer's cluster size (else the largest searched).
func printSearchTables(w io.Writer, f *experiment.SearchFile, top int, target *results.SearchTarget, headroom float64) {
	ranked := results.RankedSearchRows(f.Candidates)
	if len(ranked) == 0 {
		fmt.Fprintln(w, "no candidate ran on every iteration: see search.csv for why")
		return
	}
	if headroom > 0 {
		fits := ranked[:0:0]
		for _, r := range ranked {
			if r.MemoryHeadroom() >= headroom {
				fits = append(fits, r)
			}
		}
		fmt.Fprintf(w, "\n--memory-headroom %g: %d of the %d ranked candidates leave less than %g%% of their HBM free and are left out below\n",
			headroom, len(ranked)-len(fits), len(ranked), 100*headroom)
		if len(fits) == 0 {
			return
		}
		ranked = fits
	}
	answer := 0
	if target != nil {
		answer = printTarget(w, ranked, target, f.DollarsPerGPUHour)
	}
	fmt.Fprintf(w, "\nthe %d best of %d candidates by tokens/day ($ per 1T tokens at $%g per GPU-hour; ± 95%% is the Student-t interval of the mean step over the %d measured iterations; tie: its interval of tokens/day overlaps the leader's):\n",
		min(top, len(ranked)), len(ranked), f.DollarsPerGPUHour, f.Iterations-f.WarmupIterations)
	_ = report.WriteSearchTable(w, ranked, top)
	gpus, why := answer, "the answer's cluster size"
	if gpus == 0 {
		why = "the largest searched"
		for _, r := range ranked {
			gpus = max(gpus, r.GPUs)
		}
	}
	fmt.Fprintf(w, "\nbest layout per policy at %d GPUs (%s):\n", gpus, why)
	best := results.BestSearchRows(ranked, gpus)
	for i, r := range best {
		tie := ""
		if i > 0 && r.TiesWith(best[0]) {
			tie = "  (ties " + best[0].Policy + ")"
		}
		fmt.Fprintf(w, "  %-12s %8.2f B tokens/day  %8.3f s/step  %s per 1T tokens  %4.1f%% HBM free  %s%s\n",
			r.Policy, r.TokensPerDay/1e9, r.StepSecondsMean, money(r.DollarsPer1TTokens), 100*r.MemoryHeadroom(), r.Layout(), tie)
	}
}

// printTarget prints the fewest GPUs searched whose best candidate trains
// the target's tokens in its days, the answer first, and returns that
// cluster size (0: no cluster searched makes it).
func printTarget(w io.Writer, ranked []results.SearchRow, t *results.SearchTarget, dollars float64) int {
	need := t.TokensPerDay()
	sizes, answer := t.Answer(ranked, dollars)
	fmt.Fprintf(w, "\n%.3g tokens in %.1f days needs %.2f B tokens/day:\n", t.Tokens, t.Days, need/1e9)
	if answer >= 0 {
		a := sizes[answer]
		fmt.Fprintf(w, "answer: %d GPUs (%s, %s): %.1f days, %s\n", a.Best.GPUs, a.Best.Policy, a.Best.Layout(), a.Days, money(a.Dollars))
	} else {
		r := sizes[len(sizes)-1].Best
		fmt.Fprintf(w, "answer: no cluster searched makes it: the largest, %d GPUs, would need %.0f%% more throughput (at linear scaling about %d GPUs; search them to know)\n",
			r.GPUs, 100*(need/r.TokensPerDay-1), int(math.Ceil(float64(r.GPUs)*need/r.TokensPerDay)))
	}
	for _, a := range sizes {
		mark := "  "
		if a.MakesIt {
			mark = "ok"
		}
		fmt.Fprintf(w, "  %s %6d GPUs: best %8.2f B tokens/day (%s, %s): %.1f days, %s\n",
			mark, a.Best.GPUs, a.Best.TokensPerDay/1e9, a.Best.Policy, a.Best.Layout(), a.Days, money(a.Dollars))
	}
	if answer < 0 {
		return 0
	}
	return sizes[answer].Best.GPUs
}

// money formats dollars as $1.23M, $456k or $789.
func money(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("$%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("$%.0fk", x/1e3)
	}
	return fmt.Sprintf("$%.0f", x)
}
