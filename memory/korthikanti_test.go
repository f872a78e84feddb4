package memory

import (
	"testing"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
)

// korthikantiTable3 is Table 3 of Korthikanti et al. 2022 (arXiv 2205.05198)
// with §6's s = 2048, V = 51200, t = 8 and m = 3 interleaving stages for 175B
// and 530B only. Every run has no data parallelism, so the microbatches per
// iteration are global batch / b.
var korthikantiTable3 = []struct {
	name                 string
	a, h, layers, tp, pp int
	b, globalBatch, m    int // micro-batch, global batch, interleaving stages (1 = plain 1F1B)
}{
	{"22B", 64, 6144, 48, 8, 1, 4, 4, 1},
	{"175B", 96, 12288, 96, 8, 8, 1, 64, 3},
	{"530B", 128, 20480, 105, 8, 35, 1, 280, 3},
	{"1T", 160, 25600, 128, 8, 64, 1, 512, 1},
}

const (
	korthikantiSeq   = 2048
	korthikantiVocab = 51200
)

// firstStageChunksInFlight returns the chunk of each forward stage 0 has run
// and not yet run backward at its peak, the moment before its first backward:
// p forwards of its one chunk under plain 1F1B (Narayanan et al. SC'21
// Fig. 4-top: the first stage holds p microbatches), and under Megatron-LM's
// interleaved schedule warmup = (p−1)·2 + (v−1)·p forwards plus the one that
// precedes the first backward, forward k running chunk (k mod p·v) / p
// (megatron/core/pipeline_parallel/schedules.py, get_model_chunk_id). After
// that each forward is matched by a backward, so the count does not grow.
func firstStageChunksInFlight(p, v, microbatches int) []int {
	n := p
	if v > 1 {
		n = (p-1)*2 + (v-1)*p + 1
	}
	n = min(n, microbatches*v)
	out := make([]int, n)
	for k := range n {
		out[k] = (k % (p * v)) / p
	}
	return out
}

// TestKorthikantiTable3FirstStage compares the first stage's activations at
// its peak with Korthikanti's Eq. 5/6 for the four Table 3 models, with
// TP+SP+selective recompute (the paper's "present work") and with the TP
// baseline (Table 2's second row, no SP, no recompute), both under the
// Megatron softmax kernel (dropout on, as the paper's GPT runs).
//
// The paper's formula counts the L·(1 + (p−1)/(p·m)) transformer layers the
// first stage holds; dcpsim's number adds, per microbatch of the first chunk
// held, the token ids (8 bytes per token) and the embedding's dropout mask (h
// per token, h/t with SP), and, when p = 1, the output layer's input and FP32
// logits (4h/t + 4V/t per token). The layer part must equal the formula
// exactly, and the extras must be exactly those: they are not the
// "< 0.01%" the paper claims for 22B (its own §4.3 extra term is about
// 0.8·sbhL/t there, about 2.3% of Eq. 6, mostly the logits), so a 0.1%
// bound on the totals would not hold; the totals are bounded at 2.5%.
func TestKorthikantiTable3FirstStage(t *testing.T) {
	s := float64(korthikantiSeq)
	for _, r := range korthikantiTable3 {
		mod, err := job.GPT("korthikanti-"+r.name, r.h, 4*r.h, r.a, r.layers, korthikantiVocab, korthikantiSeq)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		p, v, L := r.pp, r.m, r.layers
		if L%p != 0 || (L/p)%v != 0 {
			t.Errorf("%s: L = %d does not split into %d stages of %d chunks", r.name, L, p, v)
			continue
		}
		// The interleaving identity: ((p−1)·2 + (v−1)·p + 1)·L/(p·v) layers
		// = L·(1 + (p−1)/(p·v)), in integers: held·p·v = L·(p·v + p − 1).
		inFlight := firstStageChunksInFlight(p, v, r.globalBatch/r.b)
		chunkLayers := L / (p * v)
		held := len(inFlight) * chunkLayers
		if v > 1 {
			if want := (p-1)*2 + (v-1)*p + 1; len(inFlight) != want {
				t.Errorf("%s: %d chunk forwards in flight, want (p−1)·2 + (v−1)·p + 1 = %d", r.name, len(inFlight), want)
			}
		}
		switch {
		case v == 1 && held != L:
			t.Errorf("%s: plain 1F1B stage 0 holds %d layers, want p·L/p = L = %d", r.name, held, L)
		case v > 1 && held*p*v != L*(p*v+p-1):
			t.Errorf("%s: stage 0 holds %d layers, want L·(1 + (p−1)/(p·v)) = %d·(1 + %d/%d) = %g",
				r.name, held, L, p-1, p*v, float64(L)*(1+float64(p-1)/float64(p*v)))
		}
		factor := 1.0
		if v > 1 {
			factor = 1 + float64(p-1)/float64(p*v)
		}
		nFirst := 0 // microbatches of stage 0's first chunk held
		for _, c := range inFlight {
			if c == 0 {
				nFirst++
			}
		}

		h, a, tp, b := float64(r.h), float64(r.a), float64(r.tp), float64(r.b)
		tokens, scores := s*b, b*s*s // per microbatch: b sequences of s tokens, s² scores each
		for _, mode := range []struct {
			name    string
			sp      bool
			rc      job.RecomputeGranularity
			perLay  float64 // Table 2 row × sbh, per layer
			embDrop float64 // embedding dropout mask per token
		}{
			{"TP+SP+selective", true, job.RecomputeSelective, 34 * s * b * h / tp, h / tp},
			{"TP baseline", false, job.RecomputeNone, s * b * h * (10 + 24/tp + 5*a*s/(h*tp)), h},
		} {
			j := job.Job{
				Model:   mod,
				Cluster: job.Cluster{GPU: "A100-80G", GPUs: r.tp * r.pp, GPUsPerNode: 8},
				Parallel: job.Parallel{TP: r.tp, PP: p, VPP: v, EP: 1, BudgetTokens: int(tokens),
					SequenceParallel: mode.sp, Recompute: mode.rc, GradSync: job.GradAllReduce},
				ContextTokens: korthikantiSeq,
			}
			if err := j.Validate(); err != nil {
				t.Errorf("%s %s: job invalid: %v", r.name, mode.name, err)
			}
			m := mustNew(t, j, compute.MegatronSoftmax)
			var ours float64
			for _, c := range inFlight {
				ours += m.Chunk(0, c).Kept(tokens, scores)
			}
			formula := mode.perLay * float64(L) * factor
			extras := float64(nFirst) * tokens * (8 + mode.embDrop)
			if p == 1 {
				extras += tokens * (4*h/tp + 4*korthikantiVocab/tp)
			}
			if !relClose(ours-extras, formula, 1e-9) {
				t.Errorf("%s %s: first stage's layers keep %.6g B (%.4f GiB), Korthikanti's formula %.6g B (%.4f GiB)",
					r.name, mode.name, ours-extras, (ours-extras)/gib, formula, formula/gib)
			}
			if !relClose(ours, formula, 0.025) {
				t.Errorf("%s %s: first stage keeps %.4f GiB, formula %.4f GiB: %.3f%% apart, want within 2.5%%",
					r.name, mode.name, ours/gib, formula/gib, 100*(ours/formula-1))
			}
			if mode.sp {
				// Korthikanti Appendix B: the first stage of 530B gains sbhp = 2.73 GiB
				// from deallocating pipeline outputs; not modelled, but a check
				// of the unit (GiB) and of s·b·h·p.
				if r.name == "530B" {
					if sbhp := s * b * h * float64(p) * 2 / gib; !relClose(sbhp, 2.734, 0.001) {
						t.Errorf("530B: 2·s·b·h·p = %.4f GiB, paper says 2.73 GB", sbhp)
					}
				}
			}
		}
	}
}

const gib = 1 << 30

// TestKorthikantiReductions checks §5/§6.1's qualitative claims on the layer
// part: selective recompute saves "70% and 65%" for GPT-3 and MT-NLG against
// the SP baseline, and SP + selective is about 5× less than the TP baseline.
func TestKorthikantiReductions(t *testing.T) {
	for _, c := range []struct {
		name      string
		r         int // index into korthikantiTable3
		selSaving float64
	}{{"175B", 1, 0.70}, {"530B", 2, 0.65}} {
		r := korthikantiTable3[c.r]
		mod := gptModel(t, r.h, r.a, r.layers, korthikantiVocab, korthikantiSeq)
		s := float64(korthikantiSeq)
		per := func(sp bool, rc job.RecomputeGranularity) float64 {
			m := mustNew(t, gptJob(mod, r.tp, 1, 1, sp, rc), compute.MegatronSoftmax)
			tok, sc := m.LayerBytes(0, rc)
			return tok + sc*s
		}
		spNone, spSel, tpNone := per(true, job.RecomputeNone), per(true, job.RecomputeSelective), per(false, job.RecomputeNone)
		if saving := 1 - spSel/spNone; saving < c.selSaving-0.01 || saving > c.selSaving+0.01 {
			t.Errorf("%s: selective saves %.1f%% of SP's activations, paper says %.0f%%", c.name, 100*saving, 100*c.selSaving)
		}
		if ratio := tpNone / spSel; ratio < 4.5 || ratio > 6 {
			t.Errorf("%s: TP baseline / (SP + selective) = %.2f, paper says ∼5×", c.name, ratio)
		}
	}
}
