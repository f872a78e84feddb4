package experiment

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/step"
)

// The --batches contracts (dcpsim plan --batches, dcpsim run --batches --costs
// load) are used by external checks: keep their field names and meaning.

// DefaultOverheadRatio is the θ/c (tokens²) HyDra uses for a --batches line that
// gives none (such a line names no model or GPU, so the cost model cannot derive
// it): a fixed per-microbatch cost equal to the attention work of one 4,096-token
// sequence on one rank (4096² = 2^24). Scenarios derive θ/c from their profile.
const DefaultOverheadRatio = 1 << 24

// BatchLine is one input line of --batches.
type BatchLine struct {
	Ranks         int      `json:"ranks"`
	BudgetTokens  int      `json:"budget_tokens"`
	Lengths       []int    `json:"lengths"`
	OverheadRatio *float64 `json:"overhead_ratio"`
	PP            int      `json:"pp"`
	VPP           int      `json:"vpp"`
	ContextTokens int      `json:"context_tokens"`
	EP            int      `json:"ep"`
	// Fields of the conformance vectors, accepted and ignored.
	Microbatches    json.RawMessage `json:"microbatches"`
	CPythonSeconds  json.RawMessage `json:"cpython_seconds"`
	MicrobatchCount json.RawMessage `json:"microbatch_count"`
}

// PlanLine is one output line of plan --batches.
type PlanLine struct {
	Microbatches [][][]int       `json:"microbatches"`
	Groups       [][]sched.Group `json:"groups"`
	Diagnostics  map[string]any  `json:"diagnostics"`
}

// RunLine is one output line of run --batches --costs load. The first four
// fields are an external contract: keep their names and meaning.
type RunLine struct {
	IterationSeconds float64   `json:"iteration_seconds"`
	PPBubble         float64   `json:"pp_bubble"`
	DPBubble         float64   `json:"dp_bubble"`
	MBSeconds        []float64 `json:"mb_seconds"`
	MicrobatchCount  int       `json:"microbatch_count"`
}

// PlanBatches plans every batch line of r (named name in errors) with p and
// writes one PlanLine per input line to w. ratio >= 0 overrides every line's
// overhead_ratio.
func PlanBatches(r io.Reader, name string, w io.Writer, p sched.Policy, ratio float64) error {
	return eachBatchLine(r, name, w, func(line []byte) (any, error) {
		_, _, plan, err := planBatchLine(p, line, ratio)
		if err != nil {
			return nil, err
		}
		return planLine(plan)
	})
}

// RunBatches plans every batch line of r with p and simulates one training
// iteration of each plan in load mode (step.LoadCosts), writing one RunLine
// per input line to w.
func RunBatches(r io.Reader, name string, w io.Writer, p sched.Policy) error {
	return eachBatchLine(r, name, w, func(line []byte) (any, error) {
		b, in, plan, err := planBatchLine(p, line, -1)
		if err != nil {
			return nil, err
		}
		res, err := step.Simulate(plan, in.PP, in.VPP, in.EPSize(), step.LoadCosts{Lengths: b.Lengths, PP: in.PP, VPP: in.VPP})
		if err != nil {
			return nil, badInput("%w", err)
		}
		return RunLine{IterationSeconds: res.IterationSeconds(), PPBubble: res.PPBubbleShare, DPBubble: res.DPBubbleShare,
			MBSeconds: res.MBSeconds, MicrobatchCount: len(plan.Microbatches)}, nil
	})
}

// eachBatchLine calls do on every non-blank line of r and writes its result
// as one JSON line to w. An error names the line (name:N); a bad line's error
// wraps ErrInput or sched.ErrInvalidInput.
func eachBatchLine(r io.Reader, name string, w io.Writer, do func(line []byte) (any, error)) error {
	br := bufio.NewReaderSize(r, 1<<20)
	bw := bufio.NewWriter(w)
	for n := 1; ; n++ {
		raw, readErr := br.ReadBytes('\n')
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			res, err := do(line)
			if err != nil {
				if errors.Is(err, sched.ErrInvalidInput) || errors.Is(err, ErrInput) {
					return badInput("%s:%d: %w", name, n, err)
				}
				return fmt.Errorf("%s:%d: %w", name, n, err)
			}
			out, err := json.Marshal(res)
			if err != nil {
				return err
			}
			if _, err := bw.Write(append(out, '\n')); err != nil {
				return err
			}
		}
		if errors.Is(readErr, io.EOF) {
			break
		}
		if readErr != nil {
			return fmt.Errorf("%s: %w", name, readErr)
		}
	}
	return bw.Flush()
}

// planBatchLine decodes one --batches line strictly, plans it with p (ratio
// >= 0 overrides the line's overhead_ratio) and checks the policy's promises.
func planBatchLine(p sched.Policy, line []byte, ratio float64) (BatchLine, sched.Inputs, *sched.Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var b BatchLine
	if err := dec.Decode(&b); err != nil {
		return b, sched.Inputs{}, nil, badInput("not a batch object: %w", err)
	}
	in := sched.Inputs{PoolRanks: b.Ranks, BudgetTokens: b.BudgetTokens, PP: max(b.PP, 1), VPP: max(b.VPP, 1),
		ContextTokens: b.ContextTokens, EP: b.EP, OverheadRatio: DefaultOverheadRatio}
	if b.OverheadRatio != nil {
		in.OverheadRatio = *b.OverheadRatio
	}
	if ratio >= 0 {
		in.OverheadRatio = ratio
	}
	plan, err := p.Plan(b.Lengths, in)
	if err != nil {
		return b, in, nil, err
	}
	if err := Check(p, plan, b.Lengths, in); err != nil {
		return b, in, nil, err
	}
	return b, in, plan, nil
}

// Check validates a plan against the batch, the inputs and the promises its
// policy declares (sched.Promiser): an error is a policy bug, not bad input.
func Check(p sched.Policy, plan *sched.Plan, lengths []int, in sched.Inputs) error {
	pr := sched.Promises{}
	if ps, ok := p.(sched.Promiser); ok {
		pr = ps.Promises()
	}
	if err := sched.Validate(plan, lengths, in, pr); err != nil {
		return fmt.Errorf("policy %s broke its promises: %w", p.Name(), err)
	}
	return nil
}

// planLine is a plan in the PlanLine layout.
func planLine(plan *sched.Plan) (PlanLine, error) {
	res := PlanLine{Microbatches: plan.PerRank(), Groups: make([][]sched.Group, len(plan.Microbatches))}
	for i, mb := range plan.Microbatches {
		res.Groups[i] = mb.Groups
	}
	res.Diagnostics = map[string]any{}
	if plan.Diagnostics != nil {
		raw, err := json.Marshal(plan.Diagnostics)
		if err != nil {
			return res, err
		}
		if err := json.Unmarshal(raw, &res.Diagnostics); err != nil {
			return res, err
		}
	}
	res.Diagnostics["policy"] = plan.Policy
	res.Diagnostics["work_units"] = plan.WorkUnits
	res.Diagnostics["microbatch_count"] = len(plan.Microbatches)
	return res, nil
}
