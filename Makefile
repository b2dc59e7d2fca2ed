# Two commands on a fresh machine (Python 3.11 + pip): `make run` and `make test`.
# Both create .venv when missing and install into it; torch is pinned here so pip takes
# the CPU wheel instead of a multi-GB CUDA build.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
TORCH  := torch==2.13.0
# where pip would take PyPI's Linux wheel (it bundles CUDA, GBs):
# make run TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_PIP_ARGS ?=

.PHONY: help run test lint bench bench-tests dashboard clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  make \1\t/'

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet $(TORCH_PIP_ARGS) $(TORCH)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet $(TORCH_PIP_ARGS) $(TORCH)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run  ## the main job: a MAPPO+GNN PFSP league, then PSRO on Kuhn poker
	$(VENV)/bin/selfplay-train experiment=main
	$(VENV)/bin/selfplay-train experiment=kuhn_psro

test: $(VENV)/.installed-test  ## the whole pytest suite (benchmarks excluded)
	@# bytecode for the hundreds of CLI child processes: where PYTHONDONTWRITEBYTECODE is set
	@# (containers) each one compiled our modules again (bench/startup.py --cpu)
	$(PY) -m compileall -q games marl populations llm_agents configs examples > /dev/null
	$(PY) -m pytest -m "not benchmark"

lint: $(VENV)/.installed-test  ## ruff over the repository
	$(VENV)/bin/ruff check .

bench-tests: $(VENV)/.installed-test  ## slow learning runs marked as benchmarks
	$(PY) -m pytest -m benchmark

bench: $(VENV)/.installed-run  ## benchmark scripts; figures go to BENCHMARKS.md
	$(PY) bench/games.py
	$(PY) bench/advantages.py
	$(PY) bench/psro_kuhn.py
	$(PY) bench/mappo_spread.py --no-peer
	$(PY) bench/llm_rollouts.py

dashboard: $(VENV)/.installed-run  ## the league dashboard over every run in runs/
	$(VENV)/bin/selfplay-dashboard runs

clean:  ## remove .venv and the tools' caches
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
