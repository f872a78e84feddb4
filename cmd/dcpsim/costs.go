package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sim/network"
)

const costsUsage = `  dcpsim costs collective --gpu KIND --gpus N [--gpus-per-node M]
                          --op all-reduce|reduce-scatter|all-gather|all-to-all|send-recv
                          --bytes B [--nics-per-node K] [--nodes-per-leaf L]
                          [--spine-oversubscription R] [--background-flows F] [--json]

  The cost model's price of one collective over N GPUs of a calibration profile
  (KIND, e.g. H800), M per NVLink node (default: the profile's gpus_per_node), as
  sim/network prices every collective of a simulated iteration: its time, and the
  algorithm and bus bandwidths with nccl-tests' definitions, for a person to set
  beside their own nccl-tests runs. B is the per-rank buffer as nccl-tests' size
  column counts it (the whole buffer each rank reduces, gathers or exchanges; what
  each rank sends for a send/recv); algbw = B / seconds, busbw = algbw × 2(N−1)/N for
  an all-reduce, (N−1)/N for a reduce-scatter, all-gather and all-to-all, 1 for a
  send/recv. --json prints one object; its keys seconds, algbw_gbps and busbw_gbps
  (GB/s = 10^9 bytes/s) are a contract. N in [2, 1048576], a multiple of M when it
  spans nodes; B in [1, 2^40].

  The fabric is the scenario keys' (cluster.nics_per_node, nodes_per_leaf,
  spine_oversubscription; defaults one NIC per GPU, 32 nodes per leaf, non-blocking).
  With no background the collective runs alone on it; --background-flows F (>= 0,
  at most 1024) adds F other flows per NIC on every node it uses, each outlasting it,
  and the collective's NIC traffic shares the links max-min fairly with them
  (sim/network Window): on one NIC per GPU, F = 1 halves the NIC-bound part's rate.
  stretch in the JSON is the factor sharing slows that part by (1: as alone).`

func costsCommand() command {
	return command{
		name:     "costs",
		summary:  "the cost model's price of a collective (time, algbw, busbw as nccl-tests defines them) or of one attention, GEMM or memory-bound op",
		usage:    costsUsage + "\n\n" + costsOpUsage,
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
	// The fabric and the background it was priced under, and the stretch
	// sharing gave the NIC-bound part.
	NICsPerNode           int     `json:"nics_per_node"`
	NodesPerLeaf          int     `json:"nodes_per_leaf"`
	SpineOversubscription float64 `json:"spine_oversubscription"`
	BackgroundFlows       float64 `json:"background_flows_per_nic"`
	Stretch               float64 `json:"stretch"`
}

func runCosts(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "attention":
			return runCostsAttention(args[1:], stdout, stderr)
		case "gemm":
			return runCostsGEMM(args[1:], stdout, stderr)
		case "memory-bound":
			return runCostsMemory(args[1:], stdout, stderr)
		}
	}
	if len(args) == 0 || args[0] != "collective" {
		return badInput("costs takes a subcommand: collective, attention, gemm or memory-bound, e.g. dcpsim costs collective --gpu H800 --gpus 32 --op all-reduce --bytes 1073741824")
	}
	fs := newFlagSet("costs collective", costsUsage, stderr)
	gpu := fs.String("gpu", "", "calibration profile of the GPU kind (e.g. H800)")
	gpus := fs.Int("gpus", 0, "GPUs taking part")
	perNode := fs.Int("gpus-per-node", 0, "GPUs per NVLink node (0: the profile's)")
	op := fs.String("op", "", "all-reduce, reduce-scatter, all-gather, all-to-all or send-recv")
	size := fs.Float64("bytes", 0, "per-rank buffer in bytes, as nccl-tests' size column")
	nics := fs.Int("nics-per-node", 0, "scale-out NICs per node (0: one per GPU)")
	perLeaf := fs.Int("nodes-per-leaf", 0, "nodes per rail leaf switch (0: 32)")
	oversub := fs.Float64("spine-oversubscription", 0, "leaf down:up bandwidth ratio (0: 1, non-blocking)")
	background := fs.Float64("background-flows", 0, "other flows per NIC sharing the collective's NICs")
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
	if !(*background >= 0 && *background <= 1024) {
		return badInput("--background-flows %v: must be in [0, 1024]", *background)
	}
	fabric := job.Fabric{NICsPerNode: *nics, NodesPerLeaf: *perLeaf, SpineOversubscription: *oversub}
	if err := fabric.Validate(m); err != nil {
		return badInput("%s", strings.NewReplacer("cluster.nics_per_node", "--nics-per-node", "cluster.nodes_per_leaf", "--nodes-per-leaf",
			"cluster.spine_oversubscription", "--spine-oversubscription", "cluster.gpus_per_node", "--gpus-per-node").Replace(err.Error()))
	}
	topo, err := network.NewTopology(*prof, job.Cluster{GPU: prof.Name, GPUs: *gpus, GPUsPerNode: m, Fabric: fabric}, 1, 1)
	if err != nil {
		return badInput("%v", err)
	}
	sec, stretch := network.NCCLTestsShared(topo, c, *gpus, *size, *background)
	out := collectiveCost{Op: string(c), GPU: prof.Name, GPUs: *gpus, GPUsPerNode: m, Nodes: max(1, *gpus/m), Bytes: *size,
		Seconds: sec, BusFactor: c.BusFactor(*gpus), NICsPerNode: topo.Fabric.NICsPerNode, NodesPerLeaf: topo.Fabric.NodesPerLeaf,
		SpineOversubscription: topo.Fabric.SpineOversubscription, BackgroundFlows: *background, Stretch: stretch}
	out.AlgbwGBps = *size / sec / 1e9
	out.BusbwGBps = out.AlgbwGBps * out.BusFactor
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(out)
	}
	how := "priced alone"
	if *background > 0 || stretch > 1 {
		how = fmt.Sprintf("sharing its links (%d NICs per node, %g background flows per NIC, spine %g:1): NIC-bound part × %.3g",
			out.NICsPerNode, *background, out.SpineOversubscription, stretch)
	}
	_, err = fmt.Fprintf(stdout, "%s of %s per rank on %d × %s (%d per node, %d node(s)), %s: %.6g s, algbw %.2f GB/s, busbw %.2f GB/s (× %.4g)\n",
		out.Op, formatBytes(*size), out.GPUs, out.GPU, m, out.Nodes, how, sec, out.AlgbwGBps, out.BusbwGBps, out.BusFactor)
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
