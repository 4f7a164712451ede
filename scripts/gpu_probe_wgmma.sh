#!/usr/bin/env bash
# The wgmma probe (scripts/probes/wgmma_rs.cu) on the lent GPU machine: builds it for sm_90a and runs the
# configuration sets given (default: 0 1 2 3 4), one line per configuration, into $OUT/probe_SET.txt.
# Usage: scripts/gpu_probe_wgmma.sh [SET...]
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
stamp "build probe"
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude -Iscripts/probes \
    scripts/probes/wgmma_rs.cu -o /tmp/wgmma_rs > "$OUT/probe_build.log" 2>&1 || { cat "$OUT/probe_build.log"; exit 1; }
for s in "${@:-0 1 2 3 4}"; do
  for one in $s; do
    stamp "set $one"
    timeout 300 /tmp/wgmma_rs "$one" 2>&1 | tee "$OUT/probe_$one.txt"
  done
done
