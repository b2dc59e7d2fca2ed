"""A user's learner that fails to build (README "Add your own learner", walk 21): one line
naming the algo, the error and the line of the user's code, exit 2, no run folder left.

Before: ``TypeError: MyLearner() takes no arguments`` at the end of a traceback, exit 1, and
``runs/...`` left behind with its ``league.db`` run ``failed``."""

from __future__ import annotations

import os
import sys

import pytest

import games
from marl import registry
from populations.experiment import (
    ExperimentConfig,
    GameConfig,
    LearnerBuildError,
    _league_members,
    make_learner,
)
from populations.experiment_config import PopulationConfig
from tests.populations.test_walk18_cli_more import _train

MODULE = "walk21_broken_learner"
SOURCE = '''
from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from marl.core import Capabilities, Learner
from marl.registry import register_learner

CAPS = Capabilities(discrete=True, continuous=False, on_policy=True, turn_based=True,
                    centralized_critic=False, partial_seats=True)


@dataclass(frozen=True)
class BrokenConfig:
    lr: float = 1e-3  # step size


@register_learner("walk21_skeleton", config=BrokenConfig, policy="walk21_kind",
                  capabilities=CAPS)
class SkeletonLearner(Learner):  # README's skeleton, its body not written yet
    ...


@register_learner("walk21_raises", config=BrokenConfig, policy="walk21_kind",
                  capabilities=CAPS)
class RaisesLearner:
    def __init__(self, spec, config, agents=None, device="cpu", seed=0):
        self.sizes = {}
        self.width = self.sizes["width"]  # RAISES


ConfigStore.instance().store(group="algo", name="walk21_skeleton",
                             node={"algo": "walk21_skeleton"}, package="_global_")
'''
SKELETON_LINE = SOURCE.splitlines().index("class SkeletonLearner(Learner):  # README's "
                                          "skeleton, its body not written yet") + 1
RAISES_LINE = next(i for i, line in enumerate(SOURCE.splitlines(), 1) if "# RAISES" in line)


@pytest.fixture
def broken(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path``, taken out of every registry after."""
    from hydra.core.config_store import ConfigStore

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
        for name in ("walk21_skeleton", "walk21_raises"):
            registry._LEARNERS.pop(name, None)
        registry._POLICY_MODULES.pop("walk21_kind", None)
        ConfigStore.instance().repo.get("algo", {}).pop("walk21_skeleton.yaml", None)


KUHN = GameConfig("openspiel/kuhn_poker")


def test_a_skeleton_learner_is_one_line_naming_its_class_exit_2_and_no_folder(
        broken, tmp_path, monkeypatch, capsys):
    run = tmp_path / "runs" / "default" / "x"
    with pytest.raises(SystemExit) as stop:
        _train([f"imports=[{MODULE}]", "algo=walk21_skeleton", "+walk21_skeleton.lr=0.5",
                "game=kuhn", "frames=100", "progress=false", f"hydra.run.dir={run}"],
               monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert len(err) == 1, err
    assert err[0] == (
        "selfplay-train: learner walk21_skeleton could not be built: TypeError: "
        f"SkeletonLearner() takes no arguments (at {MODULE}.py:{SKELETON_LINE}); "
        "HYDRA_FULL_ERROR=1 shows the traceback")
    assert not (tmp_path / "runs").exists()


def test_an_error_inside_the_constructor_names_its_line(broken):
    cfg = ExperimentConfig(algo="walk21_raises", game=KUHN)
    with pytest.raises(LearnerBuildError) as err:
        make_learner(cfg, games.make(KUHN.name).spec)
    assert str(err.value) == (
        "learner walk21_raises could not be built: KeyError: 'width' "
        f"(at {MODULE}.py:{RAISES_LINE}); HYDRA_FULL_ERROR=1 shows the traceback")
    assert isinstance(err.value.__cause__, KeyError)  # HYDRA_FULL_ERROR=1: its traceback


def test_a_league_member_that_fails_to_build_is_named(broken, tmp_path):
    cfg = ExperimentConfig(algo="mappo", game=KUHN, population=PopulationConfig(
        kind="league", members=["mappo", "walk21_raises"]))
    with pytest.raises(LearnerBuildError, match=r"^learner walk21_raises could not be built: "
                                                 r"KeyError: 'width' \(at "):
        _league_members(cfg, tmp_path)


def test_a_learners_own_value_error_stays_as_it_was(broken, monkeypatch):
    """A ValueError is how a learner refuses a setting: already one line, kept."""
    def refuse(self, *args, **kwargs):
        raise ValueError("lr=0.5: expected at most 0.1")

    monkeypatch.setattr(broken.RaisesLearner, "__init__", refuse)
    cfg = ExperimentConfig(algo="walk21_raises", game=KUHN)
    with pytest.raises(ValueError) as err:
        make_learner(cfg, games.make(KUHN.name).spec)
    assert type(err.value) is ValueError and str(err.value) == "lr=0.5: expected at most 0.1"


def test_a_psro_oracle_that_fails_to_build_is_refused_before_the_folder(
        broken, tmp_path, monkeypatch, capsys):
    """PSRO builds its oracle in its first iteration, past the folder (and in psro_run, where
    the error was a traceback): the early check builds it once."""
    run = tmp_path / "runs" / "default" / "x"
    with pytest.raises(SystemExit) as stop:
        _train([f"imports=[{MODULE}]", "population=psro", "population.oracle=walk21_skeleton",
                "game=kuhn", "progress=false", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert err == [
        "selfplay-train: learner walk21_skeleton could not be built: TypeError: "
        f"SkeletonLearner() takes no arguments (at {MODULE}.py:{SKELETON_LINE}); "
        "HYDRA_FULL_ERROR=1 shows the traceback"]
    assert not (tmp_path / "runs").exists()
