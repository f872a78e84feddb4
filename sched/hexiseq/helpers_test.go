package hexiseq

import "github.com/dcpsim/dcpsim/sched"

// kind is a planning kind with H100-SXM-like numbers for Llama-3-8B (28.7K
// attention FLOPs per token² and 1.3 GFLOPs per token per layer, forward and
// backward, at 600 and 690 TFLOPS) scaled by slow (its
// attention and linear time ×slow; its NIC /slow when slow > 1).
func kind(name string, ranks, budget int, slow float64) sched.DeviceKind {
	nic := 4.3e10
	if slow > 1 {
		nic /= 2
	}
	return sched.DeviceKind{Name: name, Ranks: ranks, BudgetTokens: budget,
		AttentionSecondsPerToken2: 4.8e-11 * slow, LinearSecondsPerToken: 1.9e-6 * slow,
		NVLinkBytesPerSecond: 3.2e11 / min(slow, 1.4), NICBytesPerSecond: nic, RingNICBytesPerSecond: nic,
		IntraLatencySeconds: 1.2e-5, InterLatencySeconds: 5e-5}
}

// mixedInputs is a pool of g ranks, the first half fast (H100-like), the
// second 3× slower (A100-like), 8 per node, 32 query and 8 K/V heads, one
// stage of 32 layers, pp 1.
func mixedInputs(g, budget int) sched.Inputs {
	in := sched.Inputs{PoolRanks: g, BudgetTokens: budget, PP: 1, VPP: 1, QueryHeads: 32, OverheadRatio: 1e7}
	in.Cluster = &sched.Cluster{Layers: 32, OverheadSeconds: 0.01, QBytesPerToken: 8192, KVBytesPerToken: 4096, OBytesPerToken: 8192,
		KVHeads: 8, RanksPerNode: 8,
		Kinds: []sched.DeviceKind{kind("H100-SXM", g/2, budget, 1), kind("A100-80G", g-g/2, budget, 3)}}
	return in
}

// oneKindInputs is mixedInputs with every rank fast.
func oneKindInputs(g, budget int) sched.Inputs {
	in := mixedInputs(g, budget)
	in.Cluster.Kinds = []sched.DeviceKind{kind("H100-SXM", g, budget, 1)}
	return in
}
