#!/usr/bin/env bash
# The split decode / MMA probe (scripts/probes/wgmma_split.cu) on the lent GPU machine: the configuration
# sets given (default: 0), each at most 90 s, into $OUT/wgmma_split_SET.txt (scripts/gpu_probe_wgmma.sh).
# Usage: scripts/gpu_probe_split.sh [SET...]
PROBE=wgmma_split PROBE_TIMEOUT=90 exec "$(dirname "$0")/gpu_probe_wgmma.sh" "${@:-0}"
