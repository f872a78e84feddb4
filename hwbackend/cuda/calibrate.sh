#!/usr/bin/env bash
# calibrate.sh: measure an H200 calibration profile with the CUDA backend.
#
# Usage (from anywhere in the repository, on a machine with an NVIDIA GPU):
#   bash hwbackend/cuda/calibrate.sh [OUT_DIR]
# OUT_DIR defaults to $OUT, else ./calibration-out. It receives profile.toml,
# measurements.csv and calibrate.log. The whole script stays under 8 minutes:
# the build is capped at 90 s and the calibration run at 6 min 30 s (its own
# sweep budget is 6 min).
#
# The binary: $DCPSIM_BIN if set; else built here with `go build -tags cuda`
# when go is on the PATH; else bin/dcpsim-cuda from the repository, which a
# machine with Go makes beforehand with
#   CGO_ENABLED=1 go build -tags cuda -o bin/dcpsim-cuda ./cmd/dcpsim
# (it links only libc; the CUDA libraries are dlopen()ed at run time).
#
# Libraries: libcudart, libcublas and libnvrtc of CUDA 12 or 13, libnccl 2 and
# the driver's libcuda.so.1, found through the ld cache, /usr/local/cuda and
# /usr/local/nvidia, or pip's nvidia-* wheels (added to LD_LIBRARY_PATH).
set -euo pipefail

out_dir="${1:-${OUT:-./calibration-out}}"
mkdir -p "$out_dir"
out_dir="$(cd "$out_dir" && pwd)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec > >(tee "$out_dir/calibrate.log") 2>&1

section() { printf '\n== %s\n' "$*"; }

section "machine"
date -u '+%Y-%m-%dT%H:%M:%SZ'
uname -srm
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi || true
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
else
	echo "nvidia-smi: not found"
fi

section "libraries"
# Directories that may hold CUDA libraries outside the ld cache.
extra_dirs=()
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
	[[ -d "$d" ]] && extra_dirs+=("$d")
done
if command -v python3 >/dev/null 2>&1; then
	while IFS= read -r sp; do
		[[ -d "$sp/nvidia" ]] || continue
		while IFS= read -r lib; do
			extra_dirs+=("$(dirname "$lib")")
		done < <(find "$sp/nvidia" -maxdepth 4 \( -name 'libcudart.so.*' -o -name 'libcublas.so.*' \
			-o -name 'libnvrtc.so.*' -o -name 'libnccl.so.*' \) 2>/dev/null)
	done < <(python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null || true)
fi
if ((${#extra_dirs[@]} > 0)); then
	ld_extra="$(printf '%s\n' "${extra_dirs[@]}" | awk '!seen[$0]++' | paste -sd: -)"
	export LD_LIBRARY_PATH="${ld_extra}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi
for lib in libcuda.so libcudart.so libcublas.so libnvrtc.so libnccl.so libcudnn.so; do
	echo "-- $lib"
	ldconfig -p 2>/dev/null | grep -F "$lib" | sed 's/^/   ldconfig: /' || true
	for d in "${extra_dirs[@]}"; do
		ls -1 "$d"/"$lib"* 2>/dev/null | sed 's/^/   file: /' || true
	done
done
command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2 || echo "nvcc: not found (not needed)"

section "build"
cd "$repo"
bin="${DCPSIM_BIN:-}"
if [[ -z "$bin" ]]; then
	if command -v go >/dev/null 2>&1; then
		go version
		bin=/tmp/dcpsim
		CGO_ENABLED=1 timeout 90 go build -tags cuda -o "$bin" ./cmd/dcpsim
	elif [[ -x "$repo/bin/dcpsim-cuda" ]]; then
		bin="$repo/bin/dcpsim-cuda"
	else
		echo "no go on the PATH, DCPSIM_BIN unset and no bin/dcpsim-cuda: build one with" >&2
		echo "  CGO_ENABLED=1 go build -tags cuda -o bin/dcpsim-cuda ./cmd/dcpsim" >&2
		exit 2
	fi
fi
echo "binary: $bin"

section "calibrate"
start=$(date +%s)
timeout --signal=INT --kill-after=20 390 "$bin" calibrate --backend cuda --base H200 --budget 6m \
	--out "$out_dir/profile.toml" --measurements "$out_dir/measurements.csv"
echo "calibrate took $(($(date +%s) - start)) s"

section "results"
ls -l "$out_dir"
head -n 40 "$out_dir/profile.toml" || true
