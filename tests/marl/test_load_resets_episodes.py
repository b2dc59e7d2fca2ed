"""Loading a state into a replay learner that has already played resets everything that
belongs to the games it was playing (the half-transition, who left which copy, a turn-based
team's open transition), and the replay holds the state's rows only: it then trains exactly
as a fresh learner loaded with the same state. MADDPG kept its ``still_in`` (agents that had
left a copy stayed "gone" in the new games' first steps, so their rows were stored as not
acting), and rows past the loaded replay's size kept the old contents.

A state without its replay (``checkpoint_buffer=false``) leaves the learner's replay as it
is: a Ray learner actor keeps its member's rows between generations that way, as the
in-process league does."""

import copy

import pytest

from games import VectorGame
from marl.maddpg import MADDPG, MADDPGConfig
from marl.train import RandomPolicy
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from tests.marl.exits_game import Exits
from tests.populations.test_resume_equivalence import _differences

SMALL = {"hidden": (8,), "batch_size": 8, "learning_starts": 8, "buffer_size": 64}


def _make(kind: str, buffer: bool):
    if kind == "maddpg":
        vg = VectorGame(Exits, 6, seed=0, with_state=True)
        return vg, lambda: MADDPG(vg.spec, MADDPGConfig(**SMALL, checkpoint_buffer=buffer), seed=3)
    mixer = "vdn" if kind == "vdn" else "qmix"
    game = (lambda: Exits()) if kind == "vdn" else "openspiel/tic_tac_toe"
    vg = VectorGame(game, 6, seed=0, with_state=True)
    agents = None if kind == "vdn" else ("player_0",)
    cfg = ValueDecompConfig(mixer=mixer, **SMALL, checkpoint_buffer=buffer)
    return vg, lambda: ValueDecomp(vg.spec, cfg, agents=agents, seed=3)


def _play(learner, vg, vs, steps: int):
    others = {a: RandomPolicy(vg.spec, seed=5) for a in vg.spec.agent_ids
              if a not in learner.agents}
    for _ in range(steps):
        actions = learner.act(vs) | {a: p.act(a, vs) for a, p in others.items()}
        vs = vg.step(actions)
        learner.observe(vs)
        if learner.ready():
            learner.update()
    return vs


@pytest.mark.parametrize("kind", ["maddpg", "vdn", "qmix"])
def test_loading_into_a_learner_that_played_equals_loading_into_a_fresh_one(kind):
    buffer = True
    vg, make = _make(kind, buffer)
    source = make()
    vs = _play(source, vg, vg.reset(), 5)
    state = source.state_dict()
    used = make()
    _play(used, vg, vs, 8)  # more rows than the state holds; stopped inside episodes
    used.load_state_dict(copy.deepcopy(state))  # as from a file: tensors of its own
    fresh = make()
    fresh.load_state_dict(copy.deepcopy(state))
    assert _differences(used, fresh, kind, set()) == []
    for learner in (used, fresh):  # the same new games for both
        vg2, _ = _make(kind, buffer)
        _play(learner, vg2, vg2.reset(), 6)
    assert _differences(used, fresh, kind, set()) == []


@pytest.mark.parametrize(("field", "value"), [("size", -1), ("size", 5), ("pos", 4), ("pos", -1),
                                              ("size", 2.0), ("rows", 3)])
def test_a_replay_state_out_of_range_is_refused_in_one_line(field, value):
    """Review LR-1: a negative size or a pos past the capacity loaded, and failed much later in
    sample() with torch's error."""
    import torch

    from marl.replay import ReplayBuffer

    buf = ReplayBuffer(4, {"x": ((), torch.float32)})
    state = {"data": {"x": torch.ones(2)}, "pos": 2, "size": 2}
    if field == "rows":
        state["data"]["x"] = torch.ones(value)
    else:
        state[field] = value
    with pytest.raises(ValueError, match=r"^replay state") as err:
        buf.load_state_dict(state)
    assert "\n" not in str(err.value)
