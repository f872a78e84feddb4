#!/usr/bin/env bash
# compare.sh TOOLS SCENARIO POLICY NPUS [MAX_DEVIATION]: write one iteration of
# SCENARIO under POLICY as Chakra traces of all NPUS GPUs with the cluster's
# ASTRA-sim configuration (dcpsim trace --format chakra --astra-config), then run
# TOOLS/check.sh on them twice with that configuration: compute replayed
# (system.json), where ASTRA-sim's iteration must be within MAX_DEVIATION (default
# 0.15) of dcpsim's, and compute from the roofline (system-roofline.json), where
# every NPU must finish. TOOLS is a build of ASTRA-sim and Chakra's tools with
# their check.sh (its last line "check.sh: PASS ... (xRATIO) ..." or
# "check.sh: FAIL ..."; docs/chakra.md). dcpsim is $DCPSIM, else bin/dcpsim, else
# the one on the PATH. Exits 1 on a failed check or a deviation past the bound.
set -euo pipefail
if [ $# -lt 4 ]; then
	echo "usage: compare.sh TOOLS SCENARIO POLICY NPUS [MAX_DEVIATION]" >&2
	exit 2
fi
tools=$1 scenario=$2 policy=$3 npus=$4 bound=${5:-0.15}
dcpsim=${DCPSIM:-}
if [ -z "$dcpsim" ]; then
	if [ -x bin/dcpsim ]; then dcpsim=bin/dcpsim; else dcpsim=dcpsim; fi
fi
work=$(mktemp -d)
status=0
# Keep the traces and ASTRA-sim's logs of a failed check.
trap 'if [ "$status" = 0 ]; then rm -rf "$work"; else echo "compare.sh: files in $work" >&2; fi' EXIT
"$dcpsim" trace "$scenario" --policy "$policy" --format chakra --ranks "0-$((npus - 1))" \
	--out "$work/et" --astra-config "$work/astra" > "$work/trace.log"
name=$(basename "$scenario" .toml)
for mode in replay roofline; do
	system=$work/astra/system.json
	[ "$mode" = roofline ] && system=$work/astra/system-roofline.json
	if ! SYSTEM=$system NETWORK=$work/astra/network.yml OUT=$work/check-$mode \
		"$tools/check.sh" "$work/et" > "$work/check-$mode.log" 2>&1; then
		:
	fi
	verdict=$(tail -1 "$work/check-$mode.log")
	case $verdict in
	"check.sh: PASS"*) ;;
	*)
		cat "$work/check-$mode.log" >&2
		echo "compare.sh: $name $policy ($mode): ASTRA-sim's check failed" >&2
		status=1
		continue
		;;
	esac
	ratio=$(echo "$verdict" | sed -n 's/.*(x\([0-9.]*\)).*/\1/p')
	if [ -z "$ratio" ]; then
		echo "compare.sh: $name $policy ($mode): no ratio in: $verdict" >&2
		status=1
		continue
	fi
	if [ "$mode" = replay ] && ! awk -v r="$ratio" -v b="$bound" 'BEGIN { d = r - 1; if (d < 0) d = -d; exit !(d <= b) }'; then
		echo "compare.sh: $name $policy ($mode): ASTRA-sim/dcpsim = $ratio, outside 1 ± $bound: $verdict" >&2
		status=1
		continue
	fi
	echo "compare.sh: $name $policy ($mode): ASTRA-sim/dcpsim = $ratio: $(echo "${verdict#check.sh: }" | sed 's/ \[logs: .*\]$//')"
done
exit $status
