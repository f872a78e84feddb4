package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/scenarios"
)

const sweepUsage = `  dcpsim sweep [--scenario S | S] [--out DIR] [--shard I/N | --shard auto [--shards N]] [--jobs J] [--no-figures]
               [--allow-exec]

  Run every point of scenario S's [sweep] (an embedded name such as weak-scaling,
  or a .toml file): the cartesian product of its axes (variants, gpus,
  context_tokens, budget_tokens, the policy options of [sweep.options.<policy>],
  policies) in that fixed order. Each
  point runs the point's policies on identical batches as dcpsim run does (without
  figures or traces) and writes DIR/points/<point>/ (summary.json, iterations.csv,
  point.json, manifest.json last), each point folder built aside and swapped in
  whole. Points run in parallel (--jobs, default the number of CPUs); the results
  do not depend on it. DIR must be new, empty or a dcpsim sweep folder (a
  sweep.json dcpsim wrote, or points/ of dcpsim point folders; never a link) of
  the same scenario, else exit 2. Point folders of an earlier version of the
  sweep that it no longer has are removed, and the output says so.

  Resumable: a point whose folder is complete (as merge checks it) for the same
  scenario text, point and dcpsim revision is skipped, so an interrupted sweep
  (Ctrl-C: exit 1, "interrupted", no temporary file left) continues where it
  stopped; temporary folders a killed sweep left (kill -9) are removed. SIGTERM
  and SIGHUP count as Ctrl-C.

  --shard I/N runs only the points whose index modulo N is I (0 <= I < N); then
  dcpsim merge joins the shards' folders. --shard auto takes I and N from the
  scheduler: in a Slurm job array task I = (SLURM_ARRAY_TASK_ID -
  SLURM_ARRAY_TASK_MIN)/SLURM_ARRAY_TASK_STEP and N = SLURM_ARRAY_TASK_COUNT, so
  1-based and stepped arrays work (an array given as a list is refused); in a
  Kubernetes Indexed Job pod I = JOB_COMPLETION_INDEX and N = --shards (its
  completions). Without either variable --shard auto is exit 2 naming them.
  examples/slurm/ and examples/k8s/ hold the job files. An unsharded (or merged) sweep writes DIR/sweep.json (every point, in
  order), DIR/sweep.csv (one row per point and policy) and the figures
  sweep-throughput, sweep-planner and sweep-<policy>-<option> (PNG and SVG) where the swept axes
  allow them, and DIR/index.html (the page: every row, sortable, and the figures). Progress goes to stderr: rewritten in
  place on a terminal, a whole line every 10% (or 30 s) in a log (a file or pipe).

  --allow-exec starts the programs the scenario names (the command of a
  [run.external.NAME] policy): a scenario file can name any program, so
  without this flag a scenario that names one is refused (exit 2, the
  programs listed) before anything runs; with it each program is printed on
  stderr before it starts.`

const mergeUsage = `  dcpsim merge --out DIR SHARD_DIR...

  Join the folders of a sharded dcpsim sweep: check that every point of the sweep
  is present once (from the same scenario text), copy the points into DIR/points/
  and write DIR/sweep.json, DIR/sweep.csv and the sweep figures exactly as an
  unsharded sweep would. Shard folders are untrusted: before anything is written,
  every point folder must pass strict checks (bounded reads; manifest.json,
  point.json and summary.json decoded strictly and consistent; exactly the files
  its manifest lists; bounded counts; file-safe names), else exit 2 naming the
  file and the key. DIR must be new, empty or a dcpsim sweep folder of the same
  sweep (a shard's may be DIR; never a link); point folders of an earlier
  version of the sweep that the merged one lacks are removed, and the output
  says so.

  Folders of dcpsim search --shard I/N (each with a search-shard.json) are
  joined the same way: every shard once, of one scenario text, into
  DIR/search.json, DIR/search.csv and the search figures, exactly as one
  unsharded search writes them.`

func sweepCommand() command {
	return command{name: "sweep", summary: "run a scenario's [sweep] points in parallel (resumable, shardable)", usage: sweepUsage, run: runSweep}
}

func mergeCommand() command {
	return command{name: "merge", summary: "join the folders of a sharded sweep or search", usage: mergeUsage, run: runMerge}
}

// tableScenario resolves the one scenario argument of dcpsim NAME, whose
// [NAME] table it runs (has says whether the scenario has one; hint is what
// to do without it), and its results folder: out, or runs/<scenario>.
func tableScenario(name string, args []string, out string, has func(*scenarios.Scenario) bool, hint string) (*scenarios.Scenario, string, error) {
	if len(args) != 1 {
		return nil, "", badInput("dcpsim %s takes one scenario (name or .toml file), got %d arguments", name, len(args))
	}
	sc, err := resolveScenario(args[0])
	if err != nil {
		return nil, "", err
	}
	if !has(sc) {
		return nil, "", badInput("scenario %s has no [%s]: %s", sc.Name, name, hint)
	}
	if out == "" {
		out = defaultResultsDir(sc)
	}
	return sc, out, nil
}

// parseShard parses "I/N".
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err1 := strconv.Atoi(a)
		n, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && n >= 1 && n <= maxShards && i >= 0 && i < n {
			return i, n, nil
		}
	}
	return 0, 0, badInput("--shard %q: want I/N with 0 <= I < N <= %d, e.g. 0/4", s, maxShards)
}

func runSweep(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep", sweepUsage, stderr)
	scenarioArg := scenarioFlag(fs)
	out := fs.String("out", "", "results folder (default runs/<scenario>)")
	shard := fs.String("shard", "0/1", "run the points with index mod N = I; auto: I and N from Slurm's array or a Kubernetes Indexed Job")
	shards := fs.Int("shards", 0, "with --shard auto under Kubernetes: N, the Indexed Job's completions")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "points simulated at once")
	noFigures := fs.Bool("no-figures", false, "write no sweep figures")
	exec := fs.Bool("allow-exec", false, "start the programs the scenario names ([run.external.NAME] command); without it such a scenario is refused")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if rest, err = withScenarioFlag(*scenarioArg, rest); err != nil {
		return err
	}
	if *jobs < 1 {
		return badInput("--jobs %d: must be >= 1", *jobs)
	}
	si, sn, err := shardFlags(*shard, *shards, os.Getenv)
	if err != nil {
		return err
	}
	sc, dir, err := tableScenario("sweep", rest, *out, func(sc *scenarios.Scenario) bool { return sc.Sweep != nil }, "run it with dcpsim run")
	if err != nil {
		return err
	}
	if err := allowExec(sc, *exec, stderr); err != nil {
		return err
	}
	ctx, stop := interruptContext()
	defer stop()
	prog := newProgress(stderr, sc.Name+": points")
	res, err := experiment.Sweep(ctx, sc, experiment.SweepOptions{Dir: dir, Shard: si, Shards: sn, Jobs: *jobs, Figures: drawer(*noFigures), AllowExec: *exec,
		Progress: func(done, skipped, total int) { prog.update(done, total, fmt.Sprintf("%d already there", skipped)) }})
	prog.finish()
	if err != nil {
		return interrupted(ctx, err)
	}
	printRemoved(stdout, sc.Name, dir, res.Removed)
	fmt.Fprintf(stdout, "%s: %d of %d points in %s/points/ (%d simulated, %d already there)\n",
		sc.Name, res.Mine, res.Points, dir, res.Mine-res.Skipped, res.Skipped)
	if sn > 1 {
		fmt.Fprintf(stdout, "shard %d/%d done; join the shards' folders with dcpsim merge --out DIR FOLDER...\n", si, sn)
		return nil
	}
	fmt.Fprintf(stdout, "wrote %s/: %s\n", dir, strings.Join(res.Files, ", "))
	return nil
}

func runMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", mergeUsage, stderr)
	out := fs.String("out", "", "merged results folder (required)")
	noFigures := fs.Bool("no-figures", false, "write no sweep figures")
	srcs, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *out == "" || len(srcs) == 0 {
		return badInput("dcpsim merge needs --out DIR and at least one shard folder")
	}
	ctx, stop := interruptContext()
	defer stop()
	if experiment.IsSearchShard(srcs[0]) {
		res, err := experiment.MergeSearch(ctx, *out, srcs, drawer(*noFigures))
		if err != nil {
			return interrupted(ctx, err)
		}
		printSearchHead(stdout, &res.File)
		fmt.Fprintf(stdout, "merged %d shards\n", len(srcs))
		printSearchTables(stdout, &res.File, 10, nil, 0)
		fmt.Fprintf(stdout, "wrote %s/: %s\n", *out, strings.Join(res.Files, ", "))
		return nil
	}
	res, err := experiment.Merge(ctx, *out, srcs, drawer(*noFigures))
	if err != nil {
		return interrupted(ctx, err)
	}
	printRemoved(stdout, res.Sweep, *out, res.Removed)
	fmt.Fprintf(stdout, "%s: merged %d points from %d folders\n", res.Sweep, res.Points, len(srcs))
	fmt.Fprintf(stdout, "wrote %s/: %s\n", *out, strings.Join(res.Files, ", "))
	return nil
}

// printRemoved says which point folders of an earlier version of the sweep
// were removed from dir/points/ (the sweep no longer has them).
func printRemoved(stdout io.Writer, sweep, dir string, removed []string) {
	if len(removed) == 0 {
		return
	}
	fmt.Fprintf(stdout, "%s: removed %d point folders of an earlier version of the sweep from %s/points/ (points it no longer has): %s\n",
		sweep, len(removed), dir, strings.Join(removed, ", "))
}
