#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one go: the CUDA tests (tests/test_cuda.py and every
# test parametrized over devices), then the advantage (10M samples), LLM-rollout and VMAS
# MAPPO (4,096+ copies, largest B that fits) benchmarks on the GPU.
# Each part has its own time limit so one slow part cannot starve the others; the limits add
# up to 630 s with every default (a device command may run 600 s: lower one, e.g. LLM_LIMIT=0), each part prints as it goes, so a part
# cut off by its limit keeps what it measured. On a CPU machine the tests skip and the
# benchmarks stop at once with a one-line "no CUDA device".
#
#   bash bench/gpu_checks.sh [output folder]        (default: gpu-checks/)
#
# Writes env.txt, tests.log, advantages_cuda.md, llm_rollouts_cuda.md, vmas_step_cuda.md and
# vmas_mappo_cuda.md
# to the folder. A GPU machine without our game/config packages and no network: see
# bench/gpu_wheels.sh.
set -uo pipefail
out=${1:-gpu-checks}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
timeout 30 $py - <<'PY' 2>&1 | tee "$out/env.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "NO CUDA DEVICE")
PY
timeout "${TESTS_LIMIT:-210}" $py -m pytest -q -p no:cacheprovider -rs \
    tests/test_cuda.py tests/marl/test_adv*.py tests/marl/test_mappo*.py tests/marl/test_optim.py \
    tests/llm_agents/test_turn_keys.py \
    tests/llm_agents/test_backends.py -k "cuda or vllm" 2>&1 | tee "$out/tests.log"
# issue 16's target: every grouped scheme at most 3x `global` at 10M samples on CUDA
# (--parts ... profile: each adv_norm's kernels, to see where a missed goal goes)
timeout "${BENCH_LIMIT:-120}" $py bench/advantages.py --device cuda --samples 10000000 \
    --parts table,batch,e2e,profile 2>&1 \
    | tee "$out/advantages_cuda.md"
if [ "${LLM_LIMIT:-90}" != 0 ]; then  # LLM_LIMIT=0 skips this part
    timeout "${LLM_LIMIT:-90}" $py bench/llm_rollouts.py --device cuda --repeats 2 2>&1 \
        | tee "$out/llm_rollouts_cuda.md"
fi
# issue 17: raw stepping, VectorGame tensors against VMAS's own loop (overhead goal <= 10 %)
if [ "${STEP_LIMIT:-60}" != 0 ]; then
    timeout "${STEP_LIMIT:-60}" $py bench/vmas.py --device cuda --sizes 8192 65536 --steps 50 \
        --mpe-envs 16 --mpe-steps 10 2>&1 | tee "$out/vmas_step_cuda.md"
fi
# issue 17: MAPPO frames/s on vmas/navigation at 4,096-32,768 copies (15 s per B at most),
# then doubling B until CUDA runs out of memory (45 s at most)
timeout "${VMAS_LIMIT:-120}" $py bench/vmas_gpu.py --device cuda --copies 4096 8192 16384 32768 \
    --updates 5 --limit 15 --search-limit 45 2>&1 | tee "$out/vmas_mappo_cuda.md"
