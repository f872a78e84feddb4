#!/usr/bin/env python3
"""ops.py TOOLS TRACES ASTRA_CONFIG: which operations ASTRA-sim prices differently
from dcpsim, for a set of dcpsim's Chakra traces (TRACES/PREFIX.<npu>.et and
comm_groups.json, every NPU of the job) and the configuration dcpsim trace
--astra-config wrote (ASTRA_CONFIG/network.yml, system.json).

It runs TOOLS/bin/AstraSim_Analytical_Congestion_Unaware on the traces with the
system file's "trace-enabled" set (ASTRA-sim then logs every node's issue and
completion tick, in ns), and prints per kind of node (the last part of its name:
comp.F and comp.B for a layer's forward and backward compute, cp-a2a, moe-dispatch,
tp-rs-attn, ...) the seconds per NPU in dcpsim's trace (duration_micros: for a
collective what dcpsim leaves exposed, 0 where it hides behind compute) beside
ASTRA-sim's. A collective's ASTRA-sim time is its own: from the last member's
issue to the last member's completion (the wait for the other members is left
out), counted once per member. A receive's ASTRA-sim time includes the wait for
its send, so the pipeline's bubbles show there. TOOLS/py must hold Chakra's
Python bindings (the same build check.sh uses); run with PYTHONPATH=TOOLS/py.
"""
import collections
import glob
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile

from chakra.schema.protobuf import et_def_pb2 as pb
from chakra.src.third_party.utils.protolib import decodeMessage, openFileRd


def kind(name):
    parts = name.split(".")
    last = parts[-1]
    if last == "comp":
        last += "." + parts[2]  # F or B
    if "recompute" in parts[:-1]:
        last = "recompute." + last
    return last


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tools, traces, config = sys.argv[1:4]
    files = glob.glob(os.path.join(traces, "*.*.et"))
    prefixes = {os.path.basename(p).rsplit(".", 2)[0] for p in files}
    if len(prefixes) != 1:
        sys.exit(f"ops.py: want one PREFIX.<npu>.et prefix in {traces}, found {sorted(prefixes)}")
    prefix = prefixes.pop()
    kinds, coll = {}, {}
    dcpsim = collections.Counter()
    for p in files:
        npu = int(p.rsplit(".", 2)[1])
        f = openFileRd(p)
        decodeMessage(f, pb.GlobalMetadata())
        seq = collections.Counter()
        while True:
            n = pb.Node()
            if not decodeMessage(f, n):
                break
            k = kind(n.name)
            kinds[(npu, n.id)] = k
            dcpsim[k] += n.duration_micros / 1e6
            if n.type == pb.COMM_COLL_NODE:
                pg = next(a.string_val for a in n.attr if a.name == "pg_name")
                coll[(npu, n.id)] = (pg, seq[pg])  # members issue a group's collectives in one order
                seq[pg] += 1
    work = tempfile.mkdtemp(prefix="ops-")
    system = json.load(open(os.path.join(config, "system.json")))
    system["trace-enabled"] = 1
    json.dump(system, open(os.path.join(work, "system.json"), "w"))
    with open(os.path.join(work, "memory.json"), "w") as f:
        f.write('{"memory-type": "NO_MEMORY_EXPANSION"}\n')
    with open(os.path.join(work, "astra.log"), "w") as out:
        subprocess.run([os.path.join(tools, "bin", "AstraSim_Analytical_Congestion_Unaware"),
                        "--workload-configuration=" + os.path.join(traces, prefix),
                        "--comm-group-configuration=" + os.path.join(traces, "comm_groups.json"),
                        "--system-configuration=" + os.path.join(work, "system.json"),
                        "--remote-memory-configuration=" + os.path.join(work, "memory.json"),
                        "--network-configuration=" + os.path.join(config, "network.yml"),
                        "--logging-folder=" + os.path.join(work, "log")], stdout=out, stderr=subprocess.STDOUT)
    finished = sum("] finished, " in line for line in open(os.path.join(work, "astra.log")))
    issued, astra = {}, collections.Counter()
    calls = collections.defaultdict(list)
    rx = re.compile(r"(issue|callback),sys->id=(\d+), tick=(\d+), node->id=(\d+)")
    # The log rotates: log.N.log is older than log.(N-1).log, log.log the newest.
    logs = sorted(glob.glob(os.path.join(work, "log", "log*.log")),
                  key=lambda p: -int(p.split(".")[-2]) if p.split(".")[-2].isdigit() else 0)
    for line in itertools.chain.from_iterable(open(p) for p in logs):
        m = rx.search(line)
        if not m:
            continue
        key, tick = (int(m.group(2)), int(m.group(4))), int(m.group(3))
        if m.group(1) == "issue":
            issued[key] = tick
        elif key in issued:
            start = issued.pop(key)
            if key in coll:
                calls[coll[key]].append((start, tick, kinds[key]))
            else:
                astra[kinds[key]] += (tick - start) / 1e9
    for members in calls.values():
        last_in = max(s for s, _, _ in members)
        last_out = max(e for _, e, _ in members)
        astra[members[0][2]] += (last_out - last_in) / 1e9 * len(members)
    n = len(files)
    print(f"{prefix}: {n} NPUs, ASTRA-sim finished {finished}; seconds per NPU (logs in {work})")
    print(f"{'node kind':24s} {'dcpsim':>9s} {'ASTRA-sim':>9s} {'ratio':>6s}")
    for k in sorted(set(dcpsim) | set(astra), key=lambda k: (-dcpsim[k], k)):
        ratio = f"{astra[k] / dcpsim[k]:6.2f}" if dcpsim[k] > 0 else "     -"
        print(f"{k:24s} {dcpsim[k] / n:9.4f} {astra[k] / n:9.4f} {ratio}")


if __name__ == "__main__":
    main()
