"""MAPPO with a GNN encoder carries each seat's unfinished last step into the next rollout
with the entity graph of that step (math36: row 0 held one graph per copy, seat 0's; a seat
carried while seat 0 was not, as ``Exits(cut=True)``'s agent_1 after agent_0's cut, or from
another row than seat 0's, as in a turn-based game, was re-evaluated on another step's
graph: its log-prob differed from the stored one and the critic trained on a wrong input)."""

import dataclasses

import pytest
import torch

import games
from marl.actor_critic import NetConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.mappo_update import _gather, flat_index
from tests.marl.exits_game import IDS, Exits

NET = NetConfig(encoder="gnn", critic="gnn", share="all", hidden=(16,), gnn_hidden=8,
                gnn_layers=1)


class Turns(Exits):
    """Exits played in turns: agent_0 at even steps, agent_1 at odd ones (the one left
    plays every step), so the seats' last steps lie on different rows."""

    def __init__(self) -> None:
        super().__init__(graph=True)
        self.spec = dataclasses.replace(self.spec, simultaneous=False)

    def acting_agents(self) -> tuple[str, ...]:
        if self.over:
            return ()
        turn = IDS[self.t % 2]
        return (turn,) if turn in self.live else tuple(self.live)


@pytest.mark.parametrize("make", [lambda: Exits(cut=True, graph=True), Turns],
                         ids=["seat0-gone", "turns"])
def test_carried_steps_keep_their_own_graph(make):
    B = 8
    vg = games.VectorGame(make, B, seed=0, with_graphs=True)
    learner = MAPPO(vg.spec, MAPPOConfig(rollout_steps=7, rollout_end="carry", epochs=1,
                                         minibatches=1, net=NET), seed=0)
    learner.opt.param_groups[0]["lr"] = 0.0  # the policy stays the one that played
    vs, exposed, metrics = vg.reset(), 0, []
    for _ in range(6):
        while not learner.ready():
            vs = vg.step(learner.act(vs))
            learner.observe(vs)
        buf = learner.buf
        # carried steps on another row than seat 0's last (the row whose graph row 0 held)
        exposed += int(((buf.last >= 0) & (buf.last != buf.last[:, :1].clamp_min(0))).sum())
        # with the policy unchanged, an update's ratio is 1 for every sample, carried ones
        # (played by the same weights) included; row 0 after it holds the carried steps
        metrics.append(learner.update())
        b, a = buf.acting[0].nonzero(as_tuple=True)
        flat = flat_index(learner, torch.zeros_like(b), b, a)
        with torch.no_grad():
            logits = learner.actors[0](_gather(learner, 0, flat, critic=False))
            logp = learner.actors[0].log_prob(logits, buf.action[0, b, a])
        torch.testing.assert_close(logp, buf.logp[0, b, a], rtol=0, atol=1e-5)
    assert exposed > 0
    assert all(m["losses/approx_kl"] < 1e-7 and m["losses/clipfrac"] == 0 for m in metrics)
