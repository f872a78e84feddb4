package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/experiment"
)

// maxShards bounds N of --shard I/N and --shards: merge's bound
// (experiment.MaxShards), so a shard count merge refuses is refused first.
const maxShards = experiment.MaxShards

// maxSlurmValue bounds each SLURM_ARRAY_TASK_* variable (Slurm's own
// MaxArraySize is at most 4,000,001): MIN + (COUNT-1)·STEP then stays far
// inside an int.
const maxSlurmValue = 1<<31 - 1

// shardFlags resolves --shard and --shards: "I/N" as it is, or "auto" from
// the scheduler's environment (shardFromEnv); --shards goes with auto only.
func shardFlags(shard string, shards int, getenv func(string) string) (i, n int, err error) {
	if shard != "auto" {
		if shards != 0 {
			return 0, 0, badInput("--shards %d goes with --shard auto (--shard %s names its own count)", shards, shard)
		}
		return parseShard(shard)
	}
	if shards < 0 || shards > maxShards {
		return 0, 0, badInput("--shards %d: must be in [1, %d]", shards, maxShards)
	}
	return shardFromEnv(getenv, shards)
}

// shardFromEnv is --shard auto: the shard of a Slurm job array task or a
// Kubernetes Indexed Job pod.
//
// Slurm (SLURM_ARRAY_TASK_ID set): I = (SLURM_ARRAY_TASK_ID −
// SLURM_ARRAY_TASK_MIN)/SLURM_ARRAY_TASK_STEP and N = SLURM_ARRAY_TASK_COUNT,
// so a 1-based array (--array=1-16) and a stepped one (--array=0-30:2) shard
// as 0-based contiguous ones do; the variables must describe one arithmetic
// range (MAX = MIN + (COUNT−1)·STEP; an array given as a list such as 1,3,7
// does not, and is refused: give --shard I/N). shards, when not 0, must equal
// N. Kubernetes (JOB_COMPLETION_INDEX set): I is the index, N is shards,
// which must be given (an Indexed Job's completions). Anything else is an
// error naming the variables.
func shardFromEnv(getenv func(string) string, shards int) (i, n int, err error) {
	if id := getenv("SLURM_ARRAY_TASK_ID"); id != "" {
		vals := map[string]int{}
		for _, k := range []string{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SLURM_ARRAY_TASK_COUNT"} {
			s := getenv(k)
			if s == "" && k == "SLURM_ARRAY_TASK_STEP" {
				s = "1" // older Slurm sets no step for an unstepped array
			}
			v, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || v < 0 || v > maxSlurmValue {
				return 0, 0, badInput("--shard auto: %s = %q: want an integer in [0, %d] (is this a Slurm job array task?)", k, s, maxSlurmValue)
			}
			vals[k] = v
		}
		id, lo, hi, step, count := vals["SLURM_ARRAY_TASK_ID"], vals["SLURM_ARRAY_TASK_MIN"], vals["SLURM_ARRAY_TASK_MAX"], vals["SLURM_ARRAY_TASK_STEP"], vals["SLURM_ARRAY_TASK_COUNT"]
		desc := fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d, _MIN=%d, _MAX=%d, _STEP=%d, _COUNT=%d", id, lo, hi, step, count)
		switch {
		case step < 1 || count < 1 || count > maxShards:
			return 0, 0, badInput("--shard auto: %s: want STEP >= 1 and COUNT in [1, %d]", desc, maxShards)
		case hi != lo+(count-1)*step:
			return 0, 0, badInput("--shard auto: %s: not one arithmetic range (MAX != MIN + (COUNT-1)*STEP; an array given as a list?): give --shard I/N", desc)
		case id < lo || id > hi || (id-lo)%step != 0:
			return 0, 0, badInput("--shard auto: %s: the task ID is not in the array's range", desc)
		case shards != 0 && shards != count:
			return 0, 0, badInput("--shard auto: --shards %d but the Slurm array has %d tasks (%s)", shards, count, desc)
		}
		return (id - lo) / step, count, nil
	}
	if s := getenv("JOB_COMPLETION_INDEX"); s != "" {
		idx, err := strconv.Atoi(strings.TrimSpace(s))
		switch {
		case err != nil || idx < 0:
			return 0, 0, badInput("--shard auto: JOB_COMPLETION_INDEX = %q: want an integer >= 0", s)
		case shards == 0:
			return 0, 0, badInput("--shard auto: JOB_COMPLETION_INDEX = %d (a Kubernetes Indexed Job) needs --shards N, the Job's completions", idx)
		case idx >= shards:
			return 0, 0, badInput("--shard auto: JOB_COMPLETION_INDEX = %d: must be below --shards %d", idx, shards)
		}
		return idx, shards, nil
	}
	return 0, 0, badInput("--shard auto: neither SLURM_ARRAY_TASK_ID (a Slurm job array task) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job pod) is set: give --shard I/N")
}
