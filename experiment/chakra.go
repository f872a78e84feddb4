package experiment

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/dcpsim/dcpsim/costmodel"
	"github.com/dcpsim/dcpsim/internal/report/chakra"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sim"
	"github.com/dcpsim/dcpsim/sim/pipeline"
	"github.com/dcpsim/dcpsim/sim/step"
	"github.com/dcpsim/dcpsim/workload"
)

// Chakra execution traces of one simulated iteration, one per GPU (NPU in
// ASTRA-sim's words), for ASTRA-sim or any reader of Chakra's schema.
//
// NPUs. A GPU is (pipeline stage s, HDP rank r, TP index t) and its NPU id is
// Megatron's rank order, TP fastest, then the data/context-parallel (HDP)
// rank, then the stage: npu = (s·G + r)·tp + t, G the HDP ranks of a stage.
// It is also the order the network model lays GPUs on nodes.
//
// What a GPU's file holds, in its op order (Megatron's schedule for its
// microbatches, as the engine ran it):
//
//   - the planner's stall, when on the critical path: a GPU compute node
//     without work (the nominal kernel of chakra.IdleNumOps) every later
//     node waits for;
//   - for each forward and backward op of each of its microbatches: a
//     COMM_RECV from the same (HDP rank, TP index) GPU of the stage the op
//     waits for (pipeline.Schedule.Dep: the previous stage forward, the next
//     one backward, or the wrap between the last and the first stage of
//     interleaving); then per layer (costmodel.Breakdown.LayerParts) the
//     recomputed forward of a recomputed layer's backward and its
//     collectives, the layer's COMP node, its CP collectives (COMM_COLL:
//     Ulysses' all-to-all; a ring as its all-gather, and the dK/dV
//     reduce-scatter backward; Ulysses × ring as both, on the inner block
//     and the strided outer ring), its TP collectives and, on an MoE layer,
//     the dispatch and combine all-to-alls of its EP block; the last stage's
//     last chunk adds the head; then a COMM_SEND to the stage that consumes
//     the op's output;
//   - at the end the gradient reduce-scatters and parameter all-gathers of
//     the distributed optimizer (or the all-reduces under grad_sync =
//     "all-reduce") on the DP and expert-DP groups, and the optimizer step.
//
// A GPU idle in a microbatch (its EP block joins the microbatch but no CP
// group holds it, or the whole block is idle) still runs the pipeline step:
// its op has the same nodes with no compute of its own (zero FLOPs), its EP
// block's all-to-alls, and empty transfers (1 byte, chakra.TransferSize)
// when it holds no tokens, so the pipeline order is kept. The engine runs
// a sync domain in lock-step at its slowest CP group's pace: the time a GPU
// is held (its own group being faster) is added to the duration of the
// layer's last node (the combine all-to-all on an MoE layer, where the GPU
// waits in the barrier), and recorded in its "held_micros" attribute.
//
// Dependencies: each node of an op has a data dependency on the node before
// it; an op's first node on its RECV (or, within a stage, on the op that
// produced its input); a SEND on the op's last node. Control dependencies
// keep the GPU's op order: an op's RECV and first node wait for the
// previous op's last node. Node ids count from 0 in file order.
//
// Times: start_time_micros is the simulated start (the op's start plus the
// node's offset in it), duration_micros the node's part, both rounded to
// microseconds so that an op's nodes tile it exactly. ASTRA-sim replays
// compute nodes for their duration and simulates communication itself from
// comm_size (the nodes' durations are dcpsim's exposed seconds: what hides
// behind compute in dcpsim, such as ring steps behind attention, runs after
// the compute in the chain).
//
// Communicators. DCP forms new CP groups every microbatch, so groups are
// named by their membership and shared by every microbatch that forms the
// same one: "cp:s0:t0:r64-127" (stage, TP index, HDP ranks), with "/u" for
// a strided outer ring ("cp:s0:t0:r65-121/8": ranks 65, 73, ..., 121),
// "ep:s0:t0:b8" (EP block 8: ranks [8·ep, 9·ep)), "tp:s0:r5" (the tp GPUs of
// HDP rank 5), "dp:s0:t0" (the stage's pool) and "edp:s0:t0:e3" (the
// expert-DP group of shard 3). ASTRA-sim reads pg_name as an integer (0 is
// its all-NPU group), so pg_name is the group's id, 1, 2, ... in the order
// of the names, over every group the set's files use (write every NPU of a
// simulation in one set), and pg_desc carries the name.

// MaxChakraNPUs bounds the GPUs of one trace set.
const MaxChakraNPUs = 4096

// ChakraNPU is the NPU id of TP index tpRank of HDP rank rank on stage, for
// pools of poolRanks ranks and tensor parallelism tp (Megatron's order).
func ChakraNPU(stage, rank, tpRank, poolRanks, tp int) int {
	return (stage*poolRanks+rank)*tp + tpRank
}

// ChakraGPU is one GPU of a trace set.
type ChakraGPU struct {
	NPU, Stage, Rank, TPRank int
}

// ChakraGroup is one communicator of a trace set.
type ChakraGroup struct {
	// ID is its pg_name, a key of comm_groups.json.
	ID int
	// Name describes it by its membership (pg_desc).
	Name string
	// NPUs are its members, ascending.
	NPUs []int
}

// ChakraOption changes what ChakraTrace does.
type ChakraOption func(*chakraOptions)

type chakraOptions struct {
	ctx       context.Context
	batches   func(k int) workload.Batch
	allowExec bool
}

// ChakraAllowExec allows starting the program of an external policy the
// scenario names (Options.AllowExec); without it such a policy is refused.
func ChakraAllowExec(allow bool) ChakraOption {
	return func(o *chakraOptions) { o.allowExec = allow }
}

// ChakraContext stops ChakraTrace between iterations once ctx is done.
func ChakraContext(ctx context.Context) ChakraOption {
	return func(o *chakraOptions) { o.ctx = ctx }
}

// ChakraBatches gives iteration k's batch instead of the scenario's sampler
// (as Options.Batches).
func ChakraBatches(batch func(k int) workload.Batch) ChakraOption {
	return func(o *chakraOptions) { o.batches = batch }
}

// ChakraTraces is one iteration of one policy, ready to be written as
// Chakra traces: one per GPU of GPUs, built when asked (Nodes, WriteTrace).
type ChakraTraces struct {
	Scenario, Policy string
	Iteration        int
	// NPUs is every GPU of the job: pp·G·tp.
	NPUs int
	// GPUs are the GPUs traced, by NPU id.
	GPUs []ChakraGPU
	// Groups are every communicator the traces use, by ID (1, 2, ...).
	Groups []ChakraGroup
	// Result is the engine's timeline of the iteration.
	Result *step.Result
	b      *chakraBuilder
	fp8    bool
}

// ChakraTrace runs sc's batches up to iteration (0-based, warm-up included)
// with policy, as dcpsim run does (the same setup, plans, pricing and
// engine), and prepares that iteration's Chakra traces for the GPUs npus
// (NPU ids, see ChakraNPU; sorted and deduplicated). It fails with bad input
// for an unknown policy, an iteration outside the scenario's, no NPU, more
// than MaxChakraNPUs or one outside [0, gpus); with a failure when the
// policy cannot plan a batch or its plan does not fit in memory.
func ChakraTrace(sc *scenarios.Scenario, policy string, iteration int, npus []int, opts ...ChakraOption) (*ChakraTraces, error) {
	o := chakraOptions{ctx: context.Background()}
	for _, f := range opts {
		f(&o)
	}
	j := sc.Job
	g, tp, pp := j.PoolRanks(), max(j.Parallel.TP, 1), max(j.Parallel.PP, 1)
	total := pp * g * tp
	switch n := sc.Run.Iterations; {
	case iteration < 0 || iteration >= n:
		return nil, badInput("iteration %d outside the scenario's [0, %d) (run.iterations = %d)", iteration, n, n)
	case len(npus) == 0:
		return nil, badInput("no NPU to trace: name NPU ids in [0, %d)", total)
	}
	npus = slices.Compact(slices.Sorted(slices.Values(npus)))
	if len(npus) > MaxChakraNPUs {
		return nil, badInput("%d NPUs: at most %d per trace set", len(npus), MaxChakraNPUs)
	}
	for _, n := range npus {
		if n < 0 || n >= total {
			return nil, badInput("NPU %d outside [0, %d): scenario %s has %d GPUs (pp %d × %d HDP ranks × tp %d)",
				n, total, sc.Name, total, pp, g, tp)
		}
	}
	d, err := descriptorFor(sc, policy)
	if err != nil {
		return nil, err
	}
	if err := CheckExec(sc, o.allowExec, policy); err != nil {
		return nil, err
	}
	setup, err := NewSetup(sc)
	if err != nil {
		return nil, err
	}
	batch := o.batches
	if batch == nil {
		sampler, err := sc.NewSampler()
		if err != nil {
			return nil, err
		}
		batch = sampler.Batch
	}
	r := newPolicyRun(o.ctx, sc, d, setup, Options{Policy: policy, AllowExec: o.allowExec})
	defer func() {
		if r.ext != nil {
			_ = r.ext.Close()
		}
	}()
	if r.err != nil {
		return nil, r.err
	}
	var m *measured
	var lengths []int
	for k := 0; k <= iteration; k++ {
		if err := o.ctx.Err(); err != nil {
			return nil, err
		}
		b := batch(k)
		if m, err = r.step(k, b); err != nil {
			return nil, fmt.Errorf("policy %s, iteration %d: %w", policy, k, err)
		}
		r.lastStep = m.row.StepSeconds
		lengths = m.plan.Trained(b.Lengths)
	}
	layout, err := step.NewLayout(m.plan, setup.Inputs.EP)
	if err != nil {
		return nil, err
	}
	bd, err := setup.Model.Breakdown(layout, lengths, r.exec, m.result.PlannerStall.Seconds())
	if err != nil {
		return nil, err
	}
	out := &ChakraTraces{Scenario: sc.Name, Policy: policy, Iteration: iteration, NPUs: total, Result: m.result, fp8: j.Parallel.FP8()}
	for _, n := range npus {
		out.GPUs = append(out.GPUs, ChakraGPU{NPU: n, Stage: n / tp / g, Rank: n / tp % g, TPRank: n % tp})
	}
	out.b = &chakraBuilder{res: m.result, bd: bd, model: setup.Model, g: g, tp: tp, pp: pp, v: max(j.Parallel.VPP, 1),
		ep: setup.Inputs.EP, scheds: map[int]*pipeline.Schedule{}, names: map[groupKey]string{}, members: map[string][]int{}}
	// Name every group the files use, then number them.
	for _, gpu := range out.GPUs {
		if _, err := out.b.nodes(gpu); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(out.b.members))
	for name := range out.b.members {
		names = append(names, name)
	}
	slices.Sort(names)
	out.b.ids = make(map[string]int, len(names))
	for i, name := range names {
		out.b.ids[name] = i + 1
		out.Groups = append(out.Groups, ChakraGroup{ID: i + 1, Name: name, NPUs: out.b.members[name]})
	}
	out.b.meta = out.metadataAttrs(sc)
	return out, nil
}

// gpu returns the traced GPU of NPU id npu.
func (c *ChakraTraces) gpu(npu int) (ChakraGPU, error) {
	i, ok := slices.BinarySearchFunc(c.GPUs, npu, func(g ChakraGPU, n int) int { return cmp.Compare(g.NPU, n) })
	if !ok {
		return ChakraGPU{}, fmt.Errorf("NPU %d is not in the trace set", npu)
	}
	return c.GPUs[i], nil
}

// Nodes builds the nodes of NPU npu's trace (one of GPUs).
func (c *ChakraTraces) Nodes(npu int) ([]chakra.Node, error) {
	g, err := c.gpu(npu)
	if err != nil {
		return nil, err
	}
	return c.b.nodes(g)
}

// Metadata is the GlobalMetadata of NPU npu's trace: the scenario, policy,
// iteration, the GPU and the NPU mapping rule, and the dcpsim version.
func (c *ChakraTraces) Metadata(npu int) chakra.Metadata {
	g, _ := c.gpu(npu)
	attrs := append(slices.Clone(c.b.meta),
		chakra.Int64Attr("npu", int64(g.NPU)), chakra.Int64Attr("stage", int64(g.Stage)),
		chakra.Int64Attr("hdp_rank", int64(g.Rank)), chakra.Int64Attr("tp_rank", int64(g.TPRank)))
	return chakra.Metadata{Version: chakra.SchemaVersion, Attrs: attrs}
}

func (c *ChakraTraces) metadataAttrs(sc *scenarios.Scenario) []chakra.Attr {
	b := ReadBuild()
	version := "dcpsim " + b.Version
	if tag := b.RevisionTag(); tag != "" {
		version += " " + tag
	}
	bb := c.b
	return []chakra.Attr{
		chakra.StringAttr("generator", "dcpsim trace"),
		chakra.StringAttr("dcpsim_version", version),
		chakra.StringAttr("scenario", sc.Name),
		chakra.StringAttr("policy", c.Policy),
		chakra.Int64Attr("iteration", int64(c.Iteration)),
		chakra.Int64Attr("npus", int64(c.NPUs)),
		chakra.Int64Attr("pp", int64(bb.pp)), chakra.Int64Attr("vpp", int64(bb.v)),
		chakra.Int64Attr("hdp_ranks", int64(bb.g)), chakra.Int64Attr("tp", int64(bb.tp)), chakra.Int64Attr("ep", int64(bb.ep)),
		chakra.StringAttr("npu_mapping", fmt.Sprintf("npu = (stage*%d + hdp_rank)*%d + tp_rank: Megatron's order, tp fastest, then the data/context-parallel (HDP) rank, then the pipeline stage", bb.g, bb.tp)),
		chakra.StringAttr("comm_groups", "pg_name is the group's id in comm_groups.json; pg_desc names it by membership (comm_groups.names.json)"),
		chakra.Int64Attr("iteration_micros", int64(micros(c.Result.Iteration))),
	}
}

// WriteTrace writes NPU npu's trace to w.
func (c *ChakraTraces) WriteTrace(w io.Writer, npu int) (nodes int, err error) {
	ns, err := c.Nodes(npu)
	if err != nil {
		return 0, err
	}
	return len(ns), chakra.WriteTrace(w, c.Metadata(npu), ns)
}

// WriteCommGroups writes comm_groups.json, ASTRA-sim's
// --comm-group-configuration: each group's id (a string key, ascending) and
// its NPUs.
func (c *ChakraTraces) WriteCommGroups(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("{")
	for i, g := range c.Groups {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n  %q: [", strconv.Itoa(g.ID))
		for k, n := range g.NPUs {
			if k > 0 {
				bw.WriteString(", ")
			}
			bw.WriteString(strconv.Itoa(n))
		}
		bw.WriteString("]")
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// WriteGroupNames writes comm_groups.names.json: each group's id and name.
func (c *ChakraTraces) WriteGroupNames(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("{")
	for i, g := range c.Groups {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n  %q: %q", strconv.Itoa(g.ID), g.Name)
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// ChakraFileName is the trace file of NPU npu for prefix: ASTRA-sim's
// --workload-configuration PREFIX reads PREFIX.<npu>.et.
func ChakraFileName(prefix string, npu int) string { return prefix + "." + strconv.Itoa(npu) + ".et" }

// The other files of a trace set.
const (
	ChakraCommGroupsFile = "comm_groups.json"
	ChakraGroupNamesFile = "comm_groups.names.json"
)

var chakraPrefix = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckChakraPrefix refuses a file-name prefix that is empty, names a
// folder or holds characters other than [A-Za-z0-9._-].
func CheckChakraPrefix(prefix string) error {
	if len(prefix) > 200 || !chakraPrefix.MatchString(prefix) {
		return badInput("prefix %q: want a file name of [A-Za-z0-9._-] (at most 200 characters, not starting with . - or _)", prefix)
	}
	return nil
}

// WriteFiles writes every trace of the set into dir (created if absent) as
// ChakraFileName(prefix, npu), then comm_groups.json and
// comm_groups.names.json, each through a temporary file renamed into place
// (safeio.WriteFileAtomic); wrote is called after each file with its path
// and its nodes (0 for the JSON files). It stops between files once ctx is
// done. dir must be a folder (or absent): a file or a link (which would
// send the traces into its target) is refused as bad input.
func (c *ChakraTraces) WriteFiles(ctx context.Context, dir, prefix string, wrote func(path string, nodes int)) error {
	if err := CheckChakraPrefix(prefix); err != nil {
		return err
	}
	if err := ensureFolder(dir); err != nil {
		return err
	}
	for _, g := range c.GPUs {
		if err := ctx.Err(); err != nil {
			return err
		}
		path := filepath.Join(dir, ChakraFileName(prefix, g.NPU))
		var n int
		err := safeio.WriteFileAtomic(path, func(w io.Writer) error {
			var err error
			n, err = c.WriteTrace(w, g.NPU)
			return err
		})
		if err != nil {
			return err
		}
		if wrote != nil {
			wrote(path, n)
		}
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{ChakraCommGroupsFile, c.WriteCommGroups}, {ChakraGroupNamesFile, c.WriteGroupNames}} {
		path := filepath.Join(dir, f.name)
		if err := safeio.WriteFileAtomic(path, f.write); err != nil {
			return err
		}
		if wrote != nil {
			wrote(path, 0)
		}
	}
	return nil
}

// AstraConfig describes the job's cluster to ASTRA-sim's analytical
// backend (report/chakra's AstraConfig; docs/chakra.md gives the choices
// and what they measure):
//
//   - a network of two Switch dimensions, the NVLink node and the scale-out
//     fabric: NVLink at nvlink_bytes_per_second × collective_intra.max and
//     the NIC at nic_bytes_per_second × send_recv_inter.max, the rates the
//     cost model achieves (the NIC's point-to-point one: ASTRA-sim moves
//     every collective as point-to-point messages); a link's latency half
//     of intra_hop_latency_seconds and of inter_p2p_latency_seconds, so
//     that a message through a switch takes the latency the cost model
//     charges a ring step (NCCL's per-hop latency inside a node, a
//     send/recv across nodes). A job of one node is written as two
//     dimensions of the same NVLink links (ASTRA-sim needs two, see
//     report/chakra), of nodes of one GPU as two of NIC links;
//   - the roofline: the BF16 peak (FP8 under FP8 training) and the HBM
//     bandwidth at the memory-bound efficiency.
//
// It fails for a mixed cluster (ASTRA-sim's network has one bandwidth per
// dimension) and for a GPU count that does not fill whole nodes or cannot
// be split in two dimensions.
func (c *ChakraTraces) AstraConfig() (*chakra.AstraConfig, error) {
	m := c.b.model
	t := m.Topology()
	if t.Mixed() {
		return nil, badInput("scenario %s mixes %d GPU kinds: ASTRA-sim's analytical network has one bandwidth per dimension", c.Scenario, t.Kinds())
	}
	prof := m.Devices()[0].Profile
	gpn, total := t.GPUsPerNode, c.NPUs
	if total%gpn != 0 {
		return nil, badInput("scenario %s: %d GPUs do not fill nodes of %d: ASTRA-sim's network is a grid of whole dimensions", c.Scenario, total, gpn)
	}
	nvl := chakra.AstraDim{BytesPerSecond: t.NVLinkBytesPerSecond * t.CollectiveIntra, LinkSeconds: t.IntraHopSeconds / 2,
		Why: fmt.Sprintf("NVLink, %s nvlink_bytes_per_second %g x collective_intra.max %g; latency intra_hop_latency_seconds %g / 2",
			prof.Name, t.NVLinkBytesPerSecond, t.CollectiveIntra, t.IntraHopSeconds)}
	nic := chakra.AstraDim{BytesPerSecond: t.NICBytesPerSecond * t.SendRecvInter, LinkSeconds: t.InterP2PSeconds / 2,
		Why: fmt.Sprintf("the NIC, %s nic_bytes_per_second %g x send_recv_inter.max %g; latency inter_p2p_latency_seconds %g / 2",
			prof.Name, t.NICBytesPerSecond, t.SendRecvInter, t.InterP2PSeconds)}
	var dims []chakra.AstraDim
	switch nodes := total / gpn; {
	case gpn > 1 && nodes > 1:
		nvl.NPUs, nic.NPUs = gpn, nodes
		dims = []chakra.AstraDim{nvl, nic}
	case gpn > 1:
		dims = splitDim(nvl, gpn, "the node's")
	default:
		dims = splitDim(nic, nodes, "the nodes'")
	}
	if dims == nil {
		return nil, badInput("scenario %s: %d GPUs, %d per node: ASTRA-sim needs two network dimensions of 2 or more NPUs each", c.Scenario, total, gpn)
	}
	// The tensor peak pricing uses: the datasheet's times the profile's
	// sustained_efficiency (calib.Profile.TensorPeak).
	peak, peakName := prof.TensorPeak(c.fp8), "peak_bf16_flops"
	if c.fp8 {
		peakName = "peak_fp8_flops"
	}
	if !prof.SustainedEfficiency.IsAbsent() {
		peakName += fmt.Sprintf(" x sustained_efficiency %g", prof.SustainedEfficiency.Value)
	}
	cfg := &chakra.AstraConfig{
		Title: fmt.Sprintf("scenario %s, %d x %s, %d per node; written by dcpsim trace --astra-config", c.Scenario, total, prof.Name, gpn),
		Dims:  dims, PeakFLOPS: peak, HBMBytesPerSecond: prof.HBMBytesPerSecond.Value * prof.MemoryBoundEfficiency.Value,
		RooflineWhy: fmt.Sprintf("%s %s = %g; hbm_bytes_per_second %g x memory_bound_efficiency %g",
			prof.Name, peakName, peak, prof.HBMBytesPerSecond.Value, prof.MemoryBoundEfficiency.Value),
	}
	if err := cfg.Check(); err != nil {
		return nil, badInput("scenario %s: %v", c.Scenario, err)
	}
	return cfg, nil
}

// splitDim writes one level of n NPUs joined by d's links as two
// dimensions of the same links (its smallest factor, then the rest): the
// same network for the congestion-unaware backend, whose messages cross
// one switch of either. nil when n has no such split.
func splitDim(d chakra.AstraDim, n int, what string) []chakra.AstraDim {
	for a := 2; a*a <= n; a++ {
		if n%a == 0 {
			d.Why = fmt.Sprintf("%s %d NPUs as %d x %d, the same links: %s", what, n, a, n/a, d.Why)
			x, y := d, d
			x.NPUs, y.NPUs = a, n/a
			return []chakra.AstraDim{x, y}
		}
	}
	return nil
}

// WriteAstraConfig writes AstraConfig's files into dir (created if absent):
// chakra.AstraNetworkFile, AstraSystemFile (compute replayed),
// AstraSystemRooflineFile (compute from num_ops and tensor_size) and
// AstraRemoteMemoryFile, each through a temporary file renamed into place;
// wrote is called with each path.
func (c *ChakraTraces) WriteAstraConfig(dir string, wrote func(path string)) error {
	cfg, err := c.AstraConfig()
	if err != nil {
		return err
	}
	if err := ensureFolder(dir); err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{chakra.AstraNetworkFile, cfg.WriteNetwork},
		{chakra.AstraSystemFile, func(w io.Writer) error { return cfg.WriteSystem(w, false) }},
		{chakra.AstraSystemRooflineFile, func(w io.Writer) error { return cfg.WriteSystem(w, true) }},
		{chakra.AstraRemoteMemoryFile, chakra.WriteAstraRemoteMemory},
	} {
		path := filepath.Join(dir, f.name)
		if err := safeio.WriteFileAtomic(path, f.write); err != nil {
			return err
		}
		if wrote != nil {
			wrote(path)
		}
	}
	return nil
}

// ensureFolder creates dir when absent; a file or a link there is bad
// input (nothing is written through a link).
func ensureFolder(dir string) error {
	if st, err := os.Lstat(dir); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return badInput("%s is a link: name the folder itself (the traces are never written through a link)", dir)
	} else if err == nil && !st.IsDir() {
		return badInput("%s is not a folder", dir)
	} else if err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return badInput("%v", err)
		}
	}
	return nil
}

// micros rounds a time to microseconds.
func micros(t sim.Nanos) uint64 {
	if t <= 0 {
		return 0
	}
	return uint64((t + 500) / 1000)
}

// groupKey identifies a communicator: its kind, HDP ranks, stage and TP
// index (the HDP rank for a TP group).
type groupKey struct {
	kind                        costmodel.GroupKind
	first, count, stride, stage int
	tp                          int
}

// chakraBuilder builds the traces' nodes from the iteration's result and
// breakdown.
type chakraBuilder struct {
	res              *step.Result
	bd               *costmodel.Breakdown
	model            *costmodel.Model
	g, tp, pp, v, ep int
	scheds           map[int]*pipeline.Schedule
	names            map[groupKey]string
	// members holds every group's NPUs by name (filled while naming);
	// ids numbers them once every file was named (nil until then).
	members map[string][]int
	ids     map[string]int
	meta    []chakra.Attr
}

// group returns collective c's name for the GPU of stage s, HDP rank r, TP
// index t, recording its members the first time.
func (b *chakraBuilder) group(c *costmodel.Collective, s, r, t int) string {
	k := groupKey{kind: c.Group, first: c.Ranks.First, count: c.Ranks.Count, stride: c.Ranks.Stride, stage: s, tp: t}
	if c.Group == costmodel.GroupTP {
		k = groupKey{kind: c.Group, first: r, count: 1, stride: 1, stage: s}
	}
	if name, ok := b.names[k]; ok {
		return name
	}
	var name string
	var npus []int
	hdp := func() {
		for i := range c.Ranks.Count {
			npus = append(npus, ChakraNPU(s, c.Ranks.First+i*c.Ranks.Stride, t, b.g, b.tp))
		}
	}
	switch c.Group {
	case costmodel.GroupTP:
		name = fmt.Sprintf("tp:s%d:r%d", s, r)
		for i := range b.tp {
			npus = append(npus, ChakraNPU(s, r, i, b.g, b.tp))
		}
	case costmodel.GroupEP:
		name = fmt.Sprintf("ep:s%d:t%d:b%d", s, t, c.Ranks.First/max(c.Ranks.Count, 1))
		hdp()
	case costmodel.GroupDP:
		name = fmt.Sprintf("dp:s%d:t%d", s, t)
		hdp()
	case costmodel.GroupExpertDP:
		name = fmt.Sprintf("edp:s%d:t%d:e%d", s, t, c.Ranks.First)
		hdp()
	default:
		name = fmt.Sprintf("cp:s%d:t%d:r%d-%d", s, t, c.Ranks.First, c.Ranks.Last())
		if c.Ranks.Stride > 1 {
			name += "/" + strconv.Itoa(c.Ranks.Stride)
		}
		hdp()
	}
	b.names[k] = name
	if _, ok := b.members[name]; !ok {
		b.members[name] = npus
	}
	return name
}

// schedule is Megatron's schedule for m microbatches.
func (b *chakraBuilder) schedule(m int) (*pipeline.Schedule, error) {
	if s, ok := b.scheds[m]; ok {
		return s, nil
	}
	s, err := pipeline.New(b.pp, b.v, m, 0)
	if err != nil {
		return nil, err
	}
	b.scheds[m] = s
	return s, nil
}

// pipelineNext is the op that consumes op (stage s, chunk c, pass) on
// another or the same stage: the inverse of pipeline.Schedule.Dep. ok is
// false for the first chunk's backward on stage 0, which feeds nothing.
func pipelineNext(p, v, s, c int, backward bool) (stage, chunk int, bwd, ok bool) {
	switch {
	case !backward && s < p-1:
		return s + 1, c, false, true
	case !backward && c < v-1:
		return 0, c + 1, false, true
	case !backward:
		return p - 1, v - 1, true, true
	case s > 0:
		return s - 1, c, true, true
	case c > 0:
		return p - 1, c - 1, true, true
	}
	return 0, 0, false, false
}

// p2pTag is the comm_tag of the transfer out of op (mb, chunk, pass): unique
// among one GPU's sends.
func p2pTag(mb, chunk, v int, backward bool) int32 {
	t := (mb*v + chunk) * 2
	if backward {
		t++
	}
	return int32(t)
}

// pending is a node of an op whose times are not set yet.
type pending struct {
	node    chakra.Node
	seconds float64
	held    float64
}

// nodes builds GPU g's trace (see the comment at the top of this file).
func (b *chakraBuilder) nodes(gpu ChakraGPU) ([]chakra.Node, error) {
	res := b.res
	s, r, t := gpu.Stage, gpu.Rank, gpu.TPRank
	npu := gpu.NPU
	var out []chakra.Node
	add := func(n chakra.Node) uint64 {
		n.ID = uint64(len(out))
		out = append(out, n)
		return n.ID
	}
	gpuOp := chakra.BoolAttr("is_cpu_op", false)
	var prev []uint64 // the last node of the GPU's stream
	if res.PlannerStall > 0 {
		// The planner runs on the host, but ASTRA-sim's statistics throw on a
		// CPU node: a GPU node with no work (report/chakra's package doc).
		stall := b.compute("planner-stall", costmodel.Work{})
		stall.node.DurationMicros = micros(res.PlannerStall)
		prev = []uint64{add(stall.node)}
	}
	var doms []int
	for i := range res.Domains {
		if d := &res.Domains[i]; d.FirstRank <= r && r <= d.LastRank() {
			doms = append(doms, i)
		}
	}
	type opKey struct {
		mb, chunk int
		backward  bool
	}
	last := map[opKey]uint64{} // each op's last node
	var ops []pipeline.Op
	var sch *pipeline.Schedule
	if len(doms) > 0 {
		var err error
		if sch, err = b.schedule(len(doms)); err != nil {
			return nil, err
		}
		ops = sch.Ops(s)
	}
	var queue []pending
	for _, op := range ops {
		di := doms[op.MB]
		d := &res.Domains[di]
		c, bwd := int(op.Chunk), op.Backward
		ot := res.Ops[res.OpIndex(s, di, c, bwd)]
		pass := "F"
		if bwd {
			pass = "B"
		}
		label := "mb" + strconv.Itoa(d.MB) + ".c" + strconv.Itoa(c) + "." + pass
		p2pBytes := chakra.TransferSize(b.bd.P2PBytes(d, r))
		var data []uint64
		if ds, dop, ok := sch.Dep(s, op); ok && ds != s {
			from := res.Ops[res.OpIndex(ds, di, int(dop.Chunk), dop.Backward)].End
			arrive := from + sim.FromSeconds(b.bd.P2PSeconds(ds, s, int(dop.Chunk), d, dop.Backward))
			id := add(chakra.Node{Name: label + ".recv", Type: chakra.CommRecvNode, CtrlDeps: prev,
				StartMicros: micros(from), DurationMicros: micros(arrive) - micros(from),
				Attrs: []chakra.Attr{gpuOp, chakra.Int32Attr("comm_src", int32(ChakraNPU(ds, r, t, b.g, b.tp))),
					chakra.Int32Attr("comm_dst", int32(npu)), chakra.Int64Attr("comm_size", p2pBytes),
					chakra.Int32Attr("comm_tag", p2pTag(d.MB, int(dop.Chunk), b.v, dop.Backward))}})
			data = []uint64{id}
		} else if ok {
			from, found := last[opKey{int(op.MB), int(dop.Chunk), dop.Backward}]
			if !found {
				return nil, fmt.Errorf("NPU %d: %v waits for %v of the same stage, which has not run", npu, op, dop)
			}
			data = []uint64{from}
		}
		parts, err := b.bd.LayerParts(s, c, d, r, bwd)
		if err != nil {
			return nil, err
		}
		queue = queue[:0]
		for i := range parts {
			queue = b.appendLayer(queue, &parts[i], label, s, r, t)
		}
		// Times: the parts tile the op, rounded to microseconds at their
		// boundaries.
		at, cum := ot.Start, 0.0
		for i := range queue {
			p := &queue[i]
			end := min(ot.Start+sim.FromSeconds(cum+p.seconds), ot.End)
			if i == len(queue)-1 {
				end = ot.End
			}
			cum += p.seconds
			p.node.StartMicros, p.node.DurationMicros = micros(at), micros(end)-micros(at)
			if p.held > 0 {
				p.node.Attrs = append(p.node.Attrs, chakra.Int64Attr("held_micros", int64(micros(sim.FromSeconds(p.held)))))
			}
			at = end
			if i == 0 {
				p.node.DataDeps, p.node.CtrlDeps = data, prev
			} else {
				p.node.DataDeps = []uint64{uint64(len(out)) - 1}
			}
			add(p.node)
		}
		end := uint64(len(out)) - 1
		last[opKey{int(op.MB), c, bwd}] = end
		prev = []uint64{end}
		if ns, _, _, ok := pipelineNext(b.pp, b.v, s, c, bwd); ok && ns != s {
			arrive := ot.End + sim.FromSeconds(b.bd.P2PSeconds(s, ns, c, d, bwd))
			add(chakra.Node{Name: label + ".send", Type: chakra.CommSendNode, DataDeps: []uint64{end},
				StartMicros: micros(ot.End), DurationMicros: micros(arrive) - micros(ot.End),
				Attrs: []chakra.Attr{gpuOp, chakra.Int32Attr("comm_src", int32(npu)),
					chakra.Int32Attr("comm_dst", int32(ChakraNPU(ns, r, t, b.g, b.tp))), chakra.Int64Attr("comm_size", p2pBytes),
					chakra.Int32Attr("comm_tag", p2pTag(d.MB, c, b.v, bwd))}})
		}
	}
	// The end of the iteration: gradient sync, then the optimizer step.
	st := &res.Stages[s]
	sync, err := b.model.GradSyncParts(s, r)
	if err != nil {
		return nil, err
	}
	queue = queue[:0]
	for i := range sync {
		queue = append(queue, b.collective(&sync[i], sync[i].Name, s, r, t))
	}
	at, cum := st.GradSyncStart, 0.0
	for i := range queue {
		p := &queue[i]
		end := min(st.GradSyncStart+sim.FromSeconds(cum+p.seconds), st.GradSyncEnd)
		if i == len(queue)-1 {
			end = st.GradSyncEnd
		}
		cum += p.seconds
		p.node.StartMicros, p.node.DurationMicros = micros(at), micros(end)-micros(at)
		p.node.DataDeps = prev
		prev = []uint64{add(p.node)}
		at = end
	}
	w, err := b.model.OptimizerWork(s)
	if err != nil {
		return nil, err
	}
	opt := b.compute("optimizer", w)
	opt.node.DataDeps = prev
	opt.node.StartMicros, opt.node.DurationMicros = micros(st.GradSyncEnd), micros(st.OptimizerEnd)-micros(st.GradSyncEnd)
	add(opt.node)
	return out, nil
}

// appendLayer appends the nodes of one layer part, the held time on its
// last.
func (b *chakraBuilder) appendLayer(q []pending, p *costmodel.LayerPart, label string, s, r, t int) []pending {
	name := label + ".head"
	if p.Layer >= 0 {
		name = label + ".layer" + strconv.Itoa(p.Layer)
	}
	first := len(q)
	if p.Recomputed {
		q = append(q, b.compute(name+".recompute", p.Recompute))
		for i := range p.RecomputeComm {
			q = append(q, b.collective(&p.RecomputeComm[i], name+".recompute."+p.RecomputeComm[i].Name, s, r, t))
		}
	}
	q = append(q, b.compute(name+".comp", p.Compute))
	for _, list := range [2][]costmodel.Collective{p.Comm, p.MoEComm} {
		for i := range list {
			q = append(q, b.collective(&list[i], name+"."+list[i].Name, s, r, t))
		}
	}
	if len(q) > first && p.HeldSeconds > 0 {
		q[len(q)-1].seconds += p.HeldSeconds
		q[len(q)-1].held = p.HeldSeconds
	}
	return q
}

// compute is a GPU COMP node of w: its FLOPs and bytes as num_ops and
// tensor_size, at least chakra.IdleNumOps and IdleTensorSize (the nominal
// kernel of a node without work, which ASTRA-sim's roofline needs).
func (b *chakraBuilder) compute(name string, w costmodel.Work) pending {
	ops := max(int64(math.Round(w.FLOPs)), chakra.IdleNumOps)
	bytes := max(uint64(math.Round(w.Bytes)), chakra.IdleTensorSize)
	return pending{seconds: w.Seconds, node: chakra.Node{Name: name, Type: chakra.CompNode, Attrs: []chakra.Attr{
		chakra.BoolAttr("is_cpu_op", false),
		chakra.Int64Attr("num_ops", ops),
		chakra.Uint64Attr("tensor_size", bytes),
	}}}
}

// collectiveTypes maps the cost model's collectives to Chakra's.
var collectiveTypes = map[costmodel.CollectiveKind]chakra.CollectiveCommType{
	costmodel.AllToAll: chakra.AllToAll, costmodel.AllGather: chakra.AllGather,
	costmodel.ReduceScatter: chakra.ReduceScatter, costmodel.AllReduce: chakra.AllReduce,
}

// collective is a COMM_COLL node of c on its group, its comm_size the
// bytes ASTRA-sim starts from (chakra.CommSize of c's NCCL count).
func (b *chakraBuilder) collective(c *costmodel.Collective, name string, s, r, t int) pending {
	g := b.group(c, s, r, t)
	kind := collectiveTypes[c.Kind]
	return pending{seconds: c.Seconds, node: chakra.Node{Name: name, Type: chakra.CommCollNode, Attrs: []chakra.Attr{
		chakra.BoolAttr("is_cpu_op", false),
		chakra.Int64Attr("comm_type", int64(kind)),
		chakra.Int64Attr("comm_size", chakra.CommSize(kind, c.Bytes, len(b.members[g]))),
		chakra.StringAttr("pg_name", strconv.Itoa(b.ids[g])),
		chakra.StringAttr("pg_desc", g),
	}}}
}
