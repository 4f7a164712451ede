#!/usr/bin/env bash
# The whole check on a machine with an NVIDIA GPU: build, the CUDA tests, a memory check, the tool's
# default run and the benchmark. Full logs go to $OUT (default out/, seven files); the end of stdout is
# a summary. Usage: scripts/gpu_check.sh [BENCH_ARGS...] (default: the full default benchmark).
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv 2>&1
stamp "configure + build"
gpu_build . build.log qmm test_cuda test_cuda_layout || exit 1

stamp "ctest -L cuda"
gpu_ctest build-gpu ctest_cuda.log -L cuda
echo "ctest rc=$?"
grep -E "tests passed|checks|Failed|CHECK" "$OUT/ctest_cuda.log" | head -40

stamp "compute-sanitizer memcheck (small run)"
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/qmm run --backend cuda --m 3 --n 300 --k 1000 > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? $(grep -c 'Invalid' "$OUT/memcheck.log") invalid accesses"
  compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/qmm bench --backend cuda --shapes 300:1000,16:60000 --m 1,5,12,40 --reps 1 --rotate-mb 1 >> "$OUT/memcheck.log" 2>&1
  echo "memcheck bench rc=$?"
  compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/qmm bench --backend cuda --shapes 300:1000,16:60000 --m 5,40 --path materialize --reps 1 --rotate-mb 1 >> "$OUT/memcheck.log" 2>&1
  echo "memcheck bench (materialize) rc=$?"
  compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/tests/test_cuda pairs-small >> "$OUT/memcheck.log" 2>&1
  echo "memcheck test_cuda pairs-small (pair mode) rc=$?"
  compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/qmm bench --backend cuda --shapes 300:1000,16:60000 --m 1,12,24,40 --format fp8_tensor,nvfp4,mxfp4 --a-type fp16 --reps 1 --rotate-mb 1 >> "$OUT/memcheck.log" 2>&1
  echo "memcheck bench (fp16 activations) rc=$?"
fi

stamp "qmm run (make run's default run)"
build-gpu/qmm run > "$OUT/run.log" 2>&1
echo "qmm run rc=$?"; cat "$OUT/run.log"

stamp "qmm bench $*"
build-gpu/qmm bench --backend cuda --json "$@" > "$OUT/bench.jsonl" 2> "$OUT/bench.err"
echo "bench rc=$?"; cat "$OUT/bench.err" | head -20
python3 scripts/bench_summary.py "$OUT/bench.jsonl" > "$OUT/bench_summary.txt"; grep -E " (1|16|64|2048) " "$OUT/bench_summary.txt" | grep -v "^bf16" | cut -c1-110
grep -E "tests passed" "$OUT/ctest_cuda.log"
stamp "done"
