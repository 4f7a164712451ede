#!/usr/bin/env bash
# The split decode / MMA probe (scripts/probes/wgmma_split.cu) on the lent GPU machine: builds it for sm_90a
# and runs the configuration sets given (default: 0), one line per configuration, into $OUT/split_SET.txt.
# Usage: scripts/gpu_probe_split.sh [SET...]
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
stamp "build split probe"
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude -Iscripts/probes \
    scripts/probes/wgmma_split.cu -o /tmp/wgmma_split > "$OUT/split_build.log" 2>&1 || { cat "$OUT/split_build.log"; exit 1; }
for s in "${@:-0}"; do
  stamp "set $s"
  timeout 90 /tmp/wgmma_split "$s" 2>&1 | tee "$OUT/split_$s.txt"
done
