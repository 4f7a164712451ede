#!/usr/bin/env bash
# One call on the lent GPU machine: build, the CUDA tests, a memory check, the tool's default run and
# the benchmark. Full logs go to $OUT (seven files: the device tool brings back eight at most); the end
# of stdout is a summary. Usage: scripts/gpu_check.sh [BENCH_ARGS...] (default: the full default benchmark).
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start ))s] $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total --format=csv 2>&1
stamp "configure + build"
# sm_90a only: the H200 runs it, and the other targets only lengthen the build (CI builds them all).
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DQMM_CUDA=ON -DQMM_WERROR=ON \
  "-DQMM_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a" > "$OUT/build.log" 2>&1 &&
  cmake --build build-gpu -j "$(nproc)" --target qmm test_cuda test_cuda_layout >> "$OUT/build.log" 2>&1
if [ $? -ne 0 ]; then grep -E "error|Error" "$OUT/build.log" | head -40; exit 1; fi

stamp "ctest -L cuda"
ctest --test-dir build-gpu -L cuda --output-on-failure > "$OUT/ctest_cuda.log" 2>&1
echo "ctest rc=$?"
grep -E "tests passed|checks|Failed|CHECK" "$OUT/ctest_cuda.log" | head -40

stamp "compute-sanitizer memcheck (small run)"
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/qmm run --backend cuda --m 3 --n 300 --k 1000 > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$? $(grep -c 'Invalid' "$OUT/memcheck.log") invalid accesses"
  compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/qmm bench --backend cuda --shapes 300:1000,16:60000 --m 1,5,12,40 --reps 1 --rotate-mb 1 >> "$OUT/memcheck.log" 2>&1
  echo "memcheck bench rc=$?"
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
