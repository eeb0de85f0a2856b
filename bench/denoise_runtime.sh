#!/usr/bin/env bash
# Figures of the denoise runtime (docs/runtime.md): runs build/.../denoise_runtime in the
# configurations the issue asks about and keeps each summary and per-step CSV in OUT_DIR.
#   bench/denoise_runtime.sh BUILD_DIR OUT_DIR
# 1. compute-bound (default GPU shape), window 0.2-1.0 + second pass: memory, step time, breaks
# 2. launch-bound (tiny shape, 24 blocks): host time per step, graphs vs eager
# 3. 50 + 50 steps with the window and the second pass: breaks per distinct path, flat after
# 4. the same with the rope cache outside a pause (the rogue case): breaks and memory flat
set -euo pipefail
build=${1:?build dir}
out=${2:?output dir}
mkdir -p "$out"
rt="$build/examples/denoise_runtime/denoise_runtime"
run() {
  local name=$1; shift
  echo "== $name: $*" | tee "$out/$name.txt"
  "$rt" --quiet --csv "$out/$name.csv" "$@" | tee -a "$out/$name.txt"
}
run compute --preset=compute
run launch --preset=launch
run steps50 --preset=compute --steps 50 --second-steps 50
run rogue50 --preset=compute --steps 50 --second-steps 50 --rope-cache=rogue
