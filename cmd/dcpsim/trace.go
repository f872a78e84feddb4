package main

import (
	"flag"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched/policies"
)

const traceUsage = `  dcpsim trace [--scenario S | S] --policy P [--iteration K] --format chakra --ranks LIST
               --out DIR [--prefix NAME] [--astra-config DIR] [--allow-exec]

  Run SCENARIO (an embedded name or a .toml file; default ` + scenarios.DefaultPreset + `) with policy P up to
  iteration K (default: the first after the warm-up, the one dcpsim run draws) as
  dcpsim run does, and write that iteration as MLCommons Chakra execution traces,
  one per GPU of LIST: DIR/NAME.<npu>.et (NAME default: the policy), ASTRA-sim's
  --workload-configuration DIR/NAME, and DIR/comm_groups.json, its
  --comm-group-configuration; DIR/comm_groups.names.json names each group.
  (Perfetto traces of an iteration are what dcpsim run already writes:
  trace-<policy>.json; --format chakra is the only format here.)

  --astra-config DIR also writes the scenario's cluster for ASTRA-sim's analytical
  backend: DIR/network.yml (NVLink node and NIC fabric: bandwidths and latencies of
  the calibration profile), DIR/system.json (compute replayed), DIR/system-roofline.json
  (compute from num_ops and tensor_size) and DIR/remote-memory.json (docs/chakra.md).

  LIST names GPUs by NPU id, e.g. 0,1,8-15 (at most 4096): Megatron's rank order,
  npu = (stage·G + hdp_rank)·tp + tp_rank, G the HDP ranks of a stage. A file holds
  the GPU's ops in its pipeline order: per op a COMM_RECV from the stage it waits
  for, per layer a COMP node and its CP (Ulysses all-to-all, ring as all-gather /
  reduce-scatter), TP and MoE (dispatch, combine) COMM_COLL nodes, a COMM_SEND to
  the stage that consumes it, and at the end the gradient reduce-scatters and
  all-gathers (or all-reduces) and the optimizer; durations and start times from the
  simulated timeline, sizes from the cost model. Communicators are named by their
  membership ("cp:s0:t0:r64-127", "ep:s0:t0:b8", "dp:s0:t0", ...; a node's pg_desc)
  and numbered for ASTRA-sim (its pg_name). Every file is written to a temporary
  name and renamed; one line per file goes to stdout, the wall time to stderr.
  Bad input (an unknown policy, a bad LIST, an NPU or iteration out of range, an
  --out that is a file) exits 2 naming the value and the range.

  --allow-exec starts the programs the scenario names (the command of a
  [run.external.NAME] policy): a scenario file can name any program, so
  without this flag a scenario that names one is refused (exit 2, the
  programs listed) before anything runs; with it each program is printed on
  stderr before it starts.`

// astraSimMaxGroupID is the largest communicator id ASTRA-sim takes without
// overflow: its CommunicatorGroup sets num_streams = id * 1000000, an int
// (astra-sim/system/CommunicatorGroup.cc at 518bd51, 2026-03-25).
const astraSimMaxGroupID = 2147

func traceCommand() command {
	return command{
		name:    "trace",
		summary: "write one iteration as Chakra execution traces for ASTRA-sim (one file per GPU)",
		usage:   traceUsage + "\n\n" + policyList(),
		run:     runTrace,
	}
}

func runTrace(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("trace", traceUsage+"\n\n"+policyList(), stderr)
	scenarioArg := scenarioFlag(fs)
	policy := fs.String("policy", "", "policy name (required): "+strings.Join(policies.Names(), ", "))
	iteration := fs.Int("iteration", -1, "iteration to trace, 0-based, warm-up included; -1: the first after the warm-up")
	format := fs.String("format", "chakra", "trace format: chakra (the only one; Perfetto traces come from dcpsim run)")
	ranks := fs.String("ranks", "", "NPUs to trace (required), e.g. 0,1,8-15; at most 4096")
	out := fs.String("out", "", "folder to write into (required; created if absent)")
	prefix := fs.String("prefix", "", "file-name prefix of the traces, [A-Za-z0-9._-] (default: the policy)")
	astra := fs.String("astra-config", "", "folder to write ASTRA-sim's network, system and memory configuration into (optional)")
	exec := fs.Bool("allow-exec", false, "start the program of an external policy P the scenario names ([run.external.P] command); without it such a policy is refused")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if pos, err = withScenarioFlag(*scenarioArg, pos); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case len(pos) > 1:
		return badInput("unexpected arguments %q (name one scenario)", pos[1:])
	case *format != "chakra":
		return badInput("--format %q: only chakra (Perfetto traces of an iteration are written by dcpsim run, trace-<policy>.json)", *format)
	case *policy == "":
		return badInput("--policy is required (one of %s)", strings.Join(policies.Names(), ", "))
	case *ranks == "":
		return badInput("--ranks is required: NPU ids such as 0,1,8-15")
	case *out == "":
		return badInput("--out is required: the folder to write the traces into")
	case set["iteration"] && *iteration < 0:
		return badInput("--iteration %d: must be >= 0", *iteration)
	}
	npus, err := parseNPUList(*ranks, experiment.MaxChakraNPUs)
	if err != nil {
		return err
	}
	if *prefix == "" {
		*prefix = safeio.SafeName(*policy)
	}
	if err := experiment.CheckChakraPrefix(*prefix); err != nil {
		return badInput("--prefix: %w", err)
	}
	for _, dir := range []struct{ flag, path string }{{"--out", *out}, {"--astra-config", *astra}} {
		if dir.path == "" {
			continue
		}
		if st, err := os.Lstat(dir.path); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return badInput("%s %s: is a link: name the folder itself (the traces are never written through a link)", dir.flag, dir.path)
		} else if err == nil && !st.IsDir() {
			return badInput("%s %s: is a file, not a folder", dir.flag, dir.path)
		}
	}
	arg := ""
	if len(pos) == 1 {
		arg = pos[0]
	}
	sc, err := resolveScenario(arg)
	if err != nil {
		return err
	}
	if sc.Sweep != nil {
		return badInput("scenario %s has a [sweep]: trace one of its points (dcpsim trace simulates one scenario)", sc.Name)
	}
	if _, ok := sc.Run.External[*policy]; !ok {
		if _, err := policies.Lookup(*policy); err != nil {
			return badInput("--policy: %v", err)
		}
	}
	k := *iteration
	if !set["iteration"] {
		k = min(sc.Run.WarmupIterations, sc.Run.Iterations-1)
	}
	if k >= sc.Run.Iterations {
		return badInput("--iteration %d: outside scenario %s's iterations [0, %d)", k, sc.Name, sc.Run.Iterations)
	}
	if total := sc.Job.Cluster.GPUs; npus[len(npus)-1] >= total {
		return badInput("--ranks: NPU %d outside [0, %d): scenario %s has %d GPUs", npus[len(npus)-1], total, sc.Name, total)
	}
	if err := allowExec(sc, *exec, stderr, *policy); err != nil {
		return err
	}
	ctx, stop := interruptContext()
	defer stop()
	start := time.Now()
	ct, err := experiment.ChakraTrace(sc, *policy, k, npus, experiment.ChakraContext(ctx), experiment.ChakraAllowExec(*exec))
	if err != nil {
		return interrupted(ctx, err)
	}
	if *astra != "" {
		if _, err := ct.AstraConfig(); err != nil { // before any file is written
			return fmt.Errorf("--astra-config: %w", err)
		}
	}
	var nodes int
	err = ct.WriteFiles(ctx, *out, *prefix, func(path string, n int) {
		nodes += n
		if n > 0 {
			fmt.Fprintf(stdout, "wrote %s (%d nodes)\n", path, n)
		} else {
			fmt.Fprintf(stdout, "wrote %s\n", path)
		}
	})
	if err != nil {
		return interrupted(ctx, err)
	}
	if *astra != "" {
		if err := ct.WriteAstraConfig(*astra, func(path string) { fmt.Fprintf(stdout, "wrote %s\n", path) }); err != nil {
			return fmt.Errorf("--astra-config: %w", err)
		}
	}
	fmt.Fprintf(stderr, "dcpsim trace: %s, %s, iteration %d: %d NPUs, %d nodes, %d communicators in %.2f s\n",
		sc.Name, *policy, k, len(npus), nodes, len(ct.Groups), time.Since(start).Seconds())
	if len(ct.Groups) > astraSimMaxGroupID {
		fmt.Fprintf(stderr, "dcpsim trace: note: communicator ids run to %d; ASTRA-sim numbers a group's streams from id·10^6 in an int, which overflows past id %d\n",
			len(ct.Groups), astraSimMaxGroupID)
	}
	return nil
}

// parseNPUList parses --ranks "0,1,8-15" (parseIDList).
func parseNPUList(s string, limit int) ([]int, error) {
	return parseIDList("--ranks", "an NPU id", "NPUs", s, limit)
}

// parseIDList parses the value s of flag, a list of ids ("an NPU id", of
// the many "NPUs") and inclusive ranges such as "0,1,8-15", returned
// ascending without repeats; at most limit of them (a range is checked
// before it is expanded).
func parseIDList(flag, one, many, s string, limit int) ([]int, error) {
	bad := func(why string) error {
		return badInput("%s %q: %s; want ids >= 0 and ranges a-b, comma-separated, e.g. 0,1,8-15", flag, s, why)
	}
	seen := map[int]bool{}
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || strings.HasPrefix(lo, "+") {
			return nil, bad(fmt.Sprintf("%q is not %s", f, one))
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || strings.HasPrefix(hi, "+") {
				return nil, bad(fmt.Sprintf("%q is not a range a-b with a <= b", f))
			}
		}
		if b-a >= limit {
			return nil, bad(fmt.Sprintf("more than %d %s", limit, many))
		}
		for n := a; n <= b; n++ {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
		if len(out) > limit {
			return nil, bad(fmt.Sprintf("more than %d %s", limit, many))
		}
	}
	slices.Sort(out)
	return out, nil
}
