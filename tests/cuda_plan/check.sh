#!/usr/bin/env bash
# The launchers of BUILD's library against plans.txt: the launch recorder (dump.sh) on the whole grid,
# compared line by line (every group's fingerprint, the H200's default shapes in full, the shared-memory
# limits raised). Where they differ, `dump.sh BUILD -v` before and after a change shows which launches.
# Usage: tests/cuda_plan/check.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tests/cuda_plan/dump.sh "$1" > "$out/plans.txt"
if diff -u tests/cuda_plan/plans.txt "$out/plans.txt" > "$out/diff"; then
  echo "cuda_plan: the launchers' launches on $(grep -c '^g' "$out/plans.txt") groups match plans.txt"
else
  head -60 "$out/diff"
  echo "cuda_plan: the launches differ from tests/cuda_plan/plans.txt"
  exit 1
fi
