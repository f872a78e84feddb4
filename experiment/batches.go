package experiment

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dcpsim/dcpsim/badinput"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"

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
	// Lengths are the sequences the plan trains when a stateful policy chose
	// them (sched.Plan.Lengths: its ids index them); absent otherwise, when the
	// ids index the line's own lengths.
	Lengths []int `json:"lengths,omitempty"`
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

// MaxBatchLineBytes bounds one --batches line, enforced while reading, before
// it is decoded: sched.MaxBatchSequences lengths of up to 8 digits (every
// length is at most sched.MaxSequenceTokens = 33,554,432) with ", " between
// them take 10^8 bytes, and 128 MiB leaves 28 MiB for the other fields and
// whitespace. A 1 GB line used to be decoded whole (20.8 GB peak).
const MaxBatchLineBytes = 128 << 20

// PlanBatches plans every batch line of r (named name in errors) with p and
// writes one PlanLine per batch line to w; blank lines are skipped. ratio >= 0
// overrides every line's overhead_ratio; a negative ratio leaves them.
func PlanBatches(r io.Reader, name string, w io.Writer, p sched.Policy, ratio float64) error {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		return badInput("overhead ratio %v: must be a finite number (>= 0 overrides the lines', < 0 keeps them)", ratio)
	}
	return eachBatchLine(r, name, w, MaxBatchLineBytes, func(line []byte) (any, error) {
		_, _, plan, err := planBatchLine(p, line, ratio, false)
		if err != nil {
			return nil, err
		}
		if err := checkPlanLineSize(plan); err != nil {
			return nil, err
		}
		return planLine(plan)
	})
}

// MaxPlanLineEntries bounds one plan --batches output line's "microbatches"
// field: one list per (microbatch, rank) plus one id per (sequence, rank of
// its group). A plan is compact (groups), but that field lists every rank of
// every microbatch: 10^5 sequences on 2^20 ranks made 10^8 lists, 6 GB and an
// 800 MB line. At the bound the field takes under 0.5 GB to build.
const MaxPlanLineEntries = 1 << 24

// checkPlanLineSize refuses a plan whose PlanLine would pass
// MaxPlanLineEntries, naming the numbers, before it is built.
func checkPlanLineSize(plan *sched.Plan) error {
	lists := int64(len(plan.Microbatches)) * int64(plan.PoolRanks)
	var ids int64
	for _, mb := range plan.Microbatches {
		for _, g := range mb.Groups {
			ids += int64(g.Size) * int64(len(g.Seqs))
		}
	}
	if lists+ids > MaxPlanLineEntries {
		return badInput("the plan's microbatches field would hold %d·%d = %d per-rank lists and %d sequence ids: more than %d (MaxPlanLineEntries)",
			len(plan.Microbatches), plan.PoolRanks, lists, ids, MaxPlanLineEntries)
	}
	return nil
}

// RunBatches plans every batch line of r with p and simulates one training
// iteration of each plan in load mode (step.LoadCosts), writing one RunLine
// per batch line to w; blank lines are skipped.
func RunBatches(r io.Reader, name string, w io.Writer, p sched.Policy) error {
	return eachBatchLine(r, name, w, MaxBatchLineBytes, func(line []byte) (any, error) {
		b, in, plan, err := planBatchLine(p, line, -1, true)
		if err != nil {
			return nil, err
		}
		res, err := step.Simulate(plan, in.PP, in.VPP, in.EPSize(), step.LoadCosts{Lengths: plan.Trained(b.Lengths), PP: in.PP, VPP: in.VPP})
		if err != nil {
			return nil, badInput("%w", err)
		}
		return RunLine{IterationSeconds: res.IterationSeconds(), PPBubble: res.PPBubbleShare, DPBubble: res.DPBubbleShare,
			MBSeconds: res.MBSeconds, MicrobatchCount: len(plan.Microbatches)}, nil
	})
}

// eachBatchLine calls do on every line of r that is not blank (empty or only
// white space; such lines are skipped and produce no output) and writes its
// result as one JSON line to w. A line longer than maxLine bytes (its line
// ending included) is refused as soon as it passes the bound, before it is
// decoded. An error names the line (name:N, counting blank lines too); a bad
// line's error matches badinput.Err.
func eachBatchLine(r io.Reader, name string, w io.Writer, maxLine int, do func(line []byte) (any, error)) error {
	br := bufio.NewReaderSize(r, 1<<20)
	bw := bufio.NewWriter(w)
	for n := 1; ; n++ {
		raw, readErr := readLine(br, maxLine)
		if errors.Is(readErr, errLineTooLong) {
			return badInput("%s:%d: %w", name, n, readErr)
		}
		if n == 1 {
			raw = bytes.TrimPrefix(raw, utf8BOM) // as length files accept one
		}
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			res, err := do(line)
			if err != nil {
				if badinput.Is(err) {
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

// utf8BOM is the byte-order mark some editors write at the start of a file.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// errLineTooLong is wrapped by readLine's error for a line past its bound.
var errLineTooLong = errors.New("line too long")

// readLine reads one line of br, with its '\n' if it has one, like
// ReadBytes('\n'), but fails with errLineTooLong, naming max, as soon as the
// line (its line ending included) holds more than max bytes.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, fmt.Errorf("%w: more than %d bytes (the limit of one --batches line)", errLineTooLong, max)
		}
		line = append(line, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// batchKeys are the keys a --batches line may hold; the conformance vectors'
// microbatches, cpython_seconds and microbatch_count are accepted and ignored.
var batchKeys = []string{"ranks", "budget_tokens", "lengths", "overhead_ratio", "pp", "vpp", "context_tokens", "ep",
	"microbatches", "cpython_seconds", "microbatch_count"}

// decodeBatchLine decodes one --batches line strictly: exactly one JSON
// object, its keys among batchKeys (matched exactly), none twice, nothing but
// white space after it, at most sched.MaxBatchSequences lengths (counted
// while decoding, before the slice grows past the limit). pp and vpp 0 or
// absent mean 1; negative is an error. The Inputs built from the line (θ/c
// DefaultOverheadRatio unless the line gives one) pass sched.Inputs.Check
// with its lengths. Every error matches badinput.Err.
func decodeBatchLine(line []byte) (BatchLine, sched.Inputs, error) {
	var b BatchLine
	if err := decodeStrict(line, &b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("the line ends inside the object")
		}
		return b, sched.Inputs{}, badInput("not a batch object: %w", err)
	}
	in := sched.Inputs{PoolRanks: b.Ranks, BudgetTokens: b.BudgetTokens, PP: 1, VPP: 1,
		ContextTokens: b.ContextTokens, EP: b.EP, OverheadRatio: DefaultOverheadRatio}
	for _, f := range []struct {
		key      string
		v        int
		dst      *int
		maxValue int
	}{{"pp", b.PP, &in.PP, sched.MaxPP}, {"vpp", b.VPP, &in.VPP, sched.MaxVPP}} {
		switch {
		case f.v < 0:
			return b, in, badInput("%s = %d: must be in [1, %d] (0 or absent: 1)", f.key, f.v, f.maxValue)
		case f.v > 0:
			*f.dst = f.v
		}
	}
	if b.OverheadRatio != nil {
		in.OverheadRatio = *b.OverheadRatio
	}
	if err := in.Check(b.Lengths); err != nil {
		return b, in, err
	}
	return b, in, nil
}

// decodeStrict decodes the JSON object in line into b (see decodeBatchLine).
func decodeStrict(line []byte, b *BatchLine) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil {
		return err
	} else if tok != json.Delim('{') {
		return fmt.Errorf("want a JSON object {...}, got %s", describeToken(tok))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // object keys are strings
		if seen[key] {
			return fmt.Errorf("key %q given twice", key)
		}
		seen[key] = true
		var dst any
		switch key {
		case "ranks":
			dst = &b.Ranks
		case "budget_tokens":
			dst = &b.BudgetTokens
		case "lengths":
			if err := decodeLengths(dec, &b.Lengths); err != nil {
				return fmt.Errorf("lengths: %w", err)
			}
			continue
		case "overhead_ratio":
			dst = &b.OverheadRatio
		case "pp":
			dst = &b.PP
		case "vpp":
			dst = &b.VPP
		case "context_tokens":
			dst = &b.ContextTokens
		case "ep":
			dst = &b.EP
		case "microbatches":
			dst = &b.Microbatches
		case "cpython_seconds":
			dst = &b.CPythonSeconds
		case "microbatch_count":
			dst = &b.MicrobatchCount
		default:
			return fmt.Errorf("unknown key %q; allowed: %s", key, strings.Join(batchKeys, ", "))
		}
		if err := dec.Decode(dst); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return err
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return fmt.Errorf("after the object: %w", err)
		}
		return fmt.Errorf("after the object: unexpected %s (one object per line)", describeToken(tok))
	}
	return nil
}

// decodeLengths decodes a JSON array of integers (or null) into dst: the
// decoder checks the JSON, then parseLengths reads the integers, failing once
// it holds more than sched.MaxBatchSequences of them. (Walking the array
// token by token took 2.5 s for 10^7 lengths; this takes 0.6 s.)
func decodeLengths(dec *json.Decoder, dst *[]int) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	out, err := parseLengths(raw)
	if err != nil {
		return err
	}
	*dst = out
	return nil
}

// parseLengths parses raw, one valid JSON value, as null or an array of JSON
// integers (-?(0|[1-9][0-9]*), as encoding/json accepts for an int) that fit
// an int, at most sched.MaxBatchSequences of them.
func parseLengths(raw []byte) ([]int, error) {
	i := skipSpace(raw, 0)
	switch {
	case bytes.HasPrefix(raw[i:], []byte("null")):
		return nil, nil
	case i == len(raw) || raw[i] != '[':
		return nil, fmt.Errorf("want an array of integers, got %s", clipJSON(raw[i:]))
	}
	out := make([]int, 0, min(bytes.Count(raw, []byte(","))+1, sched.MaxBatchSequences))
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return out, nil
	}
	for {
		if len(out) == sched.MaxBatchSequences {
			return nil, fmt.Errorf("more than %d sequences (the limit of one batch)", sched.MaxBatchSequences)
		}
		j := i
		for j < len(raw) && (raw[j] == '-' || raw[j] == '+' || raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E' || '0' <= raw[j] && raw[j] <= '9') {
			j++
		}
		num := raw[i:j]
		if len(num) == 0 {
			return nil, fmt.Errorf("element %d: want an integer, got %s", len(out), clipJSON(raw[i:]))
		}
		if bytes.ContainsAny(num, ".eE+") {
			return nil, fmt.Errorf("element %d: %s is not an integer", len(out), num)
		}
		v, err := strconv.Atoi(string(num)) // JSON already excludes leading zeros and a lone '-'
		if err != nil {
			return nil, fmt.Errorf("element %d: %s does not fit an integer", len(out), num)
		}
		out = append(out, v)
		i = skipSpace(raw, j)
		if i < len(raw) && raw[i] == ']' {
			return out, nil
		}
		if i == len(raw) || raw[i] != ',' {
			return nil, fmt.Errorf("element %d: want ',' or ']' after it, got %s", len(out)-1, clipJSON(raw[i:]))
		}
		i = skipSpace(raw, i+1)
	}
}

// skipSpace returns the index of the first byte of b at or after i that is
// not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// clipJSON quotes the start of a JSON text for an error message.
func clipJSON(b []byte) string {
	if len(b) > 24 {
		return fmt.Sprintf("%q...", b[:24])
	}
	if len(b) == 0 {
		return "the end of the value"
	}
	return fmt.Sprintf("%q", b)
}

// describeToken names a JSON token for an error message.
func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(t))
	case string:
		return fmt.Sprintf("the string %q", t)
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%v", t)
	}
}

// planBatchLine decodes one --batches line strictly (decodeBatchLine), plans
// it with p (ratio >= 0 overrides the line's overhead_ratio) and checks the
// policy's promises.
func planBatchLine(p sched.Policy, line []byte, ratio float64, forRun bool) (BatchLine, sched.Inputs, *sched.Plan, error) {
	b, in, err := decodeBatchLine(line)
	if err != nil {
		return b, in, nil, err
	}
	if ratio >= 0 {
		in.OverheadRatio = ratio
	}
	if err := checkPlanNeeds(p, b.Lengths, in, forRun); err != nil {
		return b, in, nil, err
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

// checkPlanNeeds refuses, before the plan is built, a batch whose plan could
// only fail the checks made after it: checkPlanLineSize (plan --batches) or
// the engine's step.MaxOps (run --batches). It uses lower bounds on what any
// plan of the policy needs, so it never refuses a batch those checks would
// pass. Building the plan first cost 10^7 one-token lengths on 1,024 ranks
// 1.5 GB and 11 s (plan, hydra) or 3.1 GB and 16 s (run) before the refusal.
//
// Bounds: a policy that promises WithinBudget needs M >= ⌈S1/(G·B)⌉
// microbatches, and a sched.PlanBounder (HyDra) gives its own, larger ones.
// A plan --batches line lists M·G per-rank lists and at least one id per
// sequence.
func checkPlanNeeds(p sched.Policy, lengths []int, in sched.Inputs, forRun bool) error {
	mbs, domains, why := planNeedsWhy(p, lengths, in)
	g := int64(in.PoolRanks)
	if forRun {
		ops := new(big.Int).SetInt64(int64(in.PP))
		ops.Mul(ops, big.NewInt(domains)).Mul(ops, big.NewInt(int64(in.VPP))).Mul(ops, big.NewInt(2))
		if ops.Cmp(big.NewInt(step.MaxOps)) > 0 {
			return badInput("the iteration would need at least pp·domains·vpp·2 = %d·%d·%d·2 = %s ops (%d sequences, %s microbatches, on %d ranks): more than the engine's limit of %d (step.MaxOps); refused before planning",
				in.PP, domains, in.VPP, ops, len(lengths), why, g, step.MaxOps)
		}
		return nil
	}
	lists := new(big.Int).Mul(big.NewInt(mbs), big.NewInt(g))
	if total := new(big.Int).Add(lists, big.NewInt(int64(len(lengths)))); total.Cmp(big.NewInt(MaxPlanLineEntries)) > 0 {
		return badInput("the plan's microbatches field would hold at least %d·%d = %s per-rank lists (%s microbatches) and %d sequence ids: more than %d (MaxPlanLineEntries); refused before planning",
			mbs, g, lists, why, len(lengths), MaxPlanLineEntries)
	}
	return nil
}

// planNeeds returns lower bounds on the microbatches of any plan of p for
// the batch and on the sync domains of its layout (see checkPlanNeeds).
func planNeeds(p sched.Policy, lengths []int, in sched.Inputs) (mbs, domains int64) {
	mbs, domains, _ = planNeedsWhy(p, lengths, in)
	return mbs, domains
}

// planNeedsWhy is planNeeds, with where the microbatch bound comes from.
func planNeedsWhy(p sched.Policy, lengths []int, in sched.Inputs) (mbs, domains int64, why string) {
	var pr sched.Promises
	if ps, ok := p.(sched.Promiser); ok {
		pr = ps.Promises()
	}
	g := int64(in.PoolRanks)
	mbs, domains, why = 1, 1, "at least one"
	if pr.WithinBudget {
		var s1 int64
		for _, s := range lengths {
			s1 += int64(s)
		}
		mbs = 1 + ((s1-1)/g)/int64(in.BudgetTokens) // ⌈⌈S1/G⌉/B⌉ = ⌈S1/(G·B)⌉
		why = fmt.Sprintf("⌈S1/(G·B)⌉ = ⌈%d/(%d·%d)⌉", s1, g, in.BudgetTokens)
	}
	if pb, ok := p.(sched.PlanBounder); ok {
		m, d, w := pb.PlanBounds(lengths, in)
		if m > mbs {
			mbs, why = m, w
		}
		domains = max(domains, d)
	}
	return mbs, max(domains, mbs), why
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
	res := PlanLine{Microbatches: plan.PerRank(), Groups: make([][]sched.Group, len(plan.Microbatches)), Lengths: plan.Lengths}
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
