#!/usr/bin/env bash
# Wheels for a bare GPU machine that has torch (and transformers, torch-geometric, pytest,
# hypothesis) but none of our game and config packages, and no network: run this where pip
# reaches PyPI, carry the folder, then on the GPU machine
#
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site <folder>/*.whl
#   PYTHONPATH=/tmp/site:$PWD bash bench/gpu_checks.sh <out>
#
# Python 3.12 x86-64 by default (PYVER=3.11 for another); vmas, gym and antlr4 publish
# source only, so they are built here as pure-Python wheels. 16 wheels, about 32 MB.
#
#   bash bench/gpu_wheels.sh [folder]        (default: .whl/, which .gitignore should skip)
set -euo pipefail
out=${1:-.whl}
ver=${PYVER:-3.12}
py=${PYTHON:-python3}
mkdir -p "$out"
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
$py -m pip download -q --no-deps --only-binary=:all: --python-version "$ver" \
    --implementation cp "${plat[@]}" -d "$out" \
    open_spiel openskill pygame-ce pettingzoo mpe2 gymnasium farama-notifications \
    hydra-core==1.3.2 omegaconf==2.3.0 pyglet==1.5.27 gym-notices==0.0.8 platformdirs sniffio
$py -m pip wheel -q --no-deps -w "$out" "vmas>=1.5,<1.6" gym==0.26.2 \
    antlr4-python3-runtime==4.9.3
ls "$out"
