# Shared by the scripts/gpu_*.sh that run on the lent GPU machine (sourced): $OUT (the folder the
# device tool brings back), a timestamped echo, and the sm_90a build.
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
# default 24; one at a time `ctest -L cuda` takes about 550 s of a device call's 600, which cost the
# twenty-eighth and twenty-ninth sessions' first calls), printing failures' output; returns ctest's status.
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
# gpu_bundle DIR NAME: replaces everything under DIR by one archive DIR/NAME.tgz (the device tool brings
# back eight files at most).
gpu_bundle() {
    tar -czf "/tmp/$2.tgz" -C "$1" . && find "$1" -mindepth 1 -delete && mv "/tmp/$2.tgz" "$1/$2.tgz"
}
# gpu_bundle_many NAME: gpu_bundle of $OUT into NAME.tgz, only where it holds more than the tool's eight files.
gpu_bundle_many() {
    if [ "$(find "$OUT" -type f | wc -l)" -gt 8 ]; then gpu_bundle "$OUT" "$1" && echo "files bundled in $1.tgz"; fi
}
# gpu_ctest_first BUILD_DIR LOG: where FIRST (a ctest regex) is set, those tests alone, at FIRST_TIMEOUT (90 s)
# each, into $OUT/LOG; returns 1 where one fails or hangs, so that the caller stops there (a hung new kernel
# slows every test and benchmark sharing the GPU after it). The caller's later ctest passes -E "$FIRST".
gpu_ctest_first() {
    [ -n "${FIRST:-}" ] || return 0
    stamp "ctest -R $FIRST ($1)"
    gpu_ctest "$1" "$2" -R "$FIRST" --timeout "${FIRST_TIMEOUT:-90}"
    local rc=$?
    echo "ctest rc=$rc"; grep -E "Test +#|tests passed" "$OUT/$2" | head -20
    [ $rc = 0 ]
}
# gpu_ncu_bench REGEX SHAPE M PATH NCU_ARGS...: Nsight Compute on the launches of the kernels matching
# REGEX in `qmm bench --path PATH` (FORMAT, default nvfp4; one shape, one M): NCU_COUNT of them (default
# 1) after the first NCU_SKIP (default 3), in a bench of NCU_REPS timed batches (default 2), at the
# application clocks unless NCU_CLOCKS=base; NCU_ARGS choose the sections, metrics and output; BENCH_EXTRA
# (optional) adds options to the bench, e.g. "--a-type fp16".
gpu_ncu_bench() {
    local re=$1 shape=$2 m=$3 path=$4
    shift 4
    ncu --kernel-name "regex:$re" --launch-skip "${NCU_SKIP:-3}" --launch-count "${NCU_COUNT:-1}" \
        --clock-control "${NCU_CLOCKS:-none}" --import-source no "$@" \
        build-gpu/qmm bench --backend cuda --format "${FORMAT:-nvfp4}" --shapes "$shape" --m "$m" --path "$path" \
        --reps "${NCU_REPS:-2}" --rotate-mb 512 ${BENCH_EXTRA:-}
}
