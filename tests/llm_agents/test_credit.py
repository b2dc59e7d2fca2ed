"""Turn-level credit (``llm_agents.credit``): each adv_norm gets what it declares it consumes
(returns or rewards), agents that share a role are told apart by ``agent`` and pooled by
``group_role``, and ``role_ema`` runs once per (game, role, episode) in the trainer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from llm_agents.credit import KeyIndex, turn_advantages, turn_keys
from llm_agents.records import Decision, Turn
from llm_agents.trainer import GRPOConfig
from marl.advantages import AdvantageConfig, RoleEMABaseline, normalize_advantages

D = Decision(0, True, "", [1], [1], [0.0])


def _team_turns(seed=0, k=8):
    """A 2-vs-1 game: teammates ``a1`` (rewards ~ N(5, 1)) and ``a2`` (~ N(-5, 1)) share the
    role ``team``; ``b`` plays ``opp``. One group of ``k`` episodes, one turn per agent."""
    rng = np.random.default_rng(seed)
    turns = []
    for ep in range(k):
        for i, (agent, role, mu) in enumerate([("a1", "team", 5), ("a2", "team", -5),
                                               ("b", "opp", 0)]):  # fmt: skip
            turns.append(Turn(ep, 0, 0, agent, role, "m", i, D, 0, float(rng.normal(mu, 1))))
    return turns


def test_agent_and_group_role_differ_when_agents_share_a_role():
    turns = _team_turns()
    a1 = np.array([t.agent == "a1" for t in turns])
    a2 = np.array([t.agent == "a2" for t in turns])
    agent = turn_advantages(turns, ["g"], "agent", KeyIndex()).advantages.numpy()
    role = turn_advantages(turns, ["g"], "group_role", KeyIndex()).advantages.numpy()
    # per agent each teammate is centered on its own mean ...
    assert abs(agent[a1].mean()) < 1e-5 and abs(agent[a2].mean()) < 1e-5
    # ... per (group, role) the teammates share one: a1 above it, a2 below
    assert role[a1].mean() > 0.9 and role[a2].mean() < -0.9
    assert not np.allclose(agent, role, atol=0.1)


def test_player_turn_gets_rewards_and_others_get_returns():
    # agent a: three turns rewarded 0, 0, 1 (or 1, 0, 0) per episode; returns would be 1, 1, 1
    turns = []
    for ep, rewards in enumerate([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]):
        for i, r in enumerate(rewards):
            turns.append(Turn(ep, 0, 0, "a", "A", "m", i, D, 0, r))
    index = KeyIndex()
    got = turn_advantages(turns, ["g"], "player_turn", index).advantages
    keys = turn_keys(turns, ["g"], index)
    rewards = torch.tensor([t.reward for t in turns])
    direct = normalize_advantages("player_turn", rewards, keys).advantages
    torch.testing.assert_close(got, direct)  # MARS builds its own returns from the rewards
    returns = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 2.0, 2.0, 0.0])
    twice = normalize_advantages("player_turn", returns, keys).advantages
    assert not torch.allclose(got, twice)  # returns of returns: counted twice
    none = turn_advantages(turns, ["g"], "none", KeyIndex()).advantages
    torch.testing.assert_close(none, returns)  # the others get returns


def test_trainer_runs_role_ema_per_episode_unless_told_otherwise():
    assert GRPOConfig(adv_norm="role_ema").advantage_config().per_trajectory
    assert not GRPOConfig(adv_norm="role_ema",
                          role_ema_per_trajectory=False).advantage_config().per_trajectory
    assert not GRPOConfig(adv_norm="group_role").advantage_config().per_trajectory
    # SPIRAL: one update per (game, role, episode) with the episode's mean return
    turns = [Turn(ep, 0, 0, "a", "A", "m", i, D, 0, r)
             for ep, rs in enumerate([[1.0, 3.0], [5.0, 5.0]]) for i, r in enumerate(rs)]
    state, alpha = RoleEMABaseline(), 0.5
    cfg = GRPOConfig(adv_norm="role_ema", gamma=0.0,
                     advantage=AdvantageConfig(role_ema_alpha=alpha)).advantage_config()
    adv = turn_advantages(turns, ["g"], "role_ema", KeyIndex(), gamma=0.0, cfg=cfg, state=state)
    torch.testing.assert_close(adv.advantages, torch.tensor([1.0, 3.0, 4.0, 4.0]))  # b: 0, 1
    assert state.get(0, 0) == pytest.approx(alpha * (alpha * 0 + (1 - alpha) * 2) + (1 - alpha) * 5)


def test_unknown_or_unusable_adv_norm_fails_in_one_line():
    with pytest.raises(ValueError, match=r"adv_norm='dr_mas' unknown; choose one of \["):
        GRPOConfig(adv_norm="dr_mas")


def test_joint_group_is_magrpos_baseline_at_the_groups_start(multi_tok, make_model):
    """MAGRPO (arXiv:2508.04652): a joint action's advantage is its return minus the mean
    return of the G joint actions sampled from the same history. The trainer samples K
    episodes from each group's shared start and does not branch later turns, so
    ``joint_group`` gives every turn of an episode R_e - mean over its group's episodes
    (each once, whatever its length), R_e the mean of its turns' returns-to-go (README).
    Reference in plain Python: on relay batches (a shared team reward at the end, gamma 1,
    score mode: no invalid-output penalty) R_e is the team's episode return, MAGRPO's R_0;
    with a reward during the episode R_e is that mean, not the episode return."""
    from llm_agents.actions import ActionConfig
    from llm_agents.team import Team
    from llm_agents.trainer import MultiTurnGRPO

    from .conftest import COMPACT, RELAY

    team = Team.per_role({"scout": (make_model(multi_tok, 1), multi_tok),
                          "solver": (make_model(multi_tok, 2), multi_tok)},
                         {"scout": "send A", "solver": "compute with the calculator"})
    cfg = GRPOConfig(group_size=4, groups_per_step=3, adv_norm="joint_group",
                     action=ActionConfig(mode="score"), prompt=COMPACT, device="cpu", seed=0)
    trainer = MultiTurnGRPO(team, "tool/relay", cfg, game_kwargs={"tool/relay": RELAY})
    batch = trainer.collect()
    adv = turn_advantages(batch.turns, batch.games, "joint_group", trainer.index,
                          cfg=cfg.advantage_config()).advantages
    assert all(len(set(ep.returns.values())) == 1 for ep in batch.episodes)  # shared reward
    ret = {e: next(iter(ep.returns.values())) for e, ep in enumerate(batch.episodes)}
    groups = {ep.group for ep in batch.episodes}
    assert len(groups) == 3 and len(set(ret.values())) > 1
    mean = {g: np.mean([ret[e] for e, ep in enumerate(batch.episodes) if ep.group == g])
            for g in groups}
    want = [ret[t.episode] - mean[t.group] for t in batch.turns]
    np.testing.assert_allclose(adv.numpy(), want, atol=1e-6)

    # a reward during the episode: R_e is the mean of its turns' returns-to-go
    turns = [Turn(ep, 0, 0, a, a, "m", i, D, 0, r)
             for ep, rs in enumerate([[("s", -1.0), ("v", 0.0), ("s", 2.0), ("v", 2.0)],
                                      [("s", 0.0), ("v", 1.0)]])
             for i, (a, r) in enumerate(rs)]
    r_e = [np.mean([1.0, 2.0, 2.0, 2.0]), np.mean([0.0, 1.0])]  # s: -1+2, 2; v: 2, 2 | 0 | 1
    got = turn_advantages(turns, ["g"], "joint_group", KeyIndex()).advantages.numpy()
    np.testing.assert_allclose(got, [r_e[t.episode] - np.mean(r_e) for t in turns], atol=1e-6)
