"""The LLM trainer's advantage inputs (``llm_agents.credit``): keys and rewards built in one
pass over the turns equal the per-turn reference (one tensor per column, a ``KeyIndex.id``
call per turn), and so do the advantages of every adv_norm the trainer accepts, bit for bit."""

from __future__ import annotations

import random

import pytest
import torch

from llm_agents.credit import TURN_KEYS, KeyIndex, turn_advantages, turn_keys
from llm_agents.records import Decision, Turn
from marl.advantages import (
    AdvantageConfig,
    AdvantageKeys,
    RoleEMABaseline,
    adv_norms_for,
    get_adv_norm,
    normalize_advantages,
    turn_returns,
)

D = Decision(0, True, "", [1], [1], [0.0])
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))]  # fmt: skip


def ref_keys(turns, games, index, device="cpu"):
    """The per-turn reference: one ``KeyIndex.id`` call per turn and kind, one tensor per column."""

    def col(values):
        return torch.tensor(values, dtype=torch.long, device=device)

    return AdvantageKeys(
        game=col([index.id("game", games[t.game]) for t in turns]),
        group=col([t.group for t in turns]),
        agent=col([index.id("agent", t.agent) for t in turns]),
        role=col([index.id("role", t.role) for t in turns]),
        trajectory=col([t.episode for t in turns]),
        turn=col([t.index for t in turns]),
    )


def ref_advantages(turns, games, adv_norm, index, *, gamma, cfg, state, device="cpu"):
    keys = ref_keys(turns, games, index, device)
    rewards = torch.tensor([t.reward for t in turns], dtype=torch.float32, device=device)
    values = (rewards if get_adv_norm(adv_norm).consumes == "rewards"
              else turn_returns(rewards, keys.trajectory, keys.agent, keys.turn, gamma=gamma))
    # named by the reference's own index, as turn_advantages names its keys (a65e14c)
    return normalize_advantages(adv_norm, values, keys, cfg=cfg, state=state, names=index.names)


def rollout(seed: int, episodes: int) -> list[Turn]:
    """Turns as a rollout records them: episodes of two games interleaved in time, 1-7 turns,
    2-4 seats of four agents (two share a role), rewards with ties, zeros and spread."""
    rng = random.Random(seed)
    seats = [("alice", "team"), ("bob", "team"), ("carol", "opp"), ("dave", "solo")]
    queues = []
    for ep in range(episodes):
        game, group, chosen = rng.randrange(2), ep // 4, rng.sample(seats, rng.randrange(2, 5))
        queues.append([Turn(ep, group, game, *chosen[i % len(chosen)], "m", i, D, 0,
                            rng.choice([0.0, 1.0, -1.0, rng.gauss(0, 2), rng.gauss(3, 0.1)]))
                       for i in range(rng.randrange(1, 8))])  # fmt: skip
    turns = []
    while any(queues):
        turns.append(rng.choice([q for q in queues if q]).pop(0))
    return turns


def seeded_index() -> KeyIndex:
    """An index that already knows some names (ids are not first-appearance order from 0)."""
    index = KeyIndex()
    for kind, name in (("agent", "zed"), ("agent", "carol"), ("role", "solo"), ("game", "g1")):
        index.id(kind, name)
    return index


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("episodes", [0, 1, 3, 60])
def test_turn_keys_equal_the_per_turn_reference(device, episodes):
    turns, games = rollout(episodes, episodes), ["g0", "g1"]
    for make_index in (KeyIndex, seeded_index):
        got_index, ref_index = make_index(), make_index()
        got = turn_keys(turns, games, got_index, device)
        ref = ref_keys(turns, games, ref_index, device)
        assert got.present() == ref.present() == list(TURN_KEYS)
        for name in TURN_KEYS:
            col, want = getattr(got, name), getattr(ref, name)
            assert col.dtype == torch.long and col.device.type == device and col.is_contiguous()
            assert torch.equal(col, want), name
        assert got_index.state_dict() == ref_index.state_dict()  # same ids in the same order


def same(got: torch.Tensor, want: torch.Tensor, where, device: str) -> None:
    """Equal tensors on the CPU. On CUDA the segment sums are ``scatter_add_``'s float atomics,
    whose order (so the last bits) changes from call to call: equal to float32 rounding (also
    the ``role_ema`` baselines, which ``state_dict`` hands back on the CPU)."""
    if device == "cpu" or not got.is_floating_point():
        assert torch.equal(got, want), where
    else:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=str(where))


@pytest.mark.parametrize("device", DEVICES)
def test_turn_advantages_equal_the_per_turn_reference_for_every_adv_norm(device):
    """Every adv_norm the trainer can run (``TURN_KEYS``), returns and rewards, gamma 1 / 0.7 /
    0, per-trajectory and plain statistics, a state carried over two calls: equal tensors,
    masks, diagnostics, ``role_ema`` baselines and key ids."""
    names = adv_norms_for(TURN_KEYS)
    assert {"global", "agent", "role", "group_role", "role_ema", "player_turn"} <= set(names)
    turns, games = rollout(7, 40), ["g0", "g1"]
    for name in names:
        for cfg in (AdvantageConfig(), AdvantageConfig(per_trajectory=True, turn_gamma=0.9)):
            for gamma in (1.0, 0.7, 0.0):
                indices = (seeded_index(), seeded_index())
                states = (RoleEMABaseline(), RoleEMABaseline())
                for _ in range(2):
                    got = turn_advantages(turns, games, name, indices[0], gamma=gamma, cfg=cfg,
                                          state=states[0], device=device)
                    ref = ref_advantages(turns, games, name, indices[1], gamma=gamma, cfg=cfg,
                                         state=states[1], device=device)
                    where = (name, cfg.per_trajectory, gamma)
                    same(got.advantages, ref.advantages, where, device)
                    assert torch.equal(got.mask, ref.mask), where
                    if device == "cpu":
                        assert got.diagnostics == ref.diagnostics, where
                    else:
                        assert got.diagnostics == pytest.approx(ref.diagnostics, rel=1e-5,
                                                                abs=1e-6, nan_ok=True), where
                    for a, b in zip(states[0].state_dict().values(),
                                    states[1].state_dict().values(), strict=True):
                        same(a, b, where, device)
                assert indices[0].state_dict() == indices[1].state_dict()
