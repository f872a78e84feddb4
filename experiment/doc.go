// Package experiment is what dcpsim's run, sweep and merge do, as an
// importable library: it samples a scenario's batches, plans each with every
// policy, prices the plans with the cost model, times them with the engine and
// aggregates the iterations into report types (Run); it expands and runs a
// sweep's points in parallel, resumably and in shards (Sweep), joins shards
// (Merge), and writes and reads the results-folder schema (WriteRun,
// summary.json, iterations.csv, timings.json, point.json, sweep.json, sweep.csv,
// manifest.json). It also serves the --batches JSON-lines contracts
// (PlanBatches, RunBatches).
//
// The data flow is one straight road: scenario → batch (workload) → plan
// (sched) → cost model (costmodel) → engine (sim/step) → Outcome (report
// types) → results folder (report writers). The CLI (cmd/dcpsim) only parses
// flags, prints tables and maps errors to exit codes: errors that blame the
// user's input match badinput.Err, whichever layer made them.
//
// Runs are deterministic: the same scenario, seed and build write the same
// bytes on every rerun and GOMAXPROCS, except timings.json (and its sweep
// figure), which holds the measured Go planner times alone; they never
// enter a simulated time or another file.
package experiment

import "github.com/dcpsim/dcpsim/badinput"

// badInput formats an error that blames the caller's input (a batch line, a
// shard folder, an option value) rather than the simulator: it matches
// badinput.Err without saying so in its text.
func badInput(format string, args ...any) error { return badinput.Errorf(format, args...) }
