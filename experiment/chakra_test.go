package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/badinput"
	"github.com/dcpsim/dcpsim/internal/report/chakra"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/pipeline"
)

// chakraTiny is tiny's model (DeepSeek-V2-Lite, with 28 layers: 1 dense and
// 27 MoE, so EP appears, 7 per chunk) on 64 H20 GPUs at pp 2 × vpp 2, ep 8,
// with a PARALLEL line for tp and recomputation.
const chakraTiny = `name = "chakra-tiny"

[cluster]
gpu = "H20"
gpus = 64

[model]
preset = "deepseek-v2-lite"
layers = 28

[parallel]
pp = 2
vpp = 2
ep = 8
budget_tokens = 8192
PARALLEL

[workload]
preset = "long-256k"
context_tokens = 32768
batch_tokens = 524288

[run]
iterations = 2
warmup_iterations = 1
policies = ["hydra", "mcore"]
`

// chakraScenario is chakraTiny with its PARALLEL line.
func chakraScenario(t testing.TB, parallel string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse([]byte(strings.Replace(chakraTiny, "PARALLEL", parallel, 1)), "chakra-tiny.toml")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// attr returns node n's attribute name.
func attr(n *chakra.Node, name string) (chakra.Attr, bool) {
	for _, a := range n.Attrs {
		if a.Name == name {
			return a, true
		}
	}
	return chakra.Attr{}, false
}

// TestChakraTrace writes traces of a few NPUs (both stages, both TP
// indices, a stage's pair of peers) for tp 1 and tp 2 with sequence
// parallelism and recomputation, reads them back with the reference
// reader (chakra.ReadTrace), and checks them against the simulated
// timeline: one file per NPU; per GPU the COMP nodes are its ops' layers,
// recomputed layers and heads plus the optimizer (and the planner's stall);
// its SEND and RECV nodes are the cross-stage flows buildTimeline finds for
// its rank and stage; every dependency points to an earlier node of the
// file; an op's nodes tile its simulated duration to the microsecond; every
// collective's pg_name is in comm_groups.json and holds the NPU; a SEND and
// its RECV agree; GPUs sharing a communicator issue the same collectives on
// it in the same order (ASTRA-sim matches them so); and the files are the
// same bytes when written again.
func TestChakraTrace(t *testing.T) {
	for _, c := range []struct {
		name, parallel, policy string
		npus                   []int
	}{
		{"tp1", `recompute = "selective"`, "hydra", []int{0, 1, 9, 31, 32, 33, 63}},
		{"tp2-sp-full", "tp = 2\nsequence_parallel = true\nrecompute = \"full\"\nrecompute_layers = 2", "mcore", []int{0, 1, 2, 3, 17, 32, 33, 34, 63}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := chakraScenario(t, c.parallel)
			ct, err := ChakraTrace(sc, c.policy, 1, c.npus)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var paths []string
			if err := ct.WriteFiles(context.Background(), dir, "tr", func(p string, _ int) { paths = append(paths, p) }); err != nil {
				t.Fatal(err)
			}
			if len(paths) != len(c.npus)+2 {
				t.Fatalf("wrote %d files for %d NPUs: %v", len(paths), len(c.npus), paths)
			}
			checkChakraSet(t, sc, ct, dir)
			// Written again: the same bytes.
			again, err := ChakraTrace(sc, c.policy, 1, c.npus)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range ct.GPUs {
				var b bytes.Buffer
				if _, err := again.WriteTrace(&b, g.NPU); err != nil {
					t.Fatal(err)
				}
				if old, _ := os.ReadFile(filepath.Join(dir, ChakraFileName("tr", g.NPU))); !bytes.Equal(old, b.Bytes()) {
					t.Errorf("NPU %d: a second trace set differs", g.NPU)
				}
			}
		})
	}
}

// checkChakraSet checks the files of ct in dir (see TestChakraTrace).
func checkChakraSet(t *testing.T, sc *scenarios.Scenario, ct *ChakraTraces, dir string) {
	t.Helper()
	res := ct.Result
	j := sc.Job
	g, tp, pp, v := j.PoolRanks(), max(j.Parallel.TP, 1), max(j.Parallel.PP, 1), max(j.Parallel.VPP, 1)
	raw, err := os.ReadFile(filepath.Join(dir, ChakraCommGroupsFile))
	if err != nil {
		t.Fatal(err)
	}
	var groups map[string][]int
	if err := json.Unmarshal(raw, &groups); err != nil {
		t.Fatalf("comm_groups.json: %v", err)
	}
	setup, err := NewSetup(sc)
	if err != nil {
		t.Fatal(err)
	}
	comp := setup.Model.Devices()[0].Compute
	type p2p struct {
		from, to  int
		tag, size int64
	}
	sends, recvs := map[p2p]int{}, map[p2p]int{}
	traced := map[int]bool{}
	for _, gpu := range ct.GPUs {
		traced[gpu.NPU] = true
	}
	perGroup := map[string]map[int][]string{} // pg_name → NPU → its collectives in order
	sawColl, sawHeld := map[string]bool{}, false
	for _, gpu := range ct.GPUs {
		f, err := os.Open(filepath.Join(dir, ChakraFileName("tr", gpu.NPU)))
		if err != nil {
			t.Fatal(err)
		}
		md, nodes, err := chakra.ReadTrace(f)
		f.Close()
		if err != nil {
			t.Fatalf("NPU %d: %v", gpu.NPU, err)
		}
		if md.Version != chakra.SchemaVersion || len(nodes) == 0 {
			t.Fatalf("NPU %d: version %q, %d nodes", gpu.NPU, md.Version, len(nodes))
		}
		meta := map[string]chakra.Attr{}
		for _, a := range md.Attrs {
			meta[a.Name] = a
		}
		if meta["scenario"].Str != sc.Name || meta["policy"].Str != ct.Policy || meta["iteration"].Int != 1 ||
			meta["npu"].Int != int64(gpu.NPU) || !strings.Contains(meta["npu_mapping"].Str, "tp fastest") || meta["dcpsim_version"].Str == "" {
			t.Errorf("NPU %d: metadata %+v", gpu.NPU, md.Attrs)
		}
		s, r, tr := gpu.NPU/tp/g, gpu.NPU/tp%g, gpu.NPU%tp
		if s != gpu.Stage || r != gpu.Rank || tr != gpu.TPRank || ChakraNPU(s, r, tr, g, tp) != gpu.NPU {
			t.Fatalf("NPU %d mapped to %+v", gpu.NPU, gpu)
		}
		// Expected COMP nodes, from the timeline and the model's layers.
		var doms []int
		for i := range res.Domains {
			if d := &res.Domains[i]; d.FirstRank <= r && r <= d.LastRank() {
				doms = append(doms, i)
			}
		}
		wantComp := 1 // the optimizer
		if res.PlannerStall > 0 {
			wantComp++
		}
		_, n := comp.StageLayers(s)
		for _, di := range doms {
			d := &res.Domains[di]
			for c := range v {
				layers := (c+1)*n/v - c*n/v
				head := 0
				if s == pp-1 && c == v-1 && len(d.Groups) > 0 {
					head = 1
				}
				wantComp += 2 * (layers + head)
				for i := range layers {
					if j.Parallel.Recomputed(i) {
						wantComp++
					}
				}
			}
		}
		// Expected flows: buildTimeline's for this rank, into and out of s.
		tl, err := buildTimeline(ct.Policy, 1, &sched.Plan{PoolRanks: g}, res, []int{r})
		if err != nil {
			t.Fatal(err)
		}
		wantRecv, wantSend := 0, 0
		for _, fl := range tl.Flows {
			if fl.ToStage == s {
				wantRecv++
			}
			if fl.FromStage == s {
				wantSend++
			}
		}
		count := map[chakra.NodeType]int{}
		for i := range nodes {
			nd := &nodes[i]
			count[nd.Type]++
			if nd.ID != uint64(i) {
				t.Fatalf("NPU %d: node %d has id %d", gpu.NPU, i, nd.ID)
			}
			for _, dep := range slices.Concat(nd.DataDeps, nd.CtrlDeps) {
				if dep >= nd.ID {
					t.Fatalf("NPU %d: node %d (%s) depends on node %d, not an earlier one", gpu.NPU, i, nd.Name, dep)
				}
			}
			if i > 0 && len(nd.DataDeps)+len(nd.CtrlDeps) == 0 && nd.Type != chakra.CommRecvNode {
				t.Errorf("NPU %d: node %d (%s) depends on nothing", gpu.NPU, i, nd.Name)
			}
			if a, ok := attr(nd, "is_cpu_op"); !ok || a.Kind != chakra.KindBool || a.Bool {
				t.Errorf("NPU %d: node %s: is_cpu_op %+v", gpu.NPU, nd.Name, a)
			}
			if _, ok := attr(nd, "held_micros"); ok {
				sawHeld = true
			}
			switch nd.Type {
			case chakra.CompNode:
				ops, _ := attr(nd, "num_ops")
				size, _ := attr(nd, "tensor_size")
				if ops.Kind != chakra.KindInt64 || ops.Int < chakra.IdleNumOps || size.Kind != chakra.KindUint64 || size.Uint < chakra.IdleTensorSize {
					t.Errorf("NPU %d: COMP node %s: num_ops %+v, tensor_size %+v", gpu.NPU, nd.Name, ops, size)
				}
			case chakra.CommCollNode:
				pg, _ := attr(nd, "pg_name")
				desc, _ := attr(nd, "pg_desc")
				ctype, _ := attr(nd, "comm_type")
				size, _ := attr(nd, "comm_size")
				members, ok := groups[pg.Str]
				if !ok || !slices.Contains(members, gpu.NPU) || !slices.IsSorted(members) || size.Kind != chakra.KindInt64 || !(size.Int > 0) {
					t.Fatalf("NPU %d: %s on pg %q (%s: %v), size %+v", gpu.NPU, nd.Name, pg.Str, desc.Str, members, size)
				}
				if id, _ := strconv.Atoi(pg.Str); ct.Groups[id-1].Name != desc.Str {
					t.Errorf("NPU %d: pg %s is %q, pg_desc %q", gpu.NPU, pg.Str, ct.Groups[id-1].Name, desc.Str)
				}
				kind := nd.Name[strings.LastIndex(nd.Name, ".")+1:]
				sawColl[kind] = true
				if perGroup[pg.Str] == nil {
					perGroup[pg.Str] = map[int][]string{}
				}
				// What the members must agree on: the type and size, and the
				// microbatch and pass (the layer differs between stages' groups
				// only, and a group lives on one stage).
				perGroup[pg.Str][gpu.NPU] = append(perGroup[pg.Str][gpu.NPU], fmt.Sprintf("%s/%d/%d", nd.Name, ctype.Int, size.Int))
			case chakra.CommSendNode, chakra.CommRecvNode:
				src, _ := attr(nd, "comm_src")
				dst, _ := attr(nd, "comm_dst")
				tag, _ := attr(nd, "comm_tag")
				size, _ := attr(nd, "comm_size")
				if src.Kind != chakra.KindInt32 || dst.Kind != chakra.KindInt32 || tag.Kind != chakra.KindInt32 || size.Kind != chakra.KindInt64 || size.Int < 1 {
					t.Fatalf("NPU %d: %s attributes %+v", gpu.NPU, nd.Name, nd.Attrs)
				}
				k := p2p{int(src.Int), int(dst.Int), tag.Int, size.Int}
				me, peer := int(src.Int), int(dst.Int)
				if nd.Type == chakra.CommRecvNode {
					me, peer = peer, me
					recvs[k]++
				} else {
					sends[k]++
				}
				if me != gpu.NPU || peer%tp != tr || peer/tp%g != r || peer/tp/g == s {
					t.Errorf("NPU %d: %s between %d and %d", gpu.NPU, nd.Name, src.Int, dst.Int)
				}
			}
		}
		if count[chakra.CompNode] != wantComp || count[chakra.CommRecvNode] != wantRecv || count[chakra.CommSendNode] != wantSend {
			t.Errorf("NPU %d: %d COMP, %d RECV, %d SEND nodes; want %d, %d, %d", gpu.NPU,
				count[chakra.CompNode], count[chakra.CommRecvNode], count[chakra.CommSendNode], wantComp, wantRecv, wantSend)
		}
		// Every forward op's nodes tile its duration.
		for _, di := range doms {
			d := &res.Domains[di]
			for c := range v {
				op := res.Ops[res.OpIndex(s, di, c, false)]
				prefix := fmt.Sprintf("mb%d.c%d.F.", d.MB, c)
				var sum uint64
				var start uint64 = 1<<64 - 1
				for i := range nodes {
					if nd := &nodes[i]; strings.HasPrefix(nd.Name, prefix) && nd.Type != chakra.CommSendNode && nd.Type != chakra.CommRecvNode {
						sum += nd.DurationMicros
						start = min(start, nd.StartMicros)
					}
				}
				if diff := int64(sum)*1000 - int64(op.End-op.Start); diff < -1000 || diff > 1000 || start != micros(op.Start) {
					t.Errorf("NPU %d %s: nodes last %d µs from %d µs, the op %d ns from %d ns", gpu.NPU, prefix, sum, start, op.End-op.Start, op.Start)
				}
			}
		}
	}
	// Transfers between traced GPUs pair up.
	for k, n := range sends {
		if traced[k.to] && recvs[k] != n {
			t.Errorf("send %+v: %d sends, %d receives", k, n, recvs[k])
		}
	}
	for k, n := range recvs {
		if traced[k.from] && sends[k] != n {
			t.Errorf("receive %+v: %d receives, %d sends", k, n, sends[k])
		}
	}
	// Members of a communicator issue the same collectives on it.
	shared := 0
	for pg, byNPU := range perGroup {
		var ref []string
		refNPU := -1
		for npu, seq := range byNPU {
			// Names differ only where the layer does: compare from the
			// microbatch on, which every member shares.
			if refNPU < 0 {
				ref, refNPU = seq, npu
				continue
			}
			shared++
			if !slices.Equal(seq, ref) {
				t.Errorf("pg %s: NPU %d issues %d collectives, NPU %d %d, or in another order:\n%v\n%v", pg, npu, len(seq), refNPU, len(ref), headOf(seq, 6), headOf(ref, 6))
			}
		}
	}
	if shared == 0 {
		t.Error("no two traced NPUs share a communicator")
	}
	for _, k := range []string{"cp-a2a", "moe-dispatch", "moe-combine", "dp-rs", "dp-ag"} {
		if !sawColl[k] {
			t.Errorf("no %s collective in the traces (%v)", k, sawColl)
		}
	}
	if tp > 1 && !sawColl["tp-ag-attn"] {
		t.Errorf("tp %d but no TP collective", tp)
	}
	if !sawHeld {
		t.Error("no GPU was held by its domain")
	}
}

// chakraNodes traces npus of chakraTiny with parallel under policy
// (iteration 1) and reads every file back with chakra.ReadTrace.
func chakraNodes(t *testing.T, parallel, policy string, npus []int) (*scenarios.Scenario, *ChakraTraces, map[int][]chakra.Node) {
	t.Helper()
	sc := chakraScenario(t, parallel)
	ct, err := ChakraTrace(sc, policy, 1, npus)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]chakra.Node{}
	for _, g := range ct.GPUs {
		var b bytes.Buffer
		if _, err := ct.WriteTrace(&b, g.NPU); err != nil {
			t.Fatal(err)
		}
		_, nodes, err := chakra.ReadTrace(&b)
		if err != nil {
			t.Fatalf("NPU %d: %v", g.NPU, err)
		}
		out[g.NPU] = nodes
	}
	return sc, ct, out
}

// TestChakraAllGatherPerRankInput: an ALL_GATHER's comm_size is each rank's
// input, the size ASTRA-sim's ring starts from (Ring.cc: n−1 steps of
// comm_size, n·comm_size gathered), not NCCL's gathered output, so ASTRA-sim
// does not move group-size times the bytes. Where the cost model pairs an
// all-gather with a reduce-scatter of the same tensor (sequence
// parallelism's around attention and the MLP, the ring's K/V and dK/dV,
// all-gather-KV's K/V and their gradients), the reduce-scatter's
// comm_size (its input, NCCL's count) is the group size times the
// all-gather's.
func TestChakraAllGatherPerRankInput(t *testing.T) {
	pairs := map[string]string{"tp-ag-attn": "tp-rs-attn", "tp-ag-mlp": "tp-rs-mlp", "cp-ring-ag": "cp-ring-rs", "cp-ag-kv": "cp-rs-dkv"}
	checked := map[string]int{}
	for _, c := range []struct{ parallel, policy string }{
		{"tp = 2\nsequence_parallel = true", "mcore"},
		{"", "hydra"},
	} {
		_, ct, byNPU := chakraNodes(t, c.parallel, c.policy, []int{0, 1, 33})
		members := map[string]int{}
		for _, g := range ct.Groups {
			members[strconv.Itoa(g.ID)] = len(g.NPUs)
		}
		for npu, nodes := range byNPU {
			// The backward op's name and layer, then the collective: an
			// all-gather and its reduce-scatter share the prefix.
			sizes := map[string]int64{}
			for i := range nodes {
				nd := &nodes[i]
				if nd.Type != chakra.CommCollNode {
					continue
				}
				size, _ := attr(nd, "comm_size")
				sizes[nd.Name] = size.Int
			}
			for i := range nodes {
				nd := &nodes[i]
				ctype, _ := attr(nd, "comm_type")
				if nd.Type != chakra.CommCollNode || ctype.Int != int64(chakra.AllGather) {
					continue
				}
				cut := strings.LastIndex(nd.Name, ".")
				rs, ok := pairs[nd.Name[cut+1:]]
				if !ok {
					continue
				}
				rsSize, ok := sizes[nd.Name[:cut+1]+rs]
				if !ok {
					continue // a forward all-gather: its reduce-scatter is in the backward
				}
				pg, _ := attr(nd, "pg_name")
				n := int64(members[pg.Str])
				agSize := sizes[nd.Name]
				if n < 2 || agSize*n-rsSize > n || rsSize-agSize*n > n {
					t.Fatalf("%s NPU %d: %s of %d bytes on %d ranks beside %s of %d", c.policy, npu, nd.Name, agSize, n, rs, rsSize)
				}
				checked[nd.Name[cut+1:]]++
			}
		}
	}
	if checked["tp-ag-attn"] == 0 || checked["tp-ag-mlp"] == 0 {
		t.Errorf("pairs checked: %v; want the sequence-parallel all-gathers", checked)
	}
}

// TestChakraOptimizerWork: the optimizer step is a GPU COMP node with the
// work ASTRA-sim's roofline needs (without num_ops it aborts the NPU): the
// cost model's OptimizerWork of the GPU's stage, as num_ops and tensor_size.
func TestChakraOptimizerWork(t *testing.T) {
	sc, _, byNPU := chakraNodes(t, "", "hydra", []int{0, 32, 63})
	setup, err := NewSetup(sc)
	if err != nil {
		t.Fatal(err)
	}
	g := sc.Job.PoolRanks()
	for npu, nodes := range byNPU {
		opt := &nodes[len(nodes)-1]
		w, err := setup.Model.OptimizerWork(npu / g)
		if err != nil {
			t.Fatal(err)
		}
		ops, _ := attr(opt, "num_ops")
		size, _ := attr(opt, "tensor_size")
		if opt.Name != "optimizer" || opt.Type != chakra.CompNode || !(w.FLOPs > chakra.IdleNumOps) ||
			ops.Int != int64(math.Round(w.FLOPs)) || size.Uint != uint64(math.Round(w.Bytes)) {
			t.Errorf("NPU %d: last node %s %v, num_ops %+v, tensor_size %+v; want the optimizer with %+v", npu, opt.Name, opt.Type, ops, size, w)
		}
	}
}

// TestChakraRecomputeBytes: a recomputed forward (full recomputation: the
// layer's forward; selective: its core attention) carries its bytes as
// tensor_size beside its FLOPs: with tensor_size 0 ASTRA-sim's roofline
// skips the node and never issues the ones after it.
func TestChakraRecomputeBytes(t *testing.T) {
	for _, parallel := range []string{`recompute = "selective"`, "recompute = \"full\"\nrecompute_layers = 2"} {
		_, _, byNPU := chakraNodes(t, parallel, "hydra", []int{0, 32})
		checked := 0
		for npu, nodes := range byNPU {
			for i := range nodes {
				nd := &nodes[i]
				if nd.Type != chakra.CompNode || !strings.HasSuffix(nd.Name, ".recompute") {
					continue
				}
				ops, _ := attr(nd, "num_ops")
				size, _ := attr(nd, "tensor_size")
				if ops.Int > chakra.IdleNumOps {
					checked++
					if size.Uint <= chakra.IdleTensorSize {
						t.Fatalf("%s NPU %d: %s: %d FLOPs over %d bytes", parallel, npu, nd.Name, ops.Int, size.Uint)
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no recomputed forward with work", parallel)
		}
	}
}

// TestChakraPlannerStallOnGPU: the planner's stall is a GPU COMP node
// (ASTRA-sim's statistics throw on a CPU one) without work: the nominal
// kernel chakra.IdleNumOps over IdleTensorSize (its roofline runs no
// smaller), replayed for the simulated stall; no node of any GPU is on the
// CPU.
func TestChakraPlannerStallOnGPU(t *testing.T) {
	_, ct, byNPU := chakraNodes(t, "", "hydra", []int{0, 63})
	if ct.Result.PlannerStall <= 0 {
		t.Fatal("hydra's iteration has no planner stall")
	}
	for npu, nodes := range byNPU {
		st := &nodes[0]
		ops, _ := attr(st, "num_ops")
		size, _ := attr(st, "tensor_size")
		if st.Name != "planner-stall" || st.Type != chakra.CompNode || st.DurationMicros != micros(ct.Result.PlannerStall) ||
			ops.Int != chakra.IdleNumOps || size.Uint != chakra.IdleTensorSize {
			t.Errorf("NPU %d: first node %+v", npu, *st)
		}
		for i := range nodes {
			if a, ok := attr(&nodes[i], "is_cpu_op"); !ok || a.Bool {
				t.Fatalf("NPU %d: %s: is_cpu_op %+v", npu, nodes[i].Name, a)
			}
		}
	}
}

// headOf is up to n elements of xs.
func headOf(xs []string, n int) []string { return xs[:min(n, len(xs))] }

// TestChakraTraceBadInput: an unknown policy, an NPU or an iteration out of
// range, no NPU, too many, and a prefix or folder that cannot be written are
// bad input naming the value and the range.
func TestChakraTraceBadInput(t *testing.T) {
	sc := chakraScenario(t, "")
	for _, c := range []struct {
		policy    string
		iteration int
		npus      []int
		want      string
	}{
		{"nope", 0, []int{0}, "nope"},
		{"hydra", 0, []int{64}, "NPU 64 outside [0, 64)"},
		{"hydra", 0, []int{-1}, "outside [0, 64)"},
		{"hydra", 2, []int{0}, "iteration 2 outside the scenario's [0, 2)"},
		{"hydra", 0, nil, "no NPU"},
		{"hydra", 0, make([]int, MaxChakraNPUs+1), ""}, // duplicates collapse: one NPU
	} {
		_, err := ChakraTrace(sc, c.policy, c.iteration, c.npus)
		if c.want == "" {
			if err != nil {
				t.Errorf("%d copies of NPU 0: %v", len(c.npus), err)
			}
			continue
		}
		if !errors.Is(err, badinput.Err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %d %v: %v, want bad input containing %q", c.policy, c.iteration, c.npus, err, c.want)
		}
	}
	many := make([]int, MaxChakraNPUs+1)
	for i := range many {
		many[i] = i
	}
	big := chakraScenario(t, "")
	big.Job.Cluster.GPUs = 8192
	if _, err := ChakraTrace(big, "hydra", 0, many); !errors.Is(err, badinput.Err) || !strings.Contains(err.Error(), "at most 4096") {
		t.Errorf("%d NPUs: %v", len(many), err)
	}
	ct, err := ChakraTrace(sc, "hydra", 0, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, prefix, want string }{
		{file, "tr", "not a folder"},
		{t.TempDir(), "../x", "prefix"},
		{t.TempDir(), "", "prefix"},
	} {
		if err := ct.WriteFiles(context.Background(), c.dir, c.prefix, nil); !errors.Is(err, badinput.Err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("WriteFiles(%s, %q): %v, want bad input containing %q", c.dir, c.prefix, err, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ct.WriteFiles(ctx, t.TempDir(), "tr", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled write: %v", err)
	}
}

// TestPipelineNextInvertsDep: pipelineNext is the inverse of
// pipeline.Schedule.Dep on every op position.
func TestPipelineNextInvertsDep(t *testing.T) {
	for _, c := range [][2]int{{1, 1}, {1, 3}, {2, 2}, {3, 1}, {4, 2}} {
		p, v := c[0], c[1]
		m := 2 * p
		sch, err := pipeline.New(p, v, m, 0)
		if err != nil {
			t.Fatal(err)
		}
		consumers := 0
		for s := range p {
			for ch := range v {
				for _, b := range []bool{false, true} {
					ns, nc, nb, ok := pipelineNext(p, v, s, ch, b)
					if !ok {
						if s != 0 || ch != 0 || !b {
							t.Errorf("p %d v %d: %d/%d/%v feeds nothing", p, v, s, ch, b)
						}
						continue
					}
					consumers++
					ds, dop, dok := sch.Dep(ns, pipeline.Op{Backward: nb, Chunk: int32(nc)})
					if !dok || ds != s || int(dop.Chunk) != ch || dop.Backward != b {
						t.Errorf("p %d v %d: %d/%d/%v feeds %d/%d/%v, which waits for %d/%v", p, v, s, ch, b, ns, nc, nb, ds, dop)
					}
				}
			}
		}
		if consumers != 2*p*v-1 {
			t.Errorf("p %d v %d: %d ops feed another", p, v, consumers)
		}
	}
}

// BenchmarkChakraProduction times a Chakra trace set of 8 GPUs (one node of
// stage 0: NPUs 0-7) of production-256k's first measured iteration under
// HyDra (2,048 H800 GPUs): running the scenario's batches up to it, building
// and encoding the 8 traces (written to memory). Target: under 5 s on the
// project's 2-core machine.
func BenchmarkChakraProduction(b *testing.B) {
	sc, err := scenarios.Resolve("production-256k")
	if err != nil {
		b.Fatal(err)
	}
	npus := []int{0, 1, 2, 3, 4, 5, 6, 7}
	var nodes int
	var elapsed time.Duration
	for b.Loop() {
		start := time.Now()
		ct, err := ChakraTrace(sc, "hydra", sc.Run.WarmupIterations, npus)
		if err != nil {
			b.Fatal(err)
		}
		nodes = 0
		for _, g := range ct.GPUs {
			var buf bytes.Buffer
			n, err := ct.WriteTrace(&buf, g.NPU)
			if err != nil {
				b.Fatal(err)
			}
			nodes += n
		}
		if err := ct.WriteCommGroups(&bytes.Buffer{}); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/traceset")
	b.ReportMetric(float64(nodes), "nodes")
}

// TestChakraAstraConfig: --astra-config's cluster is the profile's: on 64
// H20s of 8 per node, NVLink at nvlink_bytes_per_second × collective_intra
// and the NIC at nic_bytes_per_second × send_recv_inter, half of NCCL's
// per-hop and of a send/recv's latency per link (a message crosses two),
// the BF16 peak and the HBM at the memory-bound efficiency; one node is
// written as two dimensions of its NVLink; a mixed cluster, one bandwidth
// per dimension being all ASTRA-sim has, is bad input; the files land in
// the folder.
func TestChakraAstraConfig(t *testing.T) {
	ct, err := ChakraTrace(chakraScenario(t, ""), "hydra", 1, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ct.AstraConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := []chakra.AstraDim{{NPUs: 8, BytesPerSecond: 360e9 * 0.9724, LinkSeconds: 3.4e-6 / 2}, {NPUs: 8, BytesPerSecond: 48e9 * 0.9583, LinkSeconds: 25.4e-6 / 2}}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if len(cfg.Dims) != 2 || cfg.NPUs() != 64 || !near(cfg.PeakFLOPS, 148e12) || !near(cfg.HBMBytesPerSecond, 4e12*0.8955) {
		t.Fatalf("config %+v", cfg)
	}
	for i, w := range want {
		if d := cfg.Dims[i]; d.NPUs != w.NPUs || !near(d.BytesPerSecond, w.BytesPerSecond) || !near(d.LinkSeconds, w.LinkSeconds) {
			t.Errorf("dimension %d: %+v, want %+v", i, d, w)
		}
	}
	dir := filepath.Join(t.TempDir(), "astra")
	var wrote []string
	if err := ct.WriteAstraConfig(dir, func(p string) { wrote = append(wrote, filepath.Base(p)) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(wrote, []string{chakra.AstraNetworkFile, chakra.AstraSystemFile, chakra.AstraSystemRooflineFile, chakra.AstraRemoteMemoryFile}) {
		t.Errorf("wrote %v", wrote)
	}
	if b, err := os.ReadFile(filepath.Join(dir, chakra.AstraNetworkFile)); err != nil || !strings.Contains(string(b), "npus_count: [ 8, 8 ]") {
		t.Errorf("network file %s: %v", b, err)
	}

	one, err := scenarios.Parse([]byte(strings.NewReplacer("PARALLEL", "", "gpus = 64", "gpus = 8", "pp = 2\nvpp = 2", "pp = 1\nvpp = 1",
		"batch_tokens = 524288", "batch_tokens = 65536").Replace(chakraTiny)), "one-node.toml")
	if err != nil {
		t.Fatal(err)
	}
	ct, err = ChakraTrace(one, "hydra", 1, []int{0})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := ct.AstraConfig(); err != nil || len(cfg.Dims) != 2 || cfg.Dims[0].NPUs != 2 || cfg.Dims[1].NPUs != 4 ||
		cfg.Dims[1].BytesPerSecond != cfg.Dims[0].BytesPerSecond || !near(cfg.Dims[1].BytesPerSecond, 360e9*0.9724) {
		t.Errorf("one node: %+v, %v", cfg, err)
	}

	mixed, err := scenarios.Parse([]byte(strings.Replace(strings.Replace(chakraTiny, "PARALLEL", "", 1),
		"gpu = \"H20\"\ngpus = 64", "gpus_per_node = 8\npools = [{gpu = \"H100-SXM\", gpus = 32}, {gpu = \"A100-80G\", gpus = 32}]", 1)), "mixed.toml")
	if err != nil {
		t.Fatal(err)
	}
	if ct, err = ChakraTrace(mixed, "hydra", 1, []int{0}); err != nil {
		t.Fatal(err)
	}
	if _, err := ct.AstraConfig(); !errors.Is(err, badinput.Err) || !strings.Contains(err.Error(), "one bandwidth per dimension") {
		t.Errorf("a mixed cluster: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ct, _ = ChakraTrace(chakraScenario(t, ""), "hydra", 1, []int{0})
	if err := ct.WriteAstraConfig(file, nil); !errors.Is(err, badinput.Err) {
		t.Errorf("a file for the folder: %v", err)
	}
}
