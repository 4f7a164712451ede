# Sourced by scripts/gpu_check.sh: $OUT (the folder that receives the logs, default out), a timestamped
# echo, the sm_90a build and ctest.
OUT=${OUT:-out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
gpu_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - gpu_start ))s] $*"; }
# gpu_build SRC_DIR LOG TARGET...: configures and builds SRC_DIR/build-gpu (Release, -Werror, sm_90a
# only: the H200 runs it, the other targets only lengthen the build; CI builds them all) into
# $OUT/LOG; on failure prints the errors and returns 1. JOBS (default: all cores) sets the parallelism.
gpu_build() {
    local src=$1 log="$OUT/$2"
    shift 2
    cmake -S "$src" -B "$src/build-gpu" -DCMAKE_BUILD_TYPE=Release -DQMM_CUDA=ON -DQMM_WERROR=ON \
        "-DQMM_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a" > "$log" 2>&1 &&
        cmake --build "$src/build-gpu" -j "${JOBS:-$(nproc)}" --target "$@" >> "$log" 2>&1 ||
        { grep -E "error|Error" "$log" | head -40; return 1; }
}
# gpu_ctest BUILD_DIR LOG CTEST_ARGS...: ctest in BUILD_DIR into $OUT/LOG, its tests at once (CTEST_JOBS,
# default 24: one at a time, `ctest -L cuda` takes about 550 s on the H200), printing failures' output;
# returns ctest's status.
# test_cuda's per-function wall times (its "test_cuda: test_... N s" lines, from ctest's LastTest.log, each
# after the ctest test's name) are appended to the log: the whole `ctest -L cuda` waits for test_cuda.
gpu_ctest() {
    local dir=$1 log="$OUT/$2"
    shift 2
    ctest --test-dir "$dir" -j "${CTEST_JOBS:-24}" --output-on-failure "$@" > "$log" 2>&1
    local rc=$?
    awk '/^[0-9]+\/[0-9]+ Test: / {t = $3} /^test_cuda: test_[a-z_]+\(\)/ {print t ": " $0}' \
        "$dir/Testing/Temporary/LastTest.log" >> "$log" 2>/dev/null
    return $rc
}
