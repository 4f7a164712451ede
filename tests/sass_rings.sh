#!/usr/bin/env bash
# The weight rings' invariant in the compiled kernels (docs/cuda.md, "Weight rings"): no weight or
# scale load of a tensor-core kernel is copied into a ring slot by a register move, which would wait for
# the load and leave one tile in flight. Compiles each encoding's kernels (both forms of A) for sm_90a,
# disassembles them (nvdisasm from NVIDIA's PyPI wheel, fetched by scripts/sass.sh) and runs
# scripts/ring_moves.py.
# Exit 77 (skipped) where nvdisasm cannot be fetched.
set -uo pipefail
cd "$(dirname "$0")/.."
if ! scripts/sass.sh --ensure > /dev/null 2>&1; then
  echo "sass_rings: nvdisasm not available (no nvidia-cuda-nvdisasm wheel): skipped"
  exit 77
fi
rc=0
# every TU of the kernels: each encoding's bf16-A and fp16-A forms
for tu in nvfp4 nvfp4_f16 mxfp4 mxfp4_f16 fp8 fp8_f16; do
  out=$(scripts/sass.sh "src/cuda/kernels_mma_$tu.cu" 'mma_kernel' -DQMM_CUDA_SM90A) || { echo "sass_rings: sass.sh failed for $tu"; exit 1; }
  echo "$out" | python3 scripts/ring_moves.py || rc=1
done
[ "$rc" = 0 ] && echo "sass_rings: no ring moves" || echo "sass_rings: ring moves found (see above)"
exit $rc
