#!/usr/bin/env bash
# A/B on the lent GPU machine: the working tree (A) against a copy of it with a patch applied or some
# files replaced (B), both built for sm_90a at once, then the same benchmark RUNS times for each build
# in turn (A, B, A, B, ...: a drift of the machine's clock or power then falls on both alike), and the
# row-by-row comparison of their medians (scripts/bench_ab.py). Logs go to $OUT (bundled into ab.tgz
# where they are more than the device tool brings back).
# Usage: [FIRST=REGEX] [RUNS=N] scripts/gpu_ab.sh [--test|--test-a|--test-b] CHANGE BENCH_ARGS...
#   CHANGE: a patch file (FILE.patch, applied to B's copy) or "DST=SRC[,DST=SRC...]" (files of B replaced)
#   --test runs ctest -L cuda for both trees, --test-a for A only (B already ran it, e.g. B = main),
#     --test-b for B only (A = main, which ran it before)
#   FIRST (a ctest regex): those tests of B run first, apart (FIRST_TIMEOUT, default 90 s each); where one
#     fails or hangs, nothing else runs (a new kernel's hang would slow every test and benchmark after it)
#   RUNS (default 1): benchmark runs per build
#   e.g. FIRST='test_cuda$' RUNS=3 scripts/gpu_ab.sh docs/patches/x.patch --format nvfp4 --m 24,64
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
run_tests=0
if [ "${1:-}" = "--test" ]; then run_tests=1; shift; fi
if [ "${1:-}" = "--test-a" ]; then run_tests=a; shift; fi
if [ "${1:-}" = "--test-b" ]; then run_tests=b; shift; fi
change=$1; shift
alt=/tmp/qmm_b
rm -rf "$alt" && mkdir -p "$alt" && tar --exclude='./build*' --exclude=./out --exclude=./exp -cf - . | tar -xf - -C "$alt"
if [[ $change == *.patch ]]; then
  # outside any git repository, git apply patches the files below the current folder
  patch_file=$(realpath "$change")
  (cd "$alt" && git apply "$patch_file") || { echo "patch $change does not apply"; exit 1; }
  diff -rq -x 'build*' -x out -x exp . "$alt" > /dev/null && { echo "patch $change changed nothing"; exit 1; }
else
  IFS=, read -ra pairs <<< "$change"
  for pr in "${pairs[@]}"; do cp "${pr#*=}" "$alt/${pr%%=*}"; done
fi
stamp "build A and B"
JOBS=$(( $(nproc) / 2 )) gpu_build . build_a.log qmm test_cuda & pa=$!
JOBS=$(( $(nproc) / 2 )) gpu_build "$alt" build_b.log qmm test_cuda & pb=$!
wait $pa; ra=$?; wait $pb; rb=$?
if [ $ra -ne 0 ] || [ $rb -ne 0 ]; then exit 1; fi
gpu_ctest_first "$alt/build-gpu" ctest_first_b.log || exit 1
tree() { if [ "$1" = b ]; then echo "$alt"; else echo .; fi; } # build v's tree
for v in a b; do
  d=$(tree $v)
  if [ $run_tests = 1 ] || [ $run_tests = $v ]; then
    stamp "ctest -L cuda ($v)"
    skip=; [ $v = b ] && skip=${FIRST:-} # B's FIRST ran above
    gpu_ctest "$d/build-gpu" "ctest_$v.log" -L cuda ${skip:+-E "$skip"}
    echo "ctest $v rc=$?"; grep -E "tests passed|FAIL|CHECK" "$OUT/ctest_$v.log" | head -20
  fi
done
runs=${RUNS:-1} files_a= files_b=
for i in $(seq 1 "$runs"); do
  for v in a b; do
    d=$(tree $v)
    f="$OUT/bench_${v}_$i.jsonl"
    stamp "bench ($v, run $i) $*"
    "$d/build-gpu/qmm" bench --backend cuda --json "$@" > "$f" 2> "$OUT/bench_${v}_$i.err"
    echo "bench $v $i rc=$?"; head -3 "$OUT/bench_${v}_$i.err"
    if [ $v = a ]; then files_a=${files_a:+$files_a,}$f; else files_b=${files_b:+$files_b,}$f; fi
  done
done
python3 scripts/bench_ab.py "$files_a" "$files_b" > "$OUT/ab.txt"
grep -v "^bf16" "$OUT/ab.txt" | cut -c1-140
gpu_bundle_many ab
stamp "done"
