package sched

import (
	"fmt"
	"strings"
)

// CPExec is how a CP group executes attention across its ranks. A policy
// declares the execution its plans assume (sched/policies' descriptor); the cost
// model prices every group of the plan under it.
type CPExec int

const (
	// Ulysses is DeepSpeed-Ulysses: all-to-alls of Q, K, V (sequence-sharded to
	// head-sharded) before attention and of the output after it (costmodel §4.1).
	Ulysses CPExec = iota + 1
	// Ring is ring attention with zigzag load balance (Megatron CP, p2p): P−1
	// send/recv steps of K/V blocks, each overlapped with one attention block
	// (costmodel §4.2).
	Ring
	// UlyssesRing is HyDra's inner Ulysses × outer ring (USP 2D): Ulysses inside
	// blocks of u contiguous ranks, a ring of r = P/u ranks strided by u across them
	// (costmodel §4.3, HyDra §5.2.1).
	UlyssesRing
	// AllGatherKV is Llama 3's all-gather context parallelism, WLB-LLM's CP
	// (its §5): every rank all-gathers the group's K and V before attention and
	// computes its own query chunks against them; backward reduce-scatters dK
	// and dV. Neither is overlapped (Llama 3 §3.3.2: the latency is exposed,
	// small under GQA). MLA's K and V travel expanded per head, as the ring
	// moves them (costmodel §4.2).
	AllGatherKV

	lastExec = AllGatherKV
)

// Executor is implemented by policies whose CP execution depends on their
// options (static CP run as Ulysses or as a ring): it overrides the execution
// the policy's descriptor declares.
type Executor interface {
	// CPExec returns the execution the policy's plans assume and whether its
	// Q/K/V all-to-alls overlap independent compute.
	CPExec() (exec CPExec, overlapAllToAll bool)
}

var cpExecNames = [...]string{Ulysses: "ulysses", Ring: "ring", UlyssesRing: "ulysses-ring", AllGatherKV: "all-gather-kv"}

// CPExecNames returns the names ParseCPExec accepts, in CPExec order.
func CPExecNames() []string { return append([]string(nil), cpExecNames[Ulysses:]...) }

// Valid reports whether e is one of the defined executions.
func (e CPExec) Valid() bool { return e >= Ulysses && e <= lastExec }

// String returns the exec's name ("ulysses", "ring", "ulysses-ring",
// "all-gather-kv"), or "CPExec(n)" for an invalid value.
func (e CPExec) String() string {
	if e.Valid() {
		return cpExecNames[e]
	}
	return fmt.Sprintf("CPExec(%d)", int(e))
}

// ParseCPExec returns the CPExec named s (one of CPExecNames), or an error
// listing the known names.
func ParseCPExec(s string) (CPExec, error) {
	for e := Ulysses; e <= lastExec; e++ {
		if cpExecNames[e] == s {
			return e, nil
		}
	}
	return 0, fmt.Errorf("sched: unknown CP exec %q (known: %s)", s, strings.Join(CPExecNames(), ", "))
}

// MarshalText returns the exec's name; an invalid value is an error.
func (e CPExec) MarshalText() ([]byte, error) {
	if !e.Valid() {
		return nil, fmt.Errorf("sched: invalid CP exec %d", int(e))
	}
	return []byte(e.String()), nil
}

// UnmarshalText parses a name as ParseCPExec does, so a TOML or JSON string
// decodes into a CPExec.
func (e *CPExec) UnmarshalText(b []byte) error {
	v, err := ParseCPExec(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}
