package network

import "testing"

// TestTPLayerCostModel47: one layer's TP communication per pass against
// costmodel.md §4.7, "per layer fwd: 2 all-gathers + 2 reduce-scatters of
// S·h·2 bytes; each rank sends (t−1)/t of each; bwd same", each a ring on the
// rank's t GPUs over NVLink at NCCL's α = base + (t−1)·hop (§5.2). Without
// sequence parallelism the two all-reduces move the same bytes (an
// all-reduce is a reduce-scatter and an all-gather) under two base latencies
// and 2·(t−1) hops each.
func TestTPLayerCostModel47(t *testing.T) {
	p := realisticProfile()
	b, eta := 360e9, 0.85
	base, hop := 8.4e-6, 3.4e-6
	for _, tp := range []int{2, 4, 8} {
		tt := topo(t, p, 64, 8, tp, 1)
		const s, h = 8192, 6144 // a micro-batch of 4 sequences of 2048 at h = 6144
		n := float64(tp)
		sent := (n - 1) / n * s * h * 2 // bytes a GPU sends in one AG or RS
		sp := 4 * (sent/(b*eta) + base + (n-1)*hop)
		if got := TPLayerSeconds(tt, h, s, true); !near(got, sp, 1e-12) {
			t.Errorf("tp %d, SP: %v s per pass, §4.7 gives %v", tp, got, sp)
		}
		ar := 2 * (2*sent/(b*eta) + base + 2*(n-1)*hop)
		if got := TPLayerSeconds(tt, h, s, false); !near(got, ar, 1e-12) {
			t.Errorf("tp %d, all-reduce: %v s per pass, want %v", tp, got, ar)
		}
		// Same bytes, fewer latencies.
		if got := TPLayerSeconds(tt, h, s, true) - TPLayerSeconds(tt, h, s, false); !near(got, 2*base, 1e-9) {
			t.Errorf("tp %d: SP - all-reduce = %v, want two base latencies %v", tp, got, 2*base)
		}
	}
	if TPLayerSeconds(topo(t, p, 64, 8, 1, 1), 6144, 8192, false) != 0 || TPLayerSeconds(topo(t, p, 64, 8, 1, 1), 6144, 8192, true) != 0 {
		t.Error("tp = 1 has no TP communication")
	}
}

// TestGradAllReduce: without a distributed optimizer the gradients are
// all-reduced (a reduce-scatter and an all-gather of the same BF16 gradient
// bytes, no parameter all-gather), twice the bytes a GPU sends in the
// reduce-scatter; with BF16 gradients and parameters it costs what GradSync
// does.
func TestGradAllReduce(t *testing.T) {
	p := realisticProfile()
	tt := topo(t, p, 256, 8, 8, 1) // G = 32 over 32 nodes
	const dense = 2.75e9
	ar := GradAllReduce(tt, dense, 0, 1)
	rs := ReduceScatterSeconds(tt, Contiguous(0, 32), dense*GradBytesPerParam)
	if !near(ar.DenseReduceScatterSeconds, rs, 1e-12) || !near(ar.DenseAllGatherSeconds, rs, 1e-12) || ar.ExpertReduceScatterSeconds != 0 {
		t.Errorf("all-reduce %+v, want RS = AG = %v", ar, rs)
	}
	if want := 2 * 31.0 / 32 * dense * 2; !near(ar.SentBytes, want, 1e-12) {
		t.Errorf("sent %v, want %v", ar.SentBytes, want)
	}
	if zs := GradSync(tt, dense, 0, 1); !near(zs.Seconds(), ar.Seconds(), 1e-12) {
		t.Errorf("all-reduce %v s, ZeRO-1 RS+AG %v s: same bytes", ar.Seconds(), zs.Seconds())
	}
	if GradAllReduce(topo(t, p, 8, 8, 8, 1), dense, 0, 1).Seconds() != 0 {
		t.Error("DP = 1 needs no gradient sync")
	}
}
