package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// k8sJob is the part of a Kubernetes Job manifest the test checks.
type k8sJob struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		CompletionMode       string `json:"completionMode"`
		Completions          int    `json:"completions"`
		Parallelism          int    `json:"parallelism"`
		BackoffLimitPerIndex *int   `json:"backoffLimitPerIndex"`
		PodReplacementPolicy string `json:"podReplacementPolicy"`
		PodFailurePolicy     struct {
			Rules []struct {
				Action      string `json:"action"`
				OnExitCodes *struct {
					ContainerName string `json:"containerName"`
					Operator      string `json:"operator"`
					Values        []int  `json:"values"`
				} `json:"onExitCodes"`
			} `json:"rules"`
		} `json:"podFailurePolicy"`
		Template struct {
			Spec struct {
				RestartPolicy string `json:"restartPolicy"`
				Containers    []struct {
					Name    string   `json:"name"`
					Command []string `json:"command"`
					Args    []string `json:"args"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func readJob(t *testing.T, name string) k8sJob {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "k8s", name))
	if err != nil {
		t.Fatal(err)
	}
	var j k8sJob
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Spec.Template.Spec.RestartPolicy != "Never" || len(j.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%s: not a batch/v1 Job of one container with restartPolicy Never: %+v", name, j)
	}
	return j
}

// TestK8sManifests: the Indexed Job's sharding agrees with --shard auto
// (--shards = completions, the pod's folder named by its index), every flag
// it passes is one dcpsim sweep takes, and its failure policy fails an index
// at once on dcpsim's bad-input exit code while failures (exit 1) are
// retried; the merge Job fails at once on bad input.
func TestK8sManifests(t *testing.T) {
	j := readJob(t, "sweep-job.json")
	s := j.Spec
	if s.CompletionMode != "Indexed" || s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex < 1 || s.PodReplacementPolicy != "Failed" ||
		s.Parallelism < 1 || s.Parallelism > s.Completions {
		t.Errorf("sweep job spec: %+v", s)
	}
	c := s.Template.Spec.Containers[0]
	args := append(slices.Clone(c.Command), c.Args...)
	if args[0] != "dcpsim" || args[1] != "sweep" {
		t.Fatalf("sweep job runs %q", args)
	}
	flag := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("sweep job: no %s in %q", name, args)
		}
		return args[i+1]
	}
	if flag("--shard") != "auto" || flag("--shards") != strconv.Itoa(s.Completions) || !strings.Contains(flag("--out"), "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("sweep job: --shard %s --shards %s (completions %d) --out %s", flag("--shard"), flag("--shards"), s.Completions, flag("--out"))
	}
	for _, a := range args[2:] {
		if strings.HasPrefix(a, "--") && !strings.Contains(sweepUsage, a) {
			t.Errorf("sweep job passes %s, which dcpsim sweep's usage does not name", a)
		}
	}
	// Every index's shard from the environment Kubernetes gives it.
	for idx := range s.Completions {
		i, n, err := shardFlags("auto", s.Completions, func(k string) string {
			if k == "JOB_COMPLETION_INDEX" {
				return strconv.Itoa(idx)
			}
			return ""
		})
		if err != nil || i != idx || n != s.Completions {
			t.Errorf("index %d: shard %d/%d, %v", idx, i, n, err)
		}
	}
	failOn := func(job k8sJob, action string) []int {
		for _, r := range job.Spec.PodFailurePolicy.Rules {
			if r.Action == action && r.OnExitCodes != nil && r.OnExitCodes.Operator == "In" && r.OnExitCodes.ContainerName == job.Spec.Template.Spec.Containers[0].Name {
				return r.OnExitCodes.Values
			}
		}
		return nil
	}
	if got := failOn(j, "FailIndex"); !slices.Equal(got, []int{exitInput}) {
		t.Errorf("sweep job fails an index at once on exit codes %v, want [%d] (bad input) alone: exit %d is retried", got, exitInput, exitFailure)
	}
	m := readJob(t, "merge-job.json")
	if got := failOn(m, "FailJob"); !slices.Equal(got, []int{exitInput}) {
		t.Errorf("merge job fails at once on exit codes %v, want [%d]", got, exitInput)
	}
	margs := strings.Join(append(m.Spec.Template.Spec.Containers[0].Command, m.Spec.Template.Spec.Containers[0].Args...), " ")
	if !strings.Contains(margs, "dcpsim merge --out /results/merged /results/shard-*") {
		t.Errorf("merge job runs %q", margs)
	}
}
