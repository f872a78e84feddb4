// Package scenarios holds dcpsim's scenario files and the code that reads them.
//
// A scenario is a TOML file with the tables
//
//	name, description             top-level keys
//	[cluster]   gpu, gpus, gpus_per_node; or, for a mixed cluster, gpus_per_node and
//	            pools = [{gpu, gpus, budget_tokens}, ...] (job.Pool: ranks pool by pool,
//	            whole nodes per stage; giving both forms is an error); the fabric:
//	            nics_per_node (dividing gpus_per_node; default one per GPU),
//	            nodes_per_leaf (default 32), spine_oversubscription (>= 1; default 1)
//	[model]     preset (job.ModelNames) and/or any job.Model field as an override
//	[parallel]  tp, pp, vpp, ep, budget_tokens, first_stage_layers, last_stage_layers,
//	            sequence_parallel (default true), recompute (none | selective | full),
//	            grad_sync (reduce-scatter | all-reduce), precision (bf16 | fp8: the linear
//	            layers' GEMMs in FP8, job.PrecisionFP8; needs a GPU with FP8 tensor cores)
//	[workload]  preset | [[workload.component]] | file (+ format, field, order),
//	            context_tokens, batch_tokens | batch_tokens_per_gpu, overlong
//	[run]       iterations, warmup_iterations, seed, policies, [run.options.<policy>]
//	[sweep]     gpus, context_tokens, budget_tokens, [[sweep.variant]] (name, model, parallel, cluster: the fabric keys)
//	[costs]     profile (a calibration profile file; default: the embedded one of cluster.gpu),
//	            cp_exec.<policy>, cp_overlap.<policy> (what-if CP execution overrides)
//
// Decoding is strict: an unknown key is an error with its line number, and
// validation reports every problem at once (an *Error), each naming the file,
// line, key, value and the allowed range.
//
// The embedded presets (PresetNames) reproduce the HyDra paper's settings and,
// for mixed clusters, the HexiSeq review's (hexiseq-*, hetero-*); each file's
// header comment states its source and its assumptions.
//
// This package reads files (Load, ReadLengthFile); the deterministic core
// (workload, sched, sim) never does.
package scenarios
