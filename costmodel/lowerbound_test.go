package costmodel

import (
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sched"
)

// lbLlama is Llama-3-8B on one node of 8 GPUs of the profile, tp1 pp1,
// without communication: the bound is its compute at the curves' rates plus
// the optimizer step.
func lbLlama(t *testing.T, prof *calib.Profile, opts Options) *Model {
	t.Helper()
	m, err := job.LookupModel(job.ModelLlama3With8B)
	if err != nil {
		t.Fatal(err)
	}
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: prof.Name, GPUs: 8, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 1, BudgetTokens: 65536}, ContextTokens: 65536}
	mod, err := New(j, prof, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// lbProfile is the named embedded profile, a copy the test may edit.
func lbProfile(t *testing.T, name string) *calib.Profile {
	t.Helper()
	p, err := calib.LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	cp := *p
	return &cp
}

// TestStepLowerBoundHand: on a one-stage job without communication the bound
// is, by hand from calib's formulas, every GEMM at the asymptotic slope of
// its roofline (compute 2nk + (2/3)·Half·(n+k) FLOP-equivalents per row at
// peak·Max, or its bytes 2(n+k) per row at the memory-bound bandwidth,
// whichever is slower; backward twice), the memory-bound ops' bytes, the
// head, and causal attention at the curves' efficiency at the sequence's
// length, over the G ranks, plus the optimizer step less its rounding.
func TestStepLowerBoundHand(t *testing.T) {
	prof := lbProfile(t, "H800")
	mod := lbLlama(t, prof, Options{NoComm: true})
	m := mod.Job().Model
	if m.Attention != job.GQA || m.QKNorm || m.GatedAttention || m.LearnedPositions || m.Activation == job.GELU || m.HeadDimQK != 128 {
		t.Fatalf("llama-3-8b is no longer the plain GQA SwiGLU model this test prices by hand: %+v", m)
	}
	peak, gmax, half := prof.TensorPeak(false), prof.GEMM.Max.Value, prof.GEMM.Half.Value
	bw := prof.HBMBytesPerSecond.Value * prof.MemoryBoundEfficiency.Value
	gemm := func(n, k float64) float64 { // forward seconds per row
		return max((2*n*k+2.0/3*half*(n+k))/(peak*gmax), 2*(n+k)/bw)
	}
	h, nh, nkv, d := float64(m.Hidden), float64(m.QueryHeads), float64(m.KVHeads), float64(m.HeadDimQK)
	f, v := float64(m.DenseFFN), float64(m.Vocab)
	layerGEMM := gemm(nh*d, h) + gemm(nkv*d, h) + gemm(nkv*d, h) + gemm(h, nh*d) + gemm(2*f, h) + gemm(h, f)
	w := (nh + nkv) * d // RoPE's width
	memFwd := 4*h + 4*w + 6*h + 4*h + 6*f + 6*h
	memBwd := 6*h + 4*w + 6*h + 6*h + 10*f + 6*h
	perToken := float64(m.Layers)*(3*layerGEMM+(memFwd+memBwd)/bw) + 3*gemm(v, h) + (4*h+6*v+6*h+6*v)/bw

	c := nh * 2 * d
	attention := func(s float64) float64 {
		ef := prof.AttentionFwd.Max.Value * s / (s + prof.AttentionFwd.Half.Value)
		eb := prof.AttentionBwd.Max.Value * s / (s + prof.AttentionBwd.Half.Value)
		return c * s * s / (peak * ef) * (1 + 2.5*ef/eb)
	}
	for _, lengths := range [][]int{{65536}, {1024, 2048, 4096, 8192, 16384, 32768}, {1, 17, 300, 5000, 0}} {
		var tokens, attn float64
		for _, s := range lengths {
			if s > 0 {
				tokens += float64(s)
				attn += attention(float64(s))
			}
		}
		want := (perToken*tokens+float64(m.Layers)*attn)/8*(1-1e-12) + mod.optimizer[0] - 0.5e-9
		got := mod.StepLowerBoundSeconds(lengths)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("%v: bound %.12g s, by hand %.12g s (rel %.3g)", lengths, got, want, (got-want)/want)
		}
	}
}

// TestStepLowerBoundScales: with flat attention curves (Half = 0) doubling
// every length quadruples the attention part of the bound and doubles the
// token part; the bound is positive for a batch, is the optimizer step
// alone (no work) for an empty one, grows with every sequence added, and
// refuses a negative length.
func TestStepLowerBoundScales(t *testing.T) {
	prof := lbProfile(t, "H100-SXM")
	prof.AttentionFwd.Half.Value, prof.AttentionBwd.Half.Value = 0, 0
	mod := lbLlama(t, prof, Options{})
	b := mod.stepBound()
	st := b.stages[0]
	parts := func(lengths []int) (tokens, attn float64) {
		lb := mod.StepLowerBoundSeconds(lengths)
		for _, s := range lengths {
			tokens += float64(s)
		}
		return st.tokenSeconds * tokens, (lb-st.tailSeconds)*8/(1-1e-12) - st.tokenSeconds*tokens
	}
	lengths := batch(3, 8*16384)
	twice := make([]int, len(lengths))
	for i, s := range lengths {
		twice[i] = 2 * s
	}
	tok1, attn1 := parts(lengths)
	tok2, attn2 := parts(twice)
	if !near(tok2, 2*tok1, 1e-12) || !near(attn2, 4*attn1, 1e-9) || !(attn1 > 0) {
		t.Errorf("doubled lengths: token part %g -> %g, attention part %g -> %g; want ×2 and ×4", tok1, tok2, attn1, attn2)
	}
	lb := mod.StepLowerBoundSeconds(lengths)
	if !(lb > st.tailSeconds) {
		t.Errorf("bound %g s, tail alone %g s", lb, st.tailSeconds)
	}
	if got := mod.StepLowerBoundSeconds(nil); got != st.tailSeconds || !(got > 0) {
		t.Errorf("empty batch: %g s, want the tail %g s", got, st.tailSeconds)
	}
	if more := mod.StepLowerBoundSeconds(append(slices.Clone(lengths), 100)); !(more > lb) {
		t.Errorf("a sequence more: %g s, not above %g s", more, lb)
	}
	defer func() {
		if recover() == nil {
			t.Error("negative length: no panic")
		}
	}()
	mod.StepLowerBoundSeconds([]int{5, -1})
}

// TestStepLowerBoundChords: the bound's per-token slopes lie below what
// calib prices at every token count, for every preset model on every
// embedded profile, tp and sequence parallelism: f(t) >= slope·t + the
// layer's launches, for the dense and MoE layers' ops and the head, forward
// and backward (the convexity the difference quotients rely on). And the
// attention the pricer charges a sequence split k ways at any block of at
// most its length, summed over the k ranks, is at least the bound's q.
func TestStepLowerBoundChords(t *testing.T) {
	tokens := []int{1, 3, 64, 257, 1000, 4096, 12345, 65536, 1 << 20, 3 << 20}
	for _, pname := range calib.ProfileNames() {
		prof := lbProfile(t, pname)
		for _, mname := range job.ModelNames() {
			model, err := job.LookupModel(mname)
			if err != nil {
				t.Fatal(err)
			}
			for _, par := range []job.Parallel{{TP: 1, EP: 1}, {TP: 2, EP: 2, SequenceParallel: true}, {TP: 4, EP: 4}} {
				if model.RoutedExperts%par.EP != 0 || model.KVHeads%par.TP != 0 {
					continue
				}
				par.PP = 1
				j := job.Job{Model: model, Parallel: par}
				for _, kernel := range []compute.AttentionKernel{compute.FlashAttention, compute.MegatronSoftmax} {
					comp, err := compute.NewCompute(prof, j)
					if err != nil {
						t.Fatal(err)
					}
					comp.Attention = kernel
					dense, moe := -1, -1
					if model.DenseLayers > 0 {
						dense = 0
					}
					if model.DenseLayers < model.Layers {
						moe = model.Layers - 1
					}
					sl, launch := slopesOf(comp, dense, moe)
					for _, tok := range tokens {
						for kind, l := range [2]int{dense, moe} {
							if l < 0 {
								continue
							}
							f, b := compute.OpsSeconds(comp.LayerOps(l, tok))
							if f < sl.layer[kind][0]*float64(tok)+launch*(1-1e-12) || b < sl.layer[kind][1]*float64(tok)+launch*(1-1e-12) {
								t.Errorf("%s %s tp%d layer %d at %d tokens: %g/%g s below the slopes %g/%g s/token + launch %g s",
									pname, mname, par.TP, l, tok, f, b, sl.layer[kind][0], sl.layer[kind][1], launch)
							}
						}
						f, b := comp.HeadSeconds(tok)
						if f < sl.head[0]*float64(tok) || b < sl.head[1]*float64(tok) {
							t.Errorf("%s %s tp%d head at %d tokens: %g/%g s below the slopes", pname, mname, par.TP, tok, f, b)
						}
						s := tok
						q := comp.AttentionFwdSeconds(s, 1, s) + comp.AttentionBwdSeconds(s, 1, s)
						for _, k := range []int{1, 2, 8, 64} {
							for _, blk := range []int{1, max(1, s/k), s} {
								got := float64(k) * (comp.AttentionFwdSeconds(s, k, blk) + comp.AttentionBwdSeconds(s, k, blk))
								if got < q*(1-1e-12) {
									t.Errorf("%s %s %v: %d tokens over %d ranks at block %d: %g s, below q = %g s", pname, mname, kernel, s, k, blk, got, q)
								}
							}
						}
					}
				}
			}
		}
	}
}

// lbPlans are hand-built plans of lengths on g ranks, one microbatch unless
// named otherwise: every sequence on its own rank (round robin), pairs of
// ranks, one group of the whole pool, the whole pool under an equal CP × HP
// layout (hp ranks per HP group, heads query heads per TP rank), and
// 2·pp microbatches of sequences dealt round robin. With vpp > 1 the
// one-microbatch plans end with pp − 1 empty ones (every rank runs them
// idle), as the interleaved schedule needs a multiple of pp.
func lbPlans(g, pp, vpp, hp, heads int, lengths []int) map[string]*sched.Plan {
	spread := func(size int, ids []int) []sched.Group {
		groups := make([]sched.Group, g/size)
		for i := range groups {
			groups[i] = sched.Group{FirstRank: i * size, Size: size}
		}
		for n, id := range ids {
			groups[n%len(groups)].Seqs = append(groups[n%len(groups)].Seqs, id)
		}
		return slices.DeleteFunc(groups, func(gr sched.Group) bool { return len(gr.Seqs) == 0 })
	}
	all := make([]int, len(lengths))
	var total int
	for i, s := range lengths {
		all[i] = i
		total += s
	}
	one := func(groups []sched.Group) *sched.Plan {
		p := &sched.Plan{PoolRanks: g, Microbatches: []sched.Microbatch{{Groups: groups}}}
		if vpp > 1 {
			p.Microbatches = append(p.Microbatches, make([]sched.Microbatch, pp-1)...)
		}
		return p
	}
	out := map[string]*sched.Plan{
		"rank-each": one(spread(1, all)),
		"pairs":     one(spread(2, all)),
		"pool":      one([]sched.Group{{FirstRank: 0, Size: g, Seqs: all}}),
		"layout":    one([]sched.Group{{FirstRank: 0, Size: g, Seqs: all, Layout: equalLayout(g, hp, total, heads)}}),
	}
	mbs := &sched.Plan{PoolRanks: g}
	for k := range 2 * pp {
		var ids []int
		for i := k; i < len(lengths); i += 2 * pp {
			ids = append(ids, i)
		}
		mbs.Microbatches = append(mbs.Microbatches, sched.Microbatch{Groups: spread(1, ids)})
	}
	out["microbatches"] = mbs
	return out
}

// lbModels are jobs that exercise every part of the bound: pipelines with
// interleaving and stages part way through a node (each stage priced on
// its own layout), no communication, FP8 dispatch, tp with and without
// sequence parallelism, full recomputation of some layers and selective of
// all, the Megatron softmax kernel, an all-reduce gradient sync, a mixed
// cluster.
func lbModels(t *testing.T) map[string]*Model {
	return map[string]*Model{
		"pp3-vpp2": simModel(t, 96, 3, 2, 8, Options{UlyssesAcrossNodes: true}),
		"straddle": simModel(t, 36, 3, 1, 4, Options{}),
		"nocomm":   simModel(t, 48, 3, 1, 8, Options{NoComm: true}),
		"fp8":      simModel(t, 32, 1, 1, 8, Options{FP8Dispatch: true}),
		"tp2-sp": simModelWith(t, 48, 3, 1, 8, Options{}, func(j *job.Job) {
			j.Parallel.TP, j.Parallel.SequenceParallel = 2, true
		}),
		"tp2": simModelWith(t, 48, 3, 1, 8, Options{}, func(j *job.Job) { j.Parallel.TP = 2 }),
		"full-3": simModelWith(t, 48, 3, 1, 8, Options{}, func(j *job.Job) {
			j.Parallel.Recompute, j.Parallel.RecomputeLayers = job.RecomputeFull, 3
		}),
		"selective": simModelWith(t, 96, 3, 2, 8, Options{}, func(j *job.Job) { j.Parallel.Recompute = job.RecomputeSelective }),
		"megatron":  simModel(t, 32, 1, 1, 8, Options{AttentionKernel: compute.MegatronSoftmax}),
		"allreduce": simModelWith(t, 48, 3, 1, 8, Options{}, func(j *job.Job) { j.Parallel.GradSync = job.GradAllReduce }),
		"mixed":     mixedModel(t),
	}
}

// TestStepLowerBoundBelowSimulate: the bound never exceeds the step
// Simulate gives, for hand-built plans under every CP execution (with and
// without overlap, with a planner stall) and for every registered policy's
// plans, on every job of lbModels. It logs the tightness (LB/step).
func TestStepLowerBoundBelowSimulate(t *testing.T) {
	mods := lbModels(t)
	ran := 0
	var ratios []float64
	check := func(name string, mod *Model, plan *sched.Plan, lengths []int, exec Exec, stall float64) {
		out, err := mod.Simulate(plan, lengths, exec, stall)
		if err != nil {
			return // a plan the network cannot run under this execution
		}
		ran++
		step, lb := out.Result.IterationSeconds(), mod.StepLowerBoundSeconds(lengths)
		if !(lb > 0) || lb > step*(1+1e-9) {
			t.Errorf("%s: lower bound %.12g s above the step %.12g s", name, lb, step)
		}
		ratios = append(ratios, lb/step)
	}
	for _, mname := range slices.Sorted(maps.Keys(mods)) {
		mod := mods[mname]
		j := mod.Job()
		g := j.PoolRanks()
		heads := j.Model.QueryHeads / j.Parallel.TP
		lengths := batch(11, g*6144)
		plans := lbPlans(g, max(j.Parallel.PP, 1), max(j.Parallel.VPP, 1), 4, heads, lengths)
		for _, pname := range slices.Sorted(maps.Keys(plans)) {
			for _, cp := range []sched.CPExec{sched.Ulysses, sched.Ring, sched.UlyssesRing, sched.AllGatherKV} {
				for _, overlap := range []bool{false, true} {
					check(mname+"/"+pname+"/"+cp.String(), mod, plans[pname], lengths, Exec{CP: cp, OverlapAllToAll: overlap}, 0)
				}
			}
			check(mname+"/"+pname+"/stall", mod, plans[pname], lengths, Exec{CP: sched.Ring}, 0.25)
		}
	}
	for _, c := range simCases(t, mods) {
		check(c.name, c.mod, c.plan, c.lengths, c.exec, 0)
	}
	if ran < 600 {
		t.Errorf("only %d plans simulated", ran)
	}
	slices.Sort(ratios)
	if len(ratios) > 0 {
		t.Logf("%d plans: LB/step min %.3f median %.3f max %.3f", ran, ratios[0], ratios[len(ratios)/2], ratios[len(ratios)-1])
	}
}

// TestStepLowerBoundTight: when every rank holds the same sequences in one
// microbatch on one stage without communication, the step is the bound but
// for the GEMMs' constant terms and the kernel launches: within 1%.
func TestStepLowerBoundTight(t *testing.T) {
	mod := lbLlama(t, lbProfile(t, "H800"), Options{NoComm: true})
	var lengths []int
	plan := &sched.Plan{PoolRanks: 8, Microbatches: []sched.Microbatch{{}}}
	for r := range 8 {
		g := sched.Group{FirstRank: r, Size: 1}
		for _, s := range []int{16384, 8192, 4096} {
			g.Seqs = append(g.Seqs, len(lengths))
			lengths = append(lengths, s)
		}
		plan.Microbatches[0].Groups = append(plan.Microbatches[0].Groups, g)
	}
	out, err := mod.Simulate(plan, lengths, Exec{CP: sched.Ulysses}, 0)
	if err != nil {
		t.Fatal(err)
	}
	step, lb := out.Result.IterationSeconds(), mod.StepLowerBoundSeconds(lengths)
	t.Logf("balanced plan: bound %g s, step %g s, ratio %.4f", lb, step, lb/step)
	if !(lb <= step && lb >= 0.99*step) {
		t.Errorf("balanced plan: bound %g s, step %g s (ratio %.4f); want within 1%%", lb, step, lb/step)
	}
}

// TestStepLowerBoundConcurrent: goroutines asking one fresh Model at once
// get the same bound as a lone caller on another.
func TestStepLowerBoundConcurrent(t *testing.T) {
	lengths := batch(5, 48*8192)
	want := simModel(t, 48, 3, 1, 8, Options{}).StepLowerBoundSeconds(lengths)
	mod := simModel(t, 48, 3, 1, 8, Options{})
	var wg sync.WaitGroup
	got := make([]float64, 8)
	for i := range got {
		wg.Go(func() { got[i] = mod.StepLowerBoundSeconds(lengths) })
	}
	wg.Wait()
	for i, g := range got {
		if g != want {
			t.Errorf("goroutine %d: %v, want %v", i, g, want)
		}
	}
}

// TestStepLowerBoundCacheLetsGo: the cache of precomputed bounds does not
// keep a Model alive: its entry goes once the Model is collected.
func TestStepLowerBoundCacheLetsGo(t *testing.T) {
	mod := simModel(t, 32, 1, 1, 8, Options{})
	mod.StepLowerBoundSeconds([]int{4096})
	key := weak.Make(mod)
	if _, ok := stepBounds.Load(key); !ok {
		t.Fatal("no cache entry after a call")
	}
	mod = nil
	for range 200 {
		runtime.GC()
		if _, ok := stepBounds.Load(key); !ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Error("the cache entry outlived its Model")
}
