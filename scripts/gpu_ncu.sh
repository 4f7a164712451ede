#!/usr/bin/env bash
# Nsight Compute on the lent GPU machine: build (sm_90a), then one profiled launch per KERNEL_REGEX:M[:ENV]
# case of `qmm bench --path PATH` on one shape (full set, details page, plus the warp stall reasons per
# issued instruction, and the busy percentage of each pipe); optionally the SASS of one function (FUNC_MANGLED "-" for none).
# The clocks stay the application's (NCU_CLOCKS=base locks them as Nsight does by default: on 2026-11-30
# that ran the SMs at 1.36 instead of 1.98 GHz with the memory clock unchanged, which makes a
# bandwidth-bound kernel look compute-bound).
# Usage: scripts/gpu_ncu.sh SHAPE PATH FUNC_MANGLED REGEX:M[:ENV] [REGEX:M[:ENV]...]
#   e.g. scripts/gpu_ncu.sh 8192:28672 fused - "mma_kernel_pipe:16:QMM_CUDA_WGMMA=0" \
#          "mma_kernel_wg:64:FORMAT=fp8_tensor"   (FORMAT: qmm bench's --format, default nvfp4)
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
shape=$1 path=$2 fun=$3; shift 3
stamp build
gpu_build . build.log qmm || exit 1
if [ "$fun" != - ]; then
  o=$(find build-gpu -name "kernels_mma_nvfp4.cu.o" | head -1)
  cuobjdump -sass -fun "$fun" "$o" > "$OUT/sass.txt" 2>&1; echo "sass lines $(wc -l < "$OUT/sass.txt")"
fi
i=0
for km in "$@"; do
  i=$((i+1)); IFS=: read -r re m envs <<< "$km"
  stamp "ncu $re M=$m $envs"
  ( [ -n "$envs" ] && export $envs
    gpu_ncu_bench "$re" "$shape" "$m" "$path" --set full --page details \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active" \
      > "$OUT/ncu_$i.txt" 2>&1 )
  echo "ncu rc=$?"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Ipc A|No Eligible|Warp Cycles Per Issued|L2 Hit|Shared.*Bank|Block Limit|Grid Size|L1/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput" "$OUT/ncu_$i.txt" | head -30
  grep -E "issue_stalled" "$OUT/ncu_$i.txt" | awk '{ if ($NF+0 >= 0.2) print }' | sort -k3 -n -r | head -12
  grep -E "sm__(pipe|inst_executed_pipe)_" "$OUT/ncu_$i.txt" | awk '{ if ($NF+0 >= 5) print }' | sort -k3 -n -r | head -14
done
stamp done
