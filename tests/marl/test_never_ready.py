"""A learner of whole rollouts whose ``ready()`` never says True (a user's learner with a bug,
README "Add your own learner") stops its loop in one line instead of playing for ever.

Before: ``marl.train.train`` and a league member's generation wait for the update that ends
the budget's rollout (``budget_spent``), so they stepped on past the budget without end; the
learner here counts its ``ready()`` calls and raises once the loop is far past any bound, so
that a hang fails the test instead of hanging it."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest

import games
from marl import registry
from marl.train import (
    NEVER_READY_ROLLOUTS,
    UNDECLARED_ROLLOUT,
    NeverReadyError,
    RandomPolicy,
    ReadyWatch,
    train,
)
from tests.populations.test_walk18_cli_more import _train

MODULE = "never_ready_learner"
SOURCE = '''
from dataclasses import dataclass

import torch
from hydra.core.config_store import ConfigStore

from marl.core import Capabilities, Learner
from marl.registry import register_learner
from marl.train import RandomPolicy

CAPS = Capabilities(discrete=True, continuous=False, on_policy=True, turn_based=True,
                    centralized_critic=False, partial_seats=True)


@dataclass(frozen=True)
class NeverConfig:
    rollout_steps: int = 4  # steps of every copy per rollout


@register_learner("never_ready", config=NeverConfig, policy="random", capabilities=CAPS)
class NeverReady(Learner):
    """Plays at random and trains rollouts of 4 steps, but its ready() has a bug: it never
    says True."""

    CAPABILITIES = CAPS  # as MAPPO declares it: marl.train.trains_whole_rollouts reads it

    def __init__(self, spec, config, agents=None, device="cpu", seed=0):
        self.cfg, self.agents = config, tuple(agents or spec.agent_ids)
        self.device = torch.device(device)
        self.random = RandomPolicy(spec, seed)
        self.asked = 0

    def act(self, vs):
        return {a: self.random.act(a, vs) for a in self.agents}

    def observe(self, vs):
        pass

    def ready(self):
        self.asked += 1
        if self.asked > 2000:  # far past any bound: the loop would never have ended
            raise RuntimeError("the loop played on past its budget without end")
        return False

    def update(self):
        return {}

    def policy(self):
        return self.random

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


ConfigStore.instance().store(group="algo", name="never_ready", node={"algo": "never_ready"},
                             package="_global_")
'''


@pytest.fixture
def never_ready(tmp_path, monkeypatch):
    """The module above, importable from ``tmp_path``, taken out of the registry after."""
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
        registry._LEARNERS.pop("never_ready", None)
        ConfigStore.instance().repo.get("algo", {}).pop("never_ready.yaml", None)


def test_train_stops_a_learner_that_is_never_ready(never_ready):
    spec = games.make("openspiel/kuhn_poker").spec
    learner = registry.get("never_ready").build(spec, agents=("player_0",))
    vg = games.VectorGame("openspiel/kuhn_poker", 2, seed=0)
    with pytest.raises(NeverReadyError) as err:
        train(learner, vg, 16, opponents={"player_1": RandomPolicy(spec)}, progress=False)
    past = 16 + NEVER_READY_ROLLOUTS * 8  # rollouts of 4 steps of 2 copies
    assert str(err.value) == (
        f"learner never_ready ({MODULE}.NeverReady) trains whole rollouts (on_policy=True) "
        f"but played {past} frames for a budget of 16 with no update at all: ready() never "
        f"returned True in {NEVER_READY_ROLLOUTS} rollouts of 8 frames past the budget "
        "(cfg.rollout_steps × num_envs); an on_policy learner must say ready() once it holds a "
        "rollout")
    assert learner.asked == past // 2


def test_selfplay_train_says_it_in_one_line(never_ready, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        _train([f"imports=[{MODULE}]", "algo=never_ready", "game=kuhn", "frames=16",
                "num_envs=2", "eval_episodes=2", "progress=false", "logger=none",
                f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert "Traceback" not in "\n".join(err), err
    assert err[-1].startswith("selfplay-train: learner never_ready (never_ready_learner."
                              "NeverReady) trains whole rollouts (on_policy=True) but played "
                              "48 frames for a budget of 16 with no update at all"), err[-1]


def test_a_league_member_that_is_never_ready_is_named(never_ready, tmp_path, monkeypatch,
                                                      capsys):
    run = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        _train([f"imports=[{MODULE}]", "game=kuhn", "population=pfsp",
                "population.members=[mappo,never_ready]", "mappo.rollout_steps=4",
                "population.generations=1",
                "population.frames_per_generation=16", "num_envs=2", "eval_episodes=2",
                "progress=false", "logger=none", f"hydra.run.dir={run}"], monkeypatch, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2, err
    assert "Traceback" not in "\n".join(err), err
    assert "league member never_ready: learner never_ready (never_ready_learner.NeverReady) " \
           "trains whole rollouts" in err[-1], err[-1]


def test_the_bound_is_whole_rollouts_past_the_budget():
    """Declared rollouts, the longest trained one, or UNDECLARED_ROLLOUT before any update:
    a correct learner (an update within one rollout) is never stopped."""
    watch = ReadyWatch(learner=object(), frames=100, rollout=0)
    watch.check(100 + NEVER_READY_ROLLOUTS * UNDECLARED_ROLLOUT - 1, 0)
    with pytest.raises(NeverReadyError, match=r"no update at all: .* 4 rollouts of 65536 "
                                              r"frames .*\(it declares no cfg.rollout_steps\)"):
        watch.check(100 + NEVER_READY_ROLLOUTS * UNDECLARED_ROLLOUT, 0)

    # a learner that declares no rollout and updates every episode: a later episode far
    # longer than those trained so far (agents that learnt to survive) is no stop
    watch = ReadyWatch(learner=object(), frames=100, rollout=0)
    watch.check(30, 30)  # an update: rollouts of 30 frames
    watch.check(60, 60)
    watch.check(100 + 4 * 30, 60)  # before: stopped here, 4 rollouts of 30 past the budget
    watch.check(100 + NEVER_READY_ROLLOUTS * UNDECLARED_ROLLOUT - 1, 60)
    with pytest.raises(NeverReadyError, match=r"its last update at 60 frames: .* 4 rollouts "
                                              r"of 65536 frames .*\(it declares no"):
        watch.check(100 + NEVER_READY_ROLLOUTS * UNDECLARED_ROLLOUT, 60)
    big = UNDECLARED_ROLLOUT + 10  # longer trained rollouts than the floor set the bound
    watch = ReadyWatch(learner=object(), frames=100, rollout=0)
    watch.check(big, big)
    watch.check(100 + 4 * big - 1, big)
    with pytest.raises(NeverReadyError, match=rf"4 rollouts of {big} frames .*\(its longest"):
        watch.check(100 + 4 * big, big)

    watch = ReadyWatch(learner=object(), frames=100, rollout=8)
    watch.check(100, 50)  # a first rollout longer than declared (MAPPO's first: one more step)
    watch.check(100 + 4 * 50 - 1, 50)
    watch.check(100 + 4 * 50, 100 + 4 * 50)  # trained: the budget is spent, nothing to say


def test_a_learner_registered_on_policy_without_a_capabilities_attribute_trains_whole_rollouts():
    """README's skeleton declares ``on_policy=True`` only in ``register_learner``: its frame
    budget must still end at an update (before, only a ``CAPABILITIES`` class attribute,
    as MAPPO sets, was read, so such a learner's budget ended mid-rollout)."""
    from marl.core import Capabilities
    from marl.train import trains_whole_rollouts

    caps = Capabilities(discrete=True, continuous=False, on_policy=True, turn_based=True,
                        centralized_critic=False)

    @dataclasses.dataclass(frozen=True)
    class NoSettings:
        pass

    class Registered:
        def __init__(self):
            pass

    class OffPolicy:
        def __init__(self):
            pass

    try:
        registry.register_learner("walk23_on_policy_only_registered", config=NoSettings,
                                  policy="random", capabilities=caps)(Registered)
        registry.register_learner("walk23_off_policy_registered", config=NoSettings,
                                  policy="random", capabilities=dataclasses.replace(
                                      caps, on_policy=False))(OffPolicy)
        assert trains_whole_rollouts(Registered())
        assert not trains_whole_rollouts(OffPolicy())
    finally:
        registry._LEARNERS.pop("walk23_on_policy_only_registered", None)
        registry._LEARNERS.pop("walk23_off_policy_registered", None)
