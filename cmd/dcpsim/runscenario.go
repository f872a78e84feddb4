package main

import (
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/internal/report"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// scenarioFlags are dcpsim run's options in scenario mode.
type scenarioFlags struct {
	arg, policy, out string
	noFiles          bool
	traceRanks       []int
	dollars          float64
	allowExec        bool
	wide             bool
	// iterations and seed override [run] (nil: the file's).
	iterations *int
	seed       *uint64
}

// maxTimelineRanks bounds --trace-ranks: the ranks a run's timelines draw.
const maxTimelineRanks = 4096

// parseRanks parses --trace-ranks "0,17,42" or "0-7,64" (parseIDList).
func parseRanks(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	return parseIDList("--trace-ranks", "an HDP rank", "ranks", s, maxTimelineRanks)
}

// allowExec is --allow-exec: the programs a run of sc's policies (all when
// none are named) would start are refused without it
// (experiment.CheckExec), and printed on stderr with it, before they start.
func allowExec(sc *scenarios.Scenario, allow bool, stderr io.Writer, policies ...string) error {
	if err := experiment.CheckExec(sc, allow, policies...); err != nil {
		return err
	}
	for _, p := range experiment.Programs(sc, policies...) {
		fmt.Fprintf(stderr, "dcpsim: --allow-exec: starting %s\n", p)
	}
	return nil
}

// defaultResultsDir is runs/<scenario name, file-safe>: an ignored folder of
// the repository, so a run never rewrites the committed results/ (make figures
// names it).
func defaultResultsDir(sc *scenarios.Scenario) string {
	return filepath.Join("runs", safeio.SafeName(sc.Name))
}

// runScenario simulates every policy of the scenario (or only one) on the same
// batches with the cost model, prints the comparison table and writes the
// results folder. It fails (exit 1) when no policy ran.
func runScenario(f scenarioFlags, stdout, stderr io.Writer) error {
	sc, err := resolveScenario(f.arg)
	if err != nil {
		return err
	}
	if sc.Sweep != nil {
		return badInput("scenario %s has a [sweep]: run it with dcpsim sweep (dcpsim run simulates one scenario)", sc.Name)
	}
	if err := sc.Override(f.iterations, f.seed); err != nil {
		return err
	}
	for _, n := range sc.Notes {
		fmt.Fprintf(stderr, "dcpsim run: note: %s\n", n)
	}
	if f.policy != "" {
		if _, err := policies.Lookup(f.policy); err != nil {
			return badInput("--policy: %v", err)
		}
	}
	for _, r := range f.traceRanks {
		if g := sc.Job.PoolRanks(); r >= g {
			return badInput("--trace-ranks: rank %d outside the HDP pool [0, %d) of scenario %s", r, g, sc.Name)
		}
	}
	dir := f.out
	if dir == "" {
		dir = defaultResultsDir(sc)
	}
	// The handler goes in before the folder's check makes its probe.
	ctx, stop := interruptContext()
	defer stop()
	if !f.noFiles {
		if err := experiment.CheckResultsFolder(dir); err != nil {
			return badInput("--out %w", err)
		}
	}
	names := sc.Run.Policies
	if f.policy != "" {
		names = []string{f.policy}
	}
	if err := allowExec(sc, f.allowExec, stderr, names...); err != nil {
		return err
	}
	prog := newProgress(stderr, sc.Name+": iterations")
	out, err := experiment.RunContext(ctx, sc, experiment.Options{Policy: f.policy, TraceRanks: f.traceRanks, AllowExec: f.allowExec,
		DollarsPerGPUHour: f.dollars, Timelines: !f.noFiles, Progress: func(done, total int) { prog.update(done, total, "") }})
	prog.finish()
	if err != nil {
		return interrupted(ctx, err)
	}
	if err := report.WriteRunTable(stdout, &out.Summary, &out.Timings, f.wide); err != nil {
		return err
	}
	if !slices.ContainsFunc(out.Summary.Policies, func(p results.PolicySummary) bool { return p.Error == "" }) {
		return errors.New("no policy ran")
	}
	if f.noFiles {
		return nil
	}
	files, err := experiment.WriteRun(ctx, dir, sc, out, report.Figures{})
	if err != nil {
		if errors.Is(interrupted(ctx, err), errInterrupted) {
			return errInterrupted
		}
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	fmt.Fprintf(stdout, "\nwrote %s/: %s\n", dir, strings.Join(files, ", "))
	return nil
}
