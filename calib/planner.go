package calib

// CPythonCosts prices the elementary operations of a planner written in
// Python, run on a node's host CPU. The systems dcpsim compares ship Python
// planners that run at the head of every iteration, on the critical path;
// sched.StallWork counts a plan's operations by kind and the engine prices
// them with these constants into the modelled planning stall. They describe
// the host CPU and the interpreter, not a GPU, so they are stored once here
// rather than in every GPU profile.
type CPythonCosts struct {
	// PoolVisitSeconds is one rank or group visited by a Python-level scan over
	// the pool (Megatron-Core DCP's list scans).
	PoolVisitSeconds Const
	// HeapOpSeconds is one heapq push or pop on a heap of (load, rank) tuples,
	// inside the Python loop that drives it.
	HeapOpSeconds Const
	// SequenceVisitSeconds is one iteration of a Python loop that reads,
	// squares and compares a sequence length.
	SequenceVisitSeconds Const

	// The rest of a Python planner's per-iteration pipeline around its
	// placement loop (sched.StallWork's PreparedSequences to GroupRanks;
	// calib/planner/cpython_plan_units.py, whose docstring shows the Python
	// each one times).

	// PreparedSequenceSeconds is one sequence of the batch's preparation: its
	// visit of the batch-sums pass (S1, S2, s_max) and of the pass computing
	// and storing its CP degree cp(s).
	PreparedSequenceSeconds Const
	// SortStepSeconds is one of the N·⌈log₂ N⌉ steps of sorting N sequence
	// ids longest first (sorted with a C-level key).
	SortStepSeconds Const
	// BatchSlotSeconds is one (rank, microbatch) slot of the per-rank
	// batches: creating its empty list of sequence pieces.
	BatchSlotSeconds Const
	// SequencePieceSeconds is one (sequence, rank) piece: computing the
	// rank's zigzag chunk pair and appending both (seq id, start, end) chunks
	// to its slot, inside the loop over the group's ranks.
	SequencePieceSeconds Const
	// GroupSequenceSeconds is one sequence of a group in the batch-building
	// loop, outside its loop over the ranks (read the length, compute the
	// chunk length).
	GroupSequenceSeconds Const
	// GroupBatchSeconds is one group in the batch-building loop.
	GroupBatchSeconds Const
	// GroupMetaSeconds is one group's metadata record: its rank list, inner
	// Ulysses and outer ring sub-group lists and prebuilt process-group
	// look-up, in a dict.
	GroupMetaSeconds Const
	// GroupRankSeconds is one rank's metadata entry in a microbatch (its
	// group, Ulysses rank and ring rank).
	GroupRankSeconds Const
}

// CPython holds the measured CPython costs (CPython 3.11 on a 2-core x86-64
// host). PoolVisitSeconds is fitted to the timings of Megatron's own scheduler
// (sched/mcore's TestCPythonTimingFit recomputes the fit); HeapOpSeconds and
// SequenceVisitSeconds come from calib/planner/cpython_units.py, committed
// with its output; the plan-building costs from PreparedSequenceSeconds on
// come from calib/planner/cpython_plan_units.py, committed with its output,
// measured on a different 2-core host (an AMD EPYC) on which heap_op and
// seq_visit re-time at about 1.1x and 2-3x the values here (the csv's
// cross-check rows): the hosts differ, and these constants are not rescaled.
var CPython = CPythonCosts{
	PoolVisitSeconds: Const{
		Value:  6.77e-08,
		Source: "measurement: sched/mcore/testdata/mcore-dcp-g2-timing.jsonl (least squares through the origin of Megatron's CPython scheduler time against its rank visits, sched/mcore TestCPythonTimingFit; CPython 3.11, one core of a 2-core x86-64 host; R^2 0.995)",
	},
	HeapOpSeconds: Const{
		Value:  6.159e-07,
		Source: "measurement: calib/planner/cpython_units.csv (calib/planner/cpython_units.py, heap_op at G = 2048: one heapq push or pop of (load, rank) tuples inside its driving loop; CPython 3.11.7, 2-core Xeon; 3.4e-7 at G = 512, 7.2e-7 at 8192)",
	},
	SequenceVisitSeconds: Const{
		Value:  8.607e-08,
		Source: "measurement: calib/planner/cpython_units.csv (calib/planner/cpython_units.py, seq_visit: one iteration of a Python loop reading, squaring and comparing a length; CPython 3.11.7, 2-core Xeon)",
	},
	PreparedSequenceSeconds: Const{
		Value:  6.551e-07,
		Source: "measurement: calib/planner/cpython_plan_units.csv (calib/planner/cpython_plan_units.py, seq_prep: one sequence of the batch-sums pass and of the pass computing and storing cp(s), over 200,000 sequences; CPython 3.11.7, 2-core AMD EPYC, cyclic GC off)",
	},
	SortStepSeconds: Const{
		Value:  1.822e-08,
		Source: "measurement: calib/planner/cpython_plan_units.csv (calib/planner/cpython_plan_units.py, sort_step at N = 22000: sorted(range(N), key=lengths.__getitem__, reverse=True) per N·ceil(log2 N); 2.4e-8 at N = 2048, 2.3e-8 at 180000; CPython 3.11.7, 2-core AMD EPYC, cyclic GC off)",
	},
	BatchSlotSeconds: Const{
		Value:  1.21e-07,
		Source: "measurement: calib/planner/cpython_plan_units.csv (calib/planner/cpython_plan_units.py, batch_slot: one empty per-(rank, MB) list of [[[] for _ in range(G)] for _ in range(M)] at G = 512; CPython 3.11.7, 2-core AMD EPYC, cyclic GC off)",
	},
	SequencePieceSeconds: Const{
		Value:  3.842e-07,
		Source: "measurement: calib/planner/cpython_plan_units.csv (calib/planner/cpython_plan_units.py, seq_piece: least squares of the batch-building loop over plans of groups of 1 to 512 ranks holding 1, 4 or 16 sequences, per (sequence, rank) piece: its zigzag chunk pair appended as two (seq, start, end) tuples; R^2 0.94; CPython 3.11.7, 2-core AMD EPYC, cyclic GC off)",
	},
	GroupSequenceSeconds: Const{
		Value:  2.488e-07,
		Source: "measurement: calib/planner/cpython_plan_units.csv (calib/planner/cpython_plan_units.py, group_seq: the same fit, per sequence of a group outside the loop over its ranks; R^2 0.94; CPython 3.11.7, 2-core AMD EPYC, cyclic GC off)",
	},
	GroupBatchSeconds: Const{
		Value:  8.228e-07,
		Source: "measurement: calib/planner/cpython_plan_units.csv (calib/planner/cpython_plan_units.py, group_batch: the same fit, per group; R^2 0.94; CPython 3.11.7, 2-core AMD EPYC, cyclic GC off)",
	},
	GroupMetaSeconds: Const{
		Value:  3.528e-06,
		Source: "measurement: calib/planner/cpython_plan_units.csv (calib/planner/cpython_plan_units.py, group_meta: least squares of building every group's metadata dict (rank list, u = min(k, 64) Ulysses and k/u ring sub-group lists, process-group look-up) over groups of 1 to 512 ranks, per group; R^2 0.96; CPython 3.11.7, 2-core AMD EPYC, cyclic GC off)",
	},
	GroupRankSeconds: Const{
		Value:  4.49e-07,
		Source: "measurement: calib/planner/cpython_plan_units.csv (calib/planner/cpython_plan_units.py, group_rank: the same fit, per rank's (group, Ulysses rank, ring rank) entry; R^2 0.96; CPython 3.11.7, 2-core AMD EPYC, cyclic GC off)",
	},
}

// CBCCosts prices the work of a MILP solved by COIN-OR CBC (FlexSP's
// planner) on a host CPU, single-threaded: a solve's modelled time is
// SolveSeconds + nodes·NodeSeconds + simplex iterations·IterationSeconds,
// with the counts the solver reports (sched.StallWork).
type CBCCosts struct {
	// SolveSeconds is one solve's fixed cost: starting cbc, reading the
	// model and the start, presolve and the root's heuristics.
	SolveSeconds Const
	// NodeSeconds is one branch-and-bound node.
	NodeSeconds Const
	// IterationSeconds is one simplex iteration.
	IterationSeconds Const
}

// CBC holds the measured CBC costs: the least-squares fit of every solve of
// FlexSP plans of long-256k batches on pools of 128 to 2,048 ranks at node
// limits 1, 20 and 200 (calib/planner/cbc_flexsp_solves.csv, written by
// sched/flexsp's TestMeasureCBC; calib's TestCBCProvenance refits it).
var CBC = CBCCosts{
	SolveSeconds: Const{
		Value:  0.02718,
		Source: "measurement: calib/planner/cbc_flexsp_solves.csv (least squares of 979 CBC 2.10.8 solves of FlexSP microbatch MILPs, seconds against solves, nodes and simplex iterations; one core of a 2-core Xeon; R^2 0.79)",
	},
	NodeSeconds: Const{
		Value:  3.402e-4,
		Source: "measurement: calib/planner/cbc_flexsp_solves.csv (least squares of 979 CBC 2.10.8 solves of FlexSP microbatch MILPs, seconds against solves, nodes and simplex iterations; one core of a 2-core Xeon; R^2 0.79)",
	},
	IterationSeconds: Const{
		Value:  5.213e-5,
		Source: "measurement: calib/planner/cbc_flexsp_solves.csv (least squares of 979 CBC 2.10.8 solves of FlexSP microbatch MILPs, seconds against solves, nodes and simplex iterations; one core of a 2-core Xeon; R^2 0.79)",
	},
}
