"""VDN / QMIX TD loss against a slow reference on a hand-made trajectory
(:mod:`tests.marl.exits_game`: an agent leaving mid-episode, episodes terminated and
truncated, legal masks that change every step), and the target-network and ε schedules.

The reference walks the recorded steps with plain loops:
``y = r_team + gamma * [not ended by the rules] * Q'_tot(s', q'_1, ..., q'_A)`` with
``q'_j = Q'_j(o'_j, argmax_{legal u} Q_j(o'_j, u))`` (double Q: the online network picks,
the target evaluates; ``double_q=False``: the target does both) for the agents still in the
game after the step, 0 for those not (one that left, in the step or before; one waiting a
step, ``Exits(wait=True)``, is still in), and ``Q_tot(s, ...)`` mixing the chosen utilities
of the agents that acted. ``r_team`` is the mean reward over all controlled agents (one that
left counts 0: ``sum / A``, the team's return scaled)."""

import numpy as np
import pytest
import torch

from games import Transition, VectorGame
from marl.value_decomp import ValueDecomp, ValueDecompConfig
from tests.marl.exits_game import Exits, left_before, record

GAMMA = 0.9


def _t(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, np.float32))


@torch.no_grad()
def _reference_loss(learner, rec, double_q):
    agents = learner.agents
    errs, rewards, kinds = [], [], {"term": 0, "trunc": 0, "left": 0, "left_before_trunc": 0,
                       "wait_at_trunc": 0, "mean_after_left": 0, "cut": 0}
    for (vs, actions, nxt), gone in zip(rec, left_before(rec, agents), strict=True):
        for c in range(len(nxt.done)):
            done = bool(nxt.done[c])
            q = torch.zeros(len(agents))
            for i, a in enumerate(agents):
                if vs.acting[a][c]:
                    q[i] = learner.qnet.forward_agent(_t(vs.obs[a][c])[None], i)[0, actions[a][c]]
            q_tot = float(learner.mixer(q[None], _t(vs.state[c])[None])[0])
            # team reward: the mean over all controlled agents (a departed one is paid 0)
            y = float(np.mean([nxt.rewards[a][c] for a in agents]))
            kinds["mean_after_left"] += len(gone & {(c, a) for a in agents}) > 0
            rewards.append(y)
            src, st = (nxt.final_obs, nxt.final_state) if done else (nxt.obs, nxt.state)
            nq, still = torch.zeros(len(agents)), []
            for i, a in enumerate(agents):
                if done:
                    live = (c, a) not in gone and not nxt.terminated[a][c]
                    kinds["wait_at_trunc"] += live and not vs.acting[a][c]
                else:
                    live = bool(nxt.acting[a][c])
                kinds["left"] += bool(vs.acting[a][c] and nxt.terminated[a][c] and not done)
                kinds["cut"] += bool(nxt.truncated[a][c] and not done)
                if not live:
                    continue
                still.append(a)
                legal = nxt.legal[a][c] if not done else np.ones(3, bool)
                o = _t(src[a][c])[None]
                pick = (learner.qnet if double_q else learner.target_qnet).forward_agent(o, i)[0]
                u = int(np.argmax(np.where(legal, pick.numpy(), -np.inf)))
                nq[i] = learner.target_qnet.forward_agent(o, i)[0, u]
            if done and not still:
                kinds["term"] += 1  # every agent's episode ended by the rules: no bootstrap
            else:
                if done:
                    kinds["trunc"] += 1
                    kinds["left_before_trunc"] += len(still) < len(agents)
                y += GAMMA * float(learner.target_mixer(nq[None], _t(st[c])[None])[0])
            errs.append((q_tot - y) ** 2)
    return float(np.mean(errs)), kinds, rewards


@pytest.mark.parametrize(("mixer", "double_q", "wait"), [
    ("vdn", True, False), ("qmix", True, False), ("qmix", False, False),
    ("vdn", True, True), ("qmix", False, True), ("qmix", True, "cut")])
def test_td_loss_matches_a_slow_reference(mixer, double_q, wait):
    """``wait="cut"``: agent_0 is truncated alone (``Exits(cut=True)``); the team plays on
    without it, so its utility leaves ``Q'_tot`` as when an agent leaves by the rules."""
    cut, wait = wait == "cut", wait is True
    vg = VectorGame(lambda: Exits(wait=wait, cut=cut), 4, seed=0, with_state=True)
    cfg = ValueDecompConfig(mixer=mixer, gamma=GAMMA, double_q=double_q, batch_size=8,
                            learning_starts=1, buffer_size=1000, hidden=(16,),
                            mixing_embed_dim=8, hypernet_hidden=16, eps_decay_frames=1, seed=1)
    learner = ValueDecomp(vg.spec, cfg)
    with torch.no_grad():  # targets unlike the online nets, with utilities far from 0
        for p in [*learner.target_qnet.parameters(), *learner.target_mixer.parameters()]:
            p.add_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
        learner.target_qnet.net[-1].bias.add_(3.0)
    learner.cfg.eps_start = learner.cfg.eps_end = 1.0  # uniform legal actions: every ending
    rec = record(learner, vg)
    ref, kinds, rewards = _reference_loss(learner, rec, double_q)
    assert kinds.pop("wait_at_trunc") >= 2 if wait else kinds.pop("wait_at_trunc") == 0, kinds
    assert kinds.pop("cut") >= 2 if cut else kinds.pop("cut") == 0, kinds
    assert min(kinds.values()) >= 2, kinds
    whole = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    learner.buffer.sample = lambda n, gen: whole  # the update sees every transition once
    np.testing.assert_allclose(whole["reward"].numpy(), rewards, rtol=1e-6, atol=1e-6)
    metrics = learner.update()
    assert metrics["losses/td_loss"] == pytest.approx(ref, rel=1e-5)


@pytest.mark.parametrize("mode", ["hard", "polyak"])
def test_target_networks_follow_their_schedule(mode):
    vg = VectorGame(Exits, 4, seed=0, with_state=True)
    cfg = ValueDecompConfig(mixer="qmix", batch_size=8, learning_starts=1, hidden=(16,),
                            target_update=mode, target_update_interval=3, tau=0.25)
    learner = ValueDecomp(vg.spec, cfg)
    record(learner, vg, steps=4)
    pairs = [(learner.qnet, learner.target_qnet), (learner.mixer, learner.target_mixer)]
    for n in range(1, 7):
        before = [[p.detach().clone() for p in t.parameters()] for _, t in pairs]
        learner.update()
        for (online, target), old in zip(pairs, before, strict=True):
            for p, tp, o in zip(online.parameters(), target.parameters(), old, strict=True):
                if mode == "polyak":
                    want = 0.75 * o + 0.25 * p.detach()
                else:
                    want = p.detach() if n % 3 == 0 else o
                torch.testing.assert_close(tp, want)


def test_epsilon_decays_linearly_in_frames_then_stays():
    vg = VectorGame(Exits, 4, seed=0, with_state=True)
    learner = ValueDecomp(vg.spec, ValueDecompConfig(eps_start=0.9, eps_end=0.1,
                                                     eps_decay_frames=40))
    seen = [learner.epsilon]
    for _ in range(14):  # 4 frames per vector step
        record(learner, vg, steps=1)
        seen.append(learner.epsilon)
    want = [0.9 + min(1.0, 4 * k / 40) * (0.1 - 0.9) for k in range(15)]
    assert seen == pytest.approx(want)


def _all_obs(obs, c):
    """QMIX's global input of a game without a state: every seat's observation."""
    return np.concatenate([o[c].reshape(-1) for o in obs.values()])


@torch.no_grad()
def _turn_reference_loss(learner, rec):
    """Two one-seat teams taking turns: team ``p``'s transition runs from its move to its
    next move or the episode's end (the other's reward in between summed in); its own
    ``Q_tot`` (team mixer ``p``) regresses on ``r + gamma * (1 - terminated) * Q'_tot``."""
    agents, rows, opened = learner.agents, [], {}
    for vs, actions, nxt in rec:
        for p, a in enumerate(agents):
            for c in np.flatnonzero(vs.acting[a]):
                opened[(p, c)] = dict(obs=vs.obs[a][c], u=int(actions[a][c]),
                                      s=_all_obs(vs.obs, c), r=0.0)
        for (p, c), o in list(opened.items()):
            a = agents[p]
            o["r"] += float(nxt.rewards[a][c])
            if not (nxt.done[c] or nxt.acting[a][c]):
                continue
            done = bool(nxt.done[c])
            o |= dict(next_obs=(nxt.final_obs if done else nxt.obs)[a][c],
                      next_s=_all_obs(nxt.final_obs if done else nxt.obs, c),
                      legal=np.ones(9, bool) if done else nxt.legal[a][c],
                      ended=done and not nxt.truncated[a][c], team=p)
            rows.append(o)
            del opened[(p, c)]
    errs = []
    for o in rows:
        p = o["team"]
        q = learner.qnet.forward_agent(_t(o["obs"])[None], p)[0, o["u"]]
        q_tot = float(learner.mixer.mixers[p](q.view(1, 1), _t(o["s"])[None])[0])
        y = o["r"]
        if not o["ended"]:
            nobs = _t(o["next_obs"])[None]
            pick = learner.qnet.forward_agent(nobs, p)[0].numpy()
            u = int(np.argmax(np.where(o["legal"], pick, -np.inf)))
            nq = learner.target_qnet.forward_agent(nobs, p)[0, u]
            y += GAMMA * float(learner.target_mixer.mixers[p](nq.view(1, 1),
                                                               _t(o["next_s"])[None])[0])
        errs.append((q_tot - y) ** 2)
    return float(np.mean(errs)), len(rows), sum(o["ended"] for o in rows)


@pytest.mark.parametrize("mixer", ["vdn", "qmix"])
def test_two_teams_taking_turns_match_a_slow_reference(mixer):
    """Both seats of tic-tac-toe (two teams, one value each): the TD loss of every stored
    turn transition equals the reference's."""
    vg = VectorGame("openspiel/tic_tac_toe", 4, seed=0)
    cfg = ValueDecompConfig(mixer=mixer, gamma=GAMMA, batch_size=8, learning_starts=1,
                            hidden=(16,), mixing_embed_dim=8, hypernet_hidden=16, seed=2)
    learner = ValueDecomp(vg.spec, cfg)
    with torch.no_grad():
        for p in [*learner.target_qnet.parameters(), *learner.target_mixer.parameters()]:
            p.add_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
        learner.target_qnet.net[-1].bias.add_(3.0)
    rec = record(learner, vg, steps=30)
    ref, n, ended = _turn_reference_loss(learner, rec)
    assert n == len(learner.buffer) and ended >= 6
    whole = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    learner.buffer.sample = lambda n, gen: whole
    assert learner.update()["losses/td_loss"] == pytest.approx(ref, rel=1e-5)


class _StayOrLeave(Exits):
    """Review L1's two 3-step episodes: ``agent_1`` earns 1 a step; ``agent_0`` earns 0.4 a
    step if ``stay`` or leaves at the first step with 0 (actions are ignored)."""

    def __init__(self, stay: bool) -> None:
        super().__init__()
        self.stay = stay

    def _step(self, actions: dict):
        self.t += 1
        rewards = {"agent_0": 0.4 if "agent_0" in self.live and self.stay else 0.0,
                   "agent_1": 1.0}
        term = {a: False for a in self.live}
        trunc = {a: self.t >= 3 for a in self.live}
        if not self.stay and self.t == 1:
            term["agent_0"], trunc["agent_0"] = True, False
            self.live.remove("agent_0")
        if self.t >= 3:
            self.live, self.over = [], True
        term.update({a: False for a in ("agent_0", "agent_1") if a not in term})
        trunc.update({a: False for a in ("agent_0", "agent_1") if a not in trunc})
        return Transition(rewards, term, trunc)


def test_team_mean_keeps_the_order_of_team_returns():
    """``team_reward=mean`` is ``sum / A``: the episode earning more in total (agent_0 stays:
    4.2, leaves: 3.0) keeps the higher stored team return (2.1 > 1.5). A mean over the agents
    still in the episode gave 2.1 < 2.5: leaving early paid."""
    kinds = iter([True, False])
    vg = VectorGame(lambda: _StayOrLeave(next(kinds)), 2, seed=0, with_state=True)
    learner = ValueDecomp(vg.spec, ValueDecompConfig(hidden=(8,), learning_starts=10**6))
    record(learner, vg, steps=3)
    stored = learner.buffer.data["reward"][: len(learner.buffer)].numpy()
    assert stored.shape == (6,)
    returns = stored.reshape(3, 2).sum(0)  # rows: step-major, copies (stay, leave)
    np.testing.assert_allclose(returns, [4.2 / 2, 3.0 / 2], rtol=1e-6)
