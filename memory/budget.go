package memory

import (
	"errors"
	"fmt"
	"math"

	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sim/pipeline"
)

// PeakPerToken returns the most activation bytes stage s holds per token of
// a rank's budget when every microbatch fills every rank with as many tokens
// and the pipeline is full: the largest prefix of the stage's 1F1B (or
// interleaved) schedule of kept chunks, with a backward's transient on top.
// Scores are bounded by tokens × contextTokens (a rank's Σ s²/k with every s
// at most the context); they count only under the softmax kernel. The peak
// of any plan whose ranks hold at most B tokens is at most B·PeakPerToken(s).
func (m *Model) PeakPerToken(s, contextTokens int) float64 {
	return m.fullPipeline(s, contextTokens, true)
}

// HeldPerToken is PeakPerToken without the backward's transient: the most
// kept activations stage s holds per budget token with the pipeline full,
// the quantity Korthikanti et al.'s first-stage formulas count (§4.2.3).
func (m *Model) HeldPerToken(s, contextTokens int) float64 {
	return m.fullPipeline(s, contextTokens, false)
}

// fullPipeline walks stage s's schedule with every microbatch alike, with
// or without the backward's transient.
func (m *Model) fullPipeline(s, contextTokens int, transient bool) float64 {
	p, v := m.Stages(), len(m.chunks[s])
	// Enough microbatches that the warm-up does not cover every forward:
	// more only repeat the steady state.
	sched, err := pipeline.New(p, v, 4*p, 0)
	if err != nil {
		panic(fmt.Sprintf("memory: pipeline of %d stages and %d chunks: %v", p, v, err)) // 4p is legal for every p, v
	}
	ctx := float64(contextTokens)
	var held, peak float64
	for _, op := range sched.Ops(s) {
		c := m.chunks[s][op.Chunk]
		kept := c.PerToken + c.PerScore*ctx
		if !op.Backward {
			held += kept
			peak = max(peak, held)
			continue
		}
		if transient {
			peak = max(peak, held+c.BackwardPerToken+c.BackwardPerScore*ctx)
		}
		held -= kept
	}
	return peak
}

// Shortfall is a GPU kind whose HBM cannot hold a stage's model states and
// the reserve, before any activation.
type Shortfall struct {
	// Stage is the pipeline stage, Kind the GPU kind.
	Stage int
	Kind  string
	// HBMBytes is the kind's memory, StateBytes the stage's model states
	// per GPU, ShortBytes what they and the reserve lack.
	HBMBytes, StateBytes, ShortBytes float64
}

// Error names the stage, the kind and the shortfall, and what would help.
func (e *Shortfall) Error() string {
	return fmt.Sprintf("the model states of pipeline stage %d need %.1f GiB per GPU and the reserve %.0f GB, more than the %.1f GiB of a %s: short by %.1f GiB before any activation (more pp, tp or ep, more GPUs to shard the optimizer over, or a larger GPU)",
		e.Stage, e.StateBytes/GiB, ReserveBytes/1e9, e.HBMBytes/GiB, e.Kind, e.ShortBytes/GiB)
}

// GiB is 2^30 bytes.
const GiB = 1 << 30

// CheckStates returns a *Shortfall for the first stage whose model states
// and the reserve do not fit in hbm bytes of kind, else nil.
func (m *Model) CheckStates(kind string, hbm float64) error {
	for s, st := range m.states {
		if need := st.Bytes() + ReserveBytes; need > hbm {
			return &Shortfall{Stage: s, Kind: kind, HBMBytes: hbm, StateBytes: st.Bytes(), ShortBytes: need - hbm}
		}
	}
	return nil
}

// AutoBudgetTokens returns the largest per-rank token budget B whose peak
// fits in hbm bytes on every stage: ⌊min over s of (HBM − reserve − states_s)
// / PeakPerToken(s)⌋, at most job.MaxBudgetTokens. It fails with a
// *Shortfall when the states alone do not fit, and when not even one token
// does.
func (m *Model) AutoBudgetTokens(kind string, hbm float64, contextTokens int) (int, error) {
	if err := m.CheckStates(kind, hbm); err != nil {
		return 0, err
	}
	best := math.Inf(1)
	for s, st := range m.states {
		if k := m.PeakPerToken(s, contextTokens); k > 0 {
			best = min(best, (hbm-ReserveBytes-st.Bytes())/k)
		}
	}
	b := int(min(best, job.MaxBudgetTokens))
	if b < 1 {
		return 0, fmt.Errorf("a %s (%.1f GiB) has room for no token's activations after the model states and the reserve", kind, hbm/GiB)
	}
	return b, nil
}

// Room returns the HBM bytes a kind keeps for activations on the stage with
// the largest model states: HBM − reserve − states.
func (m *Model) Room(hbm float64) float64 {
	st, _ := m.MaxStates()
	return hbm - ReserveBytes - st
}

// KindBudgetTokens returns the per-rank token budget of each GPU kind of the
// job in rank order (job.Cluster.Kinds), given each kind's HBM bytes (hbm[i]
// for Kinds()[i]):
//
//   - a pool's own budget_tokens when set;
//   - with job.Parallel.BudgetAuto, the kind's AutoBudgetTokens;
//   - else parallel.budget_tokens for the first kind (and a one-kind
//     cluster), and for another the same scaled by the HBM each has left for
//     activations after the largest stage's model states and the reserve:
//     B_i = ⌊B·Room(HBM_i)/Room(HBM_0)⌋.
//
// It fails, naming the kind's key (cluster.gpu or cluster.pools[i].gpu, a
// *job.FieldError), when a kind's HBM cannot hold a stage's model states and
// the reserve (the rule is the *Shortfall's message) or has no room for
// activations.
func (m *Model) KindBudgetTokens(hbm []float64) ([]int, error) {
	j := m.job
	kinds := j.Cluster.Kinds()
	if len(hbm) != len(kinds) {
		return nil, fmt.Errorf("memory: %d HBM sizes for %d GPU kinds", len(hbm), len(kinds))
	}
	b := j.Parallel.BudgetTokens
	out := make([]int, len(kinds))
	var errs []error
	for i, p := range kinds {
		kind := p.GPU
		key := "cluster.gpu"
		if j.Cluster.Mixed() {
			key = fmt.Sprintf("cluster.pools[%d].gpu", i)
		}
		if err := m.CheckStates(kind, hbm[i]); err != nil {
			errs = append(errs, &job.FieldError{Key: key, Value: fmt.Sprintf("%q", kind), Rule: err.Error()})
			continue
		}
		switch {
		case p.BudgetTokens > 0:
			out[i] = p.BudgetTokens
		case j.Parallel.BudgetAuto:
			auto, err := m.AutoBudgetTokens(kind, hbm[i], j.ContextTokens)
			if err != nil {
				errs = append(errs, &job.FieldError{Key: key, Value: fmt.Sprintf("%q", kind), Rule: err.Error()})
				continue
			}
			out[i] = auto
		case i == 0:
			out[i] = b
		case m.Room(hbm[0]) <= 0 || m.Room(hbm[i]) <= 0:
			st, _ := m.MaxStates()
			errs = append(errs, &job.FieldError{Key: key, Value: fmt.Sprintf("%q", kind), Rule: fmt.Sprintf(
				"its %.1f GiB and the first pool's %.1f GiB leave no room for activations after %.1f GiB of model states and a %.0f GB reserve; set budget_tokens in every pool",
				hbm[i]/GiB, hbm[0]/GiB, st/GiB, ReserveBytes/1e9)})
		default:
			out[i] = int(max(1, min(job.MaxBudgetTokens, float64(b)*m.Room(hbm[i])/m.Room(hbm[0])))) // clamped as a float: no overflow
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
