package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
	"github.com/dcpsim/dcpsim/scenarios"
)

// MemoryRow is one GPU of one pipeline stage and GPU kind at the worst case
// of its kind's budget (dcpsim memory): every rank holding B tokens in every
// microbatch with the pipeline full.
type MemoryRow struct {
	// Stage is the pipeline stage, Kind the GPU kind, Layers the stage's
	// layers.
	Stage  int    `json:"stage"`
	Kind   string `json:"kind"`
	Layers int    `json:"layers"`
	// BudgetTokens is the kind's per-rank budget B.
	BudgetTokens int `json:"budget_tokens"`
	// WeightsBytes, GradientsBytes and OptimizerBytes are the GPU's model
	// states (memory.States).
	WeightsBytes   float64 `json:"weights_bytes"`
	GradientsBytes float64 `json:"gradients_bytes"`
	OptimizerBytes float64 `json:"optimizer_bytes"`
	// ActivationBytes is B · memory.Model.PeakPerToken: the most the stage
	// holds of any plan whose ranks hold at most B tokens.
	ActivationBytes float64 `json:"activation_bytes"`
	// ReserveBytes is memory.ReserveBytes.
	ReserveBytes float64 `json:"reserve_bytes"`
	// TotalBytes is states + reserve + activations; HBMBytes the kind's
	// memory; HeadroomBytes = HBMBytes − TotalBytes (negative: out of
	// memory).
	TotalBytes    float64 `json:"total_bytes"`
	HBMBytes      float64 `json:"hbm_bytes"`
	HeadroomBytes float64 `json:"headroom_bytes"`
	// Fits says HeadroomBytes >= 0.
	Fits bool `json:"fits"`
}

// StatesBytes is the row's model states: weights + gradients + optimizer.
func (r MemoryRow) StatesBytes() float64 { return r.WeightsBytes + r.GradientsBytes + r.OptimizerBytes }

// MemoryReport is a scenario's per-GPU memory at the worst case of its
// budget, stage by stage and kind by kind (dcpsim memory; its JSON form is
// dcpsim memory --json).
type MemoryReport struct {
	// Scenario and Model name the scenario and its model; Cluster the
	// hardware (cluster.Label).
	Scenario string `json:"scenario"`
	Model    string `json:"model"`
	Cluster  string `json:"cluster"`
	GPUs     int    `json:"gpus"`
	// TP, PP, VPP and EP are the layout, PoolRanks G.
	TP        int `json:"tp"`
	PP        int `json:"pp"`
	VPP       int `json:"vpp"`
	EP        int `json:"ep"`
	PoolRanks int `json:"pool_ranks"`
	// Recompute, RecomputeLayers, SequenceParallel and GradSync are the
	// job's.
	Recompute        string `json:"recompute"`
	RecomputeLayers  int    `json:"recompute_layers"`
	SequenceParallel bool   `json:"sequence_parallel"`
	GradSync         string `json:"grad_sync"`
	// Precision is the GEMMs' number format, "bf16" or "fp8".
	Precision string `json:"precision"`
	// ContextTokens is the longest sequence.
	ContextTokens int `json:"context_tokens"`
	// BudgetTokens is parallel.budget_tokens (the first kind's B), BudgetAuto
	// whether it was budget_tokens = "auto".
	BudgetTokens int  `json:"budget_tokens"`
	BudgetAuto   bool `json:"budget_auto"`
	// Rows are stage by stage, and in a stage kind by kind in rank order.
	Rows []MemoryRow `json:"rows"`
	// Worst is the index in Rows of the row with the least headroom (the
	// first among equals); Fits says every row fits.
	Worst int  `json:"worst_row"`
	Fits  bool `json:"fits"`
}

// NewMemoryReport builds sc's memory report with memory.New under
// FlashAttention (the kernel every scenario runs) and each kind's budget
// (scenarios.Scenario.KindBudgetTokens).
func NewMemoryReport(sc *scenarios.Scenario) (*MemoryReport, error) {
	j := sc.Job
	mem, err := memory.New(j, compute.FlashAttention)
	if err != nil {
		return nil, err
	}
	profs, err := sc.Profiles()
	if err != nil {
		return nil, err
	}
	budgets, err := sc.KindBudgetTokens()
	if err != nil {
		return nil, err
	}
	stages, err := j.StageLayers()
	if err != nil {
		return nil, err
	}
	p := j.Parallel
	r := &MemoryReport{
		Scenario: sc.Name, Model: j.Model.Name, Cluster: j.Cluster.Label(), GPUs: j.Cluster.GPUs,
		TP: p.TP, PP: p.PP, VPP: max(p.VPP, 1), EP: max(p.EP, 1), PoolRanks: j.PoolRanks(),
		Recompute: string(p.RecomputeMode()), RecomputeLayers: p.RecomputeLayers, SequenceParallel: p.SequenceParallel, GradSync: string(p.GradSyncMode()),
		Precision: string(p.PrecisionMode()), ContextTokens: j.ContextTokens, BudgetTokens: p.BudgetTokens, BudgetAuto: p.BudgetAuto, Fits: true,
	}
	kinds := j.Cluster.Kinds()
	for s := range mem.Stages() {
		st := mem.States(s)
		perToken := mem.PeakPerToken(s, j.ContextTokens)
		for i, k := range kinds {
			row := MemoryRow{Stage: s, Kind: k.GPU, Layers: stages[s], BudgetTokens: budgets[i],
				WeightsBytes: st.WeightBytes + st.FP8WeightBytes, GradientsBytes: st.GradientBytes, OptimizerBytes: st.OptimizerBytes,
				ActivationBytes: float64(budgets[i]) * perToken, ReserveBytes: memory.ReserveBytes,
				HBMBytes: profs[i].HBMBytes.Value}
			row.TotalBytes = row.StatesBytes() + row.ReserveBytes + row.ActivationBytes
			row.HeadroomBytes = row.HBMBytes - row.TotalBytes
			row.Fits = row.HeadroomBytes >= 0
			r.Fits = r.Fits && row.Fits
			if len(r.Rows) > 0 && row.HeadroomBytes < r.Rows[r.Worst].HeadroomBytes {
				r.Worst = len(r.Rows)
			}
			r.Rows = append(r.Rows, row)
		}
	}
	return r, nil
}

// KindWorst returns, for each GPU kind in rank order, the row of the stage
// with the least headroom (the lowest stage among equals).
func (r *MemoryReport) KindWorst() []MemoryRow {
	var out []MemoryRow
	for i, row := range r.Rows {
		switch k := i % r.kinds(); {
		case k == len(out):
			out = append(out, row)
		case row.HeadroomBytes < out[k].HeadroomBytes:
			out[k] = row
		}
	}
	return out
}

// kinds is the number of GPU kinds: the rows of stage 0.
func (r *MemoryReport) kinds() int {
	n := 0
	for n < len(r.Rows) && r.Rows[n].Stage == 0 {
		n++
	}
	return max(n, 1)
}

// Verdict is the report's one-line answer: "fits (...)" or "OUT OF MEMORY on
// stage s (kind): needs X of Y GiB".
func (r *MemoryReport) Verdict() string {
	if len(r.Rows) == 0 {
		return "no stages"
	}
	w := r.Rows[r.Worst]
	if r.Fits {
		return fmt.Sprintf("fits: the least headroom is %.1f GiB, on stage %d (%s)", w.HeadroomBytes/memory.GiB, w.Stage, w.Kind)
	}
	return fmt.Sprintf("OUT OF MEMORY on stage %d (%s): needs %.1f of %.1f GiB", w.Stage, w.Kind, w.TotalBytes/memory.GiB, w.HBMBytes/memory.GiB)
}

// memoryLayout is the report's layout, e.g. "tp1 pp4 vpp1 ep8, G = 128".
func (r *MemoryReport) memoryLayout() string {
	return fmt.Sprintf("tp%d pp%d vpp%d ep%d, G = %d", r.TP, r.PP, r.VPP, r.EP, r.PoolRanks)
}

// budgetText is "B = 8192 tokens/rank", with "(auto)" for budget_tokens =
// "auto", and each kind's B on a mixed cluster.
func (r *MemoryReport) budgetText() string {
	b := fmt.Sprintf("B = %d tokens/rank", r.BudgetTokens)
	if r.BudgetAuto {
		b += " (auto)"
	}
	kinds := r.KindWorst()
	if len(kinds) > 1 {
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%s %d", k.Kind, k.BudgetTokens)
		}
		b += " (per kind: " + strings.Join(parts, ", ") + ")"
	}
	return b
}

// WriteMemoryTable prints the report: a header naming the model, layout,
// recompute and budget, a row per stage and kind in GiB, the verdict and the
// sources.
func WriteMemoryTable(w io.Writer, r *MemoryReport) error {
	sp := "SP"
	if !r.SequenceParallel {
		sp = "no SP"
	}
	fmt.Fprintf(w, "scenario  %s: %s on %d GPUs (%s)\n", r.Scenario, r.Model, r.GPUs, r.Cluster)
	rc := r.Recompute
	if r.RecomputeLayers > 0 {
		rc += fmt.Sprintf(" (the first %d layers of each model chunk)", r.RecomputeLayers)
	}
	prec := ""
	if r.Precision == "fp8" {
		prec = ", FP8 GEMMs (weights include their FP8 copies)"
	}
	fmt.Fprintf(w, "layout    %s, recompute %s, %s, grad sync %s%s\n", r.memoryLayout(), rc, sp, r.GradSync, prec)
	fmt.Fprintf(w, "budget    %s, context %d tokens\n\n", r.budgetText(), r.ContextTokens)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tkind\tlayers\tB\tweights\tgradients\toptimizer\tactivations at B\treserve\ttotal\tHBM\theadroom\t")
	g := func(b float64) string { return fmt.Sprintf("%.1f", b/memory.GiB) }
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Stage, row.Kind, row.Layers, row.BudgetTokens,
			g(row.WeightsBytes), g(row.GradientsBytes), g(row.OptimizerBytes), g(row.ActivationBytes), g(row.ReserveBytes),
			g(row.TotalBytes), g(row.HBMBytes), g(row.HeadroomBytes))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n\n", r.Verdict())
	_, err := io.WriteString(w, memoryFooter(r.GradSync))
	return err
}

// memoryFooter says what the numbers are and where they come from.
func memoryFooter(gradSync string) string {
	opt := "Adam's states sharded over the stage's data-parallel ranks (the distributed optimizer)"
	if gradSync == string(job.GradAllReduce) {
		opt = "Adam's states whole on every GPU (gradients all-reduced, no distributed optimizer)"
	}
	return fmt.Sprintf(`GiB per GPU (2^30 bytes). The activations are the budget's worst case: every rank holding B tokens
in every microbatch, the pipeline full; dcpsim run reports the simulated peak of each policy's plans.
sources: activations per token after Korthikanti et al. 2022 (arXiv 2205.05198, Table 2), by layer
  kind, FlashAttention, no dropout; model states 2 + 4 + 12 bytes per parameter (BF16 weights, FP32
  gradients, Adam's FP32 master weight and moments), as Megatron-LM's theoretical_memory_usage.py;
  %s;
  reserve %.0f GB per GPU for the CUDA context, NCCL buffers, workspaces and fragmentation (an
  assumption: ByteScale measures 5-10 GB per GPU).
`, opt, memory.ReserveBytes/1e9)
}

// WriteMemoryJSON writes the report as one indented JSON object.
func WriteMemoryJSON(w io.Writer, r *MemoryReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MemoryLines returns the memory lines of dcpsim scenarios show, one per GPU
// kind: the stage with the least headroom's model states, the reserve and the
// worst-case activations at the budget, against the kind's HBM.
func MemoryLines(r *MemoryReport) []string {
	var out []string
	for _, k := range r.KindWorst() {
		verdict := "fits"
		if !k.Fits {
			verdict = "OUT OF MEMORY"
		}
		out = append(out, fmt.Sprintf("states %.1f GiB (stage %d) + reserve %.1f + activations at B %.1f = %.1f GiB of %.1f GiB per %s: %s (dcpsim memory for the stages)",
			k.StatesBytes()/memory.GiB, k.Stage, k.ReserveBytes/memory.GiB, k.ActivationBytes/memory.GiB,
			k.TotalBytes/memory.GiB, k.HBMBytes/memory.GiB, k.Kind, verdict))
	}
	return out
}
