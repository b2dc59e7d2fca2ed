"""Shared pytest setup: make ``examples/`` importable and keep runs quiet and CPU-only."""

import os
import sys
from pathlib import Path

# tests.lanes: the modules that start Ray run in a second pytest process;
# tests.ray_cluster: the session's shared Ray instances (fixtures ray_local, loopback_cluster)
pytest_plugins = ["tests.lanes", "tests.ray_cluster"]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

import torch  # noqa: E402

# Small networks run fastest on one thread, and two busy threads per test process
# oversubscribe a 2-core CI machine.
torch.set_num_threads(1)
