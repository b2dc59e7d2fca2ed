"""A notebook cell run again re-registers its learner and its adv_norm (walk 19).

``@register_learner`` and ``@register_adv_norm`` raised "already registered" when the same
cell ran a second time (the same module and qualified name, a new object), while
``register_policy`` replaced silently; the redefined object now replaces the old one. Another
object taking a taken name, and a built-in's name, are still refused."""

from __future__ import annotations

import sys
import types

import pytest
import torch

import marl.advantages as adv_mod
from marl import registry
from marl.advantages import get_adv_norm, normalize_advantages, register_adv_norm

LEARNER_CELL = '''
from dataclasses import dataclass

from marl.core import Capabilities, Learner
from marl.registry import register_learner


@dataclass(frozen=True)
class CellConfig:
    lr: float = {lr}


@register_learner("w19_cell_algo", config=CellConfig, policy="w19_cell_kind",
                  capabilities=Capabilities(discrete=True, continuous=False, on_policy=True,
                                            turn_based=True, centralized_critic=False))
class CellLearner(Learner):
    pass
'''
NORM_CELL = '''
from marl.advantages import register_adv_norm


@register_adv_norm("w19_cell_norm")
def cell_norm(x, keys, mask, weights, cfg, state):
    return x * {scale}
'''


@pytest.fixture(autouse=True)
def _own_registries(monkeypatch):
    """What a test registers is gone after it (the built-ins are registered before)."""
    registry.entries()
    monkeypatch.setattr(registry, "_LEARNERS", dict(registry._LEARNERS))
    monkeypatch.setattr(registry, "_POLICY_MODULES", dict(registry._POLICY_MODULES))
    monkeypatch.setattr(adv_mod, "_REGISTRY", dict(adv_mod._REGISTRY))


def _run_cell(source: str, namespace: dict) -> None:
    """``source`` run as a notebook runs a cell: in ``__main__``'s namespace."""
    exec(compile(source, "<cell>", "exec"), namespace)  # noqa: S102 - a test's own source


def _other_module(monkeypatch) -> dict:
    """The namespace of a module ``w19_other`` (importable: dataclasses look it up)."""
    module = types.ModuleType("w19_other")
    monkeypatch.setitem(sys.modules, "w19_other", module)
    return module.__dict__


def test_a_cell_run_again_replaces_its_learner():
    notebook = {"__name__": "__main__"}
    _run_cell(LEARNER_CELL.format(lr=0.1), notebook)
    _run_cell(LEARNER_CELL.format(lr=0.2), notebook)  # before: "already registered"
    entry = registry.get("w19_cell_algo")
    assert entry.cls is notebook["CellLearner"] and entry.config is notebook["CellConfig"]
    assert entry.default().lr == 0.2


def test_another_learner_still_cannot_take_the_name(monkeypatch):
    notebook = {"__name__": "__main__"}
    _run_cell(LEARNER_CELL.format(lr=0.1), notebook)
    other = LEARNER_CELL.format(lr=0.1).replace("class CellLearner", "class OtherLearner")
    with pytest.raises(ValueError, match=r"^learner 'w19_cell_algo' is already registered by "
                                         r"__main__.CellLearner; register yours under another "
                                         r"name$"):
        _run_cell(other, notebook)
    with pytest.raises(ValueError, match="already registered"):  # same name, another module
        _run_cell(LEARNER_CELL.format(lr=0.1), _other_module(monkeypatch))
    assert registry.get("w19_cell_algo").cls is notebook["CellLearner"]


def test_a_builtin_learner_name_is_refused_to_a_redefinition():
    mappo = registry.get("mappo")
    fake = type("MAPPO", (), {"__module__": mappo.cls.__module__})
    fake.__qualname__ = mappo.cls.__qualname__
    with pytest.raises(ValueError, match="learner 'mappo' is already registered by "
                                         "marl.mappo.MAPPO"):
        registry.register_learner("mappo", config=mappo.config, policy="mappo",
                                  capabilities=mappo.capabilities)(fake)
    assert registry.get("mappo").cls is mappo.cls


def test_a_cell_run_again_replaces_its_adv_norm():
    notebook = {"__name__": "__main__"}
    _run_cell(NORM_CELL.format(scale=2.0), notebook)
    _run_cell(NORM_CELL.format(scale=3.0), notebook)  # before: "already registered"
    assert get_adv_norm("w19_cell_norm").fn is notebook["cell_norm"]
    got = normalize_advantages("w19_cell_norm", torch.ones(2)).advantages
    assert got.tolist() == [3.0, 3.0]


def test_another_adv_norm_or_a_builtin_name_is_still_refused(monkeypatch):
    notebook = {"__name__": "__main__"}
    _run_cell(NORM_CELL.format(scale=2.0), notebook)
    other = NORM_CELL.format(scale=2.0).replace("def cell_norm", "def other_norm")
    with pytest.raises(ValueError, match=r"^adv_norm 'w19_cell_norm' is already registered "
                                         r"\(by __main__.cell_norm\); register yours under "
                                         r"another name$"):
        _run_cell(other, notebook)
    with pytest.raises(ValueError, match="already registered"):  # same name, another module
        _run_cell(NORM_CELL.format(scale=2.0), _other_module(monkeypatch))
    with pytest.raises(ValueError, match=r"^adv_norm 'agent' is already registered \(built in: "
                                         r"marl.advantages._agent\)"):
        register_adv_norm("agent")(get_adv_norm("agent").fn)
    with pytest.raises(ValueError, match="'global' is already registered"):
        _run_cell(NORM_CELL.replace("w19_cell_norm", "global").format(scale=1.0), notebook)
