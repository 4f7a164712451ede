#!/usr/bin/env bash
# Builds the launch recorder (dump.c, mock_cudart.cc, mock_args.cu) against a build's static library
# (BUILD/libqmm.a, with the CUDA backend) and runs it: the launches of the CUDA backend on the grid of
# grid.h, without a GPU. tests/cuda_plan/README.md says what the output holds.
# Usage: tests/cuda_plan/dump.sh BUILD_DIR [-v]   (NVCC: the nvcc to use, default /usr/local/cuda/bin/nvcc)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "$1" && pwd); shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
cuda=$(dirname "$(dirname "$nvcc")")
g++ -std=c++17 -O1 -I$cuda/include -c tests/cuda_plan/mock_cudart.cc -o "$out/mock_cudart.o"
"$nvcc" -std=c++17 -O1 -gencode=arch=compute_80,code=compute_80 -Iinclude -Isrc -c tests/cuda_plan/mock_args.cu \
  -o "$out/mock_args.o"
cc -std=c11 -O1 -D_POSIX_C_SOURCE=200809L -Iinclude -I$cuda/include -c tests/cuda_plan/dump.c -o "$out/dump.o"
g++ -o "$out/dump" "$out/dump.o" "$out/mock_cudart.o" "$out/mock_args.o" "$build/libqmm.a" -lm -lpthread
"$out/dump" "$@"
