"""MAPPO's value targets on the tensor VecStep path against a slow reference: a hand-made
trajectory (terminations, truncations, a rollout end in the middle of an episode and one on
an episode's last step) fed through ``act`` / ``observe`` / ``update``, each step's values
recorded beside it, and every complete step's target recomputed by an obvious loop over
that copy's and agent's own steps. ``rollout_end="carry"`` keeps an agent's unfinished last
step for the next update; ``"bootstrap"`` ends it with the value of the next observation
(TorchRL's GAE)."""

import dataclasses

import pytest
import torch

import games
from marl.actor_critic import NetConfig
from marl.mappo import MAPPO, MAPPOConfig
from marl.mappo_update import value_targets

BALANCE = {"n_agents": 3, "max_steps": 1000}  # episodes end only where the test says
R, UPDATES, B = 4, 3, 3  # rollout steps, updates, copies
GAMMA, LAM = 0.9, 0.8
# (global step, copy) -> "term" | "trunc": copy 0 terminates inside rollout 0 and is cut
# inside rollout 1, copy 1 is cut on rollout 0's last step and terminates in rollout 2,
# copy 2 never ends (every rollout end falls inside its episode)
ENDS = {(2, 0): "term", (6, 0): "trunc", (3, 1): "trunc", (9, 1): "term"}


def _scripted(vs, k, g):
    """``vs`` with random rewards and final observations and this step's end flags."""
    term = torch.tensor([ENDS.get((k, b)) == "term" for b in range(B)])
    trunc = torch.tensor([ENDS.get((k, b)) == "trunc" for b in range(B)])
    done = term | trunc
    return dataclasses.replace(
        vs, rewards={a: torch.randn(B, generator=g) * 3 for a in vs.rewards},
        terminated={a: term for a in vs.terminated}, truncated={a: trunc for a in vs.truncated},
        done=done,
        final_obs={a: torch.where(done[:, None], torch.randn(o.shape, generator=g), 0.0)
                   for a, o in vs.final_obs.items()})


def _values(learner, vs, final=False):
    return learner._values(learner._inputs(vs, final=final))[0].double()  # [B, A]


def _reference(rec, steps, carried, bootstrap):
    """Targets ``{(k, b, a): G_k}`` of the complete steps among ``steps`` (global step ids,
    ascending; the first is a step of the previous rollout when ``carried``, kept only
    where it did not end its episode):
    ``G_k = V_k + sum_j (gamma lam)^(j-k) delta_j`` over j from k to the episode's end, or,
    when the last step m is unfinished, to m with V(next observation) (``bootstrap``) or
    to m - 1 (carry: m waits for the next update, and is not complete itself)."""
    out = {}
    A = rec[0]["v"].shape[1]
    for b in range(B):
        ended_first = bool(rec[steps[0]]["term"][b] or rec[steps[0]]["trunc"][b])
        mine = steps[1:] if carried and ended_first else steps
        for a in range(A):
            for i, k in enumerate(mine):
                adv, disc, complete = 0.0, 1.0, True
                for j in mine[i:]:
                    s = rec[j]
                    ended = bool(s["term"][b] or s["trunc"][b])
                    if ended:
                        boot = 0.0 if s["term"][b] else s["vfinal"][b, a]
                    elif j != mine[-1]:
                        boot = rec[j + 1]["v"][b, a]
                    elif bootstrap:
                        boot = s["vnext"][b, a]
                    else:
                        complete = j != k
                        break
                    adv += disc * (s["r"][b, a] + GAMMA * boot - s["v"][b, a])
                    disc *= GAMMA * LAM
                    if ended:
                        break
                if complete:
                    out[(k, b, a)] = float(adv + rec[k]["v"][b, a])
    return out


@pytest.mark.parametrize("value", ["seat", "shared"])
@pytest.mark.parametrize("rollout_end", ["carry", "bootstrap"])
def test_value_targets_match_a_slow_reference(rollout_end, value):
    spec = games.make("vmas/balance", **BALANCE).spec
    cfg = MAPPOConfig(rollout_steps=R, epochs=1, minibatches=1, gamma=GAMMA, gae_lambda=LAM,
                      rollout_end=rollout_end, net=NetConfig(value=value, critic="concat"))
    learner = MAPPO(spec, cfg, seed=0)
    vg = games.VectorGame("vmas/balance", B, seed=0, tensors=True, **BALANCE,
                          **learner.vector_game_kwargs)
    g = torch.Generator().manual_seed(0)
    vs = vg.reset()
    rec, checked = [], 0
    for k in range(R * UPDATES):
        v = _values(learner, vs)
        vs = _scripted(vg.step(learner.act(vs)), k, g)
        A = v.shape[1]
        rec.append({"v": v, "r": torch.stack([vs.rewards[x] for x in spec.agent_ids], 1).double(),
                    "term": vs.terminated["agent_0"], "trunc": vs.truncated["agent_0"],
                    "vfinal": _values(learner, vs, final=True), "vnext": _values(learner, vs)})
        learner.observe(vs)
        if not learner.ready():
            continue
        u = k // R
        carried = rollout_end == "carry" and u > 0
        ref = _reference(rec, list(range(u * R - carried, k + 1)), carried,
                         rollout_end == "bootstrap")
        _, returns, complete = value_targets(learner)
        got = {}
        for t, b, a in complete.nonzero().tolist():
            step = u * R + t - 1  # row 0: the step carried from the previous rollout
            got[(step, b, a)] = float(returns[t, b, a])
        assert sorted(got) == sorted(ref)
        for key, want in ref.items():
            assert got[key] == pytest.approx(want, rel=1e-5, abs=1e-5), key
        checked += len(ref)
        learner.update()
    vg.close()
    assert checked == (R * UPDATES - (rollout_end == "carry")) * B * A  # every step once


def test_rollout_end_is_checked_in_one_line():
    with pytest.raises(ValueError, match=r"rollout_end='cut' unknown; choose one of "
                                         r"\['carry', 'bootstrap'\]"):
        MAPPOConfig(rollout_end="cut")


@pytest.mark.parametrize("recurrent", [False, True])
def test_bootstrap_value_is_the_one_the_next_step_gets(recurrent):
    # the rollout's last step ends with V(next observation) as the next act computes it:
    # for a GRU critic, from the hidden state after the last step (not a fresh one)
    spec = games.make("vmas/balance", **BALANCE).spec
    cfg = MAPPOConfig(rollout_steps=R, rollout_end="bootstrap",
                      net=NetConfig(recurrent=recurrent, rnn_hidden=8))
    learner = MAPPO(spec, cfg, seed=0)
    vg = games.VectorGame("vmas/balance", B, seed=0, tensors=True, **BALANCE,
                          **learner.vector_game_kwargs)
    vs = vg.reset()
    while not learner.ready():
        vs = vg.step(learner.act(vs))
        learner.observe(vs)
    buf = learner.buf
    assert buf.end[R].all() and not buf.term[R].any() and (buf.last == -1).all()
    boot = buf.final_value[R].clone()
    buf.carry()  # no update: the next act values the same observation with the same critic
    learner.act(vs)
    torch.testing.assert_close(buf.value[1], boot, rtol=0, atol=0)
    vg.close()
