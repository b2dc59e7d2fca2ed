"""A user's learner that fails to build is one line wherever it is built (session 22).

``populations.experiment.build_learner`` turned a failing build into one line
(:class:`LearnerBuildError`), but PSRO's oracle (``psro_run.registry_learner``) and the
approximate exploitability's responses (``approx_exploit.train_response``) called
``entry.build`` themselves.

Before: a PSRO oracle that builds for the first player (the early check) and fails for the
second, and ``selfplay-eval --exploit --exploit-algo <skeleton learner>``, ended in a
traceback (``KeyError: 'width'``, ``TypeError: SkeletonLearner() takes no arguments``)."""

from __future__ import annotations

import os
import sys

import pytest

import games
from marl import registry
from tests.populations.test_walk18_cli_more import _train

MODULE = "walk22_build_everywhere"
SOURCE = '''
from dataclasses import dataclass

from marl.core import Capabilities, Learner
from marl.mappo import MAPPO, MAPPO_CAPABILITIES, MAPPOConfig
from marl.registry import register_learner

CAPS = Capabilities(discrete=True, continuous=False, on_policy=True, turn_based=True,
                    centralized_critic=False, partial_seats=True)


@dataclass(frozen=True)
class SkeletonConfig:
    lr: float = 1e-3  # step size


@register_learner("walk22_skeleton", config=SkeletonConfig, policy="walk22_kind",
                  capabilities=CAPS)
class SkeletonLearner(Learner):  # README's skeleton, its body not written yet
    ...


@register_learner("walk22_second_fails", config=MAPPOConfig, policy="mappo",
                  capabilities=MAPPO_CAPABILITIES)
class SecondFails(MAPPO):  # builds for player_0 (the early check), not for player_1
    def __init__(self, spec, config, agents=None, device="cpu", seed=0):
        if agents == ("player_1",):
            sizes = {}
            sizes["width"]  # RAISES
        super().__init__(spec, config, agents=agents, device=device, seed=seed)
'''
LINES = SOURCE.splitlines()
SKELETON_LINE = next(i for i, line in enumerate(LINES, 1)
                     if line.startswith("class SkeletonLearner(Learner):"))
RAISES_LINE = next(i for i, line in enumerate(LINES, 1) if "# RAISES" in line)
KUHN = "openspiel/kuhn_poker"


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path``, taken out of the registry after."""
    from games.registry import IMPORTS_ENV

    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.chdir(tmp_path)
    for name in (IMPORTS_ENV, "PYTHONPATH"):  # import_user_modules sets them for workers
        monkeypatch.setenv(name, os.environ.get(name, ""))
    try:
        yield __import__(MODULE)
    finally:
        sys.modules.pop(MODULE, None)
        for name in ("walk22_skeleton", "walk22_second_fails"):
            registry._LEARNERS.pop(name, None)
        registry._POLICY_MODULES.pop("walk22_kind", None)


def test_a_psro_oracle_failing_for_its_second_player_is_one_line(
        user_module, tmp_path, monkeypatch, capsys):
    """The early check builds the oracle for the first player only; the second player's
    build is psro_run's own, mid-run."""
    run = tmp_path / "runs" / "default" / "x"
    with pytest.raises(SystemExit) as stop:
        _train([f"imports=[{MODULE}]", "population=psro",
                "population.oracle=walk22_second_fails", "population.oracle_frames=64",
                "population.iterations=1", "mappo.rollout_steps=8", "num_envs=2",
                "game=kuhn", "progress=false", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert err[-1] == (
        "selfplay-train: learner walk22_second_fails could not be built: KeyError: 'width' "
        f"(at {MODULE}.py:{RAISES_LINE}); HYDRA_FULL_ERROR=1 shows the traceback"), err
    assert not any(line.startswith("Traceback") for line in err), err


def test_an_exploit_response_that_fails_to_build_is_one_line(user_module, tmp_path, capsys):
    from populations.eval_cli import eval_main

    policy = registry.get("mappo").build(games.make(KUHN).spec).policy().save(
        tmp_path / "a.pt")
    with pytest.raises(SystemExit) as stop:
        eval_main(["--import", MODULE, "--game", KUHN, "--db", str(tmp_path / "r.db"),
                   "--exploit", "--exploit-algo", "walk22_skeleton", "--exploit-frames", "16",
                   "--exploit-seeds", "1", "--exploit-episodes", "4", str(policy)])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert err[-1] == (
        "selfplay-eval: learner walk22_skeleton could not be built: TypeError: "
        f"SkeletonLearner() takes no arguments (at {MODULE}.py:{SKELETON_LINE}); "
        "HYDRA_FULL_ERROR=1 shows the traceback"), err
    assert not any(line.startswith("Traceback") for line in err), err


def test_the_registry_wraps_every_build(user_module):
    """``LearnerEntry.build`` itself: a caller need not know of a wrapper (tests, the Python
    API, PSRO, the responses); a ValueError (a learner refusing a setting) stays as it was."""
    spec = games.make(KUHN).spec
    with pytest.raises(registry.LearnerBuildError, match=r"^learner walk22_second_fails could "
                                                          r"not be built: KeyError: 'width'"):
        registry.get("walk22_second_fails").build(spec, None, ("player_1",))
    registry.get("walk22_second_fails").build(spec, None, ("player_0",))
    from populations.experiment import LearnerBuildError

    assert LearnerBuildError is registry.LearnerBuildError  # its old home re-exports it
