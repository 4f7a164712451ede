#!/usr/bin/env bash
# A/B of one build under two environments (the tuning knobs QMM_CUDA_WGMMA, QMM_CUDA_SPLITS) on the lent
# GPU machine: build (sm_90a), ctest -L cuda (unless NO_TEST=1), the same benchmark under ENV_A and
# ENV_B, and their row-by-row comparison. Logs go to $OUT.
# Usage: scripts/gpu_env_ab.sh "ENV_A" "ENV_B" BENCH_ARGS...   e.g. "QMM_CUDA_WGMMA=1" "QMM_CUDA_WGMMA=0"
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
env_a=$1 env_b=$2; shift 2
stamp build
gpu_build . build.log qmm test_cuda || exit 1
if [ "${NO_TEST:-0}" != 1 ]; then
  stamp "ctest -L cuda ($env_a)"
  env $env_a ctest --test-dir build-gpu -L cuda --output-on-failure > "$OUT/ctest_cuda.log" 2>&1
  echo "ctest rc=$?"; grep -E "tests passed|FAIL|CHECK" "$OUT/ctest_cuda.log" | head -20
fi
for v in a b; do
  e=$env_a; [ $v = b ] && e=$env_b
  stamp "bench $v ($e) $*"
  env $e build-gpu/qmm bench --backend cuda --json "$@" > "$OUT/bench_$v.jsonl" 2> "$OUT/bench_$v.err"
  echo "bench $v rc=$?"; grep -E "CHECK|error" "$OUT/bench_$v.err" | head -5
done
python3 scripts/bench_ab.py "$OUT/bench_a.jsonl" "$OUT/bench_b.jsonl" | grep -v "^bf16" | tee "$OUT/ab.txt"
[ -f "$OUT/ctest_cuda.log" ] && grep -E "tests passed" "$OUT/ctest_cuda.log"
stamp done
