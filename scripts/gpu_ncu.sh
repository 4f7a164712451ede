#!/usr/bin/env bash
# Nsight Compute on the lent GPU machine: build (sm_90a), then one profiled launch per KERNEL_REGEX:M pair
# of `qmm bench --path PATH` on one shape, full set, details page; plus the SASS of one function.
# Usage: scripts/gpu_ncu.sh SHAPE PATH FUNC_MANGLED REGEX:M [REGEX:M...]
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
shape=$1 path=$2 fun=$3; shift 3
stamp build
gpu_build . build.log qmm || exit 1
o=$(find build-gpu -name "kernels_mma_nvfp4.cu.o" | head -1)
cuobjdump -sass -fun "$fun" "$o" > "$OUT/sass.txt" 2>&1; echo "sass lines $(wc -l < "$OUT/sass.txt")"
i=0
for km in "$@"; do
  i=$((i+1)); re=${km%%:*}; m=${km##*:}
  stamp "ncu $re M=$m"
  ncu --kernel-name "regex:$re" --launch-skip 3 --launch-count 1 --set full --import-source no --page details \
    build-gpu/qmm bench --backend cuda --format nvfp4 --shapes "$shape" --m "$m" --path "$path" --reps 2 --rotate-mb 512 \
    > "$OUT/ncu_$i.txt" 2>&1
  echo "ncu rc=$?"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Ipc A|No Eligible|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|Shared.*Bank|Block Limit" "$OUT/ncu_$i.txt" | head -30
done
stamp done
