#!/usr/bin/env bash
# One tuning round on the lent GPU machine: build (sm_90a), ctest -L cuda, then benchmarks given as
# arguments, each "NAME|ENV|BENCH_ARGS" (ENV may be empty, e.g. "QMM_CUDA_SPLITS=2"); a summary of each.
# A hung kernel costs at most CTEST_TIMEOUT (300 s) or BENCH_TIMEOUT (240 s per benchmark), not the call.
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
stamp build
gpu_build . build.log qmm test_cuda || exit 1
# FIRST (a ctest regex, optional): those tests run first, apart from the rest, at FIRST_TIMEOUT (90 s)
# each; where one fails or hangs the round stops there (a hung kernel slows every other test sharing
# the GPU). Both ctest runs take gpu_ctest's CTEST_JOBS.
gpu_ctest_first build-gpu ctest_first.log || exit 1
if [ "${NO_TEST:-0}" != 1 ]; then
  stamp "ctest -L cuda"
  gpu_ctest build-gpu ctest_cuda.log -L cuda ${FIRST:+-E "$FIRST"} --timeout "${CTEST_TIMEOUT:-300}"
  echo "ctest rc=$?"; grep -E "tests passed|FAIL|CHECK|Timeout" "$OUT/ctest_cuda.log" | head -20
fi
for spec in "$@"; do
  IFS='|' read -r name envs args <<< "$spec"
  stamp "bench $name: $envs $args"
  timeout "${BENCH_TIMEOUT:-240}" env $envs build-gpu/qmm bench --backend cuda --json $args > "$OUT/bench_$name.jsonl" 2> "$OUT/bench_$name.err"
  echo "rc=$?"; head -3 "$OUT/bench_$name.err"
  python3 scripts/bench_summary.py "$OUT/bench_$name.jsonl" | grep -v "^bf16" | tail -n +3 | cut -c1-120
done
for f in ctest_first ctest_cuda; do [ -f "$OUT/$f.log" ] && grep -E "tests passed" "$OUT/$f.log"; done
# the device tool brings back 8 files at most: more go back as one archive
gpu_bundle_many round
stamp done
