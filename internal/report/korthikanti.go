package report

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"path/filepath"
	"strings"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
)

// KorthikantiRow is one model of Korthikanti et al. 2022's Table 3 (arXiv
// 2205.05198; s = 2048, V = 51,200, Megatron-LM's GPT with dropout and its
// softmax attention): the first pipeline stage's activations as their
// formulas give them and as the memory model gives them for the stage's
// microbatches in flight under 1F1B (interleaved with m = 3 chunks for 175B
// and 530B, as the paper runs them), GiB per GPU.
type KorthikantiRow struct {
	Model                         string
	Heads, Hidden, Layers, TP, PP int
	Chunks, Microbatch            int
	// PaperPresent and OursPresent are sequence parallelism with selective
	// recomputation (the paper's "present work", Eq. 6: 34·sbhL/t, times
	// 1 + (p−1)/(p·m) when interleaved); PaperBaseline and OursBaseline
	// tensor parallelism alone (Table 2: sbhL·(10 + 24/t + 5as/(ht))).
	PaperPresent, OursPresent, PaperBaseline, OursBaseline float64
	// OursFull is full recomputation with SP (2sbhL/t and the output layer).
	OursFull float64
}

// korthikantiTable3 is the paper's Table 3 (a, h, L, t, p, micro-batch b)
// and the interleaving it states (m = 3 for 175B and 530B, §6).
var korthikantiTable3 = []struct {
	name                  string
	a, h, l, t, p, b, vpp int
}{
	{"22B", 64, 6144, 48, 8, 1, 4, 1},
	{"175B (GPT-3)", 96, 12288, 96, 8, 8, 1, 3},
	{"530B (MT-NLG)", 128, 20480, 105, 8, 35, 1, 3},
	{"1T", 160, 25600, 128, 8, 64, 1, 1},
}

// KorthikantiRows computes the rows (memory.Model.HeldPerToken of stage 0
// times the microbatch's s·b tokens, scores s per token).
func KorthikantiRows() ([]KorthikantiRow, error) {
	const s, vocab = 2048, 51200
	var rows []KorthikantiRow
	for _, c := range korthikantiTable3 {
		m, err := job.GPT(c.name, c.h, 4*c.h, c.a, c.l, vocab, s)
		if err != nil {
			return nil, err
		}
		held := func(sp bool, rc job.RecomputeGranularity) (float64, error) {
			j := job.Job{Model: m, Cluster: job.Cluster{GPU: "A100-80G", GPUs: c.t * c.p, GPUsPerNode: 8},
				Parallel: job.Parallel{TP: c.t, PP: c.p, VPP: c.vpp, EP: 1, BudgetTokens: s * c.b, SequenceParallel: sp, Recompute: rc,
					GradSync: job.GradAllReduce}, ContextTokens: s}
			mm, err := memory.New(j, compute.MegatronSoftmax)
			if err != nil {
				return 0, err
			}
			return mm.HeldPerToken(0, s) * float64(s*c.b) / memory.GiB, nil
		}
		r := KorthikantiRow{Model: c.name, Heads: c.a, Hidden: c.h, Layers: c.l, TP: c.t, PP: c.p, Chunks: c.vpp, Microbatch: c.b}
		if r.OursPresent, err = held(true, job.RecomputeSelective); err != nil {
			return nil, err
		}
		if r.OursBaseline, err = held(false, job.RecomputeNone); err != nil {
			return nil, err
		}
		if r.OursFull, err = held(true, job.RecomputeFull); err != nil {
			return nil, err
		}
		sbhl := float64(s*c.b) * float64(c.h) * float64(c.l)
		inter := 1.0
		if c.vpp > 1 {
			inter = 1 + float64(c.p-1)/float64(c.p*c.vpp)
		}
		t := float64(c.t)
		r.PaperPresent = 34 * sbhl / t * inter / memory.GiB
		r.PaperBaseline = sbhl * (10 + 24/t + 5*float64(c.a)*s/(float64(c.h)*t)) * inter / memory.GiB
		rows = append(rows, r)
	}
	return rows, nil
}

// writeKorthikanti writes the rows as REPORT.md's table.
func writeKorthikanti(w *strings.Builder) {
	rows, err := KorthikantiRows()
	if err != nil {
		fmt.Fprintf(w, "Korthikanti et al.'s Table 3 models: %v\n\n", err)
		return
	}
	fmt.Fprintln(w, "Korthikanti et al. 2022 (arXiv 2205.05198) Table 3's runs, first pipeline stage, GiB per GPU: their formulas")
	fmt.Fprintln(w, "(Eq. 6 for sequence parallelism with selective recomputation, Table 2's tensor-parallel row for the baseline, each")
	fmt.Fprintln(w, "times 1 + (p−1)/(p·m) when interleaved) beside the memory model's kept activations of the stage's microbatches in")
	fmt.Fprintln(w, "flight (the schedule's own count; the embedding's ids and dropout mask, and at p = 1 the output layer, included).")
	fmt.Fprintln(w, "The paper prints these only as bars (Figs. 1 and 7), so the formula is what we set beside ours.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| model | a | h | L | t | p | m | b | SP + selective, paper / here | TP only, paper / here | full recompute, here |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %.2f / %.2f (%+.1f%%) | %.2f / %.2f (%+.1f%%) | %.2f |\n",
			r.Model, r.Heads, r.Hidden, r.Layers, r.TP, r.PP, r.Chunks, r.Microbatch,
			r.PaperPresent, r.OursPresent, 100*(r.OursPresent/r.PaperPresent-1),
			r.PaperBaseline, r.OursBaseline, 100*(r.OursBaseline/r.PaperBaseline-1), r.OursFull)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The differences are the terms the paper's totals leave out: the embedding's dropout mask on every first-chunk")
	fmt.Fprintln(w, "microbatch in flight (15 and 69 of them, not p, under the interleaved schedules) and, for 22B at p = 1, the output")
	fmt.Fprintln(w, "layer's input and FP32 logits; the transformer layers alone agree with the formulas to 10⁻⁹ (memory/korthikanti_test.go).")
	fmt.Fprintln(w)
}

// memoryBefore are the mean step times (s) of the scenarios whose layouts
// changed with the memory model, from results/ at commit fc5ed17 (before
// it): scenario → policy → seconds.
var memoryBefore = map[string]map[string]float64{
	"testbed-256k":                 {"hydra": 14.891, "mcore": 30.117, "static": 31.798},
	"production-256k":              {"hydra": 6.786, "mcore": 13.146, "static": 15.586},
	"production-256k-node-ulysses": {"hydra": 19.373, "mcore": 13.146, "static": 15.586},
	"hy3-8k":                       {"hydra": 17.093, "mcore": 33.704, "static": 40.095, "bytescale": 28.357, "wlb-llm": 22.681, "flexsp": 23.962},
	"hexiseq-h100-a100":            {"hexiseq": 12.637, "usp": 24.285, "hydra-hetero": 20.123, "hydra": 28.584},
	"hetero-long-256k":             {"hydra-hetero": 7.824, "hydra": 13.434, "hexiseq": 6.682, "usp": 12.920, "mcore": 13.091, "static": 15.510},
	"hexiseq-flop-mixed":           {"hexiseq": 16.988, "usp": 29.716, "hydra-hetero": 30.029, "hydra": 42.721},
	"hexiseq-flop-h100":            {"hexiseq": 16.318, "usp": 16.318, "hydra-hetero": 29.877, "hydra": 29.877},
}

// memoryRuns are the runs of results/ the memory section lists, in order.
var memoryRuns = []string{"testbed-32k", "testbed-256k", "testbed-256k-v2-lite", "production-256k", "production-256k-node-ulysses",
	"hy3-8k", "hexiseq-h100-a100", "hetero-long-256k", "hexiseq-flop-mixed", "hexiseq-flop-h100"}

// writeMemory writes REPORT.md's memory section: the Korthikanti
// comparison, and per run its recomputation, budget, each policy's peak
// memory per GPU against the HBM, and the step before the memory model.
func writeMemory(w *strings.Builder, dir string) {
	fmt.Fprintln(w, "## Memory: what fits")
	fmt.Fprintln(w)
	writeKorthikanti(w)
	fmt.Fprintln(w, "Each run's peak memory per GPU (model states + the 10 GB reserve + the activations its plans held, read off the")
	fmt.Fprintln(w, "simulated schedule; `dcpsim memory S` gives the budget's worst case), and its mean step beside the one before the")
	fmt.Fprintln(w, "memory model, where the scenario's recomputation changed with it. The paper's 256K jobs run at")
	fmt.Fprintln(w, "B = 8K, which the MLA stand-in holds only with recomputation (126 GiB on the H20 without, 124 GiB on the H800): the")
	fmt.Fprintln(w, "paper does not say what it recomputed, so each scenario recomputes the fewest layers per stage that fit")
	fmt.Fprintln(w, "(Megatron's --recompute-method block), and the recomputed forward lengthens every step. The paper's")
	fmt.Fprintln(w, "measured steps were taken with whatever it used, so the gap to them moves too.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | recompute | B | policy: peak GiB of HBM GiB (step s: before → now) |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, name := range memoryRuns {
		s, err := results.ReadSummary(filepath.Join(dir, name, "summary.json"))
		if s == nil || err != nil { // an error was returned by checkSummaries
			fmt.Fprintf(w, "| %s | missing (run `make figures`) | | |\n", name)
			continue
		}
		rc := s.Recompute
		if s.RecomputeLayers > 0 {
			rc += fmt.Sprintf(", %d layers per chunk", s.RecomputeLayers)
		}
		var cells []string
		for _, p := range s.Policies {
			if p.OutOfMemory != nil {
				cells = append(cells, fmt.Sprintf("%s: out of memory (%.1f of %.1f)", p.Policy, p.OutOfMemory.NeededBytes/memory.GiB, p.OutOfMemory.AvailableBytes/memory.GiB))
				continue
			}
			if p.Error != "" {
				cells = append(cells, p.Policy+": failed")
				continue
			}
			cell := fmt.Sprintf("%s: %.1f of %.1f", p.Policy, p.PeakMemoryMaxBytes/memory.GiB, p.HBMBytes/memory.GiB)
			if before, ok := memoryBefore[name][p.Policy]; ok {
				cell += fmt.Sprintf(" (%.2f → %.2f)", before, p.StepSecondsMean)
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s |\n", name, rc, s.BudgetTokens, strings.Join(cells, "; "))
	}
	fmt.Fprintln(w)
}
