package main

import (
	"strings"
	"testing"
)

// TestShardFromEnv: --shard auto reads Slurm's array variables (1-based and
// stepped arrays included) and Kubernetes' completion index, and refuses
// what does not describe one shard, naming the variables.
func TestShardFromEnv(t *testing.T) {
	slurm := func(id, lo, hi, step, count string) map[string]string {
		m := map[string]string{"SLURM_ARRAY_TASK_ID": id, "SLURM_ARRAY_TASK_MIN": lo, "SLURM_ARRAY_TASK_MAX": hi, "SLURM_ARRAY_TASK_COUNT": count}
		if step != "" {
			m["SLURM_ARRAY_TASK_STEP"] = step
		}
		return m
	}
	for _, c := range []struct {
		name   string
		shard  string
		shards int
		env    map[string]string
		i, n   int
		want   string
	}{
		{"explicit", "2/5", 0, nil, 2, 5, ""},
		{"0-based", "auto", 0, slurm("3", "0", "15", "1", "16"), 3, 16, ""},
		{"1-based", "auto", 0, slurm("1", "1", "16", "1", "16"), 0, 16, ""},
		{"1-based last", "auto", 0, slurm("16", "1", "16", "1", "16"), 15, 16, ""},
		{"stepped", "auto", 0, slurm("7", "1", "9", "2", "5"), 3, 5, ""},
		{"no step variable", "auto", 0, slurm("2", "0", "3", "", "4"), 2, 4, ""},
		{"slurm with matching shards", "auto", 4, slurm("2", "0", "3", "1", "4"), 2, 4, ""},
		{"k8s", "auto", 8, map[string]string{"JOB_COMPLETION_INDEX": "5"}, 5, 8, ""},
		{"list array", "auto", 0, slurm("3", "1", "7", "1", "3"), 0, 0, "not one arithmetic range"},
		{"off the step", "auto", 0, slurm("2", "1", "9", "2", "5"), 0, 0, "not in the array's range"},
		{"shards disagree", "auto", 8, slurm("2", "0", "3", "1", "4"), 0, 0, "--shards 8 but the Slurm array has 4 tasks"},
		{"garbage", "auto", 0, slurm("x", "0", "3", "1", "4"), 0, 0, `SLURM_ARRAY_TASK_ID = "x"`},
		{"k8s without shards", "auto", 0, map[string]string{"JOB_COMPLETION_INDEX": "5"}, 0, 0, "needs --shards N"},
		{"k8s index too big", "auto", 4, map[string]string{"JOB_COMPLETION_INDEX": "4"}, 0, 0, "must be below --shards 4"},
		{"nothing", "auto", 0, nil, 0, 0, "neither SLURM_ARRAY_TASK_ID"},
		{"shards without auto", "1/4", 4, nil, 0, 0, "--shards 4 goes with --shard auto"},
		{"bad explicit", "4/4", 0, nil, 0, 0, `--shard "4/4"`},
		// Issue 41 class 4: the bounds merge applies, and no wrapping.
		{"explicit past merge's bound", "0/300000", 0, nil, 0, 0, `--shard "0/300000": want I/N with 0 <= I < N <= 200000`},
		{"explicit near 2^63", "0/9000000000000000000", 0, nil, 0, 0, `<= 200000`},
		{"explicit at the bound", "199999/200000", 0, nil, 199999, 200000, ""},
		{"slurm step near 2^62", "auto", 0, slurm("4611686018427387904", "0", "4611686018427387904", "4611686018427387904", "2"), 0, 0,
			"SLURM_ARRAY_TASK_ID = \"4611686018427387904\": want an integer in [0, 2147483647]"},
		{"slurm min near 2^63", "auto", 0, slurm("1", "9223372036854775000", "1", "1", "1"), 0, 0, "SLURM_ARRAY_TASK_MIN"},
		{"k8s shards past the bound", "auto", 300000, map[string]string{"JOB_COMPLETION_INDEX": "5"}, 0, 0, "--shards 300000: must be in [1, 200000]"},
	} {
		i, n, err := shardFlags(c.shard, c.shards, func(k string) string { return c.env[k] })
		switch {
		case c.want == "" && (err != nil || i != c.i || n != c.n):
			t.Errorf("%s: %d/%d, %v; want %d/%d", c.name, i, n, err, c.i, c.n)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
