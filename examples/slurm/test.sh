#!/usr/bin/env bash
# A real Slurm on this machine, end to end: install Debian's slurm-wlm and
# munge when missing, start munged, slurmctld and slurmd for a one-node
# cluster in a private folder (its own slurm.conf, key, ports, state), submit
# examples/slurm/sweep.sbatch as a 1-based, stepped, throttled job array
# (--array=1-7:2%2: tasks 1, 3, 5, 7) and examples/slurm/merge.sbatch with
# --dependency=afterok, wait for the merge, and check that the merged sweep
# equals the unsharded one (every simulated file byte for byte). Every daemon
# it started is stopped by pid whatever happens. It prints one closing line.
# If Slurm cannot start here it says why and fails; it never skips.
#
#   bash examples/slurm/test.sh            (from anywhere; .ci/run runs it)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
start=$(date +%s)
work=$(mktemp -d /tmp/dcpsim-slurm.XXXXXX)
pids=()
fail() {
	echo "examples/slurm/test.sh: FAIL: $*" >&2
	for f in "$work"/log/*.log; do
		[ -f "$f" ] && { echo "--- $f (last lines)" >&2; tail -n 15 "$f" >&2; }
	done
	exit 1
}
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
	command -v apt-get >/dev/null 2>&1 || fail "slurm-wlm and munge are not installed and there is no apt-get to install them"
	$sudo apt-get update -q >/dev/null
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null || fail "apt-get install slurm-wlm munge failed"
fi
user=$(id -un)
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2/1024*0.9)}' /proc/meminfo)
mkdir -p "$work"/{munge,state,spool,log,out}
chmod 700 "$work/munge"

# munge: a fresh key and a private socket.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1 count=1024 status=none
chmod 400 "$work/munge/munge.key"
munged --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
	--pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" \
	--seed-file="$work/munge/munged.seed" --force || fail "munged did not start"
for _ in $(seq 50); do [ -s "$work/munge/munged.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/munge/munged.pid")")

# Two free ports, from the kernel.
read -r ctlport dport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])' 2>/dev/null || echo "$((20000 + $$ % 20000)) $((20001 + $$ % 20000))")

conf="$work/slurm.conf"
cat >"$conf" <<CONF
ClusterName=dcpsim-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctlport
SlurmdPort=$dport
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=600
MaxArraySize=1000
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$conf"
slurmctld -f "$conf" || fail "slurmctld did not start"
for _ in $(seq 50); do [ -s "$work/slurmctld.pid" ] && break; sleep 0.1; done
[ -s "$work/slurmctld.pid" ] || fail "slurmctld wrote no pid file"
pids+=("$(cat "$work/slurmctld.pid")")
slurmd -f "$conf" || fail "slurmd did not start"
for _ in $(seq 50); do [ -s "$work/slurmd.pid" ] && break; sleep 0.1; done
[ -s "$work/slurmd.pid" ] || fail "slurmd wrote no pid file"
pids+=("$(cat "$work/slurmd.pid")")
for _ in $(seq 100); do
	state=$(sinfo -h -N -o %t 2>/dev/null | head -n1 || true)
	case "$state" in idle*) break ;; esac
	sleep 0.2
done
case "$state" in idle*) ;; *) fail "the node is not idle (sinfo says '${state:-nothing}')" ;; esac

# The binary the jobs run, and the unsharded sweep to compare with.
(cd "$repo" && go build -o "$work/dcpsim" ./cmd/dcpsim) || fail "go build failed"
scenario="$repo/examples/slurm/small-sweep.toml"
"$work/dcpsim" sweep "$scenario" --no-figures --out "$work/whole" >/dev/null || fail "the unsharded sweep failed"

cd "$work/out"
export DCPSIM="$work/dcpsim"
jid=$(sbatch --parsable --array=1-7:2%2 "$repo/examples/slurm/sweep.sbatch" "$scenario" "$work/out") || fail "sbatch of the array failed"
mid=$(sbatch --parsable --dependency=afterok:"$jid" "$repo/examples/slurm/merge.sbatch" "$work/out") || fail "sbatch of the merge failed"
for _ in $(seq 600); do
	st=$(scontrol show job "$mid" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -n1)
	case "$st" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | DEADLINE) break ;; esac
	sleep 0.2
done
[ "$st" = COMPLETED ] || {
	cat "$work"/out/dcpsim-*.out >&2 2>/dev/null || true
	fail "the merge job ended ${st:-unknown}"
}
shards=$(ls -d "$work"/out/shard-* | wc -l)
[ "$shards" -eq 4 ] || fail "$shards shard folders, want 4 (tasks 1, 3, 5, 7)"

# Every simulated file of the merged sweep equals the unsharded sweep's: the
# points' summaries and iterations, and sweep.json / sweep.csv. (timings.json
# holds measured wall times and manifest.json the build: not compared.)
n=0
while IFS= read -r f; do
	cmp -s "$work/whole/$f" "$work/out/merged/$f" || fail "$f differs between the merged and the unsharded sweep"
	n=$((n + 1))
done < <(cd "$work/whole" && find . -name summary.json -o -name iterations.csv -o -name point.json -o -name sweep.json -o -name sweep.csv | sort)
[ "$n" -ge 20 ] || fail "only $n files compared"
echo "examples/slurm/test.sh: PASS: a real Slurm $(slurmctld -V | awk '{print $2}') ran the sweep as a 1-based stepped array (--array=1-7:2%2, 4 shards) and an afterok merge; the merged sweep equals the unsharded one ($n files byte for byte); $(($(date +%s) - start)) s"
