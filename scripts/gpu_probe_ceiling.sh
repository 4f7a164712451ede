#!/usr/bin/env bash
# The decode-ceiling probe (scripts/probes/decode_ceiling.cu) on the lent GPU machine: builds it for sm_90a
# and runs it into $OUT/probe_ceiling.txt (one line per configuration: loads only, loads and decode, and
# the library's decode and MMAs at 8 to 64 rows of A, each with its ring depth and CTAs per SM).
# Usage: scripts/gpu_probe_ceiling.sh
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
stamp "build decode_ceiling"
nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude scripts/probes/decode_ceiling.cu \
    -o /tmp/decode_ceiling > "$OUT/probe_ceiling_build.log" 2>&1 || { cat "$OUT/probe_ceiling_build.log"; exit 1; }
stamp "run decode_ceiling"
timeout 120 /tmp/decode_ceiling 2>&1 | tee "$OUT/probe_ceiling.txt"
