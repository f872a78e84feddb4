package results

import "github.com/dcpsim/dcpsim/internal/safeio"

// Page is what a results folder's index.html shows, the one page a person
// opens to look at the folder: its title and files, and the data of the
// folder's kind (exactly one of Run, Sweep, Search, Validation and
// Comparison is set). experiment fills it as it writes a folder; the CLI's
// drawer (internal/report) renders it. It holds only deterministic data, so
// the page of a scenario and seed is the same bytes on every rerun.
type Page struct {
	// Title is the scenario's, sweep's or search's name.
	Title string
	// Files are the folder's files beside index.html, sorted; the page
	// shows the figures among them (NAME.svg) and links the rest.
	Files []string
	// Run is a dcpsim run's folder.
	Run *RunPage
	// Sweep is a sweep's (or a merged sweep's) folder.
	Sweep *SweepPage
	// Search is a search's folder.
	Search *SearchPage
	// Validation is a dcpsim validate --out folder: every run predicted.
	Validation []ValidationResult
	// Comparison is a dcpsim compare --out folder.
	Comparison *Comparison
}

// RunPage is a run's data as its page shows it.
type RunPage struct {
	Summary *Summary
	// Rows are iterations.csv's rows; Timelines the iterations drawn
	// (each with its trace file, TraceFile).
	Rows      []IterationRow
	Timelines []Timeline
}

// SweepPage is a sweep's data as its page shows it: its points in order
// (their folders are points/NAME/).
type SweepPage struct {
	Points []SweepPoint
}

// SearchPage is a search's data as its page shows it: search.json's head,
// its candidates, and the token target the search was asked to meet.
type SearchPage struct {
	// Model, Seed, Iterations, WarmupIterations, Rungs and
	// DollarsPerGPUHour are search.json's.
	Model             string
	Seed              uint64
	Iterations        int
	WarmupIterations  int
	Rungs             []int
	DollarsPerGPUHour float64
	// Counts are the candidates per status (the Search* statuses).
	Counts map[string]int
	// Candidates are every candidate, by ID.
	Candidates []SearchRow
	// Target is the --tokens and --days the search was run with (nil:
	// none).
	Target *SearchTarget
}

// SearchTarget is a planner's token target: Tokens trained in Days.
type SearchTarget struct {
	Tokens float64
	Days   float64
}

// TokensPerDay is the throughput the target needs.
func (t *SearchTarget) TokensPerDay() float64 { return t.Tokens / t.Days }

// SizeAnswer is a target's answer at one cluster size searched: the size's
// best ranked candidate, the days it takes to train the target's tokens,
// their cost, and whether it makes the target's days.
type SizeAnswer struct {
	Best    SearchRow
	Days    float64
	Dollars float64
	MakesIt bool
}

// Answer is the target's answer at every cluster size of the ranked rows,
// by size (BestPerSize), at dollarsPerGPUHour, and the index of the fewest
// GPUs that make it (-1 when none does).
func (t *SearchTarget) Answer(ranked []SearchRow, dollarsPerGPUHour float64) (sizes []SizeAnswer, answer int) {
	answer = -1
	for _, r := range BestPerSize(ranked) {
		days := t.Tokens / r.TokensPerDay
		a := SizeAnswer{Best: r, Days: days, Dollars: days * 24 * float64(r.GPUs) * dollarsPerGPUHour, MakesIt: r.TokensPerDay >= t.TokensPerDay()}
		if a.MakesIt && answer < 0 {
			answer = len(sizes)
		}
		sizes = append(sizes, a)
	}
	return sizes, answer
}

// TraceFile is the name of a policy's Perfetto trace in its run's results
// folder: trace-POLICY.json, the policy's name made file-safe.
func TraceFile(policy string) string {
	return "trace-" + safeio.SafeName(policy) + ".json"
}
