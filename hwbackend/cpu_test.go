package hwbackend

import (
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// naiveAttention is the reference: causal softmax(Q·Kᵀ/√d)·V in float64, and
// its gradients for upstream gradient dO, head by head, row by row.
func naiveAttention(a *attnBuffers) (o, dq, dk, dv []float64) {
	s := a.s
	n, dqk, dvd := s.SeqTokens, s.HeadDimQK, s.HeadDimV
	o = make([]float64, len(a.o))
	if a.dO != nil {
		dq, dk, dv = make([]float64, len(a.dQ)), make([]float64, len(a.dK)), make([]float64, len(a.dV))
	}
	scale := 1 / math.Sqrt(float64(dqk))
	for b := range s.Batch {
		for h := range s.Heads {
			g := a.kvHead(h)
			qh, kh, vh := head(a.q, b, h, s.Heads, n, dqk), head(a.k, b, g, s.KVHeads, n, dqk), head(a.v, b, g, s.KVHeads, n, dvd)
			qOff, kOff, vOff := ((b*s.Heads+h)*n)*dqk, ((b*s.KVHeads+g)*n)*dqk, ((b*s.KVHeads+g)*n)*dvd
			oOff := ((b*s.Heads + h) * n) * dvd
			for r := range n {
				p := make([]float64, r+1)
				m := math.Inf(-1)
				for j := range p {
					var x float64
					for c := range dqk {
						x += float64(qh[r*dqk+c]) * float64(kh[j*dqk+c])
					}
					p[j] = x * scale
					m = math.Max(m, p[j])
				}
				var sum float64
				for j := range p {
					p[j] = math.Exp(p[j] - m)
					sum += p[j]
				}
				for j := range p {
					p[j] /= sum
					for c := range dvd {
						o[oOff+r*dvd+c] += p[j] * float64(vh[j*dvd+c])
					}
				}
				if a.dO == nil {
					continue
				}
				dOr := a.dO[oOff+r*dvd : oOff+(r+1)*dvd]
				dp := make([]float64, r+1)
				var pdp float64
				for j := range p {
					for c := range dvd {
						dv[vOff+j*dvd+c] += p[j] * float64(dOr[c])
						dp[j] += float64(dOr[c]) * float64(vh[j*dvd+c])
					}
					pdp += p[j] * dp[j]
				}
				for j := range p {
					ds := p[j] * (dp[j] - pdp) * scale
					for c := range dqk {
						dq[qOff+r*dqk+c] += ds * float64(kh[j*dqk+c])
						dk[kOff+j*dqk+c] += ds * float64(qh[r*dqk+c])
					}
				}
			}
		}
	}
	return o, dq, dk, dv
}

func maxAbsDiff(got []float32, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d float64
	for i := range got {
		d = math.Max(d, math.Abs(float64(got[i])-want[i]))
	}
	return d
}

var attentionCases = []AttentionShape{
	{Batch: 1, SeqTokens: 1, Heads: 1, KVHeads: 1, HeadDimQK: 8, HeadDimV: 8},
	{Batch: 1, SeqTokens: 64, Heads: 2, KVHeads: 2, HeadDimQK: 16, HeadDimV: 16},
	{Batch: 2, SeqTokens: 100, Heads: 4, KVHeads: 2, HeadDimQK: 24, HeadDimV: 16},   // ragged last tile, GQA
	{Batch: 1, SeqTokens: 193, Heads: 3, KVHeads: 1, HeadDimQK: 32, HeadDimV: 48},   // MQA, d_v > d_qk
	{Batch: 1, SeqTokens: 130, Heads: 2, KVHeads: 1, HeadDimQK: 192, HeadDimV: 128}, // MLA-like head dims
}

func TestAttentionMatchesNaive(t *testing.T) {
	for _, s := range attentionCases {
		for _, workers := range []int{1, 3} {
			a, err := newAttnBuffers(s, true)
			if err != nil {
				t.Fatal(err)
			}
			attentionForward(a, workers)
			attentionBackward(a, workers)
			o, dq, dk, dv := naiveAttention(a)
			for _, c := range []struct {
				name string
				got  []float32
				want []float64
			}{{"O", a.o, o}, {"dQ", a.dQ, dq}, {"dK", a.dK, dk}, {"dV", a.dV, dv}} {
				if d := maxAbsDiff(c.got, c.want); d >= 1e-4 {
					t.Errorf("%+v workers %d: %s max abs error %.3g, want < 1e-4", s, workers, c.name, d)
				}
			}
			// The backward pass must not depend on stale gradients: run it again.
			attentionBackward(a, workers)
			if d := maxAbsDiff(a.dK, dk); d >= 1e-4 {
				t.Errorf("%+v: second backward dK max abs error %.3g", s, d)
			}
		}
	}
}

// TestNaiveGradientsFiniteDifference checks the reference backward itself: the
// directional derivative of Σ O∘dO along a random Q, K, V perturbation equals
// ⟨dQ, δQ⟩ + ⟨dK, δK⟩ + ⟨dV, δV⟩.
func TestNaiveGradientsFiniteDifference(t *testing.T) {
	s := AttentionShape{Batch: 1, SeqTokens: 7, Heads: 2, KVHeads: 1, HeadDimQK: 4, HeadDimV: 3}
	a, err := newAttnBuffers(s, true)
	if err != nil {
		t.Fatal(err)
	}
	_, dq, dk, dv := naiveAttention(a)
	rng := rand.New(rand.NewPCG(1, 2))
	dirs := [][]float32{randomFloats(rng, len(a.q)), randomFloats(rng, len(a.k)), randomFloats(rng, len(a.v))}
	tensors := [][]float32{a.q, a.k, a.v}
	base := [][]float32{append([]float32(nil), a.q...), append([]float32(nil), a.k...), append([]float32(nil), a.v...)}
	loss := func(eps float64) float64 {
		for i, x := range tensors {
			for j := range x {
				x[j] = base[i][j] + float32(eps)*dirs[i][j]
			}
		}
		o, _, _, _ := naiveAttention(&attnBuffers{s: s, q: a.q, k: a.k, v: a.v, o: a.o})
		var l float64
		for i := range o {
			l += o[i] * float64(a.dO[i])
		}
		return l
	}
	const eps = 1e-3
	numeric := (loss(eps) - loss(-eps)) / (2 * eps)
	var analytic float64
	for i, g := range [][]float64{dq, dk, dv} {
		for j := range g {
			analytic += g[j] * float64(dirs[i][j])
		}
	}
	if math.Abs(numeric-analytic) > 1e-3*math.Max(1, math.Abs(analytic)) {
		t.Errorf("directional derivative: finite difference %.6g, reference gradients %.6g", numeric, analytic)
	}
}

func TestGEMMMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []GEMMShape{{1, 1, 1}, {5, 7, 3}, {70, 33, 129}} {
		a := blas32.General{Rows: sh.M, Cols: sh.K, Stride: sh.K, Data: randomFloats(rng, sh.M*sh.K)}
		b := blas32.General{Rows: sh.K, Cols: sh.N, Stride: sh.N, Data: randomFloats(rng, sh.K*sh.N)}
		c := blas32.General{Rows: sh.M, Cols: sh.N, Stride: sh.N, Data: make([]float32, sh.M*sh.N)}
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
		want := make([]float64, sh.M*sh.N)
		for i := range sh.M {
			for j := range sh.N {
				for l := range sh.K {
					want[i*sh.N+j] += float64(a.Data[i*sh.K+l]) * float64(b.Data[l*sh.N+j])
				}
			}
		}
		if d := maxAbsDiff(c.Data, want); d >= 1e-4 {
			t.Errorf("GEMM %+v: max abs error %.3g", sh, d)
		}
	}
}

func TestAllToAllMovesEveryChunk(t *testing.T) {
	for _, c := range []struct {
		ranks int
		bytes int64
	}{{2, 2}, {4, 4096}, {3, 1000}, {8, 1 << 16}} {
		g := newRankGroup(c.ranks, c.bytes)
		g.allToAll()
		size := int(c.bytes) / c.ranks
		for src := range c.ranks {
			for dst := range c.ranks {
				sent := g.send[src][dst*size : (dst+1)*size]
				got := g.recv[dst][src*size : (src+1)*size]
				if crc32.ChecksumIEEE(sent) != crc32.ChecksumIEEE(got) {
					t.Errorf("%d ranks, %d B: chunk %d→%d differs", c.ranks, c.bytes, src, dst)
				}
			}
		}
		g.close()
	}
}

func TestSendRecvMovesToSuccessor(t *testing.T) {
	for _, ranks := range []int{2, 3, 8} {
		g := newRankGroup(ranks, 4099)
		for range 3 { // repeated steps reuse the links
			clear(g.recv[0])
			g.sendRecv()
			for r := range ranks {
				pred := (r + ranks - 1) % ranks
				if crc32.ChecksumIEEE(g.recv[r]) != crc32.ChecksumIEEE(g.send[pred]) {
					t.Fatalf("%d ranks: rank %d did not receive rank %d's buffer", ranks, r, pred)
				}
			}
		}
		g.close()
		g.close() // idempotent
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{1, 100, 2, 3, 1e9}, 3},
	} {
		in := append([]float64(nil), c.in...)
		if got := median(in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("median reordered its input: %v", in)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("median of nothing did not panic")
		}
	}()
	median(nil)
}

func TestCPUBackendTimesAndRejects(t *testing.T) {
	c := NewCPU(2)
	defer c.Close()
	small := AttentionShape{Batch: 1, SeqTokens: 64, Heads: 2, KVHeads: 1, HeadDimQK: 16, HeadDimV: 16}
	for name, f := range map[string]func() (Timing, error){
		"fwd":  func() (Timing, error) { return c.AttentionForward(small, 1, 3) },
		"bwd":  func() (Timing, error) { return c.AttentionBackward(small, 0, 2) },
		"gemm": func() (Timing, error) { return c.GEMM(GEMMShape{M: 32, N: 16, K: 8}, 1, 3) },
		"a2a":  func() (Timing, error) { return c.AllToAll(4, 4096, 1, 3) },
		"p2p":  func() (Timing, error) { return c.SendRecv(4, 4096, 1, 3) },
	} {
		tm, err := f()
		if err != nil || tm.Seconds <= 0 || tm.Repeats < 2 {
			t.Errorf("%s: %+v, %v", name, tm, err)
		}
	}
	for name, f := range map[string]func() (Timing, error){
		"no repeats":   func() (Timing, error) { return c.GEMM(GEMMShape{M: 1, N: 1, K: 1}, 0, 0) },
		"zero size":    func() (Timing, error) { return c.GEMM(GEMMShape{M: 0, N: 1, K: 1}, 0, 1) },
		"bad gqa":      func() (Timing, error) { return c.AttentionForward(AttentionShape{1, 8, 3, 2, 8, 8}, 0, 1) },
		"huge":         func() (Timing, error) { return c.GEMM(GEMMShape{M: 1 << 20, N: 1 << 20, K: 1}, 0, 1) },
		"one rank":     func() (Timing, error) { return c.AllToAll(1, 4096, 0, 1) },
		"byte < ranks": func() (Timing, error) { return c.AllToAll(4, 3, 0, 1) },
		"no bytes":     func() (Timing, error) { return c.SendRecv(2, 0, 0, 1) },
	} {
		if _, err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if NewCPU(0).Workers() < 1 {
		t.Error("NewCPU(0) has no workers")
	}
}
