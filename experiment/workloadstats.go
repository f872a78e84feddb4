package experiment

import (
	"github.com/dcpsim/dcpsim/results"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/workload"
)

// WorkloadRequest says whose sequence lengths `dcpsim workload stats`
// describes: a scenario's batches, or a length file's lengths, whole or
// sampled into batches.
type WorkloadRequest struct {
	// Scenario, when set, is sampled for Iterations batches (0: its
	// run.iterations).
	Scenario *scenarios.Scenario
	// File names the length file whose Lengths are described (when Scenario
	// is nil): whole, or with BatchTokens > 0 sampled into Iterations
	// batches (0: scenarios.DefaultIterations) of BatchTokens tokens,
	// longer sequences split at ContextTokens, in Order, from Seed.
	File          string
	Lengths       []int
	BatchTokens   int64
	ContextTokens int
	Order         workload.ListOrder
	Seed          uint64
	// Iterations is how many batches to sample (see above).
	Iterations int
}

// WorkloadStats samples what req names and summarises it: the report's
// statistics (per batch and pooled over the default thresholds) and the
// pooled lengths' counts (for the length figure). It streams: each batch is
// drawn, listed and counted (workload.Accumulator), then dropped, so memory
// does not grow with the iterations. An error that blames the request
// matches badinput.Err.
func WorkloadStats(req WorkloadRequest) (results.WorkloadStats, *workload.Accumulator, error) {
	var rep results.WorkloadStats
	var sampler *workload.Sampler
	acc := new(workload.Accumulator)
	n := req.Iterations
	if sc := req.Scenario; sc != nil {
		s, err := sc.NewSampler()
		if err != nil {
			return rep, nil, err
		}
		sampler = s
		rep.Source = "scenario " + sc.Name
		if sc.Workload.Distribution != nil {
			rep.Distribution = sc.Workload.Distribution.String()
		} else {
			rep.Distribution = "file " + sc.LengthFilePath()
		}
		rep.ContextTokens, rep.BatchTokens, rep.Seed = sc.Workload.ContextTokens, sc.Workload.BatchTokens, sc.Run.Seed
		if n == 0 {
			n = sc.Run.Iterations
		}
	} else {
		rep.Source = req.File
		if req.BatchTokens > 0 {
			spec := workload.BatchSpec{TargetTokens: req.BatchTokens, ContextTokens: req.ContextTokens, Overlong: workload.Split, Seed: req.Seed}
			s, err := workload.NewListSampler(req.Lengths, req.Order, spec)
			if err != nil {
				return rep, nil, badInput("%v", err)
			}
			sampler = s
			rep.ContextTokens, rep.BatchTokens, rep.Seed = req.ContextTokens, req.BatchTokens, req.Seed
			if n == 0 {
				n = scenarios.DefaultIterations
			}
		} else {
			acc.Add(req.Lengths)
		}
	}
	if sampler != nil {
		sampler.EachBatch(n, func(b workload.Batch) {
			rep.Batches = append(rep.Batches, b.Stats())
			acc.Add(b.Lengths)
		})
	}
	rep.Summary = acc.Summary(workload.DefaultThresholds())
	return rep, acc, nil
}
