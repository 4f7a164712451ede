#!/usr/bin/env bash
# SASS of one CUDA translation unit for sm_90a, without a GPU: nvcc -cubin, then nvdisasm, which a
# minimal CUDA toolkit lacks and which comes from NVIDIA's PyPI wheel (nvidia-cuda-nvdisasm) into the
# ignored .tools/ on first use. Prints the functions whose mangled
# names match REGEX, or with -c their counts of instructions by opcode.
# Usage: scripts/sass.sh [-c] TU REGEX [NVCC_FLAGS...]
#   e.g. scripts/sass.sh -c src/cuda/kernels_mma_nvfp4.cu mma_kernel_wgrs -DQMM_CUDA_SM90A
#        scripts/sass.sh --ensure   (only fetch nvdisasm; fails if it cannot)
set -euo pipefail
cd "$(dirname "$0")/.."
count=0 ensure=0
[ "${1:-}" = -c ] && { count=1; shift; }
[ "${1:-}" = --ensure ] && { ensure=1; shift; }
nvd=$(find .tools -name nvdisasm -type f 2>/dev/null | head -1 || true)
if [ -z "$nvd" ]; then
  mkdir -p .tools
  python3 -m pip download --no-deps --only-binary :all: -d .tools nvidia-cuda-nvdisasm >&2
  (cd .tools && python3 -m zipfile -e nvidia_cuda_nvdisasm-*.whl nvd)
  nvd=$(find .tools -name nvdisasm -type f | head -1)
  chmod +x "$nvd"
fi
[ "$ensure" = 1 ] && exit 0
tu=$1 re=$2; shift 2
out=$(mktemp -d)
PATH=$PATH:/usr/local/cuda/bin nvcc -std=c++17 -O3 -cubin -gencode arch=compute_90a,code=sm_90a -Iinclude -Isrc "$@" "$tu" -o "$out/k.cubin"
"$nvd" -c "$out/k.cubin" > "$out/all.sass"
python3 - "$out/all.sass" "$re" "$count" <<'PY'
import re, sys, collections
text, pat, count = open(sys.argv[1]).read(), re.compile(sys.argv[2]), sys.argv[3] == "1"
for m in re.finditer(r"\n\s*\.text\.(\S+):\n(.*?)(?=\n\s*\.section|\Z)", text, re.S):
    name, body = m.group(1), m.group(2)
    if not pat.search(name):
        continue
    ins = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", body)
    print(f"== {name}: {len(ins)} instructions")
    if count:
        for op, k in collections.Counter(i.split(".")[0] for i in ins).most_common(25):
            print(f"  {k:6d} {op}")
    else:
        print(body)
PY
rm -rf "$out"
