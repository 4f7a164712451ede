#!/usr/bin/env bash
# The two ceiling probes on the lent GPU machine, built for sm_90a, each into $OUT/probe_NAME.txt:
# - decode_ceiling (scripts/probes/decode_ceiling.cu): loads only, loads and decode, and the library's
#   decode and MMAs at 8 to 64 rows of A, each with its ring depth and CTAs per SM;
# - wgmma_rate (scripts/probes/wgmma_rate.cu): cycles per register-A wgmma m64nNk16 by N, warpgroups per
#   SM and accumulator chains, with nothing else running.
# Usage: scripts/gpu_probe_ceiling.sh
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
for p in decode_ceiling wgmma_rate; do
  stamp "build $p"
  nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude -Iscripts/probes "scripts/probes/$p.cu" \
      -o "/tmp/$p" > "$OUT/probe_${p}_build.log" 2>&1 || { cat "$OUT/probe_${p}_build.log"; continue; }
  stamp "run $p"
  timeout 120 "/tmp/$p" 2>&1 | tee "$OUT/probe_$p.txt"
done
