package hwbackend

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestOpShapeKeys(t *testing.T) {
	for _, c := range []struct {
		op   Op
		want string
	}{
		{Op{Operation: OpGEMM, GEMM: GEMMShape{M: 1, N: 2, K: 3}}, "gemm k=3;m=1;n=2"},
		{Op{Operation: OpAttentionFwd, Attention: AttentionShape{1, 2, 3, 4, 5, 6}}, "attention_fwd batch=1;head_dim_qk=5;head_dim_v=6;heads=3;kv_heads=4;seq=2"},
		{Op{Operation: OpAttentionBwd, Attention: AttentionShape{1, 2, 3, 4, 5, 6}}, "attention_bwd batch=1;head_dim_qk=5;head_dim_v=6;heads=3;kv_heads=4;seq=2"},
		{Op{Operation: OpAllToAll, Ranks: 8, Bytes: 1024}, "all_to_all_intra bytes=1024;ranks=8"},
		{Op{Operation: OpSendRecv, Ranks: 2, Bytes: 7}, "send_recv_intra bytes=7;ranks=2"},
	} {
		if got := c.op.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.op, got, c.want)
		}
	}
	a := AttentionShape{Batch: 2, SeqTokens: 10, Heads: 3, KVHeads: 1, HeadDimQK: 192, HeadDimV: 128}
	fwd, bwd := Op{Operation: OpAttentionFwd, Attention: a}.Work(), Op{Operation: OpAttentionBwd, Attention: a}.Work()
	if fwd != 2*3*100*320 || bwd/fwd != 2.6 {
		t.Errorf("attention work fwd %v bwd/fwd %v, want %v and 2.6 (costmodel §2.1)", fwd, bwd/fwd, 2*3*100*320)
	}
}

// TestDefaultSweepFitsBudget: the default sweep's estimate at the nominal rates
// fits its budget, grows with it, and keeps enough points per curve to fit.
func TestDefaultSweepFitsBudget(t *testing.T) {
	prevTop := 0
	for _, budget := range []time.Duration{time.Second, 3 * time.Second, 20 * time.Second, 2 * time.Minute, 10 * time.Minute} {
		sw := DefaultSweep(budget)
		if est := sw.EstimateSeconds(NominalCPURates); est > budget.Seconds() {
			t.Errorf("DefaultSweep(%v) estimated at %.1f s", budget, est)
		}
		if sw.Budget != budget || sw.Repeats < 3 || sw.Warmups < 1 {
			t.Errorf("DefaultSweep(%v): budget %v, %d warmups, %d repeats", budget, sw.Budget, sw.Warmups, sw.Repeats)
		}
		count := map[string]int{}
		top := 0
		for _, o := range sw.Ops {
			count[o.Operation]++
			if o.Operation == OpAttentionFwd {
				top = max(top, o.Attention.SeqTokens)
			}
		}
		for _, op := range []string{OpGEMM, OpAttentionFwd, OpAttentionBwd, OpAllToAll, OpSendRecv} {
			if count[op] < 4 {
				t.Errorf("DefaultSweep(%v): %d %s points, want >= 4", budget, count[op], op)
			}
		}
		if top < prevTop || top > 4096 {
			t.Errorf("DefaultSweep(%v): longest attention %d tokens (previous budget %d)", budget, top, prevTop)
		}
		prevTop = top
	}
	if prevTop != 4096 {
		t.Errorf("a 10-minute budget reaches only %d tokens", prevTop)
	}
}

func TestGPUSweep(t *testing.T) {
	for _, budget := range []time.Duration{10 * time.Second, 2 * time.Minute, 10 * time.Minute} {
		sw := GPUSweep(budget, 8)
		if est := sw.EstimateSeconds(NominalGPURates); est > budget.Seconds() {
			t.Errorf("GPUSweep(%v) estimated at %.1f s", budget, est)
		}
		ops := map[string]int{}
		for _, o := range sw.Ops {
			ops[o.Operation]++
			if o.Ranks != 0 && o.Ranks != 8 {
				t.Errorf("collective on %d ranks, want 8", o.Ranks)
			}
		}
		if len(ops) != 5 {
			t.Errorf("GPUSweep(%v, 8) has operations %v", budget, ops)
		}
	}
	for _, o := range GPUSweep(time.Minute, 1).Ops {
		if o.Ranks != 0 {
			t.Fatalf("one GPU: the sweep has %s", o)
		}
	}
	if got := ladder(64, 4, 1, 16); len(got) != 3 || got[0] != 16 || got[2] != 64 {
		t.Errorf("ladder(64, 4, 1, 16) = %v, want [16 32 64]", got)
	}
}

// TestMeasureStaysInBudget runs a tiny sweep on the CPU backend and checks the
// rows, then a budget so small that only the smallest op of each operation
// runs: that the budget stops the sweep is checked by what ran, not by the
// wall time, which a loaded machine stretches (it is logged).
func TestMeasureStaysInBudget(t *testing.T) {
	b := NewCPU(0)
	budget := 1500 * time.Millisecond
	sw := DefaultSweep(budget)
	var progress bytes.Buffer
	start := time.Now()
	ms, err := Measure(context.Background(), b, sw, &progress)
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sweep with budget %v took %v", budget, wall)
	if len(ms) < 10 || !strings.Contains(progress.String(), "GFLOP/s") {
		t.Fatalf("%d measurements; progress:\n%s", len(ms), progress.String())
	}
	for _, m := range ms {
		if m.Seconds <= 0 || m.Repeats != sw.Repeats || len(m.Shape) == 0 {
			t.Errorf("bad row %+v", m)
		}
	}

	sw.Budget = time.Nanosecond
	ms, err = Measure(context.Background(), b, sw, nil)
	if err != nil || len(ms) != 5 {
		t.Errorf("1 ns budget: %d rows (want one per operation), %v", len(ms), err)
	}
}

func TestMeasureErrors(t *testing.T) {
	b := NewCPU(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sw := Sweep{Ops: []Op{{Operation: OpGEMM, GEMM: GEMMShape{M: 4, N: 4, K: 4}}}, Repeats: 1}
	if _, err := Measure(ctx, b, sw, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	for name, bad := range map[string]Sweep{
		"no repeats":   {Ops: sw.Ops},
		"unknown op":   {Ops: []Op{{Operation: "fft"}}, Repeats: 1},
		"empty shape":  {Ops: []Op{{Operation: OpGEMM}}, Repeats: 1},
		"backend fail": {Ops: []Op{{Operation: OpAttentionFwd, Attention: AttentionShape{1, 8, 3, 2, 8, 8}}}, Repeats: 1},
	} {
		if _, err := Measure(context.Background(), b, bad, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
