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
# the size limits are part of what the suite checks: a shell that lifted them (games.limits)
# must not lift them for the tests, nor for the CLI processes they start
os.environ.pop("SELFPLAY_GAME_LIMITS", None)

import torch  # noqa: E402

# Small networks run fastest on one thread, and two busy threads per test process
# oversubscribe a 2-core CI machine.
torch.set_num_threads(1)


# absl.logging (imported by open_spiel.python.games: the first OpenSpiel game written in Python,
# or a name OpenSpiel does not know) makes its handler on the sys.stderr of that moment, which
# in a test without capsys is pytest's own captured stderr, and its close() closes that stream
# unless it is the sys.stderr of the closing moment. An in-process selfplay-train's Hydra
# (logging.config.dictConfig closes every handler ever made) then closed it from a capsys
# test, and pytest died at that test ("I/O operation on closed file", "lost sys.stderr").
# Its handler is pointed here at the real stderr, which it never closes.
import absl.logging  # noqa: E402
import pytest  # noqa: E402

absl.logging.get_absl_handler().python_handler.setStream(sys.__stderr__)


@pytest.fixture(autouse=True)
def _user_imports_stay_in_their_test():
    """``imports=`` (``populations.cli_common.import_user_modules``) records the user's modules and
    folder in ``SELFPLAY_IMPORTS`` / ``PYTHONPATH`` for worker processes; a test that ran a
    command line in this process left them set, and a later test's subprocess or Ray workers
    then tried to import another test's deleted module."""
    from games.registry import IMPORTS_ENV

    kept = {k: os.environ.get(k) for k in (IMPORTS_ENV, "PYTHONPATH")}
    yield
    for key, value in kept.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(autouse=True)
def _root_logging_stays_in_its_test():
    """A CLI run in this process (``eval_main``, ``python -m populations.league``'s main,
    the dashboard's) calls ``logging.basicConfig``, which adds a root handler on the stderr
    of that moment (a test's capture, closed when the test ends) when the root has none;
    a later test's log line then printed ``--- Logging error ---`` into its captured stderr
    (a one-line-error test failed on it in CI). Root handlers and level come back after
    every test (``setLevel``: it also clears loggers' cached levels)."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    # basicConfig's kind exactly (pytest's own capture handlers subclass StreamHandler and
    # come and go with each test phase: they are pytest's to remove)
    for handler in [h for h in root.handlers if h not in handlers
                    and type(h) in (logging.StreamHandler, logging.FileHandler)]:
        root.removeHandler(handler)
    root.setLevel(level)
