"""NaN and inf stop training with a one-line error naming game, agent, step and quantity,
before any weight changes: a user game that turns one agent's reward or observation NaN
(or its reward so large that the loss overflows) is trained by every learner; after the
error, every weight (and MAPPO's value normalizer) equals what the last good update left.
Constant value targets give no NaN explained variance."""

import math
import re

import numpy as np
import pytest
import torch
from torch import nn

import games
from games.matrix import CLIMBING, MatrixGame
from marl.guards import FiniteGuard, NonFiniteError
from marl.maddpg import MADDPG, MADDPGConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train
from marl.value_decomp import ValueDecomp, ValueDecompConfig

GAME = "guards/poisoned_climbing"


@games.register(GAME)
class PoisonedClimbing(MatrixGame):
    """The climbing game played 4 times per episode; from this copy's ``after``-th step on,
    agent_1's ``what`` ("reward" or "obs") is ``value``."""

    def __init__(self, what: str = "reward", value: float = math.nan, after: int = 12) -> None:
        super().__init__(GAME, CLIMBING, repeats=4)
        self.what, self.value, self.after, self.count = what, value, after, 0

    def _step(self, actions):
        tr = super()._step(actions)
        self.count += 1
        if self.what == "reward" and self.count > self.after:
            tr.rewards["agent_1"] = self.value
        return tr

    def observe(self, agent):
        obs = super().observe(agent)
        if self.what == "obs" and agent == "agent_1" and self.count >= self.after:
            obs[-1] = self.value
        return obs


@games.register("guards/zero_payoff")
def zero_payoff() -> MatrixGame:
    return MatrixGame("guards/zero_payoff", np.zeros((3, 3)))


def _mappo(spec, **kw):
    return MAPPO(spec, MAPPOConfig(rollout_steps=4, epochs=1, minibatches=1, **kw))


def _vdn(spec, mixer="vdn"):
    return ValueDecomp(spec, ValueDecompConfig(mixer=mixer, hidden=(16,), batch_size=16,
                                               learning_starts=16, mixing_embed_dim=8,
                                               hypernet_hidden=8))


def _maddpg(spec):
    return MADDPG(spec, MADDPGConfig(hidden=(16,), batch_size=16, learning_starts=16))


LEARNERS = {
    "mappo": _mappo,
    "vdn": _vdn,
    "qmix": lambda spec: _vdn(spec, "qmix"),
    "maddpg": _maddpg,
}


def _weights(learner) -> list[torch.Tensor]:
    """Every tensor of every module the learner holds (targets and normalizers too)."""
    mods = [m for m in vars(learner).values() if isinstance(m, nn.Module)]
    return [t.detach().clone() for m in mods for t in m.state_dict().values()]


def _train_until_error(learner, **game_kwargs) -> tuple[str, list[torch.Tensor], int]:
    """Train until the guard fires; returns its message, the weights after the last good
    update, and how many updates ran."""
    vg = games.VectorGame(GAME, 4, seed=0, with_state=True, **game_kwargs)
    last = [_weights(learner)]

    def on_update(frames, metrics):
        last[0] = _weights(learner)
        on_update.count += 1

    on_update.count = 0
    with pytest.raises(NonFiniteError) as err:
        train(learner, vg, frames=400, progress=False, on_update=on_update)
    for before, after in zip(last[0], _weights(learner), strict=True):
        assert torch.equal(before, after), "a weight changed after the non-finite value"
    return str(err.value), last[0], on_update.count


@pytest.mark.parametrize("name", LEARNERS)
@pytest.mark.parametrize("what", ["reward", "obs"])
def test_nan_from_the_game_stops_training_before_any_weight_changes(name, what):
    learner = LEARNERS[name](games.make(GAME).spec)
    message, _, updates = _train_until_error(learner, what=what)
    assert updates >= 1  # learning ran, then stopped at the first NaN
    quantity = "reward" if what == "reward" else "(next )?observation"
    assert "\n" not in message
    assert re.search(rf"non-finite {quantity} \(nan\) in game '{GAME}', agent 'agent_1', "
                     r"at frame \d+", message), message


@pytest.mark.parametrize(("name", "quantity"), [("mappo", "loss"), ("vdn", "TD loss"),
                                                ("maddpg", "critic loss")])
def test_an_overflowing_loss_stops_before_the_optimizer_step(name, quantity):
    """Rewards of 1e30 are finite, but their squared error is not in float32."""
    spec = games.make(GAME).spec
    learner = _mappo(spec, value_norm=False) if name == "mappo" else LEARNERS[name](spec)
    message, _, updates = _train_until_error(learner, value=1e30)
    assert updates >= 1
    assert re.search(rf"non-finite {quantity} \(inf\) in game '{GAME}', agents? .*"
                     r"at frame \d+", message), message


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # the episode returns
def test_mappo_value_targets_that_overflow_stop_before_the_normalizer_moves():
    """1e38 per step is finite, its discounted sum is not: the value normalizer (part of
    the weights compared) must not have seen it."""
    learner = _mappo(games.make(GAME).spec)
    message, _, _ = _train_until_error(learner, value=3e38)
    assert re.search(rf"non-finite value target \(inf\) in game '{GAME}', agent 'agent_1'",
                     message), message


def test_explained_variance_is_not_nan_when_value_targets_are_constant():
    vg = games.VectorGame("guards/zero_payoff", 4, seed=0, with_state=True)
    learner = MAPPO(vg.spec, MAPPOConfig(rollout_steps=4, epochs=1, minibatches=1,
                                         gae_lambda=1.0))
    result = train(learner, vg, frames=64, progress=False)
    assert result.updates >= 2
    for metrics in result.metrics:
        assert all(np.isfinite(v) for v in metrics.values()), metrics
        assert "losses/explained_variance" not in metrics  # undefined: omitted, not NaN


def test_guard_names_the_agent_of_the_first_bad_value_and_passes_finite_data():
    guard = FiniteGuard("g", ("a", "b", "c"))
    ok = np.ones((5, 3, 2), np.float32)
    guard.data(7, per_agent={"observation": ok, "reward": torch.zeros(5, 3)},
               shared={"global state": torch.ones(5, 4), "absent": None})
    guard.scalar(7, "loss", torch.tensor(1.5))
    bad = ok.copy()
    bad[3, 2, 1] = -np.inf
    with pytest.raises(NonFiniteError, match=r"observation \(-inf\) in game 'g', agent 'c', "
                                             r"at frame 7"):
        guard.data(7, per_agent={"observation": bad})
    with pytest.raises(NonFiniteError, match=r"global state \(nan\) .* agents 'a', 'b', 'c'"):
        guard.data(7, shared={"global state": torch.tensor([[0.0, math.nan]])})
    with pytest.raises(NonFiniteError, match=r"gradient norm \(inf\)"):
        guard.scalar(7, "gradient norm", torch.tensor(math.inf))


# ------------------------------------------------------------------ LLM trainer (GRPO)
@games.register("guards/nan_kuhn")
def nan_kuhn():
    """Kuhn poker whose final reward of player_1 is NaN."""
    from games.openspiel import OpenSpielGame

    class NaNKuhn(OpenSpielGame):
        def _step(self, actions):
            tr = super()._step(actions)
            if any(tr.terminated.values()):
                tr.rewards["player_1"] = math.nan
            return tr

    return NaNKuhn("kuhn_poker")


def test_grpo_stops_on_a_nan_loss_before_the_optimizer_step():
    from llm_agents.actions import ActionConfig
    from llm_agents.team import Team
    from llm_agents.tiny import TinyModelConfig, build_model, build_tokenizer
    from llm_agents.trainer import GRPOConfig, MultiTurnGRPO

    from ..llm_agents.conftest import COMPACT, KUHN, corpus

    tok = build_tokenizer(corpus(KUHN))
    model = build_model(tok, TinyModelConfig(seed=0))
    before = [p.detach().clone() for p in model.parameters()]
    cfg = GRPOConfig(group_size=2, groups_per_step=2, adv_norm="group_role", lr=1e-2,
                     action=ActionConfig(mode="score"), prompt=COMPACT, device="cpu")
    trainer = MultiTurnGRPO(Team.shared(model, tok), "guards/nan_kuhn", cfg)
    with pytest.raises(NonFiniteError) as err:
        trainer.step()
    assert re.search(r"non-finite loss \(nan\) in game 'guards/nan_kuhn', agents? '.*"
                     r"at iteration 0", str(err.value)), err.value
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
