package network

import (
	"fmt"
	"strings"
)

// Collective names one collective as nccl-tests runs it (dcpsim costs
// collective).
type Collective string

// The collectives priced alone over a contiguous set of ranks.
const (
	AllReduce     Collective = "all-reduce"
	ReduceScatter Collective = "reduce-scatter"
	AllGather     Collective = "all-gather"
	AllToAll      Collective = "all-to-all"
	SendRecv      Collective = "send-recv"
)

// Collectives lists every Collective.
func Collectives() []Collective {
	return []Collective{AllReduce, ReduceScatter, AllGather, AllToAll, SendRecv}
}

// ParseCollective reads a Collective by name.
func ParseCollective(s string) (Collective, error) {
	for _, c := range Collectives() {
		if string(c) == s {
			return c, nil
		}
	}
	names := make([]string, 0, 5)
	for _, c := range Collectives() {
		names = append(names, string(c))
	}
	return "", fmt.Errorf("unknown collective %q (known: %s)", s, strings.Join(names, ", "))
}

// BusFactor is nccl-tests' factor from algorithm to bus bandwidth for n
// ranks (github.com/NVIDIA/nccl-tests, doc/PERFORMANCE.md): 2(n−1)/n for an
// all-reduce, (n−1)/n for a reduce-scatter, all-gather and all-to-all, 1 for
// a send/recv.
func (c Collective) BusFactor(n int) float64 {
	fn := float64(n)
	switch c {
	case AllReduce:
		return 2 * (fn - 1) / fn
	case ReduceScatter, AllGather, AllToAll:
		return (fn - 1) / fn
	}
	return 1
}

// NCCLTestsSeconds prices collective c over the ranks [0, n) of t alone, with
// bytes the per-rank buffer as nccl-tests' size column counts it (the whole
// buffer each rank reduces, gathers or exchanges; what each rank sends for a
// send/recv): an all-reduce as a reduce-scatter then an all-gather
// (ReduceScatterSeconds, AllGatherSeconds), an all-to-all by
// AllToAllSeconds, a send/recv as one step of a ring through the n ranks
// (SendRecvSeconds). algbw = bytes / seconds, busbw = algbw · BusFactor(n),
// nccl-tests' definitions. It panics if n leaves the pool.
func NCCLTestsSeconds(t Topology, c Collective, n int, bytes float64) float64 {
	g := Contiguous(0, n)
	switch c {
	case AllReduce:
		return ReduceScatterSeconds(t, g, bytes) + AllGatherSeconds(t, g, bytes)
	case ReduceScatter:
		return ReduceScatterSeconds(t, g, bytes)
	case AllGather:
		return AllGatherSeconds(t, g, bytes)
	case AllToAll:
		return AllToAllSeconds(t, 0, n, bytes)
	case SendRecv:
		return SendRecvSeconds(t, g, bytes)
	}
	panic(fmt.Sprintf("network: unknown collective %q", string(c)))
}

// NCCLTestsShared prices collective c over the ranks [0, n) of t as
// NCCLTestsSeconds does, on t's fabric with background persistent flows on
// every NIC of the nodes it uses (other traffic that outlasts it): its flows
// and the background's share each node's NICs and each leaf's uplinks
// max-min fairly (Window), and it is priced on t slowed by the stretch its
// busiest link gives. It returns the seconds and the stretch (1: as alone).
// It panics if n leaves the pool or background < 0.
func NCCLTestsShared(t Topology, c Collective, n int, bytes, background float64) (seconds, stretch float64) {
	if !(background >= 0) {
		panic(fmt.Sprintf("network: background flows %v per NIC", background))
	}
	g := Contiguous(0, n)
	var d Demand
	switch c {
	case AllReduce, ReduceScatter, AllGather:
		d = Demand{Ranks: g, Pattern: PatternNCCLRing, NICSeconds: ringNICSeconds(t, g, bytes)}
	case AllToAll:
		d = Demand{Ranks: g, Pattern: PatternAllToAll, NICSeconds: allToAllNICSeconds(t, 0, n, bytes)}
	case SendRecv:
		d = Demand{Ranks: g, Pattern: PatternRings, Rings: 1, NICSeconds: sendRecvNICSeconds(t, g, bytes)}
	default:
		panic(fmt.Sprintf("network: unknown collective %q", string(c)))
	}
	var w Window
	w.Reset(t)
	w.force = background > 0
	id := w.Add(d)
	if background > 0 && d.NICSeconds > 0 {
		w.addBackground(d.Ranks, background*float64(t.Fabric.NICsPerNode), d.NICSeconds)
	}
	w.Solve()
	stretch = w.Stretch(id)
	return NCCLTestsSeconds(t.Slowed(stretch), c, n, bytes), stretch
}
