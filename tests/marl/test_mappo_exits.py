"""MAPPO / IPPO value targets on :mod:`tests.marl.exits_game` (an agent leaving alone by the
rules, one *truncated* alone while the other plays on, a seat that waits, the episode
terminated or cut) against a slow per-(copy, agent) loop.

The reference walks each agent's own acting steps: a step's reward is everything the agent
is paid until its next acting step (a waiting step's reward included), GAE runs over those
steps and stops at the agent's own end: no bootstrap where it terminated (or the episode
ended without cutting it), the critic's value of its last input where it was truncated,
alone or with the episode. Where it was truncated alone, that input is read from the game
itself (``Game.observe`` / ``Game.state`` / ``Game.entity_graph`` right after the step), not
from the VecStep. With GNN encoders (actor and critic) a departed agent's node stays in the
graph and its rows are left out the same way. With ``critic="concat"`` (every agent's
observation) an agent that left at an earlier step has zeros in its slot of the bootstrap
input, as on every step since (review L4). After
an agent's end nothing of its copy's later steps is credited to it, and it has no complete
(trained) step until its next episode; its last step in the rollout, if its outcome is not
known yet, is carried (not complete) and its earlier steps bootstrap from its value."""

import numpy as np
import pytest
import torch

from games import VectorGame
from marl.actor_critic import NetConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.mappo_update import value_targets
from tests.marl.exits_game import Exits

GAMMA, LAM, R, B = 0.9, 0.8, 40, 4


def _value(learner, i, x):
    """Agent ``i``'s value of critic input ``x``: a vector (its seat one-hot appended) or
    the entity graph's nodes (agent ``i``'s node the ego)."""
    if learner.cfg.net.critic == "gnn":
        inp = {"graph": torch.as_tensor(x)[None], "ego": torch.tensor([i])}
    else:
        seat = np.eye(len(learner.agents))[i]
        inp = {"critic": torch.as_tensor(np.concatenate([x, seat]), dtype=torch.float32)[None]}
    with torch.no_grad():
        return float(learner.value_rms.denormalize(learner.critics[0](inp))[0])


def _reference(learner, rec):
    """``{(row, copy, agent): return}`` of the complete steps, by loops."""
    out, kinds = {}, {"left": 0, "cut": 0, "term": 0, "trunc": 0, "wait": 0, "carried": 0}
    for c in range(B):
        for i, a in enumerate(learner.agents):
            own, cur = [], None  # the agent's acting steps: [row, value, reward, end value]
            for k, s in enumerate(rec):
                if s["acting"][a][c]:
                    cur = [k + 1, float(learner.buf.value[k + 1, c, i]), 0.0, None]
                    own.append(cur)
                elif cur is not None:
                    kinds["wait"] += 1
                if cur is None:
                    continue
                cur[2] += float(s["reward"][a][c])
                term, trunc, done = s["term"][a][c], s["trunc"][a][c], s["done"][c]
                if term or trunc or done:
                    kind = ("term" if term or not trunc else "trunc") if done else (
                        "left" if term else "cut")
                    kinds[kind] += 1
                    cur[3] = (0.0 if kind in ("term", "left")
                              else _value(learner, i, s["final"][c][i]))
                    cur = None
            adv = 0.0
            for j in range(len(own) - 1, -1, -1):
                row, v, r, end = own[j]
                if end is None and j + 1 == len(own):
                    kinds["carried"] += 1  # outcome unknown: not complete, no advantage
                    continue
                nxt = end if end is not None else own[j + 1][1]
                adv = r + GAMMA * nxt - v + (GAMMA * LAM * adv if end is None else 0.0)
                out[(row, c, i)] = adv + v
    return out, kinds


@pytest.mark.parametrize(("critic", "wait"), [("state", False), ("local", False),
                                               ("state", True), ("gnn", False),
                                               ("concat", False)],
                         ids=["mappo_state-cut_alone", "ippo-cut_alone", "mappo_state-waiting",
                              "mappo_gnn-cut_alone", "mappo_concat-cut_alone"])
def test_value_targets_stop_at_each_agents_own_end(critic, wait):
    gnn = critic == "gnn"
    net = NetConfig(critic=critic, encoder="gnn" if gnn else "mlp", share="all", hidden=(16,),
                    gnn_hidden=8, gnn_layers=1)
    cfg = MAPPOConfig(rollout_steps=R, gamma=GAMMA, gae_lambda=LAM, rollout_end="carry",
                      net=net)
    vg = VectorGame(lambda: Exits(wait=wait, cut=not wait, graph=gnn), B, seed=0,
                    with_state=True, with_graphs=gnn)
    learner = MAPPO(vg.spec, cfg, seed=0)
    with torch.no_grad():  # values far from 0 and unlike each other
        learner.critics[0].head[-1].bias.add_(3.0)
    vs, rec = vg.reset(), []
    gone = [set() for _ in range(B)]  # per copy, the agents that left at an earlier step
    for _ in range(R):
        actions = learner.act(vs)
        nxt = vg.step(actions)
        final = []  # every agent's critic input after the step, from the game where it
        for c in range(B):  # left alone (from final_obs / final_state where the copy ended)
            row = []
            for a in learner.agents:
                alone = not nxt.done[c] and (nxt.terminated[a][c] or nxt.truncated[a][c])
                if gnn:
                    row.append(vg.games[c].entity_graph().nodes if alone else
                               nxt.final_graph[c])
                elif critic == "concat":
                    row.append(np.concatenate([
                        np.zeros_like(nxt.final_obs[o][c]) if o in gone[c] else
                        vg.games[c].observe(o) if alone else nxt.final_obs[o][c]
                        for o in vg.spec.agent_ids]))
                elif critic == "state":
                    row.append(vg.games[c].state() if alone else nxt.final_state[c]
                               if nxt.done[c] else nxt.state[c])
                else:
                    row.append(vg.games[c].observe(a) if alone else nxt.final_obs[a][c])
            final.append(row)
            ended = {a for a in vg.spec.agent_ids if nxt.terminated[a][c] or nxt.truncated[a][c]}
            gone[c] = set() if nxt.done[c] else gone[c] | ended
        rec.append({"acting": vs.acting, "reward": nxt.rewards, "term": nxt.terminated,
                    "trunc": nxt.truncated, "done": nxt.done, "final": final})
        learner.observe(nxt)
        vs = nxt
    assert learner.ready()
    ref, kinds = _reference(learner, rec)
    assert kinds.pop("cut" if wait else "wait") == 0, kinds  # Exits has one or the other
    assert min(kinds.values()) >= 3, kinds  # every kind of end, waits and carried steps
    _, returns, complete = value_targets(learner)
    got = {tuple(k): float(returns[tuple(k)]) for k in complete.nonzero().tolist()}
    assert sorted(got) == sorted(ref)
    for key, want in ref.items():
        assert got[key] == pytest.approx(want, rel=1e-5, abs=1e-5), key
