"""MADDPG's actor loss with its L2 penalty on, against a slow reference (mutation walk,
session 40: the reference tests run at ``actor_reg=0``, so penalizing every logit, padded and
illegal ones too, survived). Discrete actions of different counts (``agent_0`` has a fourth
action, ``agent_1`` a padded one) and legal masks that change every step: the penalty is the
sum of the squared *legal* logits over every stored (row, agent) divided by their number
(a row where the agent does not act allows each of its real actions)."""

import copy

import numpy as np
import pytest
import torch

from games import ActionSpace, VectorGame
from marl.maddpg import MADDPG, MADDPGConfig
from tests.marl.exits_game import Exits, left_before, record
from tests.marl.test_maddpg_targets import GAMMA, _gstate, _mlp, _unit


class WideExits(Exits):
    """Exits where ``agent_0`` also has action 3 (legal after step 0: pays 3, leaves not)."""

    def __init__(self) -> None:
        super().__init__()
        spaces = dict(self.spec.action_spaces)
        spaces["agent_0"] = ActionSpace("discrete", n=4)
        object.__setattr__(self.spec, "action_spaces", spaces)

    def legal_actions(self, agent: str):
        legal = list(super().legal_actions(agent))
        return legal + [3] if agent == "agent_0" and self.t > 0 and legal else legal


def _legal(learner, vs, i: int, a: str, c: int) -> np.ndarray:
    """Row ``c``'s ``[D]`` mask of agent ``i`` as stored: padded actions never legal."""
    D, n = int(learner.head.dims_A.max()), int(learner.head.dims_A[i])
    out = np.zeros(D, bool)
    if vs.acting[a][c] and vs.legal[a][c].any():
        out[: vs.legal[a][c].shape[0]] = vs.legal[a][c]
    else:
        out[:n] = True
    return out


def _reference(learner, actor, rec, noise, reg: float) -> float:
    agents = learner.agents
    qs, sq, n_legal = [], 0.0, 0
    for k, ((vs, actions, _), gone) in enumerate(zip(rec, left_before(rec, agents),
                                                     strict=True)):
        for c in range(len(vs.done)):
            units = [_unit(learner, i, actions[a][c]) for i, a in enumerate(agents)]
            for i, a in enumerate(agents):
                legal = _legal(learner, vs, i, a, c)
                out = _mlp(actor, learner.groups[i], np.asarray(vs.obs[a][c], float))
                sq += float((out[legal] ** 2).sum())
                n_legal += int(legal.sum())
                if (c, a) in gone:
                    continue
                noisy = np.where(legal, out + noise[k * len(vs.done) + c, i], -np.inf)
                own = np.eye(out.size)[int(np.argmax(noisy))]
                joint = [*units[:i], own, *units[i + 1 :]]
                x = np.concatenate([_gstate(learner, vs, c), *joint, np.eye(len(agents))[i]])
                qs.append(_mlp(learner.critic, learner.groups[i], x)[0])
    return -float(np.mean(qs)) + reg * sq / n_legal


@pytest.mark.parametrize("share", [False, True], ids=["per_agent", "shared"])
def test_actor_loss_with_its_penalty_matches_a_slow_reference(share):
    vg = VectorGame(WideExits, 4, seed=0, with_state=True)
    cfg = MADDPGConfig(gamma=GAMMA, batch_size=8, learning_starts=1, buffer_size=1000,
                       share_parameters=share, hidden=(16,), seed=1, exploration_noise=0.4,
                       actor_reg=1.0)
    learner = MADDPG(vg.spec, cfg)
    assert learner.head.dims_A.tolist() == [4, 3]
    with torch.no_grad():  # logits far from 0: the penalty is not small beside -Q
        learner.actor.layers[-1].bias.add_(2.0)
    rec = record(learner, vg)
    whole = {k: v[: len(learner.buffer)] for k, v in learner.buffer.data.items()}
    assert not whole["legal"][:, 1, 3].any()  # agent_1's padded action
    learner.buffer.sample = lambda n, gen: whole  # the update sees every transition once
    actor = copy.deepcopy(learner.actor)
    gen = torch.Generator().set_state(learner.update_gen.get_state())
    metrics = learner.update()
    u = torch.rand(whole["action"].shape, generator=gen).clamp_(1e-10, 1.0 - 1e-7)
    noise = (-torch.log(-torch.log(u))).double().numpy()
    ref = _reference(learner, actor, rec, noise, 1.0)
    assert metrics["losses/actor_loss"] == pytest.approx(ref, rel=1e-5)
    without = _reference(learner, actor, rec, noise, 0.0)
    assert abs(ref - without) > 0.1  # the penalty counts
