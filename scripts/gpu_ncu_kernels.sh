#!/usr/bin/env bash
# Nsight Compute's per-kernel figures for every qmm kernel of one `qmm bench` call on the lent GPU machine
# (the activations' layout pass, the fused or GEMV kernel, the split-K epilogue, the dequantization; KERNELS,
# a regular expression, chooses others, e.g. "dequant|nvjet|epilogue" for the materialize path with
# cuBLASLt's GEMM; NCU_SKIP, NCU_COUNT, NCU_REPS as in gpu_lib's gpu_ncu_bench): duration, SM and DRAM
# throughput and bytes, occupancy, the busiest SM's active cycles against the average (how evenly the grid
# ends), and the launch's grid, registers and shared memory. Needs build-gpu/qmm (scripts/gpu_build via
# gpu_round.sh or gpu_ncu_sass.sh). Kernels run one at a time under ncu, so dependent-launch overlap is
# not in these durations.
# Usage: scripts/gpu_ncu_kernels.sh NAME SHAPE PATH M [ENV...]   (FORMAT, default nvfp4)
#   writes $OUT/kernels_NAME.csv and prints one line per kernel launch
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
name=$1 shape=$2 path=$3 m=$4; shift 4
metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics=$metrics,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
metrics=$metrics,sm__cycles_active.max,sm__cycles_active.avg,launch__grid_size,launch__registers_per_thread
metrics=$metrics,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers
metrics=$metrics,dram__bytes_read.sum,dram__bytes_write.sum
stamp "ncu kernels $name: $shape $path M=$m $*"
( [ $# -gt 0 ] && export "$@"
  NCU_SKIP=${NCU_SKIP:-12} NCU_COUNT=${NCU_COUNT:-8} NCU_REPS=${NCU_REPS:-4} \
    gpu_ncu_bench "${KERNELS:-wg_stage_a|mma_kernel|epilogue_kernel|split_fp16|dequant_kernel}" "$shape" "$m" \
    "$path" --metrics "$metrics" --csv > "$OUT/kernels_$name.csv" 2> "$OUT/kernels_$name.err" )
echo "ncu rc=$?"
python3 - "$OUT/kernels_$name.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if len(r) > 10]
if not rows:
    print("no rows"); sys.exit(0)
h = rows[0]
ix = {c: i for i, c in enumerate(h)}
launches = {}
for r in rows[1:]:
    key = (r[ix["ID"]], r[ix["Kernel Name"]][:60])
    launches.setdefault(key, {})[r[ix["Metric Name"]]] = r[ix["Metric Value"]]
short = {"gpu__time_duration.sum": "ns", "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm%",
         "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%",
         "sm__warps_active.avg.pct_of_peak_sustained_active": "occ%", "launch__grid_size": "grid",
         "launch__registers_per_thread": "regs", "launch__shared_mem_per_block_dynamic": "dsmem",
         "launch__occupancy_limit_shared_mem": "lim_smem", "launch__occupancy_limit_registers": "lim_regs",
         "dram__bytes_read.sum": "dram_rd", "dram__bytes_write.sum": "dram_wr"}
for (i, k), m in launches.items():
    def f(s):
        try: return float(m.get(s, "nan").replace(",", ""))
        except ValueError: return float("nan")
    bal = f("sm__cycles_active.max") / f("sm__cycles_active.avg")
    print(f"{i:>4} {k:60s} " + " ".join(f"{v}={m.get(s, '?')}" for s, v in short.items()) + f" max/avg={bal:.2f}")
PY
