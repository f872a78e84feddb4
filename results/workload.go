package results

import (
	"github.com/dcpsim/dcpsim/workload"
)

// WorkloadStats is what `dcpsim workload stats --json` prints: the length
// source, the pooled summary and per-batch statistics.
type WorkloadStats struct {
	Source        string                `json:"source"`
	Distribution  string                `json:"distribution,omitempty"`
	ContextTokens int                   `json:"context_tokens,omitempty"`
	BatchTokens   int64                 `json:"batch_tokens,omitempty"`
	Seed          uint64                `json:"seed"`
	Summary       workload.Summary      `json:"summary"`
	Batches       []workload.BatchStats `json:"batches,omitempty"`
}
