package memory

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
)

func llamaJob(t *testing.T, pools ...job.Pool) job.Job {
	t.Helper()
	m, err := job.LookupModel(job.ModelLlama3With8B)
	if err != nil {
		t.Fatal(err)
	}
	gpus := 0
	for _, p := range pools {
		gpus += p.GPUs
	}
	return job.Job{Model: m, Cluster: job.Cluster{GPUs: gpus, GPUsPerNode: 8, Pools: pools},
		Parallel: job.Parallel{TP: 1, PP: 2, VPP: 1, EP: 1, BudgetTokens: 8192}, ContextTokens: 8192}
}

func newModel(t *testing.T, j job.Job) *Model {
	t.Helper()
	m, err := New(j, compute.FlashAttention)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKindBudgetTokens: the first pool's budget is parallel.budget_tokens,
// another kind's scales with its HBM left after states and reserve (or is
// its own), and a kind with no room is an error naming its pool.
func TestKindBudgetTokens(t *testing.T) {
	j := llamaJob(t, job.Pool{GPU: "H100-SXM", GPUs: 32}, job.Pool{GPU: "H200", GPUs: 16}, job.Pool{GPU: "x", GPUs: 16, BudgetTokens: 1234})
	m := newModel(t, j)
	states, _ := m.MaxStates()
	if states < 15e9 || states > 40e9 {
		t.Fatalf("Llama-3-8B states per GPU at pp2 %.1f GB: want 15-40", states/1e9)
	}
	b, err := m.KindBudgetTokens([]float64{80e9, 141e9, 40e9})
	want := int(8192 * (141e9 - states - ReserveBytes) / (80e9 - states - ReserveBytes))
	if err != nil || b[0] != 8192 || b[1] != want || b[2] != 1234 {
		t.Errorf("budgets %v, %v; want [8192 %d 1234]", b, err, want)
	}
	if _, err := m.KindBudgetTokens([]float64{80e9, states + ReserveBytes - 1, 40e9}); err == nil || !strings.Contains(err.Error(), "cluster.pools[1].gpu") {
		t.Errorf("a kind with no room: %v, want an error naming cluster.pools[1]", err)
	}
	one := llamaJob(t)
	one.Cluster = job.Cluster{GPU: "H20", GPUs: 16, GPUsPerNode: 8}
	if b, err := newModel(t, one).KindBudgetTokens([]float64{96e9}); err != nil || len(b) != 1 || b[0] != 8192 {
		t.Errorf("one kind: %v, %v", b, err)
	}
}

// TestStatesShortfall: a kind that cannot hold a stage's model states and
// the reserve is refused, naming the stage, the kind and the shortfall;
// DeepSeek-V3 at tp1 pp1 on 8 H800 is the planner's first question.
func TestStatesShortfall(t *testing.T) {
	m, err := job.LookupModel(job.ModelDeepSeekV3)
	if err != nil {
		t.Fatal(err)
	}
	j := job.Job{Model: m, Cluster: job.Cluster{GPU: "H800", GPUs: 8, GPUsPerNode: 8},
		Parallel: job.Parallel{TP: 1, PP: 1, VPP: 1, EP: 8, BudgetTokens: 262144}, ContextTokens: 262144}
	mem := newModel(t, j)
	_, err = mem.KindBudgetTokens([]float64{80e9})
	var fe *job.FieldError
	if !errors.As(err, &fe) || fe.Key != "cluster.gpu" || !strings.Contains(fe.Rule, "stage 0") || !strings.Contains(fe.Rule, "short by") {
		t.Fatalf("DeepSeek-V3 tp1 pp1 ep8 on 8 H800: %v", err)
	}
	// 671B parameters: dense ones whole, 2 + 4 bytes each and Adam's 12
	// sharded over G = 8; routed experts (~656B) over ep 8, their Adam
	// states over the expert-data-parallel group of G/ep = 1: by hand.
	st := mem.States(0)
	dense := m.TotalParams() - expertParams(m)
	wantBytes := (6+12.0/8)*dense + 18*expertParams(m)/8
	if math.Abs(st.Bytes()-wantBytes) > 1e-9*wantBytes {
		t.Errorf("states %.4g bytes, want %.4g", st.Bytes(), wantBytes)
	}
	var sf *Shortfall
	if err := mem.CheckStates("H800", 80e9); !errors.As(err, &sf) || math.Abs(sf.ShortBytes-(wantBytes+ReserveBytes-80e9)) > 1 {
		t.Errorf("shortfall %v, want %.4g bytes", err, wantBytes+ReserveBytes-80e9)
	}
}

func expertParams(m job.Model) float64 {
	var e float64
	for l := range m.Layers {
		e += m.LayerExpertParams(l)
	}
	return e
}

// TestAutoBudget: the automatic budget is the largest whose full pipeline
// fits: one token more does not, and PeakPerToken is the closed form of
// plain 1F1B (stage s holds p − s microbatches of its layers).
func TestAutoBudget(t *testing.T) {
	j := llamaJob(t)
	j.Cluster = job.Cluster{GPU: "H100-SXM", GPUs: 64, GPUsPerNode: 8}
	j.Parallel.PP = 4
	j.Parallel.BudgetAuto = true
	m := newModel(t, j)
	const hbm = 80e9
	b, err := m.AutoBudgetTokens("H100-SXM", hbm, j.ContextTokens)
	if err != nil {
		t.Fatal(err)
	}
	fits := func(b int) bool {
		for s := range m.Stages() {
			if m.States(s).Bytes()+ReserveBytes+float64(b)*m.PeakPerToken(s, j.ContextTokens) > hbm {
				return false
			}
		}
		return true
	}
	if !fits(b) || fits(b+1) {
		t.Errorf("auto budget %d: fits %v, one more fits %v", b, fits(b), fits(b+1))
	}
	for s := range m.Stages() {
		want := float64(4-s) * m.Chunk(s, 0).PerToken
		if got := m.PeakPerToken(s, j.ContextTokens); math.Abs(got-want) > 1e-9*want {
			t.Errorf("stage %d holds %v bytes per token, want (p−s)·chunk = %v", s, got, want)
		}
	}
	bs, err := m.KindBudgetTokens([]float64{hbm})
	if err != nil || bs[0] != b {
		t.Errorf("KindBudgetTokens with auto: %v, %v; want [%d]", bs, err, b)
	}
	// Full recompute holds far more tokens.
	j.Parallel.Recompute = job.RecomputeFull
	if bf, err := newModel(t, j).AutoBudgetTokens("H100-SXM", hbm, j.ContextTokens); err != nil || bf < 5*b {
		t.Errorf("full recompute auto budget %d (%v), without %d: want at least 5×", bf, err, b)
	}
}
