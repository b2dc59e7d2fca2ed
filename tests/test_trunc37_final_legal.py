"""A time-limit cut bootstraps over the actions legal where it was cut (session 37).

``VecStep.final_legal`` holds each discrete agent's legal mask at the state where its episode
ended (as ``final_obs`` holds its observation there), and the off-policy learners' target max
at a truncation ranges over it, as mid-episode over ``legal``; before, every action counted
there. Played on PettingZoo's tic-tac-toe cut by ``max_steps=3``: after three moves six cells
are free for ``player_2``, the seat to move.

At a whole-copy cut ``next_fields``' ``next_acting`` holds the agents still in the episode at
its end, not one that left at an earlier step (MADDPG stored every agent there; a turn-based
team's seat that left after its move bootstrapped its team's value from zeros).
"""

from collections.abc import Sequence

import numpy as np
import pytest
import torch

from games import ActionSpace, AgentSpec, Game, GameSpec, Transition, VectorGame
from marl.maddpg import MADDPG, MADDPGConfig
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from tests.marl.exits_game import LIMIT, Exits, record

TTT = "pettingzoo/pettingzoo.classic.tictactoe_v3"
GAMMA = 0.9


def _t(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, np.float32))


def _play(vg, steps, seed=0):
    """Random legal moves; the ``(step, actions, next step)`` triples."""
    rng = np.random.default_rng(seed)
    vs, rec = vg.reset(), []
    for _ in range(steps):
        actions = {a: np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in
                                vs.legal[a]]) for a in vg.spec.agent_ids}
        nxt = vg.step(actions)
        rec.append((vs, actions, nxt))
        vs = nxt
    return rec


def test_final_legal_is_the_legal_mask_where_the_episode_was_cut():
    vg = VectorGame(TTT, 3, seed=4, max_steps=3)
    rec = _play(vg, 5)
    cut = rec[2][2]
    assert cut.done.all() and cut.truncated["player_2"].all()
    for c in range(3):
        played = [int(acts[a][c]) for vs, acts, _ in rec[:3] for a in vs.acting if vs.acting[a][c]]
        free = ~np.isin(np.arange(9), played)  # the board: the cells nobody took
        assert free.sum() == 6
        assert cut.final_legal["player_2"][c].tolist() == free.tolist()  # the seat to move
        assert cut.final_legal["player_1"][c].all()  # not to move there: no mask, every action
    for _, _, nxt in (rec[0], rec[1], rec[3]):  # no episode ended: False, as final_obs's zeros
        assert not any(m.any() for m in nxt.final_legal.values())


def test_vecstep_final_legal_survives_stacking_and_numpy():
    from populations.rollouts import stack_steps

    vs = _play(VectorGame(TTT, 2, seed=1, max_steps=3), 3)[2][2]
    both = stack_steps([vs, vs])
    assert both.final_legal["player_2"].shape == (4, 9)
    assert (both.final_legal["player_2"][:2] == vs.final_legal["player_2"]).all()


@pytest.mark.parametrize("mixer", ["vdn", "qmix"])
def test_td_target_at_a_cut_maxes_over_the_legal_actions_only(mixer):
    """Both seats (two one-seat teams). The online network's best action at every state is
    made a cell ``player_1`` took at its first move: at the cut (``player_2`` to move), the
    reference's max skips it, and the learner's TD loss equals the reference's, not the one
    over every action."""
    vg = VectorGame(TTT, 1, seed=3, max_steps=3)
    cfg = ValueDecompConfig(mixer=mixer, gamma=GAMMA, batch_size=4, learning_starts=1,
                            hidden=(16,), mixing_embed_dim=8, hypernet_hidden=16, seed=5)
    learner = ValueDecomp(vg.spec, cfg)
    rec = record(learner, vg, steps=3)
    assert rec[-1][2].done.all() and rec[-1][2].truncated["player_2"].all()
    taken = int(rec[0][1]["player_1"][0])
    with torch.no_grad():
        for p in [*learner.target_qnet.parameters(), *learner.target_mixer.parameters()]:
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
        learner.qnet.net[-1].bias[taken] += 50.0  # picked over every action: an illegal pick
        learner.target_qnet.net[-1].bias[taken] += 20.0  # and worth much more than any legal
    rows = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    cut_rows = [i for i in range(len(learner.buffer)) if rows["terminal"][i] == 0
                and rows["next_acting"][i].any()]
    # the rows closed at the cut: player_2's (its move 2 to the cut, to move there) and
    # player_1's (its move 3 to the cut); player_1's move 1 row closed at its move 3
    assert len(learner.buffer) == 3 and len(cut_rows) == 3
    final = rec[-1][2]
    seat = [int(rows["acting"][i].float().argmax()) for i in range(3)]
    cut = [i for i in cut_rows if bool(rows["next_obs"][i, seat[i]].eq(_t(final.final_obs[
        learner.agents[seat[i]]][0])).all())]
    assert len(cut) == 2 and {seat[i] for i in cut} == {0, 1}

    played = [int(acts[a][0]) for vs, acts, _ in rec for a in vs.acting if vs.acting[a][0]]
    free = ~np.isin(np.arange(9), played)  # the board at the cut: the cells nobody took
    assert not free[taken] and free.sum() == 6

    def reference(over_legal: bool) -> float:
        errs = []
        for i in cut:
            p = int(rows["acting"][i].float().argmax())
            a = learner.agents[p]
            q = learner.qnet.forward_agent(rows["obs"][i, p][None], p)[0, rows["action"][i, p]]
            s = rows["state"][i][None] if "state" in rows else None
            q_tot = float(learner.mixer.mixers[p](q.view(1, 1), s)[0])
            legal = free if over_legal and a == "player_2" else np.ones(9, bool)  # to move
            o = _t(final.final_obs[a][0])[None]
            pick = learner.qnet.forward_agent(o, p)[0].numpy()
            u = int(np.argmax(np.where(legal, pick, -np.inf)))
            nq = learner.target_qnet.forward_agent(o, p)[0, u]
            ns = rows["next_state"][i][None] if "next_state" in rows else None
            y = float(rows["reward"][i, p]) + GAMMA * float(
                learner.target_mixer.mixers[p](nq.view(1, 1), ns)[0])
            errs.append((q_tot - y) ** 2)
        return float(np.mean(errs))

    with torch.no_grad():
        want, old = reference(True), reference(False)
    assert abs(want - old) > 1.0  # the legal-only max is another target than the one over all
    only = {k: v[cut] for k, v in rows.items()}
    learner.buffer.sample = lambda n, gen: only
    assert learner.update()["losses/td_loss"] == pytest.approx(want, rel=1e-5)


class _GoneThenCut(Game):
    """Turn-based, two teams: ``a0`` and ``a1`` (team ``x``), ``b0`` (team ``y``). ``a0``
    moves first and leaves by the rules with it (terminated alone; the others play on),
    ``b0`` moves, and the episode is cut (``a1``, ``b0`` truncated). Team ``x``'s
    transition opened by ``a0``'s move is still open at the cut."""

    IDS = ("a0", "b0", "a1")

    def __init__(self) -> None:
        self.spec = GameSpec(name="test/gone_then_cut", agents=tuple(
            AgentSpec(a, "seat", a[0]) for a in self.IDS), obs_shapes={a: (2,) for a in self.IDS},
            action_spaces={a: ActionSpace("discrete", n=2) for a in self.IDS}, max_steps=2,
            simultaneous=False)
        self.t = 0

    def _reset(self, seed: int | None) -> None:
        self.t = 0

    def _step(self, actions: dict) -> Transition:
        self.t += 1
        term = {a: self.t == 1 and a == "a0" for a in self.IDS}
        trunc = {a: self.t == 2 and a != "a0" for a in self.IDS}
        return Transition({a: 1.0 for a in self.IDS}, term, trunc)

    def acting_agents(self) -> tuple[str, ...]:
        return ("a0",) if self.t == 0 else ("b0",) if self.t == 1 else ()

    def observe(self, agent: str) -> np.ndarray:
        return np.array([self.t, self.IDS.index(agent)], np.float32)

    def legal_actions(self, agent: str) -> Sequence[int]:
        return [0, 1] if agent in self.acting_agents() else []

    def text_observation(self, agent: str) -> str:
        return f"step {self.t}"


def test_next_acting_at_a_cut_skips_a_seat_that_left_earlier():
    """Team ``x``'s row at the cut bootstraps from none of its seats: ``a0``, whose move
    opened it, left at step 1 (it has zeros in ``final_obs``); before, it counted."""
    vg = VectorGame(lambda: _GoneThenCut(), 2, seed=0)
    learner = ValueDecomp(vg.spec, ValueDecompConfig(mixer="vdn", learning_starts=1,
                                                     hidden=(8,), seed=0))
    rec = record(learner, vg, steps=2)
    assert rec[-1][2].done.all() and rec[-1][2].truncated["b0"].all()
    rows = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    assert len(learner.buffer) == 4 and rows["terminal"].eq(0).all()  # 2 teams x 2 copies
    by_seat = {tuple(r): n for r, n in zip(rows["acting"].tolist(),
                                           rows["next_acting"].tolist(), strict=True)}
    assert by_seat == {(True, False, False): [False, False, False],  # a0 left: none
                       (False, True, False): [False, True, False]}  # b0 still in at the cut


def test_maddpg_next_acting_at_a_cut_holds_who_was_still_in():
    """``Exits(cut=True)``: ``agent_0`` leaves alone mid-episode (by the rules, or cut by
    its own time limit); at the episode's cut only ``agent_1`` is still in: the stored
    ``next_acting`` says so (every agent before)."""
    vg = VectorGame(lambda: Exits(cut=True), 8, seed=0, with_state=True)
    learner = MADDPG(vg.spec, MADDPGConfig(learning_starts=1, batch_size=4, seed=0))
    rec = record(learner, vg, steps=12)
    rows = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    seen = 0
    gone: set[int] = set()
    for k, (_, _, nxt) in enumerate(rec):
        for c in range(len(nxt.done)):
            r = k * len(nxt.done) + c
            if nxt.done[c] and not nxt.terminated["agent_1"][c]:  # a cut
                want = [c not in gone and not bool(nxt.terminated["agent_0"][c]), True]
                assert rows["next_acting"][r].tolist() == want
                seen += c in gone
            if nxt.done[c]:
                gone.discard(c)
            elif nxt.terminated["agent_0"][c] or nxt.truncated["agent_0"][c]:
                gone.add(c)
    assert seen >= 1


def test_a_game_without_masks_gives_every_action_where_it_ended():
    vs = _play(VectorGame("pettingzoo/mpe2.simple_spread_v3", 2, seed=0, max_steps=2), 2)[1][2]
    assert vs.done.all() and vs.truncated["agent_0"].all()
    assert all(m.all() for m in vs.final_legal.values())


class _MaskedCut(Exits):
    """``Exits`` whose legal actions at the cut (step ``LIMIT``) are ``[1]`` alone, asked of
    the game there as of an acting agent (the default ``final_legal_mask``)."""

    def legal_actions(self, agent: str) -> Sequence[int]:
        if self.t >= LIMIT and self.over:
            return [1]
        return super().legal_actions(agent)


@pytest.mark.parametrize("algo", ["vdn", "maddpg"])
def test_stored_next_legal_at_a_cut_is_the_games_mask_there(algo):
    """VDN's target max and MADDPG's target action read ``next_legal``: at a cut it is the
    game's mask there (``[F, T, F]``) for the agents still in, every action before."""
    vg = VectorGame(lambda: _MaskedCut(), 8, seed=0, with_state=True)
    learner = (ValueDecomp(vg.spec, ValueDecompConfig(mixer="vdn", learning_starts=1, seed=0))
               if algo == "vdn" else
               MADDPG(vg.spec, MADDPGConfig(learning_starts=1, batch_size=4, seed=0)))
    rec = record(learner, vg, steps=12)
    rows = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    cuts = 0
    for k, (_, _, nxt) in enumerate(rec):
        for c in range(len(nxt.done)):
            if not (nxt.done[c] and nxt.truncated["agent_1"][c]):
                continue
            r = k * len(nxt.done) + c
            assert rows["next_legal"][r, 1].tolist() == [False, True, False]
            assert nxt.final_legal["agent_1"][c].tolist() == [False, True, False]
            cuts += 1
    assert cuts >= 2


def test_vmas_final_legal_is_every_action_in_the_copies_that_ended():
    torch_vg = VectorGame("vmas/simple_spread", 3, seed=0, max_steps=2, tensors=True)
    vs = torch_vg.reset()
    for _ in range(2):
        vs = torch_vg.step({a: torch.zeros(3, dtype=torch.long) for a in torch_vg.spec.agent_ids})
    assert bool(vs.done.all())
    for a, m in vs.final_legal.items():
        assert isinstance(m, torch.Tensor) and m.shape == vs.legal[a].shape and bool(m.all())
    vs = torch_vg.step({a: torch.zeros(3, dtype=torch.long) for a in torch_vg.spec.agent_ids})
    assert not any(bool(m.any()) for m in vs.final_legal.values())  # nothing ended: False
