#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one go: the CUDA tests (tests/test_cuda.py and every
# test parametrized over devices), then the advantage and LLM-rollout benchmarks on the GPU.
# Each part has its own time limit so one slow part cannot starve the others.
#
#   bash bench/gpu_checks.sh [output folder]        (default: gpu-checks/)
#
# Writes env.txt, tests.log, advantages_cuda.md and llm_rollouts_cuda.md to the folder.
set -uo pipefail
out=${1:-gpu-checks}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
$py - <<'PY' 2>&1 | tee "$out/env.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "NO CUDA DEVICE")
PY
timeout "${TESTS_LIMIT:-300}" $py -m pytest -q -p no:cacheprovider -rs \
    tests/test_cuda.py tests/marl/test_advantages*.py tests/marl/test_mappo*.py \
    tests/llm_agents/test_backends.py -k "cuda or vllm" 2>&1 | tee "$out/tests.log"
timeout "${BENCH_LIMIT:-120}" $py bench/advantages.py --device cuda 2>&1 \
    | tee "$out/advantages_cuda.md"
timeout "${BENCH_LIMIT:-120}" $py bench/llm_rollouts.py --device cuda --repeats 2 2>&1 \
    | tee "$out/llm_rollouts_cuda.md"
