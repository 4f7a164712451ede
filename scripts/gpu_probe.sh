#!/usr/bin/env bash
# Kernel-tuning probe on the lent GPU machine: build (sm_90a), optional CUDA tests, the SASS of the
# tensor-core kernels, an Nsight Compute profile of one GEMV launch and a short benchmark. Logs go to
# $OUT. Usage: scripts/gpu_probe.sh [--test] [BENCH_ARGS...]
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
run_tests=0
if [ "${1:-}" = "--test" ]; then run_tests=1; shift; fi
stamp "build"
gpu_build . build.log qmm test_cuda || exit 1
if [ $run_tests = 1 ]; then
  stamp "ctest -L cuda"
  gpu_ctest build-gpu ctest_cuda.log -L cuda
  echo "ctest rc=$?"; grep -E "tests passed|Failed|CHECK|FAILED" "$OUT/ctest_cuda.log" | head -20
fi
stamp "sass"
for e in nvfp4 fp8; do
  o=$(find build-gpu -name "kernels_mma_$e.cu.o" | head -1)
  cuobjdump -sass "$o" > "$OUT/sass_$e.txt" 2>&1 || echo "cuobjdump failed on $o"
done
grep -E "Function :" "$OUT/sass_nvfp4.txt" | head -40
stamp "ncu"
if command -v ncu >/dev/null; then
  ncu --kernel-name regex:mma_kernel --launch-skip 4 --launch-count 1 --set full --import-source no \
    --page details --print-details all build-gpu/qmm bench --backend cuda --format nvfp4 --shapes 28672:8192 --m 1 \
    --reps 2 --rotate-mb 512 > "$OUT/ncu.txt" 2>&1
  echo "ncu rc=$?"
  ncu --kernel-name regex:mma_kernel --launch-skip 4 --launch-count 1 --section SourceCounters --page source --print-source sass \
    build-gpu/qmm bench --backend cuda --format nvfp4 --shapes 28672:8192 --m 1 --reps 2 --rotate-mb 512 > "$OUT/ncu_source.txt" 2>&1
  echo "ncu source rc=$?"
fi
stamp "bench $*"
build-gpu/qmm bench --backend cuda --json "$@" > "$OUT/bench.jsonl" 2> "$OUT/bench.err"
echo "bench rc=$?"; head -5 "$OUT/bench.err"
python3 scripts/bench_summary.py "$OUT/bench.jsonl" | tee "$OUT/bench_summary.txt"
stamp "done"
