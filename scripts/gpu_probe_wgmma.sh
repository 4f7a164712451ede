#!/usr/bin/env bash
# A wgmma probe on the lent GPU machine: builds scripts/probes/$PROBE.cu (default wgmma_rs; wgmma_split
# through scripts/gpu_probe_split.sh) for sm_90a and runs the configuration sets given (default: 0 1 2 3
# 4), one line per configuration, into $OUT/${PROBE}_SET.txt, each set at most PROBE_TIMEOUT seconds (300).
# Usage: [PROBE=NAME] [PROBE_TIMEOUT=S] scripts/gpu_probe_wgmma.sh [SET...]
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
PROBE=${PROBE:-wgmma_rs}
stamp "build $PROBE"
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude -Iscripts/probes \
    "scripts/probes/$PROBE.cu" -o "/tmp/$PROBE" > "$OUT/${PROBE}_build.log" 2>&1 || { cat "$OUT/${PROBE}_build.log"; exit 1; }
for s in "${@:-0 1 2 3 4}"; do
  for one in $s; do
    stamp "set $one"
    timeout "${PROBE_TIMEOUT:-300}" "/tmp/$PROBE" "$one" 2>&1 | tee "$OUT/${PROBE}_$one.txt"
  done
done
