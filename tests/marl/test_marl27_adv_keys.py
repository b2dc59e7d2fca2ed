"""A game's agent ids that already say what they are (``agent_0``) are not prefixed again:
MAPPO on the default game logged ``adv/agent_agent_0/...`` (marl27). The dashboard's
``adv/agent_[^/]*`` panels read both spellings; names never share a key."""

from __future__ import annotations

import torch

import games
from marl.adv_diagnostics import advantage_diagnostics
from marl.advantages import AdvantageKeys
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train

X = torch.tensor([0.0, 2.0, 10.0, 10.0])
KEYS = AdvantageKeys(agent=torch.tensor([1, 1, 0, 0]), role=torch.tensor([0, 0, 1, 1]))


def _segments(d: dict[str, float]) -> set[str]:
    return {k.split("/")[1] for k in d}


def test_a_name_that_starts_with_its_kind_is_not_prefixed_again():
    d = advantage_diagnostics(X, X, KEYS, names={"agent": ["adversary_0", "agent_0"],
                                                 "role": ["role_a", "agent"]})
    assert _segments(d) == {"global", "agent_adversary_0", "agent_0", "role_a", "role_agent"}
    assert d["adv/agent_0/raw_mean"] == 1.0  # id 1: the first two samples


def test_names_that_would_share_a_key_keep_the_prefix():
    # "0" would be agent_0, as "agent_0" is: both keep the kind prefix, so no key is shared
    d = advantage_diagnostics(X, X, KEYS, names={"agent": ["0", "agent_0"]})
    assert _segments(d) == {"global", "agent_0", "agent_agent_0", "role_0", "role_1"}
    assert d["adv/agent_agent_0/raw_mean"] == 1.0


def test_mappo_on_the_default_game_logs_adv_agent_0():
    game = "pettingzoo/mpe2.simple_spread_v3"
    spec = games.make(game, max_cycles=25).spec
    assert spec.agent_ids[0] == "agent_0"
    learner = MAPPO(spec, MAPPOConfig(adv_norm="agent", rollout_steps=25, epochs=1,
                                      minibatches=1), seed=0)
    vg = games.VectorGame(game, 2, seed=0, max_cycles=25, **learner.vector_game_kwargs)
    m = train(learner, vg, frames=2 * 25, progress=False).metrics[-1]
    agents = {k.split("/")[1] for k in m if k.startswith("adv/agent")}
    assert agents == set(spec.agent_ids)  # adv/agent_0/..., not adv/agent_agent_0/...
    assert abs(m["adv/agent_0/adv_mean"]) < 1e-4
