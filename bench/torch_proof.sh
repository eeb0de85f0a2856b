#!/usr/bin/env bash
# The PyTorch proof of issue 12 on a GPU machine, in one command (docs/pytorch.md):
#   bench/torch_proof.sh [--quick] [torch_allocators.py options...]
# 1. builds libmemplan_torch.so (and the host twin) in build/gpu (the `gpu` preset),
# 2. runs the GPU pytest tests (tests/python/gpu) and the host ones (tests/python/host),
# 3. runs bench/torch_allocators.py with the given options; the table lands in OUT
#    (default build/torch_allocators): torch_allocators.md and .json.
# PYTHON names the interpreter that has PyTorch, transformers and torchvision (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
out=${OUT:-build/torch_allocators}
[[ -d /usr/local/cuda/bin ]] && export PATH="/usr/local/cuda/bin:$PATH"

cmake --preset gpu >/dev/null
cmake --build --preset gpu --target memplan_torch memplan_c_host
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}

# run_pytest.py exits 77 when pytest is missing or everything skipped itself: not a failure here.
pytest_in() { "$python" tests/python/run_pytest.py "$1" || [[ $? == 77 ]]; }
echo "== GPU tests"
MEMPLAN_LIBRARY=$PWD/build/gpu/src/c/libmemplan_torch.so pytest_in tests/python/gpu
echo "== host tests"
MEMPLAN_LIBRARY=$PWD/build/gpu/src/c/libmemplan_c_host.so pytest_in tests/python/host
echo "== allocators"
MEMPLAN_LIBRARY=$PWD/build/gpu/src/c/libmemplan_torch.so "$python" bench/torch_allocators.py \
  --out "$out" "$@"
