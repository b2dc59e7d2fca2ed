"""The learner panels say what they draw (fix26d): ``adv/*/reward_(mean|std)`` were the
statistics of what the advantage normalization is given, which is MAPPO's raw GAE advantages
(-0.467 on dots_and_boxes, whose rewards are ~0), drawn as "Reward per agent and role"; and
"Episode return" drew ``charts/eval_return_ci95``, a confidence interval's half-width."""

from __future__ import annotations

import pytest
import torch

import games
import marl.mappo_update as mappo_update
from marl.mappo import MAPPO, MAPPOConfig
from marl.train import train
from populations.dashboard import queries
from populations.db import LeagueDB

RAW = "Raw advantage per agent and role"


def test_the_raw_advantage_keys_are_mappos_gae_advantages(monkeypatch):
    spec = games.make("openspiel/kuhn_poker").spec
    learner = MAPPO(spec, MAPPOConfig(rollout_steps=8, epochs=1, minibatches=1), seed=0)
    seen = []
    real = mappo_update.value_targets

    def spy(L):  # the real function; its advantages kept to compare with the metrics
        out = real(L)
        seen.append((out[0].clone(), out[2].clone(), L.buf.reward[: L.buf.row].clone()))
        return out

    monkeypatch.setattr(mappo_update, "value_targets", spy)
    vg = games.VectorGame("openspiel/kuhn_poker", 4, seed=0, **learner.vector_game_kwargs)
    res = train(learner, vg, frames=4 * 8, progress=False)
    (adv_TBA, complete_TBA, reward_TBA), = seen
    m = res.metrics[-1]
    raw = adv_TBA[complete_TBA].double()
    assert m["adv/global/raw_mean"] == pytest.approx(float(raw.mean()), abs=1e-6)
    assert m["adv/global/raw_std"] == pytest.approx(float(raw.std(unbiased=False)), abs=1e-6)
    # not the rewards, which the old name said
    rewards = reward_TBA[complete_TBA].double()
    assert float(rewards.mean()) != pytest.approx(float(raw.mean()), abs=1e-3)
    assert not any("reward_" in k for k in m)
    assert torch.is_tensor(adv_TBA)


def test_panels_draw_raw_advantages_and_returns_but_no_confidence_interval(tmp_path):
    db = LeagueDB(tmp_path / "league.db")
    run = db.create_run("r", experiment="default", game="g")
    db.log_metrics(run, 100, {
        "charts/episode_return": 1.0, "charts/eval_return": 0.5, "charts/eval_return_ci95": 0.3,
        "main/charts/eval_return_ci95": 0.2, "charts/seat_return/player_0": 0.1,
        "adv/agent_0/raw_mean": -0.467, "adv/role_1/raw_std": 1.2,
        "adv/agent_0/reward_mean": -0.4,  # a run from before the rename: the same quantity
        "adv/agent_0/raw_std_ratio": 1.0})
    panels = {p["title"]: {s["key"] for s in p["series"]}
              for p in queries.learner_panels(db, run)["panels"]}
    db.close()
    assert panels["Episode return"] == {"charts/episode_return", "charts/eval_return",
                                        "charts/seat_return/player_0"}
    assert panels[RAW] == {"adv/agent_0/raw_mean", "adv/role_1/raw_std",
                           "adv/agent_0/reward_mean"}
    assert not any("Reward" in title for title in panels)
