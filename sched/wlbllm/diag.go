package wlbllm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/sched"
)

// Diagnostics explain a WLB-LLM plan: the setup it derived, what the queues
// and the carried documents did, the packing's balance and each microbatch's
// sharding choice.
type Diagnostics struct {
	// Iteration counts the plans made before this one under the same Inputs
	// (the state's age).
	Iteration int `json:"iteration"`
	// DiscardedPending counts the documents an earlier state held when the
	// Inputs changed and a new state began (they are never trained).
	DiscardedPending int `json:"discarded_pending,omitempty"`
	// CPDegree is the fixed CP degree, DPReplicas = G/CPDegree, and
	// EPCoupledReplicas the replicas one EP group spans (lcm(cp, ep)/cp),
	// which run the same microbatch count.
	CPDegree          int `json:"cp_degree"`
	DPReplicas        int `json:"dp_replicas"`
	EPCoupledReplicas int `json:"ep_coupled_replicas"`
	// SmaxTokens is Smax, the most tokens of a microbatch.
	SmaxTokens int64 `json:"smax_tokens"`
	// ContextTokens is the context the thresholds are fractions of, and
	// ThresholdTokens the queues' lower bounds L_i.
	ContextTokens   int   `json:"context_tokens"`
	ThresholdTokens []int `json:"threshold_tokens"`
	// LinearTokens is α of the predicted workload d² + α·d.
	LinearTokens int64 `json:"linear_tokens"`
	// TargetMicrobatches is N_mb (the pop size); ReplicaMicrobatches each
	// replica's count in this plan (fewer in all when fewer documents wait
	// than N_mb).
	TargetMicrobatches  int   `json:"target_microbatches"`
	ReplicaMicrobatches []int `json:"replica_microbatches"`
	// BatchSequences and BatchTokens describe the batch given to Plan.
	BatchSequences int   `json:"batch_sequences"`
	BatchTokens    int64 `json:"batch_tokens"`
	// Queued counts the batch's outliers added to each queue, Popped the
	// documents each queue released (N_mb or none), EarlyPopped those
	// released early because too few documents were left to lay out one
	// microbatch per replica of an EP group (see the package doc), and
	// QueueLengths what each queue holds after the plan.
	Queued       []int `json:"queued"`
	Popped       []int `json:"popped"`
	EarlyPopped  int   `json:"early_popped,omitempty"`
	QueueLengths []int `json:"queue_lengths"`
	// CarriedIn counts the documents carried into this plan, CarriedOut
	// (CarriedOutTokens) those no microbatch could take, carried onwards.
	CarriedIn        int   `json:"carried_in"`
	CarriedOut       int   `json:"carried_out"`
	CarriedOutTokens int64 `json:"carried_out_tokens"`
	// TrainedSequences and TrainedTokens describe what the plan trains
	// (Plan.Lengths); PendingSequences and PendingTokens what waits after it.
	TrainedSequences int   `json:"trained_sequences"`
	TrainedTokens    int64 `json:"trained_tokens"`
	PendingSequences int   `json:"pending_sequences"`
	PendingTokens    int64 `json:"pending_tokens"`
	// TokenDelayIterations is the mean, over the trained tokens, of the
	// iterations each waited (the paper reports 0.5 on its data).
	TokenDelayIterations float64 `json:"token_delay_iterations"`
	// Imbalance is the largest predicted microbatch workload over the mean
	// (the paper's Max_Latency × PP_size / Total_Latency); MaxMBTokens and
	// MinMBTokens the extreme microbatch token counts.
	Imbalance   float64 `json:"imbalance"`
	MaxMBTokens int64   `json:"max_mb_tokens"`
	MinMBTokens int64   `json:"min_mb_tokens"`
	// PerDocumentGroups and PerSequenceGroups count the microbatches (groups)
	// of each sharding choice; Sharding has every group's.
	PerDocumentGroups int          `json:"per_document_groups"`
	PerSequenceGroups int          `json:"per_sequence_groups"`
	Sharding          []MBSharding `json:"sharding"`
	// Origins[id] names where the plan's sequence id came from (the batch of
	// which iteration, its index there).
	Origins []Origin `json:"origins"`
	// SequenceVisits and HeapOps are the planner's counted work (StallWork);
	// ShardingSteps the sharding predictor's (in WorkUnits, not in the stall:
	// WLB-LLM chooses the sharding on the CP ranks, per microbatch).
	SequenceVisits int64 `json:"sequence_visits"`
	HeapOps        int64 `json:"heap_ops"`
	ShardingSteps  int64 `json:"sharding_steps"`
}

// MBSharding is one replica's microbatch: its size and predicted workload and
// the adaptive sharding choice (§5.3) with both predictions (relative units:
// tile-padded token pairs over relative kernel efficiency, see shard.go).
type MBSharding struct {
	// Microbatch is the index in Plan.Microbatches (the round), Replica the
	// DP replica (ranks [Replica·cp, (Replica+1)·cp)).
	Microbatch int `json:"microbatch"`
	Replica    int `json:"replica"`
	// Documents, Tokens and Workload (Σ d² + α·d, tokens²) describe it.
	Documents int   `json:"documents"`
	Tokens    int64 `json:"tokens"`
	Workload  int64 `json:"workload"`
	// Choice is PerSequence or PerDocument: the smaller prediction, ties to
	// per-sequence (the baseline layout).
	Choice      string  `json:"choice"`
	PerSequence float64 `json:"per_sequence"`
	PerDocument float64 `json:"per_document"`
}

// fill sets the diagnostics that describe the setup and the state after the
// plan (d.Origins and the packing's fields are set by build).
func (d *Diagnostics) fill(su setup, counts, lengths []int, batchTokens int64, trained []int, next state, iteration int) {
	d.Iteration = iteration
	d.CPDegree, d.DPReplicas, d.EPCoupledReplicas = su.cp, su.dp, su.epReplicas
	d.SmaxTokens, d.ContextTokens, d.ThresholdTokens, d.LinearTokens = su.smax, su.contextTokens, su.thresholds, su.alpha
	d.TargetMicrobatches, d.ReplicaMicrobatches = su.target, counts
	d.BatchSequences, d.BatchTokens = len(lengths), batchTokens
	d.QueueLengths = make([]int, len(next.queues))
	for i, q := range next.queues {
		d.QueueLengths[i] = len(q)
	}
	d.CarriedOut = len(next.carried)
	for _, x := range next.carried {
		d.CarriedOutTokens += int64(x.tokens)
	}
	d.PendingSequences, d.PendingTokens = next.pending()
	var weighted float64
	for i, o := range d.Origins {
		d.TrainedTokens += int64(trained[i])
		weighted += float64(trained[i]) * float64(iteration-o.Iteration)
	}
	d.TrainedSequences = len(d.Origins)
	if d.TrainedTokens > 0 {
		d.TokenDelayIterations = weighted / float64(d.TrainedTokens)
	}
}

// Summary lists the diagnostics in a fixed order.
func (d *Diagnostics) Summary() []sched.KV {
	ints := func(v []int) string {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = strconv.Itoa(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	kv := []sched.KV{
		{Name: "iteration (state age)", Value: strconv.Itoa(d.Iteration)},
		{Name: "CP degree × DP replicas", Value: fmt.Sprintf("%d × %d (EP couples %d)", d.CPDegree, d.DPReplicas, d.EPCoupledReplicas)},
		{Name: "Smax (tokens)", Value: strconv.FormatInt(d.SmaxTokens, 10)},
		{Name: "queue thresholds L_i", Value: fmt.Sprintf("%s of context %d", ints(d.ThresholdTokens), d.ContextTokens)},
		{Name: "workload", Value: fmt.Sprintf("d² + %d·d", d.LinearTokens)},
		{Name: "N_mb (target)", Value: strconv.Itoa(d.TargetMicrobatches)},
		{Name: "MBs per replica", Value: ints(d.ReplicaMicrobatches)},
		{Name: "batch", Value: fmt.Sprintf("%d sequences, %d tokens", d.BatchSequences, d.BatchTokens)},
		{Name: "queued / popped", Value: fmt.Sprintf("%s / %s (early %d)", ints(d.Queued), ints(d.Popped), d.EarlyPopped)},
		{Name: "carried in / out", Value: fmt.Sprintf("%d / %d (%d tokens)", d.CarriedIn, d.CarriedOut, d.CarriedOutTokens)},
		{Name: "trained", Value: fmt.Sprintf("%d sequences, %d tokens, mean delay %.2f iterations per token", d.TrainedSequences, d.TrainedTokens, d.TokenDelayIterations)},
		{Name: "pending", Value: fmt.Sprintf("%d sequences, %d tokens (queues %s)", d.PendingSequences, d.PendingTokens, ints(d.QueueLengths))},
		{Name: "imbalance (max/mean W)", Value: strconv.FormatFloat(d.Imbalance, 'f', 3, 64)},
		{Name: "MB tokens (min / max)", Value: fmt.Sprintf("%d / %d", d.MinMBTokens, d.MaxMBTokens)},
		{Name: "sharding", Value: fmt.Sprintf("per-document %d, per-sequence %d", d.PerDocumentGroups, d.PerSequenceGroups)},
		{Name: "sequence visits", Value: strconv.FormatInt(d.SequenceVisits, 10)},
		{Name: "heap ops", Value: strconv.FormatInt(d.HeapOps, 10)},
	}
	if d.DiscardedPending > 0 {
		kv = append(kv, sched.KV{Name: "discarded pending", Value: fmt.Sprintf("%d (the Inputs changed)", d.DiscardedPending)})
	}
	return kv
}

// ChosenOption returns what the policy chose for an option left at its
// default (sched.OptionChooser): the CP degree, N_mb and Smax.
func (d *Diagnostics) ChosenOption(key string) (float64, bool) {
	switch key {
	case "cp_degree":
		return float64(d.CPDegree), true
	case "microbatches":
		return float64(d.TargetMicrobatches), true
	case "smax_tokens":
		return float64(d.SmaxTokens), true
	}
	return 0, false
}

var (
	_ sched.Diagnostics   = (*Diagnostics)(nil)
	_ sched.OptionChooser = (*Diagnostics)(nil)
)
