#!/usr/bin/env bash
# Several source trees in one call on the lent GPU machine, to save the cold starts and builds of one
# call per branch. The trees sit in exp/NAME (ignored by git; export a branch with `mkdir -p exp/NAME &&
# git archive BRANCH | tar -x -C exp/NAME` and pass `exp` to the device tool's carry; a patch goes in
# with `git apply --directory=exp/NAME PATCH` from the repository root: `cd exp/NAME && git apply` applies
# nothing, because exp/ lies inside the work tree and git skips paths outside the current folder). All trees are
# built at once (sm_90a, the cores shared), then each tree's command runs inside it, one after another
# so that no two benchmarks share the GPU, with OUT=$OUT/NAME; everything comes back as one archive
# (trees.tgz, gpu_bundle).
# Usage: scripts/gpu_trees.sh "NAME|COMMAND" ...
#   e.g. scripts/gpu_trees.sh "pairs|scripts/gpu_round.sh \"on||--path fused --m 16\"" "pdl|NO_TEST=1 scripts/gpu_round.sh ..."
set -uo pipefail
. "$(dirname "$0")/gpu_lib.sh"
top=$(cd "$OUT" && pwd)
jobs=$(( $(nproc) / $# )); [ "$jobs" -lt 2 ] && jobs=2
stamp "build $# trees, $jobs jobs each"
# each tree's sources against the first tree's: a tree that differs in nothing is named, because an A/B
# whose patch was never applied looks like a result (the thirty-second session's calls 1-2); an A/A run
# on purpose may ignore it
first=
for spec in "$@"; do
  name=${spec%%|*}
  [ -d "exp/$name" ] || continue
  if [ -z "$first" ]; then first=$name
  elif diff -rq -x build-gpu "exp/$first" "exp/$name" > /dev/null; then echo "note: exp/$name is the same source as exp/$first"
  fi
done
for spec in "$@"; do
  name=${spec%%|*}
  [ -d "exp/$name" ] || { echo "no tree exp/$name"; continue; }
  mkdir -p "$top/$name"
  ( cd "exp/$name" && OUT="$top/$name" JOBS=$jobs gpu_build . build.log qmm test_cuda > "$top/$name/build_stdout.txt" 2>&1
    echo "build $name rc=$?" ) &
done
wait
for spec in "$@"; do
  name=${spec%%|*} cmd=${spec#*|}
  [ -d "exp/$name" ] || continue
  stamp "$name: $cmd"
  ( cd "exp/$name" && OUT="$top/$name" bash -c "$cmd" )
done
gpu_bundle "$top" trees
stamp done
