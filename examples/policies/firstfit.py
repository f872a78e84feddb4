#!/usr/bin/env python3
"""A DCP policy for dcpsim in plain Python (standard library only).

It speaks dcpsim's external-policy protocol (package internal/extpolicy; docs/policies.md,
"A policy in any language"): one JSON batch per line on stdin, one JSON plan
per line on stdout, diagnostics on stderr.

The policy: every sequence gets the smallest power-of-two CP degree k whose
share s/k fits the per-rank budget B (times the `fill` option); sequences are
placed longest first, each into the least-loaded existing group of its degree
(in any microbatch) that still has room, else into a new group on the first
free aligned block of k ranks of the first microbatch that has one, else into a
new microbatch. It reports the elementary operations of its loops as
stall_work (sequence visits, group and block visits), so dcpsim prices its
planning stall as it prices its own Python planners, deterministically.
"""

import json
import sys


def degree(s, budget, max_degree):
    """The smallest power of two k with s/k <= budget, or None."""
    k = 1
    while k <= max_degree:
        if s <= budget * k:
            return k
        k *= 2
    return None


def plan(batch):
    ranks = batch["ranks"]
    fill = float(batch["options"].get("fill", 1.0))
    if not 0 < fill <= 1:
        return {"error": "option fill = %r: must be in (0, 1]" % fill}
    budget = batch["budget_tokens"] * fill
    max_degree = min(batch["max_degree"], ranks)
    lengths = batch["lengths"]
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))

    mbs = []  # each: {"free": [bool per rank], "groups": [[first, size, load, [ids]]]}
    visits = {"sequence_visits": 0, "pool_visits": 0}
    for i in order:
        visits["sequence_visits"] += 1
        s = lengths[i]
        k = degree(s, budget, max_degree)
        if k is None:
            return {"error": "sequence %d (%d tokens) does not fit %d ranks of %g tokens" % (i, s, max_degree, budget)}
        share = s / k
        best = None
        for mb in mbs:
            for g in mb["groups"]:
                visits["pool_visits"] += 1
                if g[1] == k and g[2] + share <= budget and (best is None or g[2] < best[2]):
                    best = g
        if best is None:
            for mb in mbs:
                first = free_block(mb["free"], k, visits)
                if first is not None:
                    best = open_group(mb, first, k)
                    break
        if best is None:
            mb = {"free": [True] * ranks, "groups": []}
            mbs.append(mb)
            best = open_group(mb, free_block(mb["free"], k, visits), k)
        best[2] += share
        best[3].append(i)

    groups = []
    for mb in mbs:
        mb["groups"].sort(key=lambda g: g[0])
        groups.append([{"first_rank": g[0], "size": g[1], "seqs": g[3]} for g in mb["groups"]])
    return {
        "groups": groups,
        "diagnostics": {"microbatches": len(mbs), "fill": fill},
        "work_units": visits["sequence_visits"] + visits["pool_visits"],
        "stall_work": visits,
    }


def free_block(free, k, visits):
    """The first aligned block of k free ranks, or None."""
    for first in range(0, len(free) - k + 1, k):
        visits["pool_visits"] += 1
        if all(free[first:first + k]):
            return first
    return None


def open_group(mb, first, k):
    for r in range(first, first + k):
        mb["free"][r] = False
    g = [first, k, 0.0, []]
    mb["groups"].append(g)
    return g


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        batch = json.loads(line)
        out = plan(batch)
        print("batch %d: %d sequences, %s" % (batch["batch"], len(batch["lengths"]),
              "refused" if "error" in out else "%d microbatches" % len(out["groups"])), file=sys.stderr)
        sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
