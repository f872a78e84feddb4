package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sim/network"
)

const costsUsage = `  dcpsim costs collective --gpu KIND --gpus N [--gpus-per-node M]
                          --op all-reduce|reduce-scatter|all-gather|all-to-all|send-recv
                          --bytes B [--json]

  The cost model's price of one collective over N GPUs of a calibration profile
  (KIND, e.g. H800), M per NVLink node (default: the profile's gpus_per_node), priced
  alone, as sim/network prices every collective of a simulated iteration: its time,
  and the algorithm and bus bandwidths with nccl-tests' definitions, for a person to
  set beside their own nccl-tests runs. B is the per-rank buffer as nccl-tests' size
  column counts it (the whole buffer each rank reduces, gathers or exchanges; what each
  rank sends for a send/recv); algbw = B / seconds, busbw = algbw × 2(N−1)/N for an
  all-reduce, (N−1)/N for a reduce-scatter, all-gather and all-to-all, 1 for a
  send/recv. --json prints one object; its keys seconds, algbw_gbps and busbw_gbps
  (GB/s = 10^9 bytes/s) are a contract. N in [2, 1048576], a multiple of M when it
  spans nodes; B in [1, 2^40]. Sharing links with other traffic is not modelled yet
  (issue 23): every collective is priced alone.`

func costsCommand() command {
	return command{
		name:     "costs",
		summary:  "the cost model's price of a collective (time, algbw, busbw as nccl-tests defines them)",
		usage:    costsUsage,
		run:      runCosts,
		helpArgs: []string{"collective", "-h"},
	}
}

// collectiveCost is dcpsim costs collective --json's object.
type collectiveCost struct {
	Op          string  `json:"op"`
	GPU         string  `json:"gpu"`
	GPUs        int     `json:"gpus"`
	GPUsPerNode int     `json:"gpus_per_node"`
	Nodes       int     `json:"nodes"`
	Bytes       float64 `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	AlgbwGBps   float64 `json:"algbw_gbps"`
	BusbwGBps   float64 `json:"busbw_gbps"`
	BusFactor   float64 `json:"bus_factor"`
}

func runCosts(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "collective" {
		return badInput("costs takes the subcommand collective, e.g. dcpsim costs collective --gpu H800 --gpus 32 --op all-reduce --bytes 1073741824")
	}
	fs := newFlagSet("costs collective", costsUsage, stderr)
	gpu := fs.String("gpu", "", "calibration profile of the GPU kind (e.g. H800)")
	gpus := fs.Int("gpus", 0, "GPUs taking part")
	perNode := fs.Int("gpus-per-node", 0, "GPUs per NVLink node (0: the profile's)")
	op := fs.String("op", "", "all-reduce, reduce-scatter, all-gather, all-to-all or send-recv")
	size := fs.Float64("bytes", 0, "per-rank buffer in bytes, as nccl-tests' size column")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("costs collective takes only flags, got %q", pos)
	}
	if *gpu == "" {
		return badInput("--gpu: required, a calibration profile name (known: %v)", calib.ProfileNames())
	}
	prof, err := calib.LookupProfile(*gpu)
	if err != nil {
		return badInput("--gpu %q: %v", *gpu, err)
	}
	c, err := network.ParseCollective(*op)
	if err != nil {
		return badInput("--op: %v", err)
	}
	if *gpus < 2 || *gpus > job.MaxGPUs {
		return badInput("--gpus %d: must be in [2, %d]", *gpus, job.MaxGPUs)
	}
	m := *perNode
	if m == 0 {
		m = int(prof.GPUsPerNode.Value)
	}
	if m < 1 || m > job.MaxGPUsPerNode {
		return badInput("--gpus-per-node %d: must be in [1, %d]", m, job.MaxGPUsPerNode)
	}
	if *gpus > m && *gpus%m != 0 {
		return badInput("--gpus %d: must be a multiple of --gpus-per-node (%d) when it spans nodes", *gpus, m)
	}
	if !(*size >= 1 && *size <= 1<<40) || math.IsNaN(*size) {
		return badInput("--bytes %v: must be in [1, %d]", *size, int64(1)<<40)
	}
	topo, err := network.NewTopology(*prof, job.Cluster{GPU: prof.Name, GPUs: *gpus, GPUsPerNode: m}, 1, 1)
	if err != nil {
		return badInput("%v", err)
	}
	sec := network.NCCLTestsSeconds(topo, c, *gpus, *size)
	out := collectiveCost{Op: string(c), GPU: prof.Name, GPUs: *gpus, GPUsPerNode: m, Nodes: max(1, *gpus/m), Bytes: *size,
		Seconds: sec, BusFactor: c.BusFactor(*gpus)}
	out.AlgbwGBps = *size / sec / 1e9
	out.BusbwGBps = out.AlgbwGBps * out.BusFactor
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(out)
	}
	_, err = fmt.Fprintf(stdout, "%s of %s per rank on %d × %s (%d per node, %d node(s)), priced alone: %.6g s, algbw %.2f GB/s, busbw %.2f GB/s (× %.4g)\n",
		out.Op, formatBytes(*size), out.GPUs, out.GPU, m, out.Nodes, sec, out.AlgbwGBps, out.BusbwGBps, out.BusFactor)
	return err
}

// formatBytes writes a byte count in binary units (nccl-tests' sizes).
func formatBytes(b float64) string {
	for _, u := range []struct {
		name string
		n    float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.n && math.Mod(b, u.n) == 0 {
			return fmt.Sprintf("%.0f %s", b/u.n, u.name)
		}
	}
	return fmt.Sprintf("%.0f B", b)
}
