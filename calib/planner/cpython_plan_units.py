#!/usr/bin/env python3
"""Time the per-iteration work of a Python HyDra planner beyond its heap placement.

cpython_units.py measures the placement loop's units (heap_op, seq_visit). A
planner that runs at the head of every iteration must also prepare the batch
and hand every rank its plan; this script measures those units, written as the
Python such a planner runs, on the machine that runs it, and prints CSV
(operation, param, units, seconds, seconds_per_unit) on stdout. dcpsim counts
each unit exactly from its plan (sched.StallWork; sched/hydra PlanBuildWork)
and prices it with calib.CPython (calib/planner.go).

  seq_prep     per sequence: the pass computing S1, S2 and s_max, and the pass
               computing its CP degree cp(s) = min(C*, pow2ceil(max(1,
               ceil(s^2/L*), ceil(s/B)))) into a list (paper Sec. 5.1.1).
  sort_step    sorted(range(N), key=lengths.__getitem__, reverse=True), the
               longest-first order (stable: ties keep the lower id), per
               N*ceil(log2 N) (param: N).
  batch_slot   one (rank, microbatch) slot of the per-rank batches: the empty
               list of sequence pieces every rank gets in every microbatch
               (slots = [[[] for _ in range(G)] for _ in range(M)]).
  seq_piece    one (sequence, rank) piece: inside the loop over a group's ranks,
               compute the rank's zigzag chunk pair (chunks i and 2k-1-i of the
               2k chunks of the sequence) and append both (seq id, start, end)
               chunks to the rank's slot list.
  group_seq    one sequence of a group, outside that loop: read its length and
               compute its chunk length.
  group_batch  one group of a microbatch in the batch-building loop (unpack it,
               take its ranks' slot row); fitted with seq_piece and group_seq.
  group_meta   one group's metadata: the dict of its first rank, size, rank
               list, Ulysses degree u = min(k, ULYSSES_LIMIT) and ring degree
               k/u, its inner Ulysses sub-groups (k/u lists of u consecutive
               ranks), its outer ring sub-groups (u lists of k/u ranks at stride
               u) and its prebuilt process-group handle (a dict look-up of the
               aligned block).
  group_rank   one rank of a group in that metadata: the rank's
               (group index, Ulysses rank, ring rank) entry in its microbatch's
               row; fitted with group_meta.

seq_piece, group_seq and group_batch are a least-squares fit (through the
origin) of the batch-building loop's time over plans of groups of k = 1..512
ranks holding q = 1, 4 or 16 sequences; group_meta and group_rank likewise over
k = 1..512. The fit rows carry param = -1 and their R^2 in a trailing
'# fit' comment line. Each timing is the median of REPEATS runs. heap_op and
seq_visit of cpython_units.py are re-timed here as a cross-check of this
machine against the one that measured them (param as there). Timings run
with the cyclic garbage collector off (see median_time): with it on, the
allocating units (seq_piece, group_meta, group_rank) take about 1.5-2.5x as
long on these plan sizes.

Usage: python3 cpython_plan_units.py > cpython_plan_units.csv
"""
import gc
import math
import os
import platform
import random
import statistics
import sys
import time

REPEATS = 7
UNITS = 200_000
POOL = 512          # HDP ranks of the plans timed (production-256k's G)
ULYSSES_LIMIT = 64  # inner Ulysses degree bound: the query heads per TP rank (paper-mla, tp 1)
SIZES = [1 << c for c in range(10)]  # group sizes k = 1..512


def median_time(fn):
    """Median seconds of REPEATS calls of fn (after one warm-up), each timed
    with the cyclic garbage collector off, as timeit times and as Megatron-LM
    trains with --manual-gc."""
    def once():
        gc.collect()
        gc.disable()
        try:
            return fn()
        finally:
            gc.enable()
    once()
    return statistics.median(once() for _ in range(REPEATS))


def random_lengths(n, seed):
    rng = random.Random(seed)
    # long-tailed lengths from 64 tokens to 256K (log-uniform)
    return [int(math.exp(rng.uniform(math.log(64), math.log(262144)))) for _ in range(n)]


# --- sequence preparation -------------------------------------------------

def seq_prep():
    lengths = random_lengths(UNITS, 3)
    budget, cap = 8192, 512
    t = time.perf_counter()
    s1 = s2 = smax = 0
    for s in lengths:
        s1 += s
        s2 += s * s
        if s > smax:
            smax = s
    lam = smax * smax // cap  # closed form: O(1), negligible
    degree = []
    for s in lengths:
        k = max(1, -(-s * s // lam), -(-s // budget))
        degree.append(min(cap, 1 << (k - 1).bit_length()))
    return time.perf_counter() - t


def sort_steps(n):
    lengths = random_lengths(n, n)

    def run():
        t = time.perf_counter()
        sorted(range(n), key=lengths.__getitem__, reverse=True)
        return time.perf_counter() - t
    return run


def sort_units(n):
    return n * max(1, (n - 1).bit_length())


# --- per-rank batches -----------------------------------------------------

def batch_slots():
    mbs = UNITS // POOL
    t = time.perf_counter()
    slots = [[[] for _ in range(POOL)] for _ in range(mbs)]
    sec = time.perf_counter() - t
    del slots
    return sec


def synthetic_plan(k, q, mbs, seed):
    """mbs microbatches of POOL/k groups of k ranks, q sequences each."""
    rng = random.Random(seed)
    plan, lengths, sid = [], [], 0
    for _ in range(mbs):
        mb = []
        for first in range(0, POOL, k):
            seqs = list(range(sid, sid + q))
            sid += q
            lengths.extend(rng.randint(2 * k, 8192 * k) for _ in seqs)
            mb.append((first, k, seqs))
        plan.append(mb)
    return plan, lengths


def build_batches(plan, lengths, slots):
    """The planner's per-rank batches: rank r's list in MB m holds, for every
    sequence of its group, the two zigzag chunks (seq, start, end) it runs."""
    for m, mb in enumerate(plan):
        row = slots[m]
        for first, k, seqs in mb:
            two_k = 2 * k
            for sid in seqs:
                c = -(-lengths[sid] // two_k)  # chunk length (the last chunk padded)
                for i in range(k):
                    pieces = row[first + i]
                    pieces.append((sid, i * c, i * c + c))
                    j = two_k - 1 - i
                    pieces.append((sid, j * c, j * c + c))


def batch_case(k, q):
    mbs = max(1, UNITS // (POOL * q))
    plan, lengths = synthetic_plan(k, q, mbs, k * 131 + q)

    def run():
        slots = [[[] for _ in range(POOL)] for _ in range(mbs)]
        t = time.perf_counter()
        build_batches(plan, lengths, slots)
        return time.perf_counter() - t
    groups = mbs * (POOL // k)
    return run, (groups * q * k, groups * q, groups)  # pieces, group sequences, groups


# --- group metadata -------------------------------------------------------

def build_group_meta(plan, process_groups, rows):
    meta = []
    for m, mb in enumerate(plan):
        row = rows[m]
        groups = []
        for gid, (first, k, _seqs) in enumerate(mb):
            u = min(k, ULYSSES_LIMIT)
            ring = k // u
            ranks = list(range(first, first + k))
            groups.append({
                "first": first, "size": k, "ranks": ranks,
                "ulysses": u, "ring": ring,
                "inner": [ranks[j * u:(j + 1) * u] for j in range(ring)],
                "outer": [ranks[j::u] for j in range(u)],
                "pg": process_groups[(first, k)],
            })
            for i in range(k):
                row[first + i] = (gid, i % u, i // u)
        meta.append(groups)
    return meta


def meta_case(k):
    mbs = max(1, UNITS // POOL)
    plan, _ = synthetic_plan(k, 1, mbs, k)
    process_groups = {(f, s): object() for s in SIZES for f in range(0, POOL, s)}

    def run():
        rows = [[None] * POOL for _ in range(mbs)]
        t = time.perf_counter()
        build_group_meta(plan, process_groups, rows)
        return time.perf_counter() - t
    groups = mbs * (POOL // k)
    return run, (groups, groups * k)  # groups, group ranks


# --- cross-check of cpython_units.py: its own heap_op and seq_visit loops ---

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpython_units  # noqa: E402  (the committed units' script, beside this one)


# --- least squares through the origin -------------------------------------

def lstsq(xs, ys):
    """Coefficients b minimising sum (y - x.b)^2, and R^2 (uncentred)."""
    p = len(xs[0])
    a = [[sum(x[i] * x[j] for x in xs) for j in range(p)] + [sum(x[i] * y for x, y in zip(xs, ys))] for i in range(p)]
    for c in range(p):  # Gauss-Jordan with partial pivoting
        piv = max(range(c, p), key=lambda r: abs(a[r][c]))
        a[c], a[piv] = a[piv], a[c]
        for r in range(p):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [v - f * w for v, w in zip(a[r], a[c])]
    b = [a[i][p] / a[i][i] for i in range(p)]
    res = sum((y - sum(bi * xi for bi, xi in zip(b, x))) ** 2 for x, y in zip(xs, ys))
    tot = sum(y * y for y in ys)
    return b, 1 - res / tot


def main():
    w = sys.stdout
    w.write("# %s %s on %s (%s; %s)\n" % (platform.python_implementation(), platform.python_version(),
                                          platform.processor() or platform.machine(), cpu_name(), platform.platform()))
    w.write("operation,param,units,seconds,seconds_per_unit\n")

    def row(op, param, units, sec):
        w.write("%s,%d,%d,%.6f,%.4g\n" % (op, param, units, sec, sec / units))

    row("seq_prep", 0, UNITS, median_time(seq_prep))
    for n in (2048, 22_000, 180_000):
        row("sort_step", n, sort_units(n), median_time(sort_steps(n)))
    slots = (UNITS // POOL) * POOL
    row("batch_slot", POOL, slots, median_time(batch_slots))

    xs, ys = [], []
    for q in (1, 4, 16):
        for k in SIZES:
            run, x = batch_case(k, q)
            sec = median_time(run)
            xs.append(x)
            ys.append(sec)
            w.write("# batch_build k=%d q=%d: pieces %d, group sequences %d, groups %d, %.6f s\n" % (k, q, *x, sec))
    (piece, gseq, gbatch), r2 = lstsq(xs, ys)
    for op, v in (("seq_piece", piece), ("group_seq", gseq), ("group_batch", gbatch)):
        w.write("%s,-1,0,0,%.4g\n" % (op, v))
    w.write("# fit seq_piece,group_seq,group_batch: R^2 %.4f over %d timings\n" % (r2, len(ys)))

    xs, ys = [], []
    for k in SIZES:
        run, x = meta_case(k)
        sec = median_time(run)
        xs.append(x)
        ys.append(sec)
        w.write("# group_meta k=%d: groups %d, group ranks %d, %.6f s\n" % (k, *x, sec))
    (gmeta, grank), r2 = lstsq(xs, ys)
    for op, v in (("group_meta", gmeta), ("group_rank", grank)):
        w.write("%s,-1,0,0,%.4g\n" % (op, v))
    w.write("# fit group_meta,group_rank: R^2 %.4f over %d timings\n" % (r2, len(ys)))

    for g in (2048,):
        row("heap_op", g, cpython_units.UNITS, median_time(lambda: cpython_units.heap_ops(g)))
    row("seq_visit", 0, cpython_units.UNITS, median_time(lambda: cpython_units.seq_visits(0)))


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "%s, %d logical CPUs" % (line.split(":", 1)[1].strip(), sum(
                        1 for l in open("/proc/cpuinfo") if l.startswith("processor")))
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
