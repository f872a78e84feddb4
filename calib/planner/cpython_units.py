#!/usr/bin/env python3
"""Time the elementary operations of a planner written in CPython.

dcpsim models a policy's planner stall as its work units (sched.Plan.WorkUnits)
times a per-unit CPython cost (calib.CPython, calib/planner.go). This
script measures two of those costs on the machine that runs it and prints CSV
(operation, pool_ranks, units, seconds, seconds_per_unit) on stdout:

  heap_op:  one heapq.heappush or heappop on a heap of (load, first_rank) tuples
            holding G entries, inside the Python loop that drives it (HyDra's
            placement: pop the least-loaded group, test it, push it back).
  seq_visit: one iteration of a Python loop that reads a sequence length, squares
            it and compares it with a bound (a visit of a sorted sequence list;
            the static policy's packing and HyDra's skip probes).

Median of 7 repeats of 200,000 units each. Usage: python3 cpython_units.py > out.csv
"""
import heapq
import platform
import random
import statistics
import sys
import time

REPEATS = 7
UNITS = 200_000


def heap_ops(g):
    rng = random.Random(g)
    heap = [(rng.random(), r) for r in range(g)]
    heapq.heapify(heap)
    lengths = [rng.randint(1, 8192) for _ in range(UNITS // 2)]
    cap = 8192.0 ** 2 * 4
    t = time.perf_counter()
    for s in lengths:
        load, first = heapq.heappop(heap)
        if load + s * s <= cap:
            load += s * s / cap
        heapq.heappush(heap, (load, first))
    return time.perf_counter() - t  # UNITS heap operations (one pop + one push per length)


def seq_visits(_g):
    rng = random.Random(1)
    lengths = sorted((rng.randint(1, 262144) for _ in range(UNITS)), reverse=True)
    bound = 1 << 30
    t = time.perf_counter()
    n = 0
    for s in lengths:
        if s * s <= bound:
            n += 1
    return time.perf_counter() - t


def main():
    w = sys.stdout
    w.write("# %s %s on %s (%s)\n" % (platform.python_implementation(), platform.python_version(),
                                      platform.processor() or platform.machine(), platform.platform()))
    w.write("operation,pool_ranks,units,seconds,seconds_per_unit\n")
    for op, fn, pools in (("heap_op", heap_ops, (512, 2048, 8192)), ("seq_visit", seq_visits, (0,))):
        for g in pools:
            fn(g)  # warm-up
            sec = statistics.median(fn(g) for _ in range(REPEATS))
            w.write("%s,%d,%d,%.6f,%.4g\n" % (op, g, UNITS, sec, sec / UNITS))


if __name__ == "__main__":
    main()
