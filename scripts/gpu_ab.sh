#!/usr/bin/env bash
# A/B on the lent GPU machine: the working tree (A) against a copy of it with some files replaced (B),
# both built for sm_90a, each through `ctest -L cuda` (optional) and the same benchmark, in one process
# after the other on the same machine. Logs go to $OUT.
# Usage: scripts/gpu_ab.sh [--test|--test-a] "DST=SRC[,DST=SRC...]" BENCH_ARGS...
#   --test runs ctest for both trees, --test-a for A only (B already ran it, e.g. B = main)
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
run_tests=0
if [ "${1:-}" = "--test" ]; then run_tests=1; shift; fi
if [ "${1:-}" = "--test-a" ]; then run_tests=a; shift; fi
swaps=$1; shift
alt=/tmp/qmm_b
rm -rf "$alt" && mkdir -p "$alt" && tar --exclude='./build*' --exclude=./out -cf - . | tar -xf - -C "$alt"
IFS=, read -ra pairs <<< "$swaps"
for pr in "${pairs[@]}"; do cp "${pr#*=}" "$alt/${pr%%=*}"; done
stamp "build A and B"
JOBS=8 gpu_build . build_a.log qmm test_cuda & pa=$!
JOBS=8 gpu_build "$alt" build_b.log qmm test_cuda & pb=$!
wait $pa; ra=$?; wait $pb; rb=$?
if [ $ra -ne 0 ] || [ $rb -ne 0 ]; then exit 1; fi
for v in a b; do
  d=.; [ $v = b ] && d=$alt
  if [ $run_tests = 1 ] || { [ $run_tests = a ] && [ $v = a ]; }; then
    stamp "ctest -L cuda ($v)"
    gpu_ctest "$d/build-gpu" "ctest_$v.log" -L cuda
    echo "ctest $v rc=$?"; grep -E "tests passed|FAIL|CHECK" "$OUT/ctest_$v.log" | head -20
  fi
  stamp "bench ($v) $*"
  "$d/build-gpu/qmm" bench --backend cuda --json "$@" > "$OUT/bench_$v.jsonl" 2> "$OUT/bench_$v.err"
  echo "bench $v rc=$?"; head -3 "$OUT/bench_$v.err"
done
python3 scripts/bench_ab.py "$OUT/bench_a.jsonl" "$OUT/bench_b.jsonl" | tee "$OUT/ab.txt"
stamp "done"
