#!/usr/bin/env bash
# A/B of one build under two environments (the tuning knobs QMM_CUDA_WGMMA, QMM_CUDA_SPLITS) on the lent
# GPU machine: scripts/gpu_round.sh with ctest under ENV_A (unless NO_TEST=1) and the same benchmark
# under ENV_A and ENV_B, then their row-by-row comparison. Logs go to $OUT.
# Usage: scripts/gpu_env_ab.sh "ENV_A" "ENV_B" BENCH_ARGS...   e.g. "QMM_CUDA_WGMMA=1" "QMM_CUDA_WGMMA=0"
set -uo pipefail
env_a=$1 env_b=$2; shift 2
env $env_a "$(dirname "$0")/gpu_round.sh" "a|$env_a|$*" "b|$env_b|$*" || exit 1
python3 scripts/bench_ab.py "${OUT:-out}/bench_a.jsonl" "${OUT:-out}/bench_b.jsonl" | grep -v "^bf16" | tee "${OUT:-out}/ab.txt"
