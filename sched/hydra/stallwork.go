package hydra

import (
	"math/bits"

	"github.com/dcpsim/dcpsim/sched"
)

// PlanBuildWork adds to w the per-iteration work of a Python HyDra besides its
// placement loop (whose heap operations and sequence visits the packers count),
// for a batch of n sequences planned into the global microbatches mbs over
// poolRanks ranks (every rank takes part in every MB, idle or not):
//
//   - PreparedSequences n: the batch-sums pass and the cp(s) pass (paper
//     §5.1.1), one visit each per sequence;
//   - SortSteps n·⌈log₂ n⌉: the longest-first sort;
//   - BatchSlots poolRanks·len(mbs): one list of sequence pieces per rank and MB;
//   - SequencePieces Σ |Seqs|·Size: each sequence of a group of k ranks is cut
//     into 2k zigzag chunks, and each rank appends its pair;
//   - GroupSequences Σ |Seqs| and Groups Σ |Groups|: the batch-building
//     loop's per-sequence and per-group steps, the latter also each group's
//     metadata record (rank list, inner Ulysses and outer ring sub-groups);
//   - GroupRanks Σ Size: each rank's metadata entry in every MB whose groups
//     hold it.
//
// The counts are exact functions of n and the plan; costmodel.PlannerStallSeconds
// prices them with calib.CPython's units from calib/planner/cpython_plan_units.py.
// Not counted: sending the plan to the ranks (the paper's broadcast of the MB
// count and whatever moves the per-rank batches), which is communication, and
// turning each rank's pieces into tensors, which is the data loader's.
func PlanBuildWork(w *sched.StallWork, n, poolRanks int, mbs []sched.Microbatch) {
	w.PreparedSequences += int64(n)
	w.SortSteps += SortSteps(n)
	w.BatchSlots += int64(poolRanks) * int64(len(mbs))
	for _, mb := range mbs {
		w.Groups += int64(len(mb.Groups))
		for _, g := range mb.Groups {
			seqs, size := int64(len(g.Seqs)), int64(g.Size)
			w.GroupSequences += seqs
			w.SequencePieces += seqs * size
			w.GroupRanks += size
		}
	}
}

// SortSteps is n·⌈log₂ n⌉ (0 for n <= 1), the unit the longest-first sort of n
// sequences is priced in.
func SortSteps(n int) int64 {
	if n <= 1 {
		return 0
	}
	return int64(n) * int64(bits.Len(uint(n-1)))
}
