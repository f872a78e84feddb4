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
}

// CPython holds the measured CPython costs (CPython 3.11 on a 2-core x86-64
// host). PoolVisitSeconds is fitted to the timings of Megatron's own scheduler
// (sched/mcore's TestCPythonTimingFit recomputes the fit); HeapOpSeconds and
// SequenceVisitSeconds come from calib/planner/cpython_units.py, committed
// with its output.
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
